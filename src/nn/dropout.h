// Inverted dropout: in training each value is zeroed with probability `rate` and the rest
// scaled by 1 / (1 - rate); in inference it passes through. The mask is not stored: it is
// drawn again in backward from the same (layer seed, ctx.noise_stream, sample, value of the
// sample), counter-based (ops/dropout_mask.h), the noise stream derived by the trainer from the
// step, so a resumed run draws the same masks as an uninterrupted one, and a step split into
// micro-batches the same as one whole batch.
#pragma once

#include "nn/layer.h"
#include "ops/dropout_mask.h"  // the mask's constants and streams, shared with the device

namespace rg {

class CfgSection;

class Dropout : public Layer {
 public:
  explicit Dropout(double rate) : rate_(rate) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "dropout"; }
  Result<Shape> configure(const Shape& input) override { return input; }
  Status init(Rng& rng, DType dtype) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::string describe() const override;
  LayerTraffic traffic(double in, double out) const override { return moving_traffic(in, out); }

  double rate() const { return rate_; }
  uint64_t seed() const { return seed_; }  // drawn at init

 private:
  // to[i] = keep(i) ? from[i] / (1 - rate) : 0 with the mask of ctx.noise_stream; row r's mask
  // is that of sample ctx.row_offset + r of the step (dropout_draw's counters).
  void apply_mask(const Tensor& from, const Tensor& to, const LayerContext& ctx) const;

  double rate_;
  uint64_t seed_ = 0;  // drawn from the model's seed at init
};

}  // namespace rg
