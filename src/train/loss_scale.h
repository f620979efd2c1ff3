// Dynamic loss scaling, the guard of f16 storage (Micikevicius et al., "Mixed Precision
// Training", 2018): the loss's gradient is multiplied by `scale` before backward, so small
// gradients stay above f16's smallest values (normal 2^-14, subnormal 2^-24) while they are
// stored between layers. The parameter gradients come out scaled and are divided back before
// the optimizer step. A step whose gradients hold an Inf or a NaN is skipped and the scale
// halved; after `growth_interval` good steps in a row the scale doubles.
#pragma once

#include <cstdint>
#include <string>
#include <string>
#include <vector>

#include "base/status.h"
#include "nn/layer.h"

namespace rg {

struct LossScaleConfig {
  double initial = 65536;         // 2^16
  int64_t growth_interval = 1000; // good steps before the scale doubles
  double max_scale = 16777216;    // 2^24: doubling stops there
};

class LossScaler {
 public:
  explicit LossScaler(const LossScaleConfig& config = LossScaleConfig()) : config_(config), scale_(config.initial) {}

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }
  // After a backward at scale(): divides the gradients by the scale; returns true (take the
  // step) when all were finite, else halves the scale and returns false (skip the step). An
  // error when they are not finite even at scale 1: the loss diverged.
  Result<bool> unscale(const std::vector<Param*>& params);
  // The bookkeeping of unscale() once the gradients are divided (by another backend):
  // `non_finite` names the first param whose gradient held an Inf or a NaN, or is empty.
  Result<bool> after_unscale(const std::string& non_finite);
  // Restores a state saved in a checkpoint.
  void restore(double scale, int64_t good_steps, int64_t skipped);
  int64_t good_steps() const { return good_steps_; }

 private:
  LossScaleConfig config_;
  double scale_;
  int64_t good_steps_ = 0;  // finite steps since the last change
  int64_t skipped_ = 0;
};

}  // namespace rg
