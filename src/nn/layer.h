// The layer interface: explicit forward and backward over batches, shapes per sample.
// Layers run in f32 for training and in f64 for gradient checks: the dtype of the
// tensors passed in picks the instantiation (see dispatch_float).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "nn/layer_traffic.h"
#include "ops/int8_dynamic_gemm.h"
#include "tensor/tensor.h"

namespace rg {

// A trainable tensor and its gradient (same shape and dtype).
struct Param {
  std::string name;  // "dense1.weight"
  Tensor value;
  Tensor grad;
  // A weight's output channels (a value's channel is its flat index mod this: per-channel
  // fixed-point formats); 0 for one scale (a bias, a norm's parameters).
  int64_t channels = 0;
};

class LayerProfile;
class Workspace;

struct LayerContext {
  ThreadPool* pool = nullptr;
  bool training = false;  // batch statistics in BatchNorm, masks in Dropout
  // backward adds to the param grads (true), or overwrites them (false: the first micro-batch
  // of a step, which saves zeroing every grad before it).
  bool accumulate_grads = true;
  // Scratch memory shared by the layers of a model (im2col panels); null: layers allocate.
  Workspace* workspace = nullptr;
  // Which random stream stochastic layers (Dropout) draw from in this forward; the backward
  // of a forward must see the same value. The trainer sets it from the step number.
  uint64_t noise_stream = 0;
  // Which sample of the step row 0 of this forward is: a step split into micro-batches (or a
  // batch run on row chunks) draws each sample's dropout mask from its place in the step, so
  // the split changes nothing.
  int64_t row_offset = 0;
  // How Dense and Conv layers run their f32 GEMMs (nn/layer_gemm.h): f32, or fixed_point with
  // each operand in its role's format of `formats` (int8 training: per-tensor dynamic scales,
  // the errors rounded stochastically from the stream (gemm_seed, noise_stream);
  // docs/quantization.md). f64 layers ignore it.
  GemmPrecision gemm = GemmPrecision::f32;
  FixedPointRoles formats = int8_training_roles();
  uint64_t gemm_seed = 0;
  // Times each layer's forward and backward phases where set (train --profile; nn/layer_profile.h).
  LayerProfile* profile = nullptr;
  // Set by the model for a layer whose fuses_relu() is true and that a relu follows: forward
  // writes relu(y) (into the relu's output), and backward gets the relu's output (as y) and its
  // output gradient (as dy, which it may overwrite) and applies the relu's gradient itself; the
  // relu layer runs neither (nn/model.h).
  bool fused_relu = false;
};

// A layer's own precision for its products (cfg key `precision`, train --layer-precision), in
// place of the run's: "fp32" (f32 GEMMs) or a fixed-point shorthand (ops/fixed_point_precision.h).
struct OwnPrecision {
  std::string name;  // "": the run's
  GemmPrecision gemm = GemmPrecision::f32;
  FixedPointRoles formats;
};

class Layer {
 public:
  virtual ~Layer() = default;

  virtual std::string kind() const = 0;  // the cfg section name: "dense", "relu"
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const OwnPrecision& own_precision() const { return own_precision_; }
  void set_own_precision(OwnPrecision precision) { own_precision_ = std::move(precision); }
  // `ctx` with this layer's own precision in place of the run's, where it has one.
  LayerContext in_own_precision(const LayerContext& ctx) const {
    if (own_precision_.name.empty()) return ctx;
    LayerContext out = ctx;
    out.gemm = own_precision_.gemm;
    out.formats = own_precision_.formats;
    return out;
  }

  // Per-sample input shape -> per-sample output shape; the error says why a shape cannot work.
  virtual Result<Shape> configure(const Shape& input) = 0;
  // Allocates parameters in `dtype` (f32 or f64) and draws their initial values.
  virtual Status init(Rng& rng, DType dtype) {
    (void)rng;
    (void)dtype;
    return Status();
  }

