// Device buffers (cl_mem) counted in their device's memory account, views of them for
// kernels, and copies between host and device, blocking or not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "opencl/device.h"

namespace rg::ocl {

// Elements [offset, offset + count) of a buffer, in the unit of the kernel that reads it
// (f32: 4 bytes, f16: 2). Kernels take the buffer and the offset: sub-buffers would need
// CL_DEVICE_MEM_BASE_ADDR_ALIGN-aligned offsets.
struct DeviceSpan {
  cl_mem mem = nullptr;
  int64_t offset = 0;
  int64_t count = 0;
};

class Buffer {
 public:
  // `bytes` of device memory for `what` (named in errors). Refused, with the sizes, when
  // it is above the device's largest single buffer or past its memory budget; an
  // out-of-memory code from the driver says what the account holds.
  static Result<Buffer> allocate(Device& device, int64_t bytes, const std::string& what);
  // Bytes [offset, offset + bytes) of `parent` as a buffer of its own (an OpenCL sub-buffer: the
  // same memory, counted once, in the parent's account). `offset` a multiple of the device's
  // base_align_bytes and bytes > 0, else a bug. The parent's memory lives while a view does, but
  // the parent must outlive its views for the account to stay true.
  static Result<Buffer> view(const Buffer& parent, int64_t offset, int64_t bytes, const std::string& what);

  Buffer() = default;
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }
  void reset();  // frees the memory now

  cl_mem mem() const { return mem_; }
  int64_t bytes() const { return bytes_; }
  const std::string& what() const { return what_; }
  bool is_view() const { return !counted_; }
  Device* device() const { return device_; }

  // Views in elements: count -1 runs to the end. Outside the buffer is a bug (RG_CHECK).
  DeviceSpan f32(int64_t offset = 0, int64_t count = -1) const { return span(4, offset, count); }
  DeviceSpan f16(int64_t offset = 0, int64_t count = -1) const { return span(2, offset, count); }

 private:
  DeviceSpan span(int64_t element_bytes, int64_t offset, int64_t count) const;

  Device* device_ = nullptr;
  cl_mem mem_ = nullptr;
  int64_t bytes_ = 0;
  bool counted_ = true;  // false for a view
  std::string what_;
};

// Host -> device and device -> host, `bytes` at `offset` bytes into the buffer (a range
// outside it is a bug). The blocking forms return when the host memory may be reused (write)
// or holds the data (read).
Status write_buffer(const Buffer& buffer, int64_t offset, const void* host, int64_t bytes);
Status read_buffer(const Buffer& buffer, int64_t offset, void* host, int64_t bytes);
// Non-blocking: the host memory must stay as it is (write) and untouched (read) until the
// event completes. The queue is in order: later commands see the data without waiting.
Result<Event> write_buffer_async(const Buffer& buffer, int64_t offset, const void* host, int64_t bytes);
Result<Event> read_buffer_async(const Buffer& buffer, int64_t offset, void* host, int64_t bytes);

// A new buffer holding `values`.
template <class T>
Result<Buffer> upload(Device& device, const std::vector<T>& values, const std::string& what) {
  const int64_t bytes = static_cast<int64_t>(values.size() * sizeof(T));
  RG_ASSIGN(Buffer buffer, Buffer::allocate(device, bytes, what));
  if (bytes > 0) RG_TRY(write_buffer(buffer, 0, values.data(), bytes));
  return buffer;
}

// The buffer's first `count` elements of T.
template <class T>
Result<std::vector<T>> download(const Buffer& buffer, int64_t count) {
  std::vector<T> values(static_cast<size_t>(count));
  if (count > 0) RG_TRY(read_buffer(buffer, 0, values.data(), count * static_cast<int64_t>(sizeof(T))));
  return values;
}

}  // namespace rg::ocl
