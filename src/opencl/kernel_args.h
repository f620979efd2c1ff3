// Setting a kernel's arguments in one call, with errors that name the kernel and the
// argument: set_kernel_args(device, kernel, n, alpha, x.mem, LocalBytes{4096}).
#pragma once

#include <string>
#include <type_traits>

#include "base/status.h"
#include "opencl/cl_error.h"
#include "opencl/device.h"

namespace rg::ocl {

// A __local array argument of this many bytes (clSetKernelArg with no value).
struct LocalBytes {
  size_t bytes;
};

namespace detail {

inline Status set_kernel_arg(const Device& device, const Kernel& kernel, cl_uint index, size_t size,
                             const void* value) {
  const cl_int code = device.api().clSetKernelArg(kernel.handle, index, size, value);
  if (code == CL_SUCCESS) return Status();
  return cl_status("clSetKernelArg", code)
      .with_context(device.label() + ": kernel " + kernel.name + " argument " + std::to_string(index) + ": ");
}

inline Status set_one(const Device& device, const Kernel& kernel, cl_uint index, const LocalBytes& local) {
  return set_kernel_arg(device, kernel, index, local.bytes, nullptr);
}

// Only the exact OpenCL C scalar types and buffers: an int64_t passed for a `uint` would be
// an argument-size error at run time, so it does not compile.
template <class T>
Status set_one(const Device& device, const Kernel& kernel, cl_uint index, const T& value) {
  static_assert(std::is_same<T, cl_mem>::value || std::is_same<T, cl_uint>::value || std::is_same<T, cl_int>::value ||
                    std::is_same<T, cl_float>::value || std::is_same<T, cl_ulong>::value,
                "kernel arguments are cl_mem, cl_uint, cl_int, cl_ulong, cl_float or LocalBytes");
  return set_kernel_arg(device, kernel, index, sizeof(T), &value);
}

}  // namespace detail

template <class... Args>
Status set_kernel_args(const Device& device, const Kernel& kernel, const Args&... args) {
  Status status;
  cl_uint index = 0;
  // Left to right; stops setting at the first error.
  ((status = status.ok() ? detail::set_one(device, kernel, index++, args) : status), ...);
  return status;
}

}  // namespace rg::ocl
