// One interface for what runs a model's inference (issue 31): the CPU model in f32 or f16 storage
// (ModelExecutor, below), the int8 engine (quant/int8_model.h's Int8Executor), the OpenCL model
// (opencl/model/cl_model.h's ClModelExecutor) and the OpenCL int8 engine (ClInt8Model). What
// scores a model (train/trainer.h's Trainer::evaluate: accuracy, loss, an autoencoder's MSE and
// PSNR) takes an Executor and never asks which one it is; `eval`, the `precision` rows and the
// GAN run's judge hand it theirs. Training is a StepRunner's (train/step_runner.h): one per
// executor that trains (the CPU model, the device model), holding its executor for scoring.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "nn/layer.h"
#include "nn/model.h"
#include "tensor/tensor.h"

namespace rg {

// The bytes an executor's reserve(rows) allocates, in host memory and in device memory.
struct ExecutorBytes {
  int64_t host = 0;
  int64_t device = 0;
  int64_t total() const { return host + device; }
};

class Executor {
 public:
  virtual ~Executor() = default;
  // The model it runs (its cfg, loss, target and shapes); every executor runs one Model's layers.
  virtual const Model& model() const = 0;
  const Shape& input_shape() const { return model().input_shape(); }
  const Shape& output_shape() const { return model().output_shape(); }
  // The precision it runs in, one word for reports and JSON: "fp32", "fp16", "int8", "int8-train".
  virtual std::string storage() const = 0;
  // The same with what it means for this model, for a report line: "int8 (7 of 8 computing
  // layers)"; storage() where there is nothing to add.
  virtual std::string description() const { return storage(); }
  // Where it runs: "the CPU", or the device's label.
  virtual std::string place() const { return "the CPU"; }
  // Bytes of the weights as this executor keeps them.
  virtual int64_t weight_bytes() const = 0;
  // What reserve(rows) allocates, computed without allocating (for planning).
  virtual ExecutorBytes reserved_bytes(int64_t rows) const = 0;
  // Buffers for batches of up to `rows` samples.
  virtual Status reserve(int64_t rows) = 0;
  // x [n, input...] f32, n <= the reserved rows -> the output [n, output...] f32 on the host,
  // valid until the next forward.
  virtual Result<Tensor> forward(const Tensor& x) = 0;
};

// The CPU Model's inference: Model::forward in `ctx` (its pool; ctx.gemm for fixed-point
// training's GEMMs), in the storage and weights the model has (Model::set_storage,
// store_weights_f16). `precision` names it when the caller knows better than the model (a
// Trainer's precision: "int8-qat" runs fake int8 through the model's values hook, "int8-train"
// or "w16a16g16" names its formats); empty: "fp16" for f16 storage or weights, "fixed-point"
// for fixed-point GEMMs, else "fp32".
class ModelExecutor : public Executor {
 public:
  ModelExecutor(Model& model, const LayerContext& ctx, std::string precision = "");
  const Model& model() const override { return model_; }
  std::string storage() const override;
  std::string description() const override;
  int64_t weight_bytes() const override { return model_.weight_bytes(); }
  ExecutorBytes reserved_bytes(int64_t rows) const override { return {model_.reserved_bytes(rows).total(), 0}; }
  Status reserve(int64_t rows) override { return model_.reserve(rows); }
  Result<Tensor> forward(const Tensor& x) override { return model_.forward(x, ctx_); }

 private:
  Model& model_;
  LayerContext ctx_;
  std::string precision_;
};

}  // namespace rg
