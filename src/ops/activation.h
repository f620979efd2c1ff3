// Elementwise activations over n elements, templated on float/double so the same
// code serves training (float) and gradient checks (double). Backward multiplies the
// incoming gradient dy by the derivative, written from the forward's input x or output y.
#pragma once

#include <cmath>
#include <cstdint>

#include "cpu/ukernels/unary_op.h"

namespace rg {

template <class T>
void relu_forward(int64_t n, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : T(0);
}
// d relu(x)/dx = [x > 0]
template <class T>
void relu_backward(int64_t n, const T* x, const T* dy, T* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > T(0) ? dy[i] : T(0);
}

template <class T>
void leaky_relu_forward(int64_t n, T slope, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? x[i] : slope * x[i];
}
template <class T>
void leaky_relu_backward(int64_t n, T slope, const T* x, const T* dy, T* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > T(0) ? dy[i] : slope * dy[i];
}

// relu6(x) = min(max(x, 0), 6) (MobileNet's): x in (0, 6), 0 below (and for a NaN), 6 above.
template <class T>
void relu6_forward(int64_t n, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > T(0) ? (x[i] < T(6) ? x[i] : T(6)) : T(0);
}
// d relu6(x)/dx = [0 < x < 6]
template <class T>
void relu6_backward(int64_t n, const T* x, const T* dy, T* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = x[i] > T(0) && x[i] < T(6) ? dy[i] : T(0);
}

// 1 / (1 + e^-x), written so neither branch overflows.
template <class T>
T sigmoid(T x) {
  if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}
template <class T>
void sigmoid_forward(int64_t n, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = sigmoid(x[i]);
}
// d sigmoid/dx = y (1 - y)
template <class T>
void sigmoid_backward(int64_t n, const T* y, const T* dy, T* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (T(1) - y[i]);
}

template <class T>
void tanh_forward(int64_t n, const T* x, T* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}
// d tanh/dx = 1 - y^2
template <class T>
void tanh_backward(int64_t n, const T* y, const T* dy, T* dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (T(1) - y[i] * y[i]);
}

// The elementwise activations by name; `slope` is leaky_relu's.
template <class T>
void unary_forward(UnaryOp op, int64_t n, T slope, const T* x, T* y) {
  switch (op) {
    case UnaryOp::relu: relu_forward(n, x, y); break;
    case UnaryOp::leaky_relu: leaky_relu_forward(n, slope, x, y); break;
    case UnaryOp::relu6: relu6_forward(n, x, y); break;
    case UnaryOp::sigmoid: sigmoid_forward(n, x, y); break;
    case UnaryOp::tanh: tanh_forward(n, x, y); break;
  }
}
// `xy` is the forward's x (relu, leaky_relu) or y (sigmoid, tanh).
template <class T>
void unary_backward(UnaryOp op, int64_t n, T slope, const T* xy, const T* dy, T* dx) {
  switch (op) {
    case UnaryOp::relu: relu_backward(n, xy, dy, dx); break;
    case UnaryOp::leaky_relu: leaky_relu_backward(n, slope, xy, dy, dx); break;
    case UnaryOp::relu6: relu6_backward(n, xy, dy, dx); break;
    case UnaryOp::sigmoid: sigmoid_backward(n, xy, dy, dx); break;
    case UnaryOp::tanh: tanh_backward(n, xy, dy, dx); break;
  }
}

// Row-wise softmax of x[rows x cols], max-subtracted.
template <class T>
void softmax_forward(int64_t rows, int64_t cols, const T* x, T* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    T max = xr[0];
    for (int64_t c = 1; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
    T sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += (yr[c] = std::exp(xr[c] - max));
    for (int64_t c = 0; c < cols; ++c) yr[c] /= sum;
  }
}
// dx_c = y_c (dy_c - sum_k dy_k y_k)
template <class T>
void softmax_backward(int64_t rows, int64_t cols, const T* y, const T* dy, T* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * yr[c];
    for (int64_t c = 0; c < cols; ++c) dx[r * cols + c] = yr[c] * (dyr[c] - dot);
  }
}

}  // namespace rg
