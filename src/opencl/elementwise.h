// Host launchers of kernels/elementwise.cl: each checks the sizes, sets the arguments and
// enqueues one work-item per element; the returned Event is the kernel's (timed while profiling
// or in a Device::KeepEvents scope). Spans are in
// elements (f32 or f16 as named) and must hold n; n = 0 enqueues nothing.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/fused_activation.h"

namespace rg::ocl {

// y = a * x + y
Result<Event> f32_axpy(Device& device, int64_t n, float a, DeviceSpan x, DeviceSpan y);
// x = a * x
Result<Event> f32_scale(Device& device, int64_t n, float a, DeviceSpan x);
// g = factor * g, and the int32 flags[flag] = 1 when any g was Inf or NaN before (loss scaling's
// unscale and check; flags is an int32 span, element_span(buffer, 4), zeroed by the caller)
Result<Event> f32_scale_and_flag_non_finite(Device& device, int64_t n, float factor, DeviceSpan g, DeviceSpan flags,
                                            int64_t flag);
// out = a + b (out may alias a or b), then `activation` (fused_activation.h: a graph model's add
// taking the relu after it)
Result<Event> f32_add(Device& device, int64_t n, DeviceSpan a, DeviceSpan b, DeviceSpan out,
                      FusedActivation activation = {});
// fp16 storage (any device): y_f16 = x_f32 rounded to nearest even, bit-exact with f32_to_f16
Result<Event> f16_from_f32(Device& device, int64_t n, DeviceSpan x_f32, DeviceSpan y_f16);
// y_f32 = x_f16, exact
Result<Event> f32_from_f16(Device& device, int64_t n, DeviceSpan x_f16, DeviceSpan y_f32);

// The arithmetic of the f16 kernels that compute (f16_axpy, f16_scale). In half, a is first
// rounded to half (f32_to_f16) and each product and sum is rounded to half; in f32, the f32
// result is rounded once to half as it is stored.
enum class F16Arithmetic {
  automatic,  // half where f16_arithmetic_in_half(device), else f32
  f32,        // f32 on any device
};
// True where `automatic` computes in half: the device's tested fp16_arithmetic capability.
bool f16_arithmetic_in_half(const Device& device);

// y_f16 = a * x_f16 + y_f16 (no fused multiply-add in either arithmetic)
Result<Event> f16_axpy(Device& device, int64_t n, float a, DeviceSpan x_f16, DeviceSpan y_f16,
                       F16Arithmetic arithmetic = F16Arithmetic::automatic);
// x_f16 = a * x_f16
Result<Event> f16_scale(Device& device, int64_t n, float a, DeviceSpan x_f16,
                        F16Arithmetic arithmetic = F16Arithmetic::automatic);

}  // namespace rg::ocl
