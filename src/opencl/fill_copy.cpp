// clEnqueueFillBuffer / clEnqueueCopyBuffer on the device's queue, in bytes (4 per f32).
#include "opencl/fill_copy.h"

#include "opencl/cl_error.h"

namespace rg::ocl {

Result<Event> f32_fill_zero(Device& device, DeviceSpan span) {
  RG_CHECK(span.offset >= 0 && span.count >= 0, "f32_fill_zero of [" << span.offset << ", +" << span.count << ")");
  if (span.count == 0) return Event();
  RG_CHECK(span.mem != nullptr, "f32_fill_zero of " << span.count << " elements of no buffer");
  const cl_float zero = 0.0f;
  cl_event event = nullptr;
  const cl_int code =
      device.api().clEnqueueFillBuffer(device.queue(), span.mem, &zero, sizeof zero, static_cast<size_t>(span.offset) * 4,
                                       static_cast<size_t>(span.count) * 4, 0, nullptr, device.event_slot(&event));
  if (code != CL_SUCCESS) {
    return device.error("zeroing " + format_bytes(span.count * 4), "clEnqueueFillBuffer", code);
  }
  return device.enqueued(event);
}

Result<Event> f32_copy(Device& device, DeviceSpan from, DeviceSpan to, int64_t n) {
  RG_CHECK(n >= 0 && from.offset >= 0 && to.offset >= 0 && from.count >= n && to.count >= n,
           "f32_copy of " << n << " elements from a span of " << from.count << " to one of " << to.count);
  if (n == 0) return Event();
  RG_CHECK(from.mem != nullptr && to.mem != nullptr, "f32_copy of " << n << " elements with no buffer");
  RG_CHECK(from.mem != to.mem || from.offset + n <= to.offset || to.offset + n <= from.offset,
           "f32_copy of " << n << " elements within one buffer from " << from.offset << " to " << to.offset
                          << ": the ranges overlap");
  cl_event event = nullptr;
  const cl_int code = device.api().clEnqueueCopyBuffer(device.queue(), from.mem, to.mem, static_cast<size_t>(from.offset) * 4,
                                                       static_cast<size_t>(to.offset) * 4, static_cast<size_t>(n) * 4, 0,
                                                       nullptr, device.event_slot(&event));
  if (code != CL_SUCCESS) return device.error("copying " + format_bytes(n * 4), "clEnqueueCopyBuffer", code);
  return device.enqueued(event);
}

}  // namespace rg::ocl

namespace rg::ocl {

namespace {
Status span_transfer(Device& device, bool to_device, DeviceSpan span, float* host, int64_t n) {
  RG_CHECK(n >= 0 && span.offset >= 0 && span.count >= n, "a copy of " << n << " elements with a span of " << span.count);
  if (n == 0) return Status();
  const size_t offset = static_cast<size_t>(span.offset) * 4, bytes = static_cast<size_t>(n) * 4;
  const cl_int code = to_device ? device.api().clEnqueueWriteBuffer(device.queue(), span.mem, CL_TRUE, offset, bytes,
                                                                    host, 0, nullptr, nullptr)
                                : device.api().clEnqueueReadBuffer(device.queue(), span.mem, CL_TRUE, offset, bytes,
                                                                   host, 0, nullptr, nullptr);
  if (code == CL_SUCCESS) return Status();
  return device.error((to_device ? "writing " : "reading ") + format_bytes(n * 4),
                      to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", code);
}
}  // namespace

Status read_span(Device& device, DeviceSpan from, float* to, int64_t n) {
  return span_transfer(device, false, from, to, n);
}

Status write_span(Device& device, const float* from, DeviceSpan to, int64_t n) {
  return span_transfer(device, true, to, const_cast<float*>(from), n);
}

}  // namespace rg::ocl
