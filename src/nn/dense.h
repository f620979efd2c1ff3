// Fully connected layer: y[n x out] = x[n x in] * W + b, W stored [in x out] (PyTorch's
// is the transpose). In this layout the forward and dW products read W and dy untransposed,
// so the GEMM uses them in place instead of packing the largest matrix every step.
#pragma once

#include "nn/init.h"
#include "nn/layer.h"

namespace rg {

class CfgSection;

class Dense : public Layer {
 public:
  Dense(int64_t units, Init init, bool bias) : units_(units), init_(init), has_bias_(bias) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "dense"; }
  Result<Shape> configure(const Shape& input) override;
  Status init(Rng& rng, DType dtype) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::vector<Param*> params() override;
  int64_t parameter_count() const override { return units_ * in_ + (has_bias_ ? units_ : 0); }
  int64_t forward_flops_per_sample() const override { return 2 * units_ * in_; }
  LayerTraffic traffic(double in, double out) const override {
    return product_traffic(in, out, static_cast<double>(parameter_count()));
  }
  int64_t workspace_elements(int64_t n) const override;
  bool reads_f16_weights() const override { return true; }
  std::string describe() const override;

  int64_t inputs() const { return in_; }
  int64_t units() const { return units_; }
  const Tensor& weight() const { return weight_.value; }  // [in, out]
  const Tensor& bias() const { return bias_.value; }      // [out]; undefined without a bias

 private:
  int64_t units_;
  Init init_;
  bool has_bias_;
  int64_t in_ = 0;
  Param weight_;  // [in, out]; f16 in a model with f16 weights (Model::store_weights_f16)
  Param bias_;    // [out]

  // y = x W + b with W kept in f16: W's rows widened a block at a time into the workspace.
  void forward_f16_weights(const Tensor& x, const Tensor& y, const LayerContext& ctx);
};

}  // namespace rg
