// Every elementwise kernel on every ISA this CPU has, against the reference level: sizes
// below, at and above each vector width (tails), in place where the contract allows.
// Exact where the arithmetic is the same (relu, bias, sums, SGD, Adam); within a few ulp
// where the vector code has its own exp/tanh.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <cstring>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "base/rng.h"
#include "isa_param.h"
#include "base/thread_pool.h"
#include "cpu/kernel_tables.h"
#include "ops/depthwise.h"
#include "ops/dropout_mask.h"
#include "ops/elementwise.h"

namespace rg {
namespace {

const int64_t kSizes[] = {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 100, 1000};

std::vector<float> random_vector(int64_t n, float lo, float hi, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n) + 8);  // + guard elements the kernel must not touch
  for (auto& x : v) x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

class KernelsOnIsa : public OnEveryIsa {
 protected:
  const F32VectorKernels& fast() const { return f32_vector_kernels(GetParam()); }
  const F32VectorKernels& ref() const { return f32_vector_kernels(Isa::reference); }
};

INSTANTIATE_TEST_SUITE_P(AllIsas, KernelsOnIsa, ::testing::ValuesIn(all_isas()), isa_label);

void expect_close(const std::vector<float>& got, const std::vector<float>& want, int64_t n, float abs_tol,
                  float rel_tol, const std::string& what) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = got[static_cast<size_t>(i)], w = want[static_cast<size_t>(i)];
    ASSERT_LE(std::fabs(g - w), std::max(abs_tol, rel_tol * std::fabs(w))) << what << " at " << i << " of " << n;
  }
  // Guard elements untouched.
  for (size_t i = static_cast<size_t>(n); i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " wrote past n";
}

TEST_P(KernelsOnIsa, UnaryMatchesReference) {
  Rng rng(11, 0);
  const struct {
    UnaryOp op;
    const char* name;
    float abs_tol, rel_tol;
  } ops[] = {{UnaryOp::relu, "relu", 0, 0},
             {UnaryOp::leaky_relu, "leaky_relu", 0, 0},
             {UnaryOp::sigmoid, "sigmoid", 1e-7f, 4e-7f},
             {UnaryOp::tanh, "tanh", 1e-7f, 4e-7f},
             {UnaryOp::relu6, "relu6", 0, 0}};  // x in [-12, 12]: both of its clamps
  static_assert(std::size(ops) == kUnaryOps, "every op of RG_UNARY_OP_LIST");
  for (const auto& op : ops) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = random_vector(n, -12.0f, 12.0f, rng);
      std::vector<float> want = x, got = x, in_place = x;
      ref().unary(op.op, n, 0.1f, x.data(), want.data());
      fast().unary(op.op, n, 0.1f, x.data(), got.data());
      fast().unary(op.op, n, 0.1f, in_place.data(), in_place.data());
      expect_close(got, want, n, op.abs_tol, op.rel_tol, op.name);
      expect_close(in_place, got, n, 0, 0, std::string(op.name) + " in place");
      // Gradients: dx = dy * f'(xy), from x (relu family) or y (sigmoid, tanh).
      const bool from_input = unary_grad_reads_input(op.op);
      const std::vector<float>& xy = from_input ? x : want;
      const std::vector<float> dy = random_vector(n, -1.0f, 1.0f, rng);
      std::vector<float> dwant = dy, dgot = dy, dsame = dy;
      ref().unary_grad(op.op, n, 0.1f, xy.data(), dy.data(), dwant.data());
      fast().unary_grad(op.op, n, 0.1f, xy.data(), dy.data(), dgot.data());
      fast().unary_grad(op.op, n, 0.1f, xy.data(), dsame.data(), dsame.data());
      expect_close(dgot, dwant, n, 0, 0, std::string(op.name) + " grad");
      expect_close(dsame, dgot, n, 0, 0, std::string(op.name) + " grad in place");
    }
  }
}

TEST_P(KernelsOnIsa, SigmoidAndTanhAtTheExtremes) {
  std::vector<float> x = {-100.0f, -88.0f, -20.0f, -1e-8f, 0.0f, 1e-8f, 20.0f, 88.0f, 100.0f, -0.0f, 3.0f};
  const int64_t n = static_cast<int64_t>(x.size());
  x.resize(x.size() + 8, 0.0f);
  for (UnaryOp op : {UnaryOp::sigmoid, UnaryOp::tanh}) {
    std::vector<float> want = x, got = x;
    ref().unary(op, n, 0, x.data(), want.data());
    fast().unary(op, n, 0, x.data(), got.data());
    expect_close(got, want, n, 1e-7f, 4e-7f, op == UnaryOp::sigmoid ? "sigmoid" : "tanh");
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(std::isfinite(got[static_cast<size_t>(i)]));
  }
}

