// Losses over a batch of `rows` predictions: each returns the loss summed over the rows and
// writes d(loss)/d(input) scaled by `grad_scale` (1/rows for a plain mean; the trainer
// passes 1/global_batch so micro-batches accumulate to the large batch's gradient).
// Sums run in double whatever T is, so a batch's loss does not drift with its size.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/activation.h"

namespace rg {

// Softmax + cross-entropy on logits x[rows x cols] against class labels[rows].
// dx = (softmax(x) - onehot(label)) * grad_scale. Returns the sum of -log p(label).
template <class T>
double softmax_xent(int64_t rows, int64_t cols, const T* x, const int32_t* labels, T grad_scale, T* dx) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T max = xr[0];
    for (int64_t c = 1; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(xr[c] - max));
    const double log_sum = std::log(sum);
    total += log_sum - static_cast<double>(xr[labels[r]] - max);
    if (dx != nullptr) {
      for (int64_t c = 0; c < cols; ++c) {
        const double p = std::exp(static_cast<double>(xr[c] - max) - log_sum);
        dx[r * cols + c] = static_cast<T>((p - (c == labels[r] ? 1.0 : 0.0))) * grad_scale;
      }
    }
  }
  return total;
}

// Squared error, mean over the cols of each row: loss_r = sum_c (x - t)^2 / cols.
// dx = 2 (x - t) / cols * grad_scale. Returns the sum over rows of loss_r.
template <class T>
double mse(int64_t rows, int64_t cols, const T* x, const T* target, T grad_scale, T* dx) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double row = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      const double d = static_cast<double>(x[i]) - static_cast<double>(target[i]);
      row += d * d;
      if (dx != nullptr) dx[i] = static_cast<T>(2.0 * d / static_cast<double>(cols)) * grad_scale;
    }
    total += row / static_cast<double>(cols);
  }
  return total;
}

// Binary cross-entropy on logits x against targets t in [0, 1], mean over cols:
// loss = max(x,0) - x t + log(1 + e^-|x|) (stable form); dx = (sigmoid(x) - t) / cols * grad_scale.
template <class T>
double bce_with_logits(int64_t rows, int64_t cols, const T* x, const T* target, T grad_scale, T* dx) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double row = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      const double xi = static_cast<double>(x[i]), ti = static_cast<double>(target[i]);
      row += (xi > 0 ? xi : 0) - xi * ti + std::log1p(std::exp(-std::fabs(xi)));
      if (dx != nullptr) dx[i] = static_cast<T>((sigmoid(xi) - ti) / static_cast<double>(cols)) * grad_scale;
    }
    total += row / static_cast<double>(cols);
  }
  return total;
}

}  // namespace rg
