// Host launchers of kernels/optimizer.cl: the SGD and Adam updates of one parameter on the
// device, bit-exact with the CPU's kernels (cpu/ukernels/f32_vector.h: SgdStep, AdamStep) on an
// IEEE device; the step values come from nn/optimizer.h's sgd_step_for and adam_step_for,
// as Optimizer::step's do.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "cpu/ukernels/f32_vector.h"
#include "opencl/buffer.h"
#include "opencl/device.h"

namespace rg::ocl {

// Each sets flags[flag] (an int32 span, element_span(buffer, 4), zeroed by the caller) to 1
// when a gradient element or an updated weight is Inf or NaN, as the CPU's kernels return
// false then, and says where: flags[flag + 1] = n - the first element whose gradient is,
// flags[flag + 2] = n - the first whose updated weight is (as uint32; 0: none). The update runs
// all the same.

// One SGD update of n weights w from grad; v is the velocity, or a span with no buffer
// (mem null) for none, which requires step.momentum == 0 (the CPU passes no velocity then).
Result<Event> f32_sgd(Device& device, int64_t n, const SgdStep& step, DeviceSpan w, DeviceSpan grad, DeviceSpan v,
                      DeviceSpan flags, int64_t flag);
// One Adam update of n weights w from grad, with first and second moments m and s.
Result<Event> f32_adam(Device& device, int64_t n, const AdamStep& step, DeviceSpan w, DeviceSpan grad, DeviceSpan m,
                       DeviceSpan s, DeviceSpan flags, int64_t flag);

}  // namespace rg::ocl