// Few columns (conv layers with few filters: many rows, each shorter than a vector) and the
// kernels' own boundaries: 4 vectors of columns (a column-sum group), 64 columns (bias blocks).
TEST_P(KernelsOnIsa, BiasAndColumnSumsAreExact) {
  Rng rng(12, 0);
  for (int64_t rows : {1, 2, 7, 64, 1000})
    for (int64_t cols : {0, 1, 3, 4, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000}) {
      const std::vector<float> bias = random_vector(cols, -1, 1, rng);
      const std::vector<float> y = random_vector(rows * cols, -1, 1, rng);
      std::vector<float> want = y, got = y;
      ref().add_bias(rows, cols, bias.data(), want.data());
      fast().add_bias(rows, cols, bias.data(), got.data());
      expect_close(got, want, rows * cols, 0, 0, "add_bias");
      std::vector<float> sums_want = random_vector(cols, -1, 1, rng), sums_got = sums_want;
      ref().column_sum(rows, cols, y.data(), sums_want.data());
      fast().column_sum(rows, cols, y.data(), sums_got.data());
      expect_close(sums_got, sums_want, cols, 0, 0, "column_sum");
    }
}

// min_max against the reference: lengths around the 4-vector groups and tails; NaN (first, inside,
// everywhere), infinities, zeros of both signs (compared as values: a zero bound's sign may differ).
TEST_P(KernelsOnIsa, MinMaxMatchesTheReference) {
  Rng rng(31, 0);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int64_t n : {0, 1, 2, 7, 15, 16, 17, 63, 64, 65, 127, 128, 129, 1000, 4099})
    for (int kind = 0; kind < 5; ++kind) {
      std::vector<float> x = random_vector(n, -100, 100, rng);
      if (kind == 1 && n > 0) x[0] = nan;
      if (kind == 2 && n > 2) {
        x[n / 2] = inf;
        x[n - 1] = -inf;
        x[1] = nan;
      }
      if (kind == 3) std::fill(x.begin(), x.end(), nan);
      for (int64_t i = 0; kind == 4 && i < n; ++i) x[i] = i % 2 ? 0.0f : -0.0f;
      float want_lo, want_hi, got_lo, got_hi;
      ref().min_max(n, x.data(), &want_lo, &want_hi);
      fast().min_max(n, x.data(), &got_lo, &got_hi);
      EXPECT_EQ(got_lo, want_lo) << n << " values, kind " << kind;
      EXPECT_EQ(got_hi, want_hi) << n << " values, kind " << kind;
      if (kind == 3 || n == 0) {
        EXPECT_TRUE(want_lo == inf && want_hi == -inf) << n << " values, kind " << kind;
      }
    }
}

// rows_combine (one GEMM row or column, lanes the outputs) against the reference: tails below,
// at and past each width and its 4-vector groups, a padded row stride, every alpha/beta form;
// beta 0 ignores NaN in y; nothing past n is written. Exact but at the FMA levels (one rounding
// a term).
TEST_P(KernelsOnIsa, RowsCombineMatchesReference) {
  Rng rng(31, 0);
  const float tol = GetParam() >= Isa::avx2_fma ? 2e-6f : 0.0f;
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  struct AlphaBeta {
    float alpha, beta;
  };
  for (int64_t k : {1, 2, 7, 64})
    for (int64_t n : {1, 3, 4, 8, 15, 16, 17, 33, 63, 64, 65, 100, 130})
      for (const AlphaBeta ab : {AlphaBeta{1, 0}, AlphaBeta{1, 1}, AlphaBeta{0.5f, 2}, AlphaBeta{-1.5f, 0.25f}}) {
        const int64_t ldm = n + 5;
        const std::vector<float> m = random_vector(k * ldm, -1, 1, rng), x = random_vector(k, -1, 1, rng);
        std::vector<float> y = random_vector(n + 3, -1, 1, rng);
        if (ab.beta == 0.0f) std::fill(y.begin(), y.begin() + n, kNaN);
        std::vector<float> want = y, got = y;
        ref().rows_combine(k, n, m.data(), ldm, x.data(), ab.alpha, ab.beta, want.data());
        fast().rows_combine(k, n, m.data(), ldm, x.data(), ab.alpha, ab.beta, got.data());
        const std::string what = "rows_combine k " + std::to_string(k) + " n " + std::to_string(n) + " alpha " +
                                 std::to_string(ab.alpha) + " beta " + std::to_string(ab.beta);
        expect_close(got, want, n, tol, tol, what);
        for (int64_t j = n; j < n + 3; ++j)
          EXPECT_EQ(got[static_cast<size_t>(j)], y[static_cast<size_t>(j)]) << what << ": wrote past n at " << j;
      }
}

