// Int8 inference of a trained model (post-training quantization): the model's layers regrouped
// into stages, each run in int8 or kept in f32 by a per-layer policy. A graph model's stages
// read the stages of their layer's inputs (Int8StagePlan::inputs), and no fusion takes in a
// layer whose input another layer reads too (int8_fuses_into_previous).
//   conv|dense [+ batchnorm] [+ relu]  -> one int8 GEMM stage: BN folded into the weights,
//                                         ReLU into the requantization's clamp
//   add of two [+ relu]                -> the int8 add (ops/qs8_add.h), ReLU as its clamp
//   maxpool (on int8 input)            -> int8 max pooling (same scale and zero point)
//   dropout, flatten, reshape          -> nothing (inference identities on NHWC rows)
//   anything else, or a layer the policy keeps f32 -> the f32 layer itself, between a
//                                         dequantize and a quantize
// Which kind is which (int8 role, what fuses after what): its row in nn/layer_registry.cpp.
// Activation scales come from calibration: the f32 model's forward over a few batches, with
// the range chosen by min/max or percentiles; the model's own output always by min/max
// (clipping logits would only distort what is dequantized). Int8Executor runs it behind the
// executor interface (nn/executor.h) that eval and the precision rows score through.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "ops/quant_params.h"
#include "quant/int8_plan.h"

namespace rg {

struct Int8Options {
  CalibrationMethod calibration = CalibrationMethod::percentile;
  double percentile = 99.99;
  int64_t calibration_batches = 8;
  // Layers kept in f32: names ("conv1"), or "first" / "last" for the first / last conv or dense.
  std::set<std::string> keep_f32;
  // Activation ranges learned in quantization-aware training (FakeQuantizer::ranges: point 0 the
  // input, i + 1 layer i's output): when given, they replace calibration.
  std::vector<std::pair<float, float>> ranges;
  // Single-channel convs (first layers on grey images) as a direct int8 conv with a 2x2 max
  // pooling after them fused, where it pays; false: always im2col and the GEMM (for tests:
  // both give the same bits).
  bool direct_conv = true;
  // 3x3 stride-1 convs of 8 or more input channels by integer Winograd F(2x2, 3x3)
  // (int8_winograd.h); false: im2col and the GEMM (for tests: both give the same bits).
  bool winograd = true;
  // The conv and dense weights' grid (weight_qmax: 2 to 8 bits; 8 is int8). At 4 bits or fewer
  // the GEMM path holds them two a byte and Winograd is not taken (its transformed weights would
  // hold 7 times as many bytes); the direct single-channel conv and the depthwise conv hold their
  // own (small) forms of them, as at 8 bits.
  int weight_bits = 8;
  // The activations' grid (activation_params: 2 to 8 bits, 2^bits levels inside int8; the model's
  // output keeps 8). The CPU's stages clamp to it; an OpenCL device refuses fewer than 8 (for now).
  int activation_bits = 8;
  // The ISA whose int8 tiles the weights are packed for; unset: the active one.
  bool has_isa = false;
  Isa isa = Isa::reference;
};

// What ran in which precision, per layer of the model (for the report).
struct LayerPrecision {
  std::string layer;      // "conv1"
  std::string precision;  // "int8", "f32", or "-" (an identity at inference)
  std::string note;       // why f32, or what was fused: "batchnorm2 folded, relu2 fused"
  std::string kind;       // the layer's cfg section: "conv"
};

class Int8Stage;

// What eval --profile collects from Int8Model::forward: each stage's wall time over the calls
// it ran, and the samples those calls held (report/int8_profile_table.h prints it).
struct Int8StageTimes {
  std::vector<double> seconds;  // per stage, in plan order
  int64_t samples = 0, calls = 0;
};

// "int8 (7 of 8 computing layers)": the layers run in int8 of those not run as identities.
std::string int8_description(const std::vector<LayerPrecision>& layers);

// quantize_s8 (quant_params.h) bit for bit, on SSE2 vectors: what the int8 model's quantize runs.
void quantize_s8_rows(int64_t n, const float* x, QuantParams p, int8_t* q);

class Int8Model {
 public:
  ~Int8Model();
  // `model` must outlive this (f32 stages run its layers); `calibration` [N, input...] f32
  // samples, run through the model in batches of `batch` to find activation ranges.
  static Result<std::unique_ptr<Int8Model>> quantize(Model& model, const Tensor& calibration, int64_t batch,
                                                     const Int8Options& options, ThreadPool* pool);

  Status reserve(int64_t batch);
  // x [n, input...] f32 -> the model's output [n, output...] f32 (a view of a buffer).
  Tensor forward(const Tensor& x, ThreadPool* pool);

  const std::vector<LayerPrecision>& precisions() const { return precisions_; }
  // The stages as engine-neutral descriptions, one per stage, in order (int8_plan.h).
  const std::vector<Int8StagePlan>& plan() const { return plan_; }
  // Bytes of the weights as this engine holds them (packed int8, int32 bias and requantization
  // constants; f32 layers at 4 bytes a value).
  int64_t weight_bytes() const;
  // The int8 layers' weights at their storage width alone (4 bits up to 4, else 8;
  // Int8StagePlan::weight_payload_bytes): at
  // weight_bits <= 4 half the 8-bit model's (exactly, for layers of an even weight count).
  int64_t weight_payload_bytes() const;
  // Bytes of the stages' output buffers and scratch (patch matrices) reserve(batch) allocates,
  // and for the reserved batch.
  int64_t buffer_bytes(int64_t batch) const;
  int64_t buffer_bytes() const { return buffer_bytes(reserved_); }
  // The f32 model it was made from (whose layers its f32 stages run).
  const Model& source() const { return *source_; }
  // "9 of 11 layers int8" and the stage list.
  std::string summary() const;
  // Stage s's one-line description ("int8 Winograd F(2x2, 3x3) 288 x 32 (...)").
  std::string stage_description(size_t s) const;
  // From now on each forward adds its stages' times to `times` (null: none, the default);
  // `times` must outlive the calls.
  void set_stage_times(Int8StageTimes* times) { times_ = times; }

 private:
  Int8Model() = default;
  const Model* source_ = nullptr;
  std::vector<Int8StagePlan> plan_;  // stages_[i] was made from plan_[i]
  std::vector<std::unique_ptr<Int8Stage>> stages_;
  std::vector<Tensor> outputs_;  // per stage, [batch, ...]
  int output_stage_ = -1;        // the stage whose output is the model's (-1: the input itself)
  std::vector<LayerPrecision> precisions_;
  int64_t reserved_ = 0;
  Int8StageTimes* times_ = nullptr;
};

// An Int8Model as an Executor (nn/executor.h): its forward on `pool` (which must outlive this).
class Int8Executor : public Executor {
 public:
  Int8Executor(Int8Model& model, ThreadPool* pool) : int8_(model), pool_(pool) {}
  const Model& model() const override { return int8_.source(); }
  std::string storage() const override { return "int8"; }
  std::string description() const override { return int8_description(int8_.precisions()); }
  int64_t weight_bytes() const override { return int8_.weight_bytes(); }
  ExecutorBytes reserved_bytes(int64_t rows) const override { return {int8_.buffer_bytes(rows), 0}; }
  Status reserve(int64_t rows) override { return int8_.reserve(rows); }
  Result<Tensor> forward(const Tensor& x) override { return int8_.forward(x, pool_); }

 private:
  Int8Model& int8_;
  ThreadPool* pool_;
};

}  // namespace rg
