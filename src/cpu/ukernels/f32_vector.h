// f32 elementwise kernels: activations and their gradients, bias rows, column sums,
// optimizer updates, and the depthwise conv's channel rows. Contract of every kernel: raw
// pointers, element counts, no allocation, never touches memory outside [0, n). A tail shorter
// than a vector is run through the vector code on a padded copy, so an element's result never
// depends on its position (and so not on how work is split across threads).
// Declarations only (isa/*.cpp include this with their ISA flags).
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/rng.h"  // splitmix64_at: dropout's draws
#include "cpu/ukernels/unary_op.h"

namespace rg {

// y = f(x); `slope` is leaky_relu's negative slope (ignored otherwise). In place allowed.
using F32Unary = void (*)(UnaryOp op, int64_t n, float slope, const float* x, float* y);
// dx = dy * f'(.) where `xy` is the forward's input x (relu, leaky_relu) or output y (sigmoid, tanh).
// In place over dy allowed.
using F32UnaryGrad = void (*)(UnaryOp op, int64_t n, float slope, const float* xy, const float* dy, float* dx);
// y[r][c] += bias[c] for a row-major y [rows x cols].
using F32AddBias = void (*)(int64_t rows, int64_t cols, const float* bias, float* y);
// sums[c] += sum over r of x[r][c], rows added in order (the same sum whatever the ISA width).
using F32ColumnSum = void (*)(int64_t rows, int64_t cols, const float* x, float* sums);
// *lo, *hi = the least and greatest of x[0 .. n), NaN skipped (+inf and -inf where every value
// is NaN or n is 0); a zero bound may be -0 on one level and +0 on another.
using F32MinMax = void (*)(int64_t n, const float* x, float* lo, float* hi);

// The product of a vector and a matrix's rows, one lane an output (ops/gemm_f32.cpp's
// GEMMs of one row or one column): y[j] = alpha (sum over p < k, in order, of x[p] m[p ldm + j])
// + beta y[j] for j < n, each sum one FMA chain on the FMA levels (a product and an add a term
// below them) and alpha and beta applied as the GEMM tile applies them (f32_gemm.h; beta 0 never
// reads y): an element gets the bits the tile gives it.
using F32RowsCombine = void (*)(int64_t k, int64_t n, const float* m, int64_t ldm, const float* x, float alpha,
                                float beta, float* y);

// Inverted dropout over n values: y[i] = draw(i) < threshold ? +0 : x[i] * scale, where draw(i)
// = splitmix64_at(state, counter + i) >> 32 (ops/dropout_mask.h defines the mask by it; the
// device's kernel draws the same). Exact on every level (integer draws, one product). In place allowed.
using F32Dropout = void (*)(int64_t n, uint64_t state, uint64_t counter, uint32_t threshold, float scale,
                            const float* x, float* y);

// Batch norm over x [rows, channels] (nn/batch_norm.cpp), lanes the channels, rows in order, no
// FMA: every level gives the reference's bits (channels past the last whole vector run the same
// operations one at a time). Where `scale` is not null a relu follows the batch norm, fused: the
// gradient g at its output is dy where x scale[c] + shift[c] > 0, else 0; otherwise g = dy.
// sums[c] += the sum of g, sums[channels + c] += the sum of (g (x - mean[c])) inv_std[c].
using F32BatchNormGradSums = void (*)(int64_t rows, int64_t channels, const float* x, const float* dy,
                                      const float* mean, const float* inv_std, const float* scale,
                                      const float* shift, float* sums);
// One block's statistics (nn/batch_norm.cpp's channel_stats): mean[c] = the sum of x's rows in
// order over rows, then m2[c] = the sum of (x - mean[c])^2, rows in order (written, not added).
using F32BatchNormBlockStats = void (*)(int64_t rows, int64_t channels, const float* x, float* mean, float* m2);
// y = x scale[c] + shift[c], or its relu where `relu`. In place allowed.
using F32BatchNormApply = void (*)(int64_t rows, int64_t channels, const float* x, const float* scale,
                                   const float* shift, bool relu, float* y);
// dx = a[c] g + b[c] x + d[c], g as for the sums (in place over dy allowed).
using F32BatchNormGrad = void (*)(int64_t rows, int64_t channels, const float* x, const float* dy, const float* a,
                                  const float* b, const float* d, const float* scale, const float* shift, float* dx);

// Row-wise softmax of x [rows x cols] into y (in place allowed): max-subtracted exps over their sum.
// The max and the sum are reductions whose order follows the vector width.
using F32SoftmaxRows = void (*)(int64_t rows, int64_t cols, const float* x, float* y);

struct SgdStep {
  float lr, momentum, weight_decay;
  bool nesterov;
};
// g = grad + wd w;  v = mu v + g;  w -= lr (nesterov ? g + mu v : v)   (v unused when mu = 0: w -= lr g)
// Both optimizers return false when an element of grad, or of w after the update, is an Inf or
// a NaN (the update is made all the same): the trainer's guard, checked in the pass that reads
// the gradients and writes the weights anyway. The weights catch a finite gradient times a
// large rate overflowing, which a later ReLU would hide (max(NaN, 0) is 0 on SSE and GPUs).
using F32Sgd = bool (*)(int64_t n, const SgdStep& step, float* w, const float* grad, float* v);

struct AdamStep {
  float step_size;          // lr / (1 - beta1^t)
  float correction2_sqrt;   // sqrt(1 - beta2^t)
  float beta1, beta2, one_minus_beta1, one_minus_beta2, eps, weight_decay;
};
// g = grad + wd w;  m = b1 m + (1-b1) g;  s = b2 s + (1-b2) g g;  w -= step_size m / (sqrt(s) / c2 + eps)
using F32Adam = bool (*)(int64_t n, const AdamStep& step, float* w, const float* grad, float* m, float* s);

// Depthwise convolution rows (ops/depthwise.h has the math and the scalar reference): lanes are
// channels, each channel's taps summed in order, so no result depends on the vector width (the
// FMA level rounds each product-sum once). rows[p * taps + t] -> c readable values.
// out[p * c + ch] = (bias ? bias[ch] : 0) + sum over t of rows[p * taps + t][ch] * w[t * c + ch]
using F32Depthwise = void (*)(int64_t c, int64_t pixels, int64_t taps, const float* const* rows, const float* w,
                              const float* bias, float* out);
// dw[t * c + ch] += sum over p in order of rows[p * taps + t][ch] * dy[p * c + ch]
using F32DepthwiseWeightGrad = void (*)(int64_t c, int64_t pixels, int64_t taps, const float* const* rows,
                                        const float* dy, float* dw);

// Max pooling's backward over windows that tile an image from its corner (stride = kernel, no
// padding; ops/pool2d.h's): x [rows of `width` pixels][channels], y and dy [out_h][out_w][channels].
// Every pixel of each window gets 0 + its share: per channel the window's dy to its first pixel
// (row by row) whose x equals y, 0 to the others.
using F32MaxPoolTiledGrad = void (*)(int64_t out_h, int64_t out_w, int64_t kernel, int64_t width, int64_t channels,
                                     const float* x, const float* y, const float* dy, float* dx);

// The family's kernels, written once, in the order of F32VectorKernels (cpu/kernel_tables.h,
// whose members and tables are made from this list): X(member, type, function, isa), each
// level defining function##__##isa (RG_DEFINE_F32_VECTOR_KERNELS, isa/reference.cpp).
#define RG_F32_VECTOR_KERNEL_LIST(X, isa)                                          \
  X(unary, F32Unary, f32_vunary, isa)                                              \
  X(unary_grad, F32UnaryGrad, f32_vunary_grad, isa)                                \
  X(add_bias, F32AddBias, f32_add_bias, isa)                                       \
  X(column_sum, F32ColumnSum, f32_column_sum, isa)                                 \
  X(min_max, F32MinMax, f32_min_max, isa)                                          \
  X(rows_combine, F32RowsCombine, f32_rows_combine, isa)                           \
  X(softmax_rows, F32SoftmaxRows, f32_softmax_rows, isa)                           \
  X(dropout, F32Dropout, f32_dropout, isa)                                         \
  X(batch_norm_grad_sums, F32BatchNormGradSums, f32_batch_norm_grad_sums, isa)     \
  X(batch_norm_block_stats, F32BatchNormBlockStats, f32_batch_norm_block_stats, isa) \
  X(batch_norm_apply, F32BatchNormApply, f32_batch_norm_apply, isa)                \
  X(batch_norm_grad, F32BatchNormGrad, f32_batch_norm_grad, isa)                   \
  X(sgd, F32Sgd, f32_sgd, isa)                                                     \
  X(adam, F32Adam, f32_adam, isa)                                                  \
  X(depthwise, F32Depthwise, f32_depthwise, isa)                                   \
  X(depthwise_weight_grad, F32DepthwiseWeightGrad, f32_depthwise_weight_grad, isa) \
  X(max_pool_tiled_grad, F32MaxPoolTiledGrad, f32_max_pool_tiled_grad, isa)

// Declares function##__##isa with its type's signature.
#define RG_DECLARE_F32_VECTOR_KERNEL(member, Type, function, isa) std::remove_pointer_t<Type> function##__##isa;
#define RG_DECLARE_F32_VECTOR_KERNELS(isa) RG_F32_VECTOR_KERNEL_LIST(RG_DECLARE_F32_VECTOR_KERNEL, isa)

RG_DECLARE_F32_VECTOR_KERNELS(reference)
RG_DECLARE_F32_VECTOR_KERNELS(sse2)
RG_DECLARE_F32_VECTOR_KERNELS(avx)
RG_DECLARE_F32_VECTOR_KERNELS(avx2_fma)
RG_DECLARE_F32_VECTOR_KERNELS(avx512)

}  // namespace rg