// The depthwise rows and their weight gradient on every level against the reference (ops'
// scalar loops): channels below, at and above each vector width (tails), padding read through
// the zero row. Exact but at the FMA level (one rounding a term).
TEST_P(KernelsOnIsa, DepthwiseMatchesReference) {
  Rng rng(21, 0);
  const float tol = GetParam() >= Isa::avx2_fma ? 1e-5f : 0.0f;  // the FMA levels
  struct Window {
    int64_t k, stride, pad;
  };
  for (int64_t c : {1, 3, 4, 5, 8, 9, 16, 17, 33})
    for (const Window& win : {Window{3, 1, 1}, Window{5, 2, 2}, Window{2, 3, 0}}) {
      const ConvGeometry g = conv_geometry(6, 7, c, win.k, win.stride, win.pad).value();
      const int64_t taps = win.k * win.k, out = g.patches() * c;
      const std::vector<float> x = random_vector(g.height * g.width * c, -1, 1, rng);
      const std::vector<float> w = random_vector(taps * c, -1, 1, rng), bias = random_vector(c, -1, 1, rng);
      const std::vector<float> zeros(static_cast<size_t>(c), 0.0f);
      std::vector<const float*> rows(static_cast<size_t>(g.patches() * taps));  // the image's rows, one after another
      for (int64_t oh = 0; oh < g.out_h; ++oh) depthwise_forward_row(g, oh, x.data(), zeros.data(), rows.data() + oh * g.out_w * taps);
      const std::string what = "c " + std::to_string(c) + " k " + std::to_string(win.k);
      for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
        std::vector<float> want = random_vector(out, -1, 1, rng), got = want;
        ref().depthwise(c, g.patches(), taps, rows.data(), w.data(), b, want.data());
        fast().depthwise(c, g.patches(), taps, rows.data(), w.data(), b, got.data());
        expect_close(got, want, out, tol, tol, "depthwise " + what);
      }
      const std::vector<float> dy = random_vector(out, -1, 1, rng);
      std::vector<float> dw_want = random_vector(taps * c, -1, 1, rng), dw_got = dw_want;
      ref().depthwise_weight_grad(c, g.patches(), taps, rows.data(), dy.data(), dw_want.data());
      fast().depthwise_weight_grad(c, g.patches(), taps, rows.data(), dy.data(), dw_got.data());
      expect_close(dw_got, dw_want, taps * c, 4 * tol, 4 * tol, "depthwise weight grad " + what);
    }
}

TEST_P(KernelsOnIsa, SoftmaxRowsMatchReference) {
  Rng rng(15, 0);
  for (int64_t rows : {1, 3})
    for (int64_t cols : kSizes) {
      if (cols == 0) continue;
      const std::vector<float> x = random_vector(rows * cols, -30, 30, rng);
      std::vector<float> want = x, got = x, same = x;
      ref().softmax_rows(rows, cols, x.data(), want.data());
      fast().softmax_rows(rows, cols, x.data(), got.data());
      fast().softmax_rows(rows, cols, same.data(), same.data());
      // The sum's order follows the vector width: a few ulp of the largest probability.
      expect_close(got, want, rows * cols, 1e-7f, 2e-6f, "softmax");
      expect_close(same, got, rows * cols, 0, 0, "softmax in place");
      for (int64_t r = 0; r < rows; ++r) {
        double total = 0;
        for (int64_t c = 0; c < cols; ++c) total += got[static_cast<size_t>(r * cols + c)];
        EXPECT_NEAR(total, 1.0, 1e-5);
      }
    }
}

// Dropout bit for bit against the reference (the mask's definition, ops/dropout_mask.h), out of
// place and in place: sizes around the kernel's 64-value blocks and the vector widths, counters
// where the low 32 bits wrap, thresholds that keep all, about half, and almost none. Dropped
// values are +0 whatever their sign; a NaN dropped is +0 too.
TEST_P(KernelsOnIsa, DropoutIsBitExact) {
  Rng rng(16, 0);
  const uint64_t state = rng.next_u64();
  for (int64_t n : {0, 1, 7, 16, 63, 64, 65, 127, 128, 129, 1000})
    for (uint64_t counter : {uint64_t{0}, uint64_t{5}, (uint64_t{1} << 32) - 30, uint64_t{1} << 62})
      for (uint32_t threshold : {0u, 1u << 31, 4252017623u}) {  // rates 0, 0.5, 0.99
        std::vector<float> x = random_vector(n, -1, 1, rng);
        if (n > 3) x[3] = std::nanf("");
        std::vector<float> want = random_vector(n, -1, 1, rng), got = want, in_place = x;
        ref().dropout(n, state, counter, threshold, 1.5f, x.data(), want.data());
        fast().dropout(n, state, counter, threshold, 1.5f, x.data(), got.data());
        fast().dropout(n, state, counter, threshold, 1.5f, in_place.data(), in_place.data());
        const std::string what = "dropout of " + std::to_string(n) + " from counter " + std::to_string(counter) +
                                 " threshold " + std::to_string(threshold);
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << what;
        ASSERT_EQ(std::memcmp(in_place.data(), want.data(), static_cast<size_t>(n) * sizeof(float)), 0) << what;
        for (int64_t i = 0; i < n; ++i) {  // the reference is the definition
          const size_t k = static_cast<size_t>(i);
          const float expect = dropout_draw(state, counter + static_cast<uint64_t>(i)) < threshold ? 0.0f : x[k] * 1.5f;
          ASSERT_EQ(std::memcmp(&want[k], &expect, sizeof(float)), 0) << what << " at " << i;
        }
      }
}

