// Quantization-aware training (QAT): the model trains in f32 while it sees the values the int8
// export will compute with, so it learns around their rounding.
//   weights  of conv and dense layers: before each training forward replaced by their grid
//            values (symmetric per output channel, weight_channel_step of the weight bits: 8,
//            or fewer for w4a8-qat; as the export quantizes them), the f32
//            masters put back after backward. The gradient computed at the grid values updates
//            the masters unchanged: the straight-through estimator.
//   values   at the points the export quantizes (the input, and each layer output that is not
//            fused into the next: conv/dense before batchnorm or relu, batchnorm before relu;
//            identities and max pooling keep their input's grid; the rules are the int8 engine's,
//            from nn/layer_registry.h; in a graph model, every output another layer reads
//            too is a point): rounded in place to the grid (int8, or 2^bits levels of it:
//            w4a4-qat) of a range tracked during training (moving averages of batch min and
//            max, like PyTorch's MovingAverageMinMaxObserver). Backward passes their gradient
//            through.
//            The model's output is not rounded (logits clipped to an early range would stall the
//            loss), only its range tracked: the export dequantizes it by that range.
// BatchNorm folding commutes with per-channel symmetric quantization (scaling a channel by a
// constant scales its step alike), so the grid the training saw is the one the export builds.
//
// `retrograd precision` runs QAT from the f32 run (QatFineTune): by default it reruns the run's
// last epochs through fake quantization from the run's state before them; or a copy of the
// trained f32 model (qat_copy_of) trains on for more epochs at lr_scale x the run's rate.
// `train --train-precision int8-qat` trains from scratch instead.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "nn/model.h"

namespace rg {

class FakeQuantizer {
 public:
  // `model` must outlive this; it is not changed until quantize_weights(). weight_bits and
  // activation_bits: 2 to 8 (the values' grid: activation_params of those bits).
  explicit FakeQuantizer(Model& model, int weight_bits = 8, int activation_bits = 8, double averaging = 0.01);

  // Model's output hook: observes (in training) and rounds point p's values in place.
  void on_values(size_t point, const Tensor& values, const LayerContext& ctx);
  // Allocates the copies of the masters (once, after the model's init).
  Status reserve();
  // Bytes reserve() allocates; master_bytes_of: the same of a quantizer of `model`, made
  // without one (the memory planner's figure).
  int64_t master_bytes() const;
  static int64_t master_bytes_of(const Model& model);
  // Before a forward: conv/dense weights onto their grid, the masters kept aside.
  void quantize_weights();
  // After backward: the masters back (their gradients stay, computed at the grid values).
  void restore_weights();

  // Each point's range (point 0 the input, i + 1 layer i's output) for the int8 export; a
  // point never observed reports [0, 0].
  std::vector<std::pair<float, float>> ranges() const;
  // Ranges saved in a checkpoint setting and read back ("lo:hi,lo:hi,..."); errors name the rule.
  std::string ranges_text() const;
  Status set_ranges_text(const std::string& text);
  // Points whose values are rounded (for the report and tests).
  const std::vector<bool>& rounded_points() const { return rounded_; }

 private:
  int weight_bits_, activation_bits_;
  double averaging_;
  std::vector<bool> rounded_;  // per point: its values rounded to the grid
  std::vector<bool> tracked_;  // per point: its range tracked (the rounded ones and the model's output)
  std::vector<bool> seen_;
  std::vector<float> lo_, hi_;
  std::vector<Param*> weights_;   // conv and dense weights, [k, outputs]
  std::vector<Tensor> masters_;   // their f32 values while the grid values are in place
};

// How the precision report's int8-qat row comes from the f32 run. One epoch is ~940 steps on
// Fashion-MNIST at batch 64: the moving ranges (averaging 0.01) forget their first batch
// (0.99^940 ~ 1e-4) and the weights adapt to the grid, at a fifth of a 5-epoch run's cost.
enum class QatStart {
  last_epochs,   // the run's last `epochs` epochs again, through fake int8, from the run's state
                 // (weights, optimizer state) before them: the same steps, data order and rates,
                 // so the change against fp32 is what quantization costs
  extra_epochs,  // the trained model `epochs` more at a constant lr_scale x the run's base rate
                 // (what a user holding a trained model does; the lower rate keeps the weights
                 // near the trained optimum); its change includes what the extra training gains
};
struct QatFineTune {
  QatStart start = QatStart::last_epochs;
  int64_t epochs = 1;
  double lr_scale = 0.1;  // extra_epochs: the constant rate = lr_scale x the run's base rate
};

// Where the fine-tune starts: a model of `trained`'s cfg holding its weights and batch-norm
// statistics. `seed` initialises what the copy does not take over (dropout's streams).
Result<std::unique_ptr<Model>> qat_copy_of(Model& trained, uint64_t seed);

}  // namespace rg
