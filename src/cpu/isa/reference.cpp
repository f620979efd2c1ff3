// The reference level: plain scalar C++ (built with -fno-tree-vectorize so it stays scalar).
// It is what every vector kernel is tested against and what RETROGRAD_ISA=reference runs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/fp16.h"
#include "cpu/ukernels/f16_convert.h"
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_vector.h"
#include "cpu/ukernels/f32_winograd.h"
#include "cpu/ukernels/qs16_gemm.h"
#include "cpu/ukernels/qs8_gemm.h"
#include "cpu/ukernels/qs8_winograd.h"
#include "ops/activation.h"
#include "ops/depthwise.h"
#include "ops/dropout_mask.h"
#include "ops/fixed_point.h"

namespace rg {

namespace {
// One 6x8 tile in plain loops; `a_at(p, r)` reads op(A)[r][p] from a packed panel or the image.
template <class AAt, class BRow>
void reference_tile(int64_t depth, const AAt& a_at, const BRow& b_row, float alpha, float beta, float* c,
                    int64_t ldc, int64_t rows, int64_t cols) {
  constexpr int MR = 6, NR = 8;
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < depth; ++p)
    for (int r = 0; r < MR; ++r)
      for (int col = 0; col < NR; ++col) acc[r][col] += a_at(p, r) * b_row(p)[col];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) {
      float& out = c[r * ldc + col];
      out = beta == 0.0f ? alpha * acc[r][col] : alpha * acc[r][col] + beta * out;
    }
}
}  // namespace

void f32_gemm_6x8__reference(int64_t depth, const float* a_panel, const float* b_panel, int64_t ldb, float alpha,
                             float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  reference_tile(depth, [&](int64_t p, int r) { return a_panel[p * 6 + r]; },
                 [&](int64_t p) { return b_panel + p * ldb; }, alpha, beta, c, ldc, rows, cols);
}

void f32_gemm_gathered_6x8__reference(int64_t depth, const float* const* a_rows, const int32_t* a_offsets,
                                      const float* b_panel, int64_t ldb, float alpha, float beta, float* c,
                                      int64_t ldc, int64_t rows, int64_t cols) {
  reference_tile(depth, [&](int64_t p, int r) { return a_rows[r][a_offsets[p]]; },
                 [&](int64_t p) { return b_panel + p * ldb; }, alpha, beta, c, ldc, rows, cols);
}

void f32_gemm_shifted_6x8__reference(int64_t depth, const float* a_panel, const float* b_base,
                                     const int32_t* b_offsets, float alpha, float beta, float* c, int64_t ldc,
                                     int64_t rows, int64_t cols) {
  reference_tile(depth, [&](int64_t p, int r) { return a_panel[p * 6 + r]; },
                 [&](int64_t p) { return b_base + b_offsets[p]; }, alpha, beta, c, ldc, rows, cols);
}

// 16 lane sums a product, then their pairwise sums (f32_gemm.h's dot tiles), in plain loops.
void f32_gemm_dot_1x6__reference(int64_t depth, const float* x_base, const int32_t* x_offsets, const float* y,
                                 int64_t ldy, float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float lanes[kF32DotLanes] = {};
      for (int64_t p = 0; p < depth; ++p) lanes[p % kF32DotLanes] += x_base[x_offsets[i] + p] * y[j * ldy + p];
      for (int step = kF32DotLanes / 2; step >= 1; step /= 2)
        for (int q = 0; q < step; ++q) lanes[q] += lanes[q + step];
      float& out = c[i * ldc + j];
      out = beta == 0.0f ? lanes[0] : beta == 1.0f ? out + lanes[0] : beta * out + lanes[0];
    }
}

}  // namespace rg

