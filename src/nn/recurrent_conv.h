// The recurrent convolutional layer (RCL) of Liang and Hu, "Recurrent Convolutional Neural
// Network for Object Recognition" (CVPR 2015), unrolled over `steps` = T time steps:
//   z_0 = w_ff * u,                    x_0 = relu(BN_0(z_0))
//   z_t = w_ff * u + w_rec * x_{t-1},  x_t = relu(BN_t(z_t))     t = 1..T
// and the output is x_T. u [n, h, w, c] -> x_T [n, h, w, filters]: same padding (pad = size / 2,
// odd size), stride 1. The weights w_ff [size*size*c, filters] and w_rec
// [size*size*filters, filters] are shared by every step; each step has a batch norm of its own
// (statistics, gamma and beta), since the distribution of z_t changes from step to step. T = 3
// gives 4 states, the paper's depth-4 unrolled subnetwork; T = 0 is conv + batch norm + relu
// (no recurrent weight then).
// Backward runs through time, t = T..0: dz_t = BN_t'(relu'(.) dx_t); the feed-forward
// conv's output gradient is the sum of all dz_t, the recurrent weight's gradient the sum over
// t >= 1 of its gradient at step t, and dx_{t-1} = w_rec^T dz_t.
// Built from the existing layers (two Conv2D without bias, T + 1 BatchNorm, a ReLU). The
// states z_0..z_T and x_0..x_{T-1} (x_T is the layer's output) live from forward to backward,
// so they cannot be in the model's shared workspace: reserve() allocates them, with three
// gradient buffers for backward, through the counted allocator.
#pragma once

#include <memory>
#include <vector>

#include "nn/batch_norm.h"
#include "nn/conv.h"

namespace rg {

class CfgSection;

struct RecurrentConvOptions {
  int64_t filters = 1;
  int64_t kernel = 3;  // odd
  int64_t steps = 3;   // T >= 0: T + 1 states
  Init init = Init::he_uniform;
  double momentum = 0.1, eps = 1e-5;  // of the batch norms
};

class RecurrentConv2D : public Layer {
 public:
  explicit RecurrentConv2D(const RecurrentConvOptions& options);
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "rcl"; }
  Result<Shape> configure(const Shape& input) override;
  // Names the members "<name>.ff", "<name>.rec", "<name>.bn<t>" and initialises them.
  Status init(Rng& rng, DType dtype) override;
  // Allocates the states for batches of up to `batch`; forward does it (aborting on failure)
  // when the layer is used alone, without a Model that called this first.
  Status reserve(int64_t batch, DType dtype) override;
  int64_t state_elements_per_sample() const override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;

  // ff.weight, rec.weight (when steps > 0), then bn0.gamma, bn0.beta, bn1.gamma, ...
  std::vector<Param*> params() override;
  // bn0.running_mean, bn0.running_var, bn1.running_mean, ...
  std::vector<Param*> buffers() override;
  int64_t parameter_count() const override;
  int64_t buffer_count() const override;
  int64_t forward_flops_per_sample() const override {
    return ff_.forward_flops_per_sample() + options_.steps * (rec_ ? rec_->forward_flops_per_sample() : 0);
  }
  // The same sum of its convolutions' executed flops (a member under the GEMM counts its
  // products); 0 where that is the sum above (none runs Winograd).
  int64_t executed_flops_per_sample(int phase) const override;
  // As the layers it is built of (recurrent_conv.cpp says the sum).
  LayerTraffic traffic(double in, double out) const override;
  int64_t workspace_elements(int64_t n) const override;
  // Its steps' states (reserve) hold the batch from forward to backward.
  bool needs_whole_batch(const LayerContext&) const override { return true; }
  std::string describe() const override;

  const RecurrentConvOptions& options() const { return options_; }
  // The member layers, for backends that rebuild the layer from them (opencl/model/cl_rcl.cpp).
  Conv2D& feed_forward() { return ff_; }
  const Conv2D& feed_forward() const { return ff_; }
  Conv2D* recurrent() { return rec_.get(); }  // null when steps == 0
  const Conv2D* recurrent() const { return rec_.get(); }
  BatchNorm& norm(size_t t) { return *norms_[t]; }  // t <= steps
  const BatchNorm& norm(size_t t) const { return *norms_[t]; }

 private:
  RecurrentConvOptions options_;
  Conv2D ff_;                                      // c -> filters
  std::unique_ptr<Conv2D> rec_;                    // filters -> filters; none when steps == 0
  std::vector<std::unique_ptr<BatchNorm>> norms_;  // steps + 1
  Shape output_;  // [h, w, filters]

  // The states of the last forward (first dimension: the reserved batch).
  std::vector<Tensor> z_;       // z_0..z_T: the batch norms' inputs
  std::vector<Tensor> x_;       // x_0..x_{T-1}: the recurrent conv's inputs
  Tensor grad_, dz_, dff_;      // backward: dL/d(x_t) then dL/d(a_t); dL/dz_t; the sum of dL/dz_t
  int64_t reserved_ = 0;
  DType reserved_dtype_ = DType::f32;
  int64_t batch_ = 0;           // n of the last forward
};

}  // namespace rg
