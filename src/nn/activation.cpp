// Activation layers over the templated math of ops/activation.h.
#include "nn/activation.h"

#include "nn/cfg.h"
#include "ops/activation.h"
#include "ops/elementwise.h"

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

UnaryOp unary_op_of(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::relu: return UnaryOp::relu;
    case ActivationKind::leaky_relu: return UnaryOp::leaky_relu;
    case ActivationKind::sigmoid: return UnaryOp::sigmoid;
    case ActivationKind::tanh: return UnaryOp::tanh;
    case ActivationKind::softmax: break;
  }
  RG_CHECK(false, "softmax is not elementwise");
  return UnaryOp::relu;
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
