// Activation layers over the templated math of ops/activation.h.
#include "nn/activation.h"

#include "nn/cfg.h"
#include "ops/activation.h"

namespace rg {

namespace {
struct KindName {
  ActivationKind kind;
  const char* name;
};
constexpr KindName kNames[] = {{ActivationKind::relu, "relu"},
                               {ActivationKind::leaky_relu, "leaky_relu"},
                               {ActivationKind::sigmoid, "sigmoid"},
                               {ActivationKind::tanh, "tanh"},
                               {ActivationKind::softmax, "softmax"}};
}  // namespace

Result<std::unique_ptr<Layer>> Activation::from_cfg(const CfgSection& section) {
  for (const auto& entry : kNames) {
    if (section.kind() != entry.name) continue;
    double slope = 0.01;
    if (entry.kind == ActivationKind::leaky_relu) {
      RG_ASSIGN(slope, section.get_float_or("slope", 0.01, 0.0, 1.0));
    }
    return std::unique_ptr<Layer>(new Activation(entry.kind, slope));
  }
  return Status::error(section.where() + "not an activation");
}

std::string Activation::kind() const {
  for (const auto& entry : kNames)
    if (entry.kind == kind_) return entry.name;
  return "?";
}

Result<Shape> Activation::configure(const Shape& input) { return input; }

void Activation::forward(const Tensor& x, const Tensor& y, const LayerContext&) {
  const int64_t n = x.numel();
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    T* out = y.data<T>();
    switch (kind_) {
      case ActivationKind::relu: relu_forward(n, in, out); break;
      case ActivationKind::leaky_relu: leaky_relu_forward(n, static_cast<T>(slope_), in, out); break;
      case ActivationKind::sigmoid: sigmoid_forward(n, in, out); break;
      case ActivationKind::tanh: tanh_forward(n, in, out); break;
      case ActivationKind::softmax: softmax_forward(x.shape()[0], n / x.shape()[0], in, out); break;
    }
  });
}

void Activation::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext&) {
  if (!dx.defined()) return;  // nothing to learn here
  const int64_t n = x.numel();
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* g = dy.data<T>();
    T* out = dx.data<T>();
    switch (kind_) {
      case ActivationKind::relu: relu_backward(n, x.data<T>(), g, out); break;
      case ActivationKind::leaky_relu: leaky_relu_backward(n, static_cast<T>(slope_), x.data<T>(), g, out); break;
      case ActivationKind::sigmoid: sigmoid_backward(n, y.data<T>(), g, out); break;
      case ActivationKind::tanh: tanh_backward(n, y.data<T>(), g, out); break;
      case ActivationKind::softmax: softmax_backward(x.shape()[0], n / x.shape()[0], y.data<T>(), g, out); break;
    }
  });
}

std::string Activation::describe() const {
  return kind_ == ActivationKind::leaky_relu ? "slope " + std::to_string(slope_) : "";
}

}  // namespace rg