// Elementwise kernels: plain loops in the order the vector kernels compute, so SGD and Adam
// agree with them bit for bit; activations use <cmath>.
namespace rg {

void f32_vunary__reference(UnaryOp op, int64_t n, float slope, const float* x, float* y) {
  unary_forward(op, n, slope, x, y);
}

void f32_vunary_grad__reference(UnaryOp op, int64_t n, float slope, const float* xy, const float* dy, float* dx) {
  unary_backward(op, n, slope, xy, dy, dx);
}

void f32_add_bias__reference(int64_t rows, int64_t cols, const float* bias, float* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
}

void f32_column_sum__reference(int64_t rows, int64_t cols, const float* x, float* sums) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) sums[c] += x[r * cols + c];
}

void f32_min_max__reference(int64_t n, const float* x, float* lo, float* hi) {
  float l = std::numeric_limits<float>::infinity(), h = -l;
  for (int64_t i = 0; i < n; ++i) {
    if (x[i] < l) l = x[i];
    if (x[i] > h) h = x[i];
  }
  *lo = l;
  *hi = h;
}

void f32_rows_combine__reference(int64_t k, int64_t n, const float* m, int64_t ldm, const float* x, float alpha,
                                 float beta, float* y) {
  for (int64_t j = 0; j < n; ++j) {
    float sum = 0.0f;
    for (int64_t p = 0; p < k; ++p) sum += x[p] * m[p * ldm + j];
    y[j] = beta == 0.0f ? alpha * sum : alpha * sum + beta * y[j];  // as reference_tile
  }
}

void f32_depthwise__reference(int64_t c, int64_t pixels, int64_t taps, const float* const* rows, const float* w,
                              const float* bias, float* out) {
  depthwise_rows(c, pixels, taps, rows, w, bias, out);
}

void f32_depthwise_weight_grad__reference(int64_t c, int64_t pixels, int64_t taps, const float* const* rows,
                                          const float* dy, float* dw) {
  depthwise_weight_grad_rows(c, pixels, taps, rows, dy, dw);
}

void f32_softmax_rows__reference(int64_t rows, int64_t cols, const float* x, float* y) {
  softmax_forward(rows, cols, x, y);
}

void f32_dropout__reference(int64_t n, uint64_t state, uint64_t counter, uint32_t threshold, float scale,
                            const float* x, float* y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = dropout_draw(state, counter + static_cast<uint64_t>(i)) < threshold ? 0.0f : x[i] * scale;
}

namespace {
// The gradient at a batch norm's output: dy, or with a fused relu (scale set) dy where its output was > 0.
float batch_norm_grad_of(const float* scale, const float* shift, int64_t c, float x, float dy) {
  return scale == nullptr || x * scale[c] + shift[c] > 0.0f ? dy : 0.0f;
}
}  // namespace

void f32_batch_norm_grad_sums__reference(int64_t rows, int64_t channels, const float* x, const float* dy,
                                         const float* mean, const float* inv_std, const float* scale,
                                         const float* shift, float* sums) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      const float g = batch_norm_grad_of(scale, shift, c, x[i], dy[i]);
      sums[c] += g;
      sums[channels + c] += g * (x[i] - mean[c]) * inv_std[c];
    }
}

void f32_batch_norm_block_stats__reference(int64_t rows, int64_t channels, const float* x, float* mean, float* m2) {
  for (int64_t c = 0; c < channels; ++c) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += x[r * channels + c];
    mean[c] = sum / static_cast<float>(rows);
    float squares = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float d = x[r * channels + c] - mean[c];
      squares += d * d;
    }
    m2[c] = squares;
  }
}

void f32_batch_norm_apply__reference(int64_t rows, int64_t channels, const float* x, const float* scale,
                                     const float* shift, bool relu, float* y) {
  for (int64_t i = 0; i < rows * channels; ++i) {
    const float v = x[i] * scale[i % channels] + shift[i % channels];
    y[i] = v;
    if (relu) relu_forward(1, &v, y + i);  // ops/activation.h's
  }
}

