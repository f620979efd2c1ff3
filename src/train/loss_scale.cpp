// Dynamic loss scaling: check, unscale, back off or grow.
#include "train/loss_scale.h"

#include <algorithm>
#include <cstring>

namespace rg {

namespace {
// Multiplies every gradient by `factor` (a power of two, exact) and returns the first parameter
// whose gradient held an Inf or a NaN, or null. One pass over the bits, which the compiler
// vectorises: an exponent of all ones is Inf or NaN.
const Param* scale_and_check(const std::vector<Param*>& params, float factor) {
  const Param* bad = nullptr;
  for (const Param* p : params) {
    float* g = p->grad.f32();
    const int64_t n = p->grad.numel();
    uint32_t non_finite = 0;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &g[i], sizeof bits);
      non_finite |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
      g[i] *= factor;
    }
    if (non_finite != 0 && bad == nullptr) bad = p;
  }
  return bad;
}
}  // namespace

Result<bool> LossScaler::unscale(const std::vector<Param*>& params) {
  // Unscaled even when the step is skipped: the next backward overwrites the gradients anyway.
  const Param* bad = scale_and_check(params, static_cast<float>(1.0 / scale_));
  return after_unscale(bad != nullptr ? bad->name : "");
}

Result<bool> LossScaler::after_unscale(const std::string& non_finite) {
  if (!non_finite.empty()) {
    if (scale_ <= 1) {
      return Status::error("the gradient of " + non_finite +
                           " holds an Inf or a NaN even at loss scale 1: the loss diverged (lower the learning rate?)");
    }
    scale_ = std::max(1.0, scale_ / 2);
    good_steps_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_steps_ >= config_.growth_interval && scale_ < config_.max_scale) {
    scale_ *= 2;
    good_steps_ = 0;
  }
  return true;
}

void LossScaler::restore(double scale, int64_t good_steps, int64_t skipped) {
  scale_ = scale;
  good_steps_ = good_steps;
  skipped_ = skipped;
}

}  // namespace rg