// The batch norm's kernels bit for bit against the reference, with and without a fused relu:
// channels below, at and above each vector width (the channels after the last whole vector run
// one at a time; 37-61, 75-127 and 145-250: a group of 8 vectors then 1 to 7 more at widths 4,
// 8 and 16), rows from one to more than a block; the sums added to nonzero sums, a block's
// statistics written over nonzero values, apply and grad also in place.
TEST_P(KernelsOnIsa, BatchNormIsBitExact) {
  Rng rng(17, 0);
  const auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  for (int64_t channels : {1, 3, 4, 8, 9, 16, 17, 32, 33, 37, 41, 46, 49, 53, 58, 61, 64, 75, 83, 88, 99, 104, 117,
                           127, 128, 145, 170, 180, 200, 208, 230, 250})
    for (int64_t rows : {1, 7, 64, 65})
      for (bool relu : {false, true}) {
        const std::string what = std::to_string(rows) + " x " + std::to_string(channels) + (relu ? " relu" : "");
        const int64_t n = rows * channels;
        const std::vector<float> x = random_vector(n, -2, 2, rng), dy = random_vector(n, -1, 1, rng);
        const std::vector<float> mean = random_vector(channels, -0.5, 0.5, rng), inv_std = random_vector(channels, 0.5, 2, rng);
        const std::vector<float> scale = random_vector(channels, -2, 2, rng), shift = random_vector(channels, -1, 1, rng);
        const std::vector<float> a = random_vector(channels, -2, 2, rng), b = random_vector(channels, -1, 1, rng);
        const std::vector<float> d = random_vector(channels, -1, 1, rng);
        const float* relu_scale = relu ? scale.data() : nullptr;
        std::vector<float> sums_want = random_vector(2 * channels, -1, 1, rng), sums_got = sums_want;
        ref().batch_norm_grad_sums(rows, channels, x.data(), dy.data(), mean.data(), inv_std.data(), relu_scale,
                                   shift.data(), sums_want.data());
        fast().batch_norm_grad_sums(rows, channels, x.data(), dy.data(), mean.data(), inv_std.data(), relu_scale,
                                    shift.data(), sums_got.data());
        ASSERT_TRUE(same(sums_got, sums_want)) << "grad sums " << what;
        std::vector<float> stats_want = random_vector(2 * channels, -1, 1, rng), stats_got = stats_want;
        ref().batch_norm_block_stats(rows, channels, x.data(), stats_want.data(), stats_want.data() + channels);
        fast().batch_norm_block_stats(rows, channels, x.data(), stats_got.data(), stats_got.data() + channels);
        ASSERT_TRUE(same(stats_got, stats_want)) << "block stats " << what;
        std::vector<float> y_want = random_vector(n, 0, 1, rng), y_got = y_want, y_in_place = x;
        ref().batch_norm_apply(rows, channels, x.data(), scale.data(), shift.data(), relu, y_want.data());
        fast().batch_norm_apply(rows, channels, x.data(), scale.data(), shift.data(), relu, y_got.data());
        fast().batch_norm_apply(rows, channels, y_in_place.data(), scale.data(), shift.data(), relu, y_in_place.data());
        ASSERT_TRUE(same(y_got, y_want)) << "apply " << what;
        ASSERT_EQ(std::memcmp(y_in_place.data(), y_want.data(), static_cast<size_t>(n) * sizeof(float)), 0)
            << "apply in place " << what;
        std::vector<float> dx_want = random_vector(n, 0, 1, rng), dx_got = dx_want;
        ref().batch_norm_grad(rows, channels, x.data(), dy.data(), a.data(), b.data(), d.data(), relu_scale, shift.data(),
                              dx_want.data());
        fast().batch_norm_grad(rows, channels, x.data(), dy.data(), a.data(), b.data(), d.data(), relu_scale,
                               shift.data(), dx_got.data());
        ASSERT_TRUE(same(dx_got, dx_want)) << "grad " << what;
      }
}

// Max pooling's backward over tiling windows bit for bit against the reference: x from a small
// set with ties, +0 and -0 and NaN (dy goes to the first match only; NaN never matches), y the
// windows' maxima, kernels 2 and 3, a column past the last window (left as it was), channels
// below, at and above each width; dx starts as NaN (0 + share: dy -0 gives +0).
TEST_P(KernelsOnIsa, MaxPoolTiledGradIsBitExact) {
  Rng rng(29, 0);
  const float set[] = {1.0f, 1.0f, 2.0f, 0.0f, -0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN()};
  for (int64_t channels : {1, 4, 8, 9, 16, 17, 32, 33, 48})
    for (int64_t kernel : {2, 3}) {
      const int64_t out_h = 3, out_w = 2, width = out_w * kernel + 1, height = out_h * kernel;
      const std::string what = std::to_string(channels) + " channels, kernel " + std::to_string(kernel);
      std::vector<float> x(static_cast<size_t>(height * width * channels));
      for (float& v : x) v = set[rng.below(7)];
      const size_t out = static_cast<size_t>(out_h * out_w * channels);
      std::vector<float> y(out, -std::numeric_limits<float>::infinity()), dy(out);
      for (int64_t o = 0; o < out_h * out_w; ++o)
        for (int64_t ch = 0; ch < channels; ++ch)
          for (int64_t kh = 0; kh < kernel; ++kh)
            for (int64_t kw = 0; kw < kernel; ++kw) {
              const int64_t i = ((o / out_w * kernel + kh) * width + o % out_w * kernel + kw) * channels + ch;
              float& m = y[static_cast<size_t>(o * channels + ch)];
              m = std::max(m, x[static_cast<size_t>(i)]);
            }
      for (float& v : dy) v = static_cast<float>(rng.uniform(-1, 1));
      dy[0] = -0.0f;
      std::vector<float> dx_want(x.size(), std::numeric_limits<float>::quiet_NaN()), dx_got = dx_want;
      ref().max_pool_tiled_grad(out_h, out_w, kernel, width, channels, x.data(), y.data(), dy.data(), dx_want.data());
      fast().max_pool_tiled_grad(out_h, out_w, kernel, width, channels, x.data(), y.data(), dy.data(), dx_got.data());
      ASSERT_EQ(std::memcmp(dx_got.data(), dx_want.data(), x.size() * sizeof(float)), 0) << what;
      ASSERT_FALSE(std::signbit(dx_got[0])) << what;  // 0 + -0
    }
}

