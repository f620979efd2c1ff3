// Launchers of kernels/elementwise.cl: one 1-D launch per call, groups of up to 256 items.
#include "opencl/elementwise.h"

#include <string>

#include "base/fp16.h"
#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kElementwiseProgram = "elementwise.cl";

using detail::check_u32;
using detail::u32;

// One program per device: with the half kernels where the device computes half correctly
// (a device without cl_khr_fp16 refuses to build them).
std::string build_options(const Device& device) {
  return f16_arithmetic_in_half(device) ? "-DRG_HALF_ARITHMETIC=1" : "";
}

// One work-item per element of n, the count the kernel takes first.
template <class... Args>
Result<Event> launch_elementwise(Device& device, const char* name, int64_t n, const Args&... args) {
  return detail::launch_1d(device, kElementwiseProgram, name, build_options(device), n, u32(n), args...);
}

bool in_half(const Device& device, F16Arithmetic arithmetic) {
  return arithmetic == F16Arithmetic::automatic && f16_arithmetic_in_half(device);
}

// a as the half kernels take it: a float holding a half value, so the kernel's (half)a is exact.
float rounded_to_half(float a) { return f16_to_f32(f32_to_f16(a)); }

}  // namespace

bool f16_arithmetic_in_half(const Device& device) { return device.capabilities().fp16_arithmetic; }

Result<Event> f32_axpy(Device& device, int64_t n, float a, DeviceSpan x, DeviceSpan y) {
  RG_TRY(check_u32("f32_axpy", n, {x, y}));
  return launch_elementwise(device, "f32_axpy", n, a, x.mem, u32(x.offset), y.mem, u32(y.offset));
}

Result<Event> f32_scale(Device& device, int64_t n, float a, DeviceSpan x) {
  RG_TRY(check_u32("f32_scale", n, {x}));
  return launch_elementwise(device, "f32_scale", n, a, x.mem, u32(x.offset));
}

Result<Event> f32_scale_and_flag_non_finite(Device& device, int64_t n, float factor, DeviceSpan g, DeviceSpan flags,
                                            int64_t flag) {
  RG_TRY(check_u32("f32_scale_and_flag_non_finite", n, {g}));
  RG_CHECK(flag >= 0 && flag < flags.count, "flag " << flag << " of " << flags.count);
  return launch_elementwise(device, "f32_scale_and_flag_non_finite", n, factor, g.mem, u32(g.offset), flags.mem,
                            u32(flags.offset + flag));
}

Result<Event> f32_add(Device& device, int64_t n, DeviceSpan a, DeviceSpan b, DeviceSpan out,
                      FusedActivation activation) {
  RG_TRY(check_u32("f32_add", n, {a, b, out}));
  return launch_elementwise(device, "f32_add", n, a.mem, u32(a.offset), b.mem, u32(b.offset), out.mem, u32(out.offset),
                            cl_uint{activation.kind}, activation.slope);
}

Result<Event> f16_from_f32(Device& device, int64_t n, DeviceSpan x_f32, DeviceSpan y_f16) {
  RG_TRY(check_u32("f16_from_f32", n, {x_f32, y_f16}));
  return launch_elementwise(device, "f16_from_f32", n, x_f32.mem, u32(x_f32.offset), y_f16.mem, u32(y_f16.offset));
}

Result<Event> f32_from_f16(Device& device, int64_t n, DeviceSpan x_f16, DeviceSpan y_f32) {
  RG_TRY(check_u32("f32_from_f16", n, {x_f16, y_f32}));
  return launch_elementwise(device, "f32_from_f16", n, x_f16.mem, u32(x_f16.offset), y_f32.mem, u32(y_f32.offset));
}

Result<Event> f16_axpy(Device& device, int64_t n, float a, DeviceSpan x_f16, DeviceSpan y_f16,
                       F16Arithmetic arithmetic) {
  RG_TRY(check_u32("f16_axpy", n, {x_f16, y_f16}));
  const bool half = in_half(device, arithmetic);
  return launch_elementwise(device, half ? "f16_axpy__half" : "f16_axpy", n, half ? rounded_to_half(a) : a, x_f16.mem,
                            u32(x_f16.offset), y_f16.mem, u32(y_f16.offset));
}

Result<Event> f16_scale(Device& device, int64_t n, float a, DeviceSpan x_f16, F16Arithmetic arithmetic) {
  RG_TRY(check_u32("f16_scale", n, {x_f16}));
  const bool half = in_half(device, arithmetic);
  return launch_elementwise(device, half ? "f16_scale__half" : "f16_scale", n, half ? rounded_to_half(a) : a, x_f16.mem,
                            u32(x_f16.offset));
}

}  // namespace rg::ocl
