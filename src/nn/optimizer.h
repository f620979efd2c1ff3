// Optimizers on f32 master weights, with PyTorch's update rules so results compare:
//   SGD:  g += wd w;  v = mu v + g;  w -= lr (nesterov ? g + mu v : v)
//   Adam: g += wd w;  m = b1 m + (1-b1) g;  s = b2 s + (1-b2) g^2;
//         w -= lr (m / (1-b1^t)) / (sqrt(s / (1-b2^t)) + eps)
#pragma once

#include <string>
#include <vector>

#include "cpu/ukernels/f32_vector.h"
#include "nn/layer.h"

namespace rg {

enum class OptimizerKind { sgd, adam };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::sgd;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
};

Result<OptimizerKind> optimizer_from_name(const std::string& name);
const char* optimizer_name(OptimizerKind kind);
// "sgd (momentum 0.9, nesterov, weight decay 0.0005)"
std::string describe(const OptimizerConfig& config);

// The constants of one update at learning rate lr, as every backend's kernels take them
// (cpu/ukernels/f32_vector.h): SGD's, and Adam's at step t >= 1 (bias corrections in double).
SgdStep sgd_step_for(const OptimizerConfig& config, double lr);
AdamStep adam_step_for(const OptimizerConfig& config, int64_t t, double lr);

class Optimizer {
 public:
  Optimizer(const OptimizerConfig& config, std::vector<Param*> params);
  Status init();  // allocates the state tensors (counted)
  // Bytes init() allocates for `parameters` trainable values: per value, SGD's velocity (with
  // momentum) or Adam's m and s. Known from the model's shapes, before its init().
  static int64_t state_bytes(const OptimizerConfig& config, int64_t parameters);

  // One update of every parameter from its grad, at learning rate lr, all parameters in one
  // parallel region on `pool` (may be null), in blocks of kUpdateBlock values. Returns the first
  // parameter whose gradient held an Inf or a NaN (checked in the same pass; the update is made
  // all the same, so the caller stops training), or null.
  const Param* step(double lr, ThreadPool* pool = nullptr);

  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  // Per-parameter state in a fixed order (SGD: velocity; Adam: m then s), for checkpoints.
  const std::vector<Tensor>& state() const { return state_; }
  const OptimizerConfig& config() const { return config_; }

 private:
  OptimizerConfig config_;
  std::vector<Param*> params_;
  std::vector<Tensor> state_;
  int64_t steps_ = 0;
  static int state_tensors_per_param(const OptimizerConfig& config);
};

}  // namespace rg
