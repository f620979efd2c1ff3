// Activation layers: one kind per elementwise op of RG_UNARY_OP_LIST (cpu/ukernels/unary_op.h:
// relu, leaky_relu, sigmoid, tanh, ...) and row-wise softmax. Shape-preserving; backward reads
// the forward's x or y, never a saved mask.
#pragma once

#include "cpu/ukernels/unary_op.h"
#include "nn/layer.h"

namespace rg {

class CfgSection;

// The elementwise kinds, numbered as their UnaryOp, then softmax.
#define RG_ACTIVATION_KIND(name, reads) name,
enum class ActivationKind : int { RG_UNARY_OP_LIST(RG_ACTIVATION_KIND) softmax };
#undef RG_ACTIVATION_KIND
// The elementwise kinds as kernel ops (softmax, row-wise, is not one: a bug).
UnaryOp unary_op_of(ActivationKind kind);
// The elementwise kinds differentiate from their input x or output y as their op says;
// softmax reads y.
inline bool grad_reads_input(ActivationKind kind) {
  return kind != ActivationKind::softmax && unary_grad_reads_input(static_cast<UnaryOp>(kind));
}
// Every activation's layer kind name, in ActivationKind's order ("relu", ..., "softmax").
const char* activation_name(ActivationKind kind);
constexpr int kActivationKinds = kUnaryOps + 1;

class Activation : public Layer {
 public:
  explicit Activation(ActivationKind kind, double slope = 0.01) : kind_(kind), slope_(slope) {}
  // Builds the activation named by section.kind().
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override;
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::string describe() const override;
  LayerTraffic traffic(double in, double out) const override {
    (void)out;
    return elementwise_traffic(in);
  }

  ActivationKind activation() const { return kind_; }
  double slope() const { return slope_; }

 private:
  ActivationKind kind_;
  double slope_;  // leaky_relu's negative slope
};

}  // namespace rg
