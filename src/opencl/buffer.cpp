// Allocating counted device buffers and copying to and from them.
#include "opencl/buffer.h"

#include <algorithm>
#include <cstdlib>

#include "opencl/cl_error.h"

namespace rg::ocl {

namespace {
// RETROGRAD_CL_FAIL_ABOVE=BYTES (tests): every buffer above that size fails as a driver out of
// memory does, so the paths that handle CL_MEM_OBJECT_ALLOCATION_FAILURE run without a full GPU.
bool injected_allocation_failure(int64_t bytes) {
  static const int64_t limit = [] {
    const char* text = std::getenv("RETROGRAD_CL_FAIL_ABOVE");
    return text != nullptr ? std::strtoll(text, nullptr, 10) : int64_t{-1};
  }();
  return limit >= 0 && bytes > limit;
}
}  // namespace

Result<Buffer> Buffer::allocate(Device& device, int64_t bytes, const std::string& what) {
  RG_CHECK(bytes >= 0, "negative buffer size " << bytes << " for " << what);
  const int64_t largest = device.max_buffer_bytes();
  if (bytes > largest) {
    return Status::error(device.label() + ": " + what + " needs one buffer of " + format_bytes(bytes) + " (" +
                         std::to_string(bytes) + " bytes), above the largest single allocation the device allows, " +
                         format_bytes(largest) + " (" + std::to_string(largest) + " bytes)");
  }
  RG_TRY(device.memory().reserve(bytes, what));
  // OpenCL has no empty buffer: a zero-byte request holds one byte (counted as zero).
  cl_int code = CL_SUCCESS;
  cl_mem mem = nullptr;
  if (injected_allocation_failure(bytes)) {
    code = CL_MEM_OBJECT_ALLOCATION_FAILURE;
  } else {
    mem = device.api().clCreateBuffer(device.context(), CL_MEM_READ_WRITE, bytes == 0 ? 1 : static_cast<size_t>(bytes),
                                      nullptr, &code);
  }
  if (code != CL_SUCCESS) {
    device.memory().unreserve(bytes);
    return device.error("allocating " + format_bytes(bytes) + " for " + what, "clCreateBuffer", code);
  }
  Buffer buffer;
  buffer.device_ = &device;
  buffer.mem_ = mem;
  buffer.bytes_ = bytes;
  buffer.what_ = what;
  return buffer;
}

Result<Buffer> Buffer::view(const Buffer& parent, int64_t offset, int64_t bytes, const std::string& what) {
  RG_CHECK(parent.mem() != nullptr && bytes > 0 && offset >= 0 && offset + bytes <= parent.bytes(),
           "view of bytes [" << offset << ", " << offset + bytes << ") of " << parent.what() << " (" << parent.bytes()
                             << " bytes)");
  Device& device = *parent.device();
  const int64_t align = std::max<int64_t>(1, device.info().base_align_bytes);
  RG_CHECK(offset % align == 0, "view of " << parent.what() << " at " << offset << ", not a multiple of " << align);
  const cl_buffer_region region{static_cast<size_t>(offset), static_cast<size_t>(bytes)};
  cl_int code = CL_SUCCESS;
  cl_mem mem = device.api().clCreateSubBuffer(parent.mem(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region,
                                              &code);
  if (code != CL_SUCCESS) return device.error("a view of " + parent.what() + " for " + what, "clCreateSubBuffer", code);
  Buffer buffer;
  buffer.device_ = &device;
  buffer.mem_ = mem;
  buffer.bytes_ = bytes;
  buffer.counted_ = false;
  buffer.what_ = what;
  return buffer;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = other.device_;
    mem_ = other.mem_;
    bytes_ = other.bytes_;
    counted_ = other.counted_;
    what_ = std::move(other.what_);
    other.device_ = nullptr;
    other.mem_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (mem_ != nullptr) {
    device_->api().clReleaseMemObject(mem_);
    if (counted_) device_->memory().unreserve(bytes_);
  }
  device_ = nullptr;
  mem_ = nullptr;
  bytes_ = 0;
  counted_ = true;
}

DeviceSpan Buffer::span(int64_t element_bytes, int64_t offset, int64_t count) const {
  const int64_t elements = bytes_ / element_bytes;
  if (count < 0) count = elements - offset;
  RG_CHECK(offset >= 0 && count >= 0 && offset + count <= elements,
           "span [" << offset << ", " << offset + count << ") of " << what_ << ", which holds " << elements
                    << " elements of " << element_bytes << " bytes");
  return DeviceSpan{mem_, offset, count};
}

namespace {

void check_range(const Buffer& buffer, int64_t offset, int64_t bytes) {
  RG_CHECK(buffer.mem() != nullptr, "copy with an empty buffer");
  RG_CHECK(offset >= 0 && bytes >= 0 && offset + bytes <= buffer.bytes(),
           "copy of bytes [" << offset << ", " << offset + bytes << ") of " << buffer.what() << ", which has "
                             << buffer.bytes());
}

Result<Event> copy(const Buffer& buffer, bool to_device, bool blocking, int64_t offset, void* host, int64_t bytes) {
  check_range(buffer, offset, bytes);
  Device& device = *buffer.device();
  const cl_bool block = blocking ? CL_TRUE : CL_FALSE;
  cl_event event = nullptr;
  const cl_int code =
      to_device ? device.api().clEnqueueWriteBuffer(device.queue(), buffer.mem(), block, static_cast<size_t>(offset),
                                                    static_cast<size_t>(bytes), host, 0, nullptr, &event)
                : device.api().clEnqueueReadBuffer(device.queue(), buffer.mem(), block, static_cast<size_t>(offset),
                                                   static_cast<size_t>(bytes), host, 0, nullptr, &event);
  if (code != CL_SUCCESS) {
    return device.error((to_device ? "writing " : "reading ") + format_bytes(bytes) + (to_device ? " to " : " from ") +
                            buffer.what(),
                        to_device ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer", code);
  }
  Event done(&device.api(), event);
  RG_TRY(device.add_profile(to_device ? "(copy to the device)" : "(copy to the host)", done));
  return done;
}

}  // namespace

Status write_buffer(const Buffer& buffer, int64_t offset, const void* host, int64_t bytes) {
  return copy(buffer, true, true, offset, const_cast<void*>(host), bytes).status();
}
Status read_buffer(const Buffer& buffer, int64_t offset, void* host, int64_t bytes) {
  return copy(buffer, false, true, offset, host, bytes).status();
}
Result<Event> write_buffer_async(const Buffer& buffer, int64_t offset, const void* host, int64_t bytes) {
  return copy(buffer, true, false, offset, const_cast<void*>(host), bytes);
}
Result<Event> read_buffer_async(const Buffer& buffer, int64_t offset, void* host, int64_t bytes) {
  return copy(buffer, false, false, offset, host, bytes);
}

}  // namespace rg::ocl
