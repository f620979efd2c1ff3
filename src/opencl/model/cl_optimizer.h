// The optimizer's update on the device: train/optimizer.h's rules on the ClModel's params,
// with the state (SGD's velocity, Adam's m and s) in device buffers. The CPU Optimizer stays
// the owner of the step count and of the host state checkpoints save: read_state() and
// write_state() move the state between the two.
#pragma once

#include <vector>

#include "opencl/model/cl_layer.h"
#include "train/optimizer.h"

namespace rg::ocl {

class ClOptimizer {
 public:
  // Device state for `params`, uploaded from `host` (whose params are theirs, in order).
  static Result<ClOptimizer> create(Device& device, Optimizer& host, std::vector<ClParam*> params);

  // One update at learning rate lr; counts the step in the host optimizer, as Optimizer::step.
  Status step(double lr);
  // Loss scaling: every gradient times `factor`; the name of the first param whose gradient held
  // an Inf or a NaN before, or "" (LossScaler::after_unscale takes it). Reads back one int a param.
  Result<std::string> unscale(float factor);
  int64_t state_bytes() const;
  // Device -> host state, and host -> device (blocking).
  Status read_state();
  Status write_state();

 private:
  Device* device_ = nullptr;
  Optimizer* host_ = nullptr;
  std::vector<ClParam*> params_;
  std::vector<Buffer> state_;  // Optimizer::state()'s order: per param (SGD), m then s (Adam)
  Buffer flags_;               // int32 [params]: unscale's non-finite flags
};

}  // namespace rg::ocl
