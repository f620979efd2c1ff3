// Batch normalisation over the innermost dimension: the channels of [h, w, c] images (after
// a convolution) or the features of [f] vectors (after a dense layer). In training the
// statistics are over every other position of the batch (n*h*w values per channel) and
// running statistics are updated as PyTorch does (momentum 0.1, unbiased variance); in
// inference the running statistics are used. gamma and beta train; the running statistics
// are buffers, saved in checkpoints.
#pragma once

#include <vector>

#include "nn/layer.h"

namespace rg {

class CfgSection;

class BatchNorm : public Layer {
 public:
  BatchNorm(double momentum, double eps) : momentum_(momentum), eps_(eps) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "batchnorm"; }
  Result<Shape> configure(const Shape& input) override;
  Status init(Rng& rng, DType dtype) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::vector<Param*> params() override { return {&gamma_, &beta_}; }
  std::vector<Param*> buffers() override { return {&running_mean_, &running_var_}; }
  int64_t parameter_count() const override { return 2 * channels_; }
  int64_t buffer_count() const override { return 2 * channels_; }
  LayerTraffic traffic(double in, double out) const override {
    (void)out;
    return batch_norm_traffic(in, static_cast<double>(parameter_count()));
  }
  // Training normalizes by the batch's own statistics.
  bool needs_whole_batch(const LayerContext& ctx) const override { return ctx.training; }
  bool fuses_relu() const override { return true; }
  std::string describe() const override;

  // Inference: y = gamma (x - running_mean) / sqrt(running_var + eps) + beta, per channel.
  double eps() const { return eps_; }
  double momentum() const { return momentum_; }
  int64_t channels() const { return channels_; }
  const Tensor& gamma() const { return gamma_.value; }
  const Tensor& beta() const { return beta_.value; }
  const Tensor& running_mean() const { return running_mean_.value; }
  const Tensor& running_var() const { return running_var_.value; }

 private:
  double momentum_, eps_;
  int64_t channels_ = 0;
  Param gamma_, beta_;                 // [channels]
  Param running_mean_, running_var_;   // [channels], no grad
  // backward for values of type T.
  template <class T>
  void backward_as(const Tensor& x, const Tensor& dy, const Tensor& dx, const LayerContext& ctx);

  // Of the last forward, for backward: the statistics, and y = x scale + shift's constants.
  std::vector<double> mean_, inv_std_, scale_, shift_;
};

}  // namespace rg