void f32_batch_norm_grad__reference(int64_t rows, int64_t channels, const float* x, const float* dy, const float* a,
                                    const float* b, const float* d, const float* scale, const float* shift,
                                    float* dx) {
  for (int64_t i = 0; i < rows * channels; ++i) {
    const int64_t c = i % channels;
    dx[i] = a[c] * batch_norm_grad_of(scale, shift, c, x[i], dy[i]) + b[c] * x[i] + d[c];
  }
}

void f32_max_pool_tiled_grad__reference(int64_t out_h, int64_t out_w, int64_t kernel, int64_t width,
                                        int64_t channels, const float* x, const float* y, const float* dy, float* dx) {
  for (int64_t o = 0; o < out_h * out_w; ++o)
    for (int64_t ch = 0; ch < channels; ++ch) {
      const int64_t at = ((o / out_w) * kernel * width + (o % out_w) * kernel) * channels + ch;
      float rem = dy[o * channels + ch];
      for (int64_t kh = 0; kh < kernel; ++kh)
        for (int64_t kw = 0; kw < kernel; ++kw) {
          const int64_t i = at + (kh * width + kw) * channels;
          const bool hit = x[i] == y[o * channels + ch];
          dx[i] = 0.0f + (hit ? rem : 0.0f);
          if (hit) rem = 0.0f;
        }
    }
}

bool f32_sgd__reference(int64_t n, const SgdStep& step, float* w, const float* grad, float* v) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] + step.weight_decay * w[i];
    if (v == nullptr) {
      w[i] = w[i] - step.lr * g;
    } else {
      v[i] = step.momentum * v[i] + g;
      w[i] = w[i] - step.lr * (step.nesterov ? g + step.momentum * v[i] : v[i]);
    }
    finite = finite && std::isfinite(grad[i]) && std::isfinite(w[i]);
  }
  return finite;
}

bool f32_adam__reference(int64_t n, const AdamStep& step, float* w, const float* grad, float* m, float* s) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] + step.weight_decay * w[i];
    m[i] = step.beta1 * m[i] + step.one_minus_beta1 * g;
    s[i] = step.beta2 * s[i] + step.one_minus_beta2 * g * g;
    w[i] = w[i] - step.step_size * m[i] / (std::sqrt(s[i]) / step.correction2_sqrt + step.eps);
    finite = finite && std::isfinite(grad[i]) && std::isfinite(w[i]);
  }
  return finite;
}

void f16_to_f32__reference(int64_t n, const uint16_t* half, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(half[i]);
}

void f32_to_f16__reference(int64_t n, const float* value, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(value[i]);
}

void bf16_to_f32__reference(int64_t n, const uint16_t* half, float* out) {
  // The bits stored as they are: a float returned by value travels through x87 on i386, which
  // quiets a signalling NaN (bf16_to_f32's own result does, there).
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(half[i]) << 16;
    std::memcpy(out + i, &bits, 4);
  }
}

void f32_to_bf16__reference(int64_t n, const float* value, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_bf16(value[i]);
}

}  // namespace rg

