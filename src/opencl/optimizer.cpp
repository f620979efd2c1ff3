// Launchers of kernels/optimizer.cl (one item per weight, launch_1d.h); the step constants they
// take are nn/optimizer.h's, computed exactly as Optimizer::step's.
#include "opencl/optimizer.h"

#include <cmath>

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {
constexpr const char* kOptimizerProgram = "optimizer.cl";
using detail::check_u32;
using detail::launch_1d;
using detail::u32;
}  // namespace

Result<Event> f32_sgd(Device& device, int64_t n, const SgdStep& step, DeviceSpan w, DeviceSpan grad, DeviceSpan v,
                      DeviceSpan flags, int64_t flag) {
  RG_CHECK(flag >= 0 && flag + 2 < flags.count, "flag " << flag << " (and its two positions) of " << flags.count);
  if (v.mem == nullptr) {
    RG_CHECK(step.momentum == 0.0f, "f32_sgd with momentum " << step.momentum << " and no velocity buffer");
    RG_TRY(check_u32("f32_sgd", n, {w, grad}));
    return launch_1d(device, kOptimizerProgram, "f32_sgd", "", n, u32(n), step.lr, step.weight_decay, w.mem,
                     u32(w.offset), grad.mem, u32(grad.offset), flags.mem, u32(flags.offset + flag));
  }
  RG_TRY(check_u32("f32_sgd_momentum", n, {w, grad, v}));
  return launch_1d(device, kOptimizerProgram, "f32_sgd_momentum", "", n, u32(n), step.lr, step.momentum,
                   step.weight_decay, u32(step.nesterov ? 1 : 0), w.mem, u32(w.offset), grad.mem, u32(grad.offset),
                   v.mem, u32(v.offset), flags.mem, u32(flags.offset + flag));
}

Result<Event> f32_adam(Device& device, int64_t n, const AdamStep& step, DeviceSpan w, DeviceSpan grad, DeviceSpan m,
                       DeviceSpan s, DeviceSpan flags, int64_t flag) {
  RG_TRY(check_u32("f32_adam", n, {w, grad, m, s}));
  RG_CHECK(flag >= 0 && flag + 2 < flags.count, "flag " << flag << " (and its two positions) of " << flags.count);
  // sqrt and / as the CPU's correctly rounded ones where the device can (launch_1d.h)
  return launch_1d(device, kOptimizerProgram, "f32_adam", detail::division_options(device), n, u32(n), step.step_size,
                   step.correction2_sqrt, step.beta1, step.beta2, step.one_minus_beta1, step.one_minus_beta2, step.eps,
                   step.weight_decay, w.mem, u32(w.offset), grad.mem, u32(grad.offset), m.mem, u32(m.offset), s.mem,
                   u32(s.offset), flags.mem, u32(flags.offset + flag));
}

}  // namespace rg::ocl
