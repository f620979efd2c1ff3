// Row and elementwise helpers the layers call for f32 (the active ISA's kernels, split over
// the pool) and f64 (plain loops, for gradient checks): the same overload-on-type pattern as gemm().
// The f32 work is split in blocks of a fixed size, never by the thread count, so every result is
// the same whatever the pool: elementwise ops at block edges that are multiples of any vector
// width, and column sums as per-block partial sums added in block order.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "cpu/kernel_tables.h"
#include "ops/activation.h"

namespace rg {

// Elements per block of split elementwise work: a few hundred microseconds of work at most,
// well above the pool's fork-join cost, and a multiple of every vector width.
constexpr int64_t kElementwiseBlock = int64_t{1} << 15;

// Rows per block of a row-wise op over `cols` columns (at least 1).
inline int64_t rows_per_block(int64_t cols) { return cols >= kElementwiseBlock ? 1 : kElementwiseBlock / cols; }

// body(s0, s1) over a batch's samples [s0, s1), split as every per-sample pass splits them
// (parallel_for's chunks of `samples` at grain 1: each thread the samples a convolution or a pool
// before it wrote, still in its cache) where the batch holds `values` of at least two blocks,
// else inline. For exact elementwise work (a bias, a relu and its gradient): no bit depends on it.
template <class Body>
void by_samples(ThreadPool* pool, int64_t samples, int64_t values, const Body& body) {
  parallel_for(values >= 2 * kElementwiseBlock ? pool : nullptr, samples, 1, body);
}

// y[r][c] += bias[c]
inline void add_bias(ThreadPool* pool, int64_t rows, int64_t cols, const float* bias, float* y) {
  parallel_for(pool, rows, rows_per_block(cols),
               [&](int64_t r0, int64_t r1) { f32_vector().add_bias(r1 - r0, cols, bias, y + r0 * cols); });
}
inline void add_bias(ThreadPool*, int64_t rows, int64_t cols, const double* bias, double* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
}

// y[r][c] += bias[c] (bias null: nothing to add), then y = relu(y) where `relu`, a block of rows at
// a time: a layer's bias and the relu it runs after it (Layer::fuses_relu) in one pass over y, the
// bits of add_bias and then unary's relu.
inline void bias_relu(ThreadPool* pool, int64_t rows, int64_t cols, const float* bias, bool relu, float* y) {
  if (bias == nullptr && !relu) return;
  parallel_for(pool, rows, rows_per_block(cols), [&](int64_t r0, int64_t r1) {
    float* block = y + r0 * cols;
    if (bias != nullptr) f32_vector().add_bias(r1 - r0, cols, bias, block);
    if (relu) f32_vector().unary(UnaryOp::relu, (r1 - r0) * cols, 0.0f, block, block);
  });
}
inline void bias_relu(ThreadPool* pool, int64_t rows, int64_t cols, const double* bias, bool relu, double* y) {
  if (bias != nullptr) add_bias(pool, rows, cols, bias, y);
  if (relu) relu_forward(rows * cols, y, y);
}

// sums[c] += sum over rows of x[r][c]
void column_sum(ThreadPool* pool, int64_t rows, int64_t cols, const float* x, float* sums);
inline void column_sum(ThreadPool*, int64_t rows, int64_t cols, const double* x, double* sums) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) sums[c] += x[r * cols + c];
}

// Row-wise softmax of x [rows x cols] into y.
inline void softmax_rows(int64_t rows, int64_t cols, const float* x, float* y) {
  f32_vector().softmax_rows(rows, cols, x, y);
}
inline void softmax_rows(int64_t rows, int64_t cols, const double* x, double* y) { softmax_forward(rows, cols, x, y); }

// y = f(x) for the elementwise activations.
inline void unary(ThreadPool* pool, UnaryOp op, int64_t n, float slope, const float* x, float* y) {
  parallel_for(pool, n, kElementwiseBlock,
               [&](int64_t b, int64_t e) { f32_vector().unary(op, e - b, slope, x + b, y + b); });
}
inline void unary(ThreadPool*, UnaryOp op, int64_t n, double slope, const double* x, double* y) {
  unary_forward(op, n, slope, x, y);
}

// dx = dy * f'(.), `xy` the forward's x (relu family) or y (sigmoid, tanh).
inline void unary_grad(ThreadPool* pool, UnaryOp op, int64_t n, float slope, const float* xy, const float* dy,
                       float* dx) {
  parallel_for(pool, n, kElementwiseBlock,
               [&](int64_t b, int64_t e) { f32_vector().unary_grad(op, e - b, slope, xy + b, dy + b, dx + b); });
}
inline void unary_grad(ThreadPool*, UnaryOp op, int64_t n, double slope, const double* xy, const double* dy,
                       double* dx) {
  unary_backward(op, n, slope, xy, dy, dx);
}

}  // namespace rg