TEST_P(KernelsOnIsa, SgdIsBitExact) {
  Rng rng(13, 0);
  for (int64_t n : kSizes) {
    for (const SgdStep step : {SgdStep{0.01f, 0.9f, 0.0f, false}, SgdStep{0.05f, 0.9f, 5e-4f, true},
                               SgdStep{0.1f, 0.0f, 1e-3f, false}}) {
      const std::vector<float> w0 = random_vector(n, -1, 1, rng), g = random_vector(n, -1, 1, rng);
      const std::vector<float> v0 = random_vector(n, -1, 1, rng);
      std::vector<float> w_want = w0, v_want = v0, w_got = w0, v_got = v0;
      const bool momentum = step.momentum != 0;
      EXPECT_TRUE(ref().sgd(n, step, w_want.data(), g.data(), momentum ? v_want.data() : nullptr));
      EXPECT_TRUE(fast().sgd(n, step, w_got.data(), g.data(), momentum ? v_got.data() : nullptr));
      expect_close(w_got, w_want, n, 0, 0, "sgd weights");
      expect_close(v_got, v_want, n, 0, 0, "sgd velocity");
    }
  }
}

TEST_P(KernelsOnIsa, AdamIsBitExact) {
  Rng rng(14, 0);
  for (int64_t n : kSizes) {
    AdamStep step{};
    step.step_size = 1e-3f / (1.0f - 0.9f * 0.9f);
    step.correction2_sqrt = std::sqrt(1.0f - 0.999f * 0.999f);
    step.beta1 = 0.9f;
    step.beta2 = 0.999f;
    step.one_minus_beta1 = 0.1f;
    step.one_minus_beta2 = 0.001f;
    step.eps = 1e-8f;
    step.weight_decay = n % 2 ? 1e-4f : 0.0f;
    const std::vector<float> w0 = random_vector(n, -1, 1, rng), g = random_vector(n, -1, 1, rng);
    const std::vector<float> m0 = random_vector(n, -0.1f, 0.1f, rng), s0 = random_vector(n, 0, 0.01f, rng);
    std::vector<float> w1 = w0, m1 = m0, s1 = s0, w2 = w0, m2 = m0, s2 = s0;
    EXPECT_TRUE(ref().adam(n, step, w1.data(), g.data(), m1.data(), s1.data()));
    EXPECT_TRUE(fast().adam(n, step, w2.data(), g.data(), m2.data(), s2.data()));
    expect_close(w2, w1, n, 0, 0, "adam weights");
    expect_close(m2, m1, n, 0, 0, "adam m");
    expect_close(s2, s1, n, 0, 0, "adam s");
  }
}

// The optimizers' guard: one Inf or NaN anywhere in the gradient, or one weight the update
// overflows (the first element, the middle, the last, which a vector loop reaches through its
// padded tail), and the kernel says so, on every length of kSizes; with and without momentum
// and weight decay.
TEST_P(KernelsOnIsa, OptimizersReportANonFiniteGradient) {
  Rng rng(15, 0);
  AdamStep adam{};
  adam.step_size = 1e-3f, adam.correction2_sqrt = 0.05f, adam.beta1 = 0.9f, adam.beta2 = 0.999f;
  adam.one_minus_beta1 = 0.1f, adam.one_minus_beta2 = 0.001f, adam.eps = 1e-8f, adam.weight_decay = 1e-4f;
  for (int64_t n : kSizes) {
    if (n == 0) continue;
    const std::vector<float> w0 = random_vector(n, -1, 1, rng), g0 = random_vector(n, -1, 1, rng);
    const auto size = static_cast<size_t>(n);
    for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
      for (float bad : {INFINITY, -INFINITY, NAN}) {
        std::vector<float> g = g0;
        g[static_cast<size_t>(at)] = bad;
        for (const SgdStep step : {SgdStep{0.01f, 0.9f, 5e-4f, true}, SgdStep{0.1f, 0.0f, 0.0f, false}}) {
          for (const F32VectorKernels* k : {&ref(), &fast()}) {
            std::vector<float> w = w0, v(size, 0.0f);
            EXPECT_FALSE(k->sgd(n, step, w.data(), g.data(), step.momentum != 0 ? v.data() : nullptr))
                << k->isa << " sgd, n " << n << ", " << bad << " at " << at;
          }
        }
        for (const F32VectorKernels* k : {&ref(), &fast()}) {
          std::vector<float> w = w0, m(size, 0.0f), s2(size, 0.0f);
          EXPECT_FALSE(k->adam(n, adam, w.data(), g.data(), m.data(), s2.data()))
              << k->isa << " adam, n " << n << ", " << bad << " at " << at;
        }
      }
      // Finite gradients whose update overflows one weight: -FLT_MAX stepped down by about
      // 1e34, past the largest float; every other weight moves by at most 1e35, finite.
      std::vector<float> w_edge = w0, g_up = g0;
      w_edge[static_cast<size_t>(at)] = -FLT_MAX;
      g_up[static_cast<size_t>(at)] = 1.0f;
      AdamStep adam_big = adam;
      adam_big.step_size = 1e35f;
      for (const F32VectorKernels* k : {&ref(), &fast()}) {
        std::vector<float> w = w_edge, v(size, 0.0f), m(size, 0.0f), s2(size, 0.0f);
        EXPECT_FALSE(k->sgd(n, SgdStep{1e35f, 0.0f, 0.0f, false}, w.data(), g_up.data(), nullptr))
            << k->isa << " sgd overflow, n " << n << " at " << at;
        w = w_edge;
        EXPECT_FALSE(k->sgd(n, SgdStep{1e35f, 0.9f, 0.0f, true}, w.data(), g_up.data(), v.data()))
            << k->isa << " sgd momentum overflow, n " << n << " at " << at;
        w = w_edge;
        EXPECT_FALSE(k->adam(n, adam_big, w.data(), g_up.data(), m.data(), s2.data()))
            << k->isa << " adam overflow, n " << n << " at " << at;
        w = w0;  // and the same steps from finite weights: no flag
        EXPECT_TRUE(k->sgd(n, SgdStep{1e35f, 0.0f, 0.0f, false}, w.data(), g0.data(), nullptr)) << k->isa << " n " << n;
      }
    }
  }
}