// int8 GEMM and requantization: the integer arithmetic of qs8_gemm.h, literally.
namespace rg {

void qs8_gemm_4x8__reference(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                             int32_t* acc) {
  constexpr int MR = 4, NR = 8;
  for (int64_t r = 0; r < MR && r < mr; ++r)
    for (int col = 0; col < NR; ++col) {
      int32_t sum = 0;
      for (int64_t p = 0; p < 4 * kgroups; ++p) sum += a[r * lda + p] * packed_b[((p / 4) * NR + col) * 4 + p % 4];
      acc[r * NR + col] = sum;
    }
}

void qs16_gemm_4x8__reference(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                              int32_t* acc) {
  constexpr int MR = 4, NR = 8;
  for (int64_t r = 0; r < MR && r < mr; ++r)
    for (int col = 0; col < NR; ++col) {
      int32_t sum = 0;  // the caller's depth bound keeps every partial sum in int32
      for (int64_t p = 0; p < 2 * kpairs; ++p) sum += a[r * lda + p] * packed_b[((p / 2) * NR + col) * 2 + p % 2];
      acc[r * NR + col] = sum;
    }
}

void qs16_split_2x8__reference(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_hi,
                               const int16_t* packed_lo, int32_t* acc_hi, int32_t* acc_lo) {
  constexpr int MR = 2, NR = 8;
  int32_t hi[4 * NR] = {}, lo[4 * NR] = {};
  qs16_gemm_4x8__reference(std::min<int64_t>(mr, MR), kpairs, a, lda, packed_hi, hi);
  qs16_gemm_4x8__reference(std::min<int64_t>(mr, MR), kpairs, a, lda, packed_lo, lo);
  std::copy(hi, hi + MR * NR, acc_hi);
  std::copy(lo, lo + MR * NR, acc_lo);
}

void qs8_gemm_requant_4x8__reference(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                     const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  constexpr int NR = 8;
  int32_t acc[4 * NR];
  qs8_gemm_4x8__reference(mr, kgroups, a, lda, packed_b, acc);
  for (int64_t r = 0; r < mr && r < 4; ++r)
    for (int64_t j = 0; j < nc; ++j) {
      const QuantMultiplier m{rq->multiplier[j], rq->shift[j]};
      c[r * ldc + j] = static_cast<int8_t>(requantize(acc[r * NR + j] + rq->bias[j], m, rq->zero_point, rq->lo, rq->hi));
    }
}

void qs8_conv_pairs__reference(int64_t count, int64_t window, int64_t pairs, const int16_t* src,
                               const int64_t* offsets, const int32_t* wt, int64_t n, const Qs8Requant* rq,
                               int8_t* out) {
  auto lo = [](int32_t v) { return static_cast<int32_t>(static_cast<int16_t>(v & 0xFFFF)); };
  auto hi = [](int32_t v) { return static_cast<int32_t>(static_cast<int16_t>((v >> 16) & 0xFFFF)); };
  for (int64_t x = 0; x < count; ++x)
    for (int64_t f = 0; f < n; ++f) {
      int32_t best = 0;
      for (int64_t w = 0; w < window; ++w) {
        int32_t sum = 0;
        for (int64_t t = 0; t < pairs; ++t) {
          const int16_t* p = src + offsets[w * pairs + t];
          const int32_t k = wt[t * n + f];
          sum += p[2 * x] * lo(k) + p[2 * x + 1] * hi(k);
        }
        best = w == 0 || sum > best ? sum : best;
      }
      const QuantMultiplier m{rq->multiplier[f], rq->shift[f]};
      out[x * n + f] = static_cast<int8_t>(requantize(best + rq->bias[f], m, rq->zero_point, rq->lo, rq->hi));
    }
}

void qs8_requantize__reference(int64_t n, const int32_t* acc, const int32_t* bias, const int32_t* multiplier,
                               const int32_t* shift, int32_t zero_point, int32_t lo, int32_t hi, int8_t* out) {
  for (int64_t j = 0; j < n; ++j) {
    const QuantMultiplier m{multiplier[j], shift[j]};
    out[j] = static_cast<int8_t>(requantize(acc[j] + bias[j], m, zero_point, lo, hi));
  }
}

}  // namespace rg

