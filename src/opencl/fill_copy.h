// Filling and copying f32 spans on the device with the queue's own commands
// (clEnqueueFillBuffer, clEnqueueCopyBuffer): no kernel to build. Counts are in f32
// elements; a count of 0 enqueues nothing (the Event is empty).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"

namespace rg::ocl {

// span = +0.0f, all span.count elements (gradients to accumulate into, zeroed dx).
Result<Event> f32_fill_zero(Device& device, DeviceSpan span);
// to[0, n) = from[0, n), bit for bit. Both spans must hold n; overlapping ranges of one buffer
// are a bug (OpenCL refuses them: CL_MEM_COPY_OVERLAP).
Result<Event> f32_copy(Device& device, DeviceSpan from, DeviceSpan to, int64_t n);

// Blocking copies of n f32 elements between a span and host memory.
Status read_span(Device& device, DeviceSpan from, float* to, int64_t n);
Status write_span(Device& device, const float* from, DeviceSpan to, int64_t n);

}  // namespace rg::ocl
