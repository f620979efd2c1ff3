// The optimizer's update on the device: nn/optimizer.h's rules on the ClModel's params,
// with the state (SGD's velocity, Adam's m and s) in device buffers. The CPU Optimizer stays
// the owner of the step count and of the host state checkpoints save: read_state() and
// write_state() move the state between the two.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nn/finite_check.h"
#include "nn/optimizer.h"
#include "opencl/model/cl_layer.h"
#include "opencl/model/cl_param_arena.h"

namespace rg::ocl {

class ClOptimizer {
 public:
  // Device state for `params`, uploaded from `host` (whose params are theirs, in order). Where
  // `arena` holds exactly these params in this order (ClModel::param_arena), the state is laid out
  // as it and a step is one launch over the whole arena; else one launch a param.
  static Result<ClOptimizer> create(Device& device, Optimizer& host, std::vector<ClParam*> params,
                                    const ParamArena* arena = nullptr);

  ClOptimizer() = default;
  ClOptimizer(ClOptimizer&&) = default;
  ClOptimizer& operator=(ClOptimizer&&) = default;
  ~ClOptimizer();  // waits for a flag read in flight (it writes into this object's memory)

  // One update at learning rate lr; counts the step in the host optimizer, as Optimizer::step.
  // The kernels flag a param whose gradient or updated weights hold an Inf or a NaN; the flags
  // are read back without waiting (non_finite_update() takes them; a step before that waits
  // for them and keeps what they said).
  Status step(double lr);
  // The first param flagged in a step() since the last call (none() when none). Waits for the
  // flags the last step() queued a read of: called once the next micro-batch's work is queued,
  // the wait costs no idle device time. The kernels say where the first bad gradient element and
  // the first bad new weight were, so the step's own values tell a bad gradient from an
  // overflowed update (nothing else is read back: the next backward may have run meanwhile).
  // `before_newest`: the steps before the last one only, its read left pending (no wait: a GAN
  // settles a step after queueing the next, which holds the newest update).
  Result<NonFiniteUpdate> non_finite_update(bool before_newest = false);
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
  const ParamArena* arena_ = nullptr;  // set: one update over it (its flags and positions: [0, 3))
  // Optimizer::state()'s order: per param (SGD), m then s (Adam); with the arena one buffer a
  // part (velocity; m, s), laid out as the arena.
  std::vector<Buffer> state_;
  Buffer flags_;               // int32 [params]: unscale's non-finite flags
  Buffer step_flags_;  // int32 [3 params]: step()'s flags and positions (optimizer.h), a launch's from 3 k
  std::vector<int32_t> step_flags_host_;  // [3 params], read from step_flags_ by step_flags_read_
  Event step_flags_read_;                  // valid while a read is pending
  NonFiniteUpdate first_non_finite_;       // taken from the flags, not yet returned
  // Waits for step_flags_read_ and notes the first flagged param in first_non_finite_.
  Status take_step_flags();
  // Where host state tensor k lives: its buffer and float offset.
  std::pair<const Buffer*, int64_t> state_place(size_t k) const;
  // One launch of the rule over `n` floats from the spans' starts, flags[flag] set on a non-finite.
  Status update(int64_t n, double lr, DeviceSpan w, DeviceSpan grad, DeviceSpan first, DeviceSpan second,
                DeviceSpan flags, int64_t flag);
};

}  // namespace rg::ocl