// Winograd F(2x2, 3x3): qs8_winograd.h's formulas as matrix products in plain loops.
namespace rg {

namespace {
constexpr int kWinogradBt[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
constexpr int kWinogradAt[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
}  // namespace

void qs8_winograd_input__reference(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v,
                                   int64_t v_stride) {
  for (int64_t c = 0; c < cpad; ++c)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        int32_t sum = 0;  // (B^T d B)[i][j] = sum_ab Bt[i][a] d[a][b] Bt[j][b]
        for (int a = 0; a < 4 && c < channels; ++a)
          for (int b = 0; b < 4; ++b) sum += kWinogradBt[i][a] * px[4 * a + b][c] * kWinogradBt[j][b];
        v[(4 * i + j) * v_stride + c] = static_cast<int16_t>(sum);
      }
}

void qs8_winograd_4x8__reference(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                 int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out) {
  constexpr int NR = 8;
  for (int64_t r = 0; r < mr && r < 4; ++r)
    for (int64_t j = 0; j < nc; ++j) {
      int64_t m[16];
      for (int p = 0; p < 16; ++p) {
        m[p] = 0;
        const int16_t* vp = v + p * v_stride + r * ldv;
        for (int64_t i = 0; i < 2 * cpairs; ++i) m[p] += int64_t{vp[i]} * u[((p * cpairs + i / 2) * NR + j) * 2 + i % 2];
      }
      int32_t y[4];  // (A^T M A)[dy][dx] as int32 (wrapping), / 4 rounding down
      for (int pixel = 0; pixel < 4; ++pixel) {
        int64_t sum = 0;
        for (int a = 0; a < 4; ++a)
          for (int b = 0; b < 4; ++b) sum += kWinogradAt[pixel / 2][a] * m[4 * a + b] * kWinogradAt[pixel % 2][b];
        y[pixel] = static_cast<int32_t>(static_cast<uint32_t>(sum)) >> 2;
      }
      if (pool) y[0] = std::max(std::max(y[0], y[1]), std::max(y[2], y[3]));
      const QuantMultiplier mult{rq->multiplier[j], rq->shift[j]};
      for (int pixel = 0; pixel < (pool ? 1 : 4); ++pixel) {
        int8_t* o = out[pool ? r : 4 * r + pixel];
        if (o != nullptr)
          o[j] = static_cast<int8_t>(requantize(y[pixel] + rq->bias[j], mult, rq->zero_point, rq->lo, rq->hi));
      }
    }
}

}  // namespace rg

// Winograd F(4x4, 3x3) in f32: f32_winograd.h's matrices as products in plain loops.
namespace rg {

namespace {
// (L X L^T)[i][j] = sum over a, b < n of L(i, a) X(a, b) L(j, b): every transform's product.
template <class Left, class X>
float sandwich(int i, int j, int n, const Left& left, const X& x) {
  float sum = 0;
  for (int a = 0; a < n; ++a) {
    float row = 0;
    for (int b = 0; b < n; ++b) row += x(a, b) * left(j, b);
    sum += left(i, a) * row;
  }
  return sum;
}
const auto kBT = [](int i, int a) { return kWinogradBT[i][a]; };
const auto kAT = [](int i, int a) { return kWinogradAT[i][a]; };
const auto kA = [](int i, int a) { return kWinogradAT[a][i]; };
}  // namespace

void f32_winograd_input__reference(int64_t c, const float* const* d, float* v, int64_t v_stride) {
  for (int64_t ch = 0; ch < c; ++ch)
    for (int xi = 0; xi < 36; ++xi)  // B^T d B
      v[xi * v_stride + ch] = sandwich(xi / 6, xi % 6, 6, kBT, [&](int a, int b) { return d[a * 6 + b][ch]; });
}

void f32_winograd_output__reference(int64_t f, const float* m, int64_t m_stride, float* const* out) {
  for (int64_t ch = 0; ch < f; ++ch)
    for (int k = 0; k < 16; ++k) {  // A^T M A
      const float y = sandwich(k / 4, k % 4, 6, kAT, [&](int a, int b) { return m[(a * 6 + b) * m_stride + ch]; });
      if (out[k] != nullptr) out[k][ch] = y;
    }
}

void f32_winograd_grad__reference(int64_t f, const float* const* dy, float* v, int64_t v_stride) {
  for (int64_t ch = 0; ch < f; ++ch)
    for (int xi = 0; xi < 36; ++xi)  // A dy A^T, a pixel past the output read as 0
      v[xi * v_stride + ch] = sandwich(xi / 6, xi % 6, 4, kA, [&](int a, int b) {
        return dy[a * 4 + b] != nullptr ? dy[a * 4 + b][ch] : 0.0f;
      });
}

}  // namespace rg