// fp16 conversion, on this level's software path and, where the CPU has F16C and the level
// is AVX or above, on F16C's: bit for bit the scalar converters of base/fp16.h.
std::vector<const HalfConvertKernels*> f16_paths(Isa isa) {
  std::vector<const HalfConvertKernels*> paths{&f16_convert_kernels(isa, false)};
  if (detect_cpu().features.f16c && isa >= Isa::avx) paths.push_back(&f16_convert_kernels(isa, true));
  return paths;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST_P(KernelsOnIsa, HalfToFloatEveryHalfIsExact) {
  std::vector<uint16_t> half(65536);
  for (uint32_t h = 0; h < 65536; ++h) half[h] = static_cast<uint16_t>(h);
  for (const HalfConvertKernels* path : f16_paths(GetParam())) {
    SCOPED_TRACE(path->name);
    std::vector<float> out(65536 + 8, 42.0f);
    path->to_f32(65536, half.data(), out.data());
    for (uint32_t h = 0; h < 65536; ++h) {
      ASSERT_EQ(bits_of(out[h]), bits_of(f16_to_f32(half[h]))) << std::hex << "half " << h;
    }
    for (size_t i = 65536; i < out.size(); ++i) ASSERT_EQ(out[i], 42.0f) << "wrote past n";
  }
}

// f32 -> f16: the edge cases by bit pattern (signed zeros, subnormal floats, the half
// subnormal range and its ties, the normal range's ends and ties, overflow to Inf, Inf,
// quiet and signalling NaNs with payloads), then 2^22 bit patterns spread over all floats,
// then every float whose upper 19 bits match a half boundary's; sizes 0 to 17 for the tails.
TEST_P(KernelsOnIsa, FloatToHalfIsExact) {
  std::vector<uint32_t> patterns = {0x00000000u, 0x80000000u, 0x00000001u, 0x007FFFFFu, 0x00800000u,
                                    0x33000000u, 0x33000001u, 0x337FFFFFu, 0x33800000u, 0x33C00000u,
                                    0x34000000u, 0x387FC000u, 0x387FE000u, 0x387FF000u, 0x38800000u,
                                    0x38801000u, 0x38803000u, 0x3F800000u, 0x3F801000u, 0x3F803000u,
                                    0x477FE000u, 0x477FEFFFu, 0x477FF000u, 0x477FFFFFu, 0x47800000u,
                                    0x7F7FFFFFu, 0x7F800000u, 0x7F800001u, 0x7FA00000u, 0x7FBFFFFFu,
                                    0x7FC00000u, 0x7FD56000u, 0x7FFFFFFFu};
  const size_t edges = patterns.size();
  for (size_t i = 0; i < edges; ++i) patterns.push_back(patterns[i] | 0x80000000u);
  for (uint32_t k = 0; k < (1u << 22); ++k) patterns.push_back(k * 1024u + (k * 2654435761u >> 22));
  for (uint32_t top = 0x33000000u >> 13; top <= (0x47800000u >> 13); top += 0x400u >> 6) {
    for (uint32_t low : {0x0000u, 0x0FFFu, 0x1000u, 0x1001u, 0x1FFFu}) patterns.push_back((top << 13) | low);
  }
  std::vector<float> values(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) std::memcpy(&values[i], &patterns[i], 4);
  for (const HalfConvertKernels* path : f16_paths(GetParam())) {
    SCOPED_TRACE(path->name);
    std::vector<uint16_t> out(values.size() + 8, 0xABCDu);
    path->from_f32(static_cast<int64_t>(values.size()), values.data(), out.data());
    for (size_t i = 0; i < values.size(); ++i) {
      ASSERT_EQ(out[i], f32_to_f16(values[i])) << std::hex << "float bits " << patterns[i];
    }
    for (size_t i = values.size(); i < out.size(); ++i) ASSERT_EQ(out[i], 0xABCDu) << "wrote past n";
    for (int64_t n = 0; n <= 17; ++n) {  // tails: the padded copy gives the same bits
      std::vector<uint16_t> part(static_cast<size_t>(n) + 1, 0xABCDu);
      path->from_f32(n, values.data() + 100, part.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(part[static_cast<size_t>(i)], out[100 + static_cast<size_t>(i)]);
      ASSERT_EQ(part[static_cast<size_t>(n)], 0xABCDu) << "n " << n;
      std::vector<float> back(static_cast<size_t>(n) + 1, 42.0f);
      path->to_f32(n, part.data(), back.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(back[static_cast<size_t>(i)]), bits_of(f16_to_f32(part[static_cast<size_t>(i)])));
      ASSERT_EQ(back[static_cast<size_t>(n)], 42.0f) << "n " << n;
    }
  }
}

// bf16: every bf16 widens exactly; f32 -> bf16 on the edges (ties to even both ways, the
// largest finite and its overflow to Inf, subnormals, signalling NaNs quieted) and 2^22 spread
// patterns, each against the scalar converter, which is checked against known values first.
TEST_P(KernelsOnIsa, Bf16ConversionIsExact) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3F80u);
  EXPECT_EQ(f32_to_bf16(-2.0f), 0xC000u);
  uint32_t tie_even = 0x3F808000u, tie_odd = 0x3F818000u, above = 0x3F808001u, big = 0x7F7FFFFFu, snan = 0x7F800001u;
  float v;
  std::memcpy(&v, &tie_even, 4);
  EXPECT_EQ(f32_to_bf16(v), 0x3F80u) << "a tie to the even neighbour below";
  std::memcpy(&v, &tie_odd, 4);
  EXPECT_EQ(f32_to_bf16(v), 0x3F82u) << "a tie to the even neighbour above";
  std::memcpy(&v, &above, 4);
  EXPECT_EQ(f32_to_bf16(v), 0x3F81u);
  std::memcpy(&v, &big, 4);
  EXPECT_EQ(f32_to_bf16(v), 0x7F80u) << "past the largest bf16: Inf";
  std::memcpy(&v, &snan, 4);
  EXPECT_EQ(f32_to_bf16(v), 0x7FC0u) << "a signalling NaN comes out quiet";
  EXPECT_EQ(bf16_to_f32(0x3F80u), 1.0f);

  const HalfConvertKernels& path = bf16_convert_kernels(GetParam());
  SCOPED_TRACE(path.name);
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> wide(65536 + 8, 42.0f);
  path.to_f32(65536, all.data(), wide.data());
  for (uint32_t h = 0; h < 65536; ++h) ASSERT_EQ(bits_of(wide[h]), h << 16) << std::hex << h;
  for (size_t i = 65536; i < wide.size(); ++i) ASSERT_EQ(wide[i], 42.0f) << "wrote past n";
  std::vector<uint32_t> patterns = {0x00000000u, 0x80000000u, 0x00000001u, 0x00008000u, 0x00018000u, 0x007FFFFFu,
                                    tie_even,    tie_odd,     above,       0x7F7F7FFFu, 0x7F7F8000u, big,
                                    0x7F800000u, snan,        0x7FBFFFFFu, 0x7FC00000u, 0x7FFFFFFFu};
  const size_t edges = patterns.size();
  for (size_t i = 0; i < edges; ++i) patterns.push_back(patterns[i] | 0x80000000u);
  for (uint32_t k = 0; k < (1u << 22); ++k) patterns.push_back(k * 1024u + (k * 2654435761u >> 22));
  std::vector<float> values(patterns.size());
  for (size_t i = 0; i < patterns.size(); ++i) std::memcpy(&values[i], &patterns[i], 4);
  std::vector<uint16_t> out(values.size() + 8, 0xABCDu);
  path.from_f32(static_cast<int64_t>(values.size()), values.data(), out.data());
  for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(out[i], f32_to_bf16(values[i])) << std::hex << patterns[i];
  for (size_t i = values.size(); i < out.size(); ++i) ASSERT_EQ(out[i], 0xABCDu) << "wrote past n";
  for (int64_t n = 0; n <= 9; ++n) {  // tails
    std::vector<uint16_t> part(static_cast<size_t>(n) + 1, 0xABCDu);
    path.from_f32(n, values.data() + 3, part.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(part[static_cast<size_t>(i)], out[3 + static_cast<size_t>(i)]);
    ASSERT_EQ(part[static_cast<size_t>(n)], 0xABCDu) << "n " << n;
  }
}

TEST(KernelTables, HalfConversionPaths) {
  EXPECT_STREQ(f16_convert_kernels(Isa::reference, true).name, "reference");
  EXPECT_STREQ(f16_convert_kernels(Isa::sse41, true).name, "sse2");  // F16C needs AVX state
  EXPECT_STREQ(f16_convert_kernels(Isa::avx, false).name, "sse2");   // Sandy Bridge: AVX, no F16C
  EXPECT_STREQ(f16_convert_kernels(Isa::avx, true).name, "f16c");
  EXPECT_STREQ(f16_convert_kernels(Isa::avx2_fma, true).name, "f16c");
  EXPECT_STREQ(f16_convert_kernels(Isa::avx512, true).name, "f16c");
  EXPECT_STREQ(bf16_convert_kernels(Isa::reference).name, "reference");
  EXPECT_STREQ(bf16_convert_kernels(Isa::sse2).name, "sse2");
  EXPECT_STREQ(bf16_convert_kernels(Isa::avx512).name, "sse2");
}

TEST(KernelTables, EachLevelUsesItsOwnOrTheNearestLowerKernels) {
  EXPECT_STREQ(f32_vector_kernels(Isa::reference).isa, "reference");
  EXPECT_STREQ(f32_vector_kernels(Isa::sse2).isa, "sse2");
  EXPECT_STREQ(f32_vector_kernels(Isa::sse41).isa, "sse2");
  EXPECT_STREQ(f32_vector_kernels(Isa::avx).isa, "avx");
  EXPECT_STREQ(f32_vector_kernels(Isa::avx2_fma).isa, "avx2_fma");
  EXPECT_STREQ(f32_gemm_kernel(Isa::ssse3).name, "f32_gemm_6x8__sse2");
  EXPECT_STREQ(f32_gemm_kernel(Isa::avx2_fma).name, "f32_gemm_6x16__avx2_fma");
  EXPECT_STREQ(f32_vector_kernels(Isa::avx512).isa, "avx512");
  EXPECT_STREQ(f32_gemm_kernel(Isa::avx512).name, "f32_gemm_12x32__avx512");
  EXPECT_STREQ(f32_gemm_narrow_kernel(Isa::avx512).name, "f32_gemm_16x16__avx512");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::avx512, 16).name, "f32_gemm_16x16__avx512");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::avx512, 9).name, "f32_gemm_16x16__avx512");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::avx512, 8).name, "f32_gemm_8x8__avx2_fma");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::avx2_fma, 8).name, "f32_gemm_8x8__avx2_fma");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::avx2_fma, 9).name, "f32_gemm_6x16__avx2_fma");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::sse2, 3).name, "f32_gemm_6x8__sse2");
  EXPECT_STREQ(f32_gemm_kernel_for(Isa::avx512, 17).name, "f32_gemm_12x32__avx512");
  EXPECT_LE(f32_gemm_kernel(Isa::avx512).mr, kF32GemmMaxMr);
  EXPECT_LE(f32_gemm_narrow_kernel(Isa::avx512).mr, kF32GemmMaxMr);
}

