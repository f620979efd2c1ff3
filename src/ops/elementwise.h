// Row and elementwise helpers the layers call for f32 (the active ISA's kernels) and f64
// (plain loops, for gradient checks): the same overload-on-type pattern as gemm().
#pragma once

#include <cstdint>

#include "cpu/kernel_tables.h"
#include "ops/activation.h"

namespace rg {

// y[r][c] += bias[c]
inline void add_bias(int64_t rows, int64_t cols, const float* bias, float* y) {
  f32_vector().add_bias(rows, cols, bias, y);
}
inline void add_bias(int64_t rows, int64_t cols, const double* bias, double* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] += bias[c];
}

// sums[c] += sum over rows of x[r][c]
inline void column_sum(int64_t rows, int64_t cols, const float* x, float* sums) {
  f32_vector().column_sum(rows, cols, x, sums);
}
inline void column_sum(int64_t rows, int64_t cols, const double* x, double* sums) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) sums[c] += x[r * cols + c];
}

// Row-wise softmax of x [rows x cols] into y.
inline void softmax_rows(int64_t rows, int64_t cols, const float* x, float* y) {
  f32_vector().softmax_rows(rows, cols, x, y);
}
inline void softmax_rows(int64_t rows, int64_t cols, const double* x, double* y) { softmax_forward(rows, cols, x, y); }

// y = f(x) for the elementwise activations.
inline void unary(UnaryOp op, int64_t n, float slope, const float* x, float* y) {
  f32_vector().unary(op, n, slope, x, y);
}
inline void unary(UnaryOp op, int64_t n, double slope, const double* x, double* y) {
  unary_forward(op, n, slope, x, y);
}

// dx = dy * f'(.), `xy` the forward's x (relu family) or y (sigmoid, tanh).
inline void unary_grad(UnaryOp op, int64_t n, float slope, const float* xy, const float* dy, float* dx) {
  f32_vector().unary_grad(op, n, slope, xy, dy, dx);
}
inline void unary_grad(UnaryOp op, int64_t n, double slope, const double* xy, const double* dy, double* dx) {
  unary_backward(op, n, slope, xy, dy, dx);
}

}  // namespace rg
