// Activation layers over the templated math of ops/activation.h.
#include "nn/activation.h"

#include "nn/cfg.h"
#include "ops/activation.h"
#include "ops/elementwise.h"

namespace rg {

const char* activation_name(ActivationKind kind) {
  return kind == ActivationKind::softmax ? "softmax" : unary_op_name(static_cast<UnaryOp>(kind));
}

Result<std::unique_ptr<Layer>> Activation::from_cfg(const CfgSection& section) {
  for (int k = 0; k < kActivationKinds; ++k) {
    const auto kind = static_cast<ActivationKind>(k);
    if (section.kind() != activation_name(kind)) continue;
    double slope = 0.01;
    if (kind == ActivationKind::leaky_relu) {
      RG_ASSIGN(slope, section.get_float_or("slope", 0.01, 0.0, 1.0));
    }
    return std::unique_ptr<Layer>(new Activation(kind, slope));
  }
  return Status::error(section.where() + "not an activation");
}

std::string Activation::kind() const { return activation_name(kind_); }

Result<Shape> Activation::configure(const Shape& input) { return input; }

UnaryOp unary_op_of(ActivationKind kind) {
  RG_CHECK(kind != ActivationKind::softmax, "softmax is not elementwise");
  return static_cast<UnaryOp>(kind);
}

void Activation::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.numel();
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (kind_ == ActivationKind::softmax) {
      softmax_rows(x.shape()[0], n / x.shape()[0], x.data<T>(), y.data<T>());
    } else {
      unary(ctx.pool, unary_op_of(kind_), n, static_cast<T>(slope_), x.data<T>(), y.data<T>());
    }
  });
}

void Activation::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  if (!dx.defined()) return;  // nothing to learn here
  const int64_t n = x.numel();
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (kind_ == ActivationKind::softmax) {
      softmax_backward(x.shape()[0], n / x.shape()[0], y.data<T>(), dy.data<T>(), dx.data<T>());
      return;
    }
    unary_grad(ctx.pool, unary_op_of(kind_), n, static_cast<T>(slope_), (grad_reads_input(kind_) ? x : y).data<T>(), dy.data<T>(),
               dx.data<T>());
  });
}

std::string Activation::describe() const {
  return kind_ == ActivationKind::leaky_relu ? "slope " + std::to_string(slope_) : "";
}

}  // namespace rg