  // x [n, in...] -> y [n, out...]; y is allocated by the caller.
  virtual void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) = 0;
  // Given x, y of the forward and dy = dL/dy: adds dL/dparam to each param's grad (or writes
  // it, when !ctx.accumulate_grads) and, when dx is defined, writes dx = dL/dx (dx is
  // undefined for the first layer).
  virtual void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                        const LayerContext& ctx) = 0;

  virtual std::vector<Param*> params() { return {}; }
  // State that is not trained but saved in checkpoints (BatchNorm's running statistics);
  // their grad tensors are undefined.
  virtual std::vector<Param*> buffers() { return {}; }
  // Trainable values, known once configure() has run (before init()).
  virtual int64_t parameter_count() const { return 0; }
  // Values of buffers(), known likewise before init() (what a checkpoint holds besides params).
  virtual int64_t buffer_count() const { return 0; }
  // Floating-point operations of the forward for one sample, a multiply-add counted as 2, the
  // products only (dense, conv: the elementwise rest is small and memory-bound); known once
  // configure() has run. What GFLOP/s and efficiency against a peak are counted from.
  virtual int64_t forward_flops_per_sample() const { return 0; }
  // The flops the layer's algorithm really does for one sample in phase `phase` (LayerPhase's
  // number: 0 forward, 1 weight gradient, 2 input gradient), counted alike, where they differ from
  // forward_flops_per_sample()'s (a Winograd convolution's own products); 0 where they do not.
  virtual int64_t executed_flops_per_sample(int phase) const {
    (void)phase;
    return 0;
  }
  // The values one training step moves through memory for this layer (the roofline's byte model,
  // report/roofline.h), `in` and `out` values a sample, known once configure() has run. Every
  // kind says its own: there is no default to fall back on.
  virtual LayerTraffic traffic(double in, double out) const = 0;
  // Scratch elements (in the layer's dtype) forward and backward need for a batch of n,
  // taken from LayerContext::workspace.
  virtual int64_t workspace_elements(int64_t n) const {
    (void)n;
    return 0;
  }
  // State a layer keeps of its own from forward to backward, beyond its output (the per-step
  // states of a recurrent layer): allocated here for batches of up to `batch` samples, through
  // the counted allocator, so that a failure is a Status before training starts. Model::reserve
  // calls it; layers used alone allocate it in forward when it was not reserved.
  virtual Status reserve(int64_t batch, DType dtype) {
    (void)batch;
    (void)dtype;
    return Status();
  }
  // Elements (in the layer's dtype) per sample that reserve() allocates.
  virtual int64_t state_elements_per_sample() const { return 0; }
  // True when forward and backward must see the whole batch at once: the layer mixes samples
  // (BatchNorm's batch statistics) or keeps per-batch state from forward to backward (a
  // recurrent layer's steps). Other layers may run on row chunks
  // of the batch, as a model with f16 storage runs them (Model::set_storage).
  virtual bool needs_whole_batch(const LayerContext& ctx) const {
    (void)ctx;
    return false;
  }
  // True when the layer can run a relu that follows it (LayerContext::fused_relu), giving the
  // bits of the two layers apart.
  virtual bool fuses_relu() const { return false; }
  // True when forward reads its params kept in f16 itself (Model::store_weights_f16); the model
  // widens any other layer's params to f32 before its forward.
  virtual bool reads_f16_weights() const { return false; }
  // One line for model summaries: "784 -> 256".
  virtual std::string describe() const { return ""; }

 private:
  std::string name_;
  OwnPrecision own_precision_;
};

// Calls fn(float{}) or fn(double{}) for the floating dtype of a tensor.
template <class Fn>
void dispatch_float(DType dtype, Fn&& fn) {
  if (dtype == DType::f64) {
    fn(double{});
  } else {
    RG_CHECK(dtype == DType::f32, "layers compute in f32 or f64, not " << dtype_name(dtype));
    fn(float{});
  }
}

}  // namespace rg
