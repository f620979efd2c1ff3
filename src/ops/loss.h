// Losses over a batch of `rows` predictions: each returns the loss summed over the rows and
// writes d(loss)/d(input) scaled by `grad_scale` (1/rows for a plain mean; the trainer
// passes 1/global_batch so micro-batches accumulate to the large batch's gradient).
// Sums run in double whatever T is, so a batch's loss does not drift with its size.
// LossKind names them for the CPU model (nn/loss.h) and the device's launchers (opencl/loss.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "ops/activation.h"

namespace rg {

// none: the model has no loss of its own; it trains through another (a GAN's generator).
enum class LossKind { softmax_cross_entropy, mse, bce_with_logits, none };

Result<LossKind> loss_from_name(const std::string& name);
const char* loss_name(LossKind kind);

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

// Losses that are a mean over the cols of each row of an elementwise term f(x, t):
// returns the sum over rows of the row means and writes dx = f'(x, t) / cols * grad_scale.
// `term(x, t, &derivative)` gives f and df/dx in double.
template <class T, class Term>
double elementwise_mean_loss(int64_t rows, int64_t cols, const T* x, const T* target, T grad_scale, T* dx, Term term) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double row = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      double derivative = 0;
      row += term(static_cast<double>(x[i]), static_cast<double>(target[i]), &derivative);
      if (dx != nullptr) dx[i] = static_cast<T>(derivative / static_cast<double>(cols)) * grad_scale;
    }
    total += row / static_cast<double>(cols);
  }
  return total;
}

// Squared error: f = (x - t)^2, f' = 2 (x - t).
template <class T>
double mse(int64_t rows, int64_t cols, const T* x, const T* target, T grad_scale, T* dx) {
  return elementwise_mean_loss(rows, cols, x, target, grad_scale, dx, [](double xi, double ti, double* d) {
    *d = 2.0 * (xi - ti);
    return (xi - ti) * (xi - ti);
  });
}

// Binary cross-entropy on logits x against targets t in [0, 1], in the stable form
// f = max(x,0) - x t + log(1 + e^-|x|); f' = sigmoid(x) - t.
template <class T>
double bce_with_logits(int64_t rows, int64_t cols, const T* x, const T* target, T grad_scale, T* dx) {
  return elementwise_mean_loss(rows, cols, x, target, grad_scale, dx, [](double xi, double ti, double* d) {
    *d = sigmoid(xi) - ti;
    return (xi > 0 ? xi : 0) - xi * ti + std::log1p(std::exp(-std::fabs(xi)));
  });
}

}  // namespace rg