// The split helpers of ops/elementwise.h: the same bits with no pool and with 1 to 4 threads,
// across block edges (kElementwiseBlock values; rows_per_block rows), and right: the split
// column sums against a double sum (integer values: exact), the rest against one unsplit call.
TEST(ElementwiseSplit, SameBitsWhateverTheThreadsAndRight) {
  Rng rng(21);
  const int64_t n = 3 * kElementwiseBlock + 5, cols = 6, rows = 5 * rows_per_block(cols) + 3;
  std::vector<float> x(static_cast<size_t>(n)), dy(static_cast<size_t>(n)), m(static_cast<size_t>(rows * cols));
  for (float& v : x) v = static_cast<float>(rng.uniform(-3.0, 3.0));
  for (float& v : dy) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (float& v : m) v = static_cast<float>(rng.below(47)) - 23.0f;
  const std::vector<float> bias = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 3.0f};
  struct Out {
    std::vector<float> y, dx, biased, sums;
  };
  auto run = [&](ThreadPool* pool) {
    Out o{std::vector<float>(x.size()), std::vector<float>(x.size()), m, std::vector<float>(cols, 1.0f)};
    unary(pool, UnaryOp::sigmoid, n, 0.0f, x.data(), o.y.data());
    unary_grad(pool, UnaryOp::sigmoid, n, 0.0f, o.y.data(), dy.data(), o.dx.data());
    add_bias(pool, rows, cols, bias.data(), o.biased.data());
    column_sum(pool, rows, cols, m.data(), o.sums.data());
    return o;
  };
  const Out single = run(nullptr);
  for (int t = 1; t <= 4; ++t) {
    ThreadPool pool(t);
    const Out o = run(&pool);
    EXPECT_EQ(o.y, single.y) << t << " threads";
    EXPECT_EQ(o.dx, single.dx) << t << " threads";
    EXPECT_EQ(o.biased, single.biased) << t << " threads";
    EXPECT_EQ(o.sums, single.sums) << t << " threads";
  }
  std::vector<float> y(x.size()), dx(x.size()), biased = m;
  f32_vector().unary(UnaryOp::sigmoid, n, 0.0f, x.data(), y.data());
  f32_vector().unary_grad(UnaryOp::sigmoid, n, 0.0f, y.data(), dy.data(), dx.data());
  f32_vector().add_bias(rows, cols, bias.data(), biased.data());
  EXPECT_EQ(single.y, y);
  EXPECT_EQ(single.dx, dx);
  EXPECT_EQ(single.biased, biased);
  for (int64_t c = 0; c < cols; ++c) {
    double want = 1.0;
    for (int64_t r = 0; r < rows; ++r) want += m[static_cast<size_t>(r * cols + c)];
    EXPECT_EQ(static_cast<double>(single.sums[static_cast<size_t>(c)]), want) << "column " << c;
  }
}

}  // namespace
}  // namespace rg
