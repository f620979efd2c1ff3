// What the 1-D launchers (elementwise, activation, optimizer, loss, pool, im2col, batch norm)
// share: the 32-bit index check of a span, a launch of one work-item per element (or row, or
// column) in groups of up to 256, the global size rounded up (kernels guard at n), a launch of
// work-groups that share local memory, and the
// checks of geometries and of double support.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/kernel_args.h"
#include "ops/im2col.h"

namespace rg::ocl::detail {

inline cl_uint u32(int64_t value) { return static_cast<cl_uint>(value); }

// Elements a stored rows x cols matrix with row stride `ld` spans: the last row needs only cols
// (0 when it is empty).
inline int64_t matrix_extent(int64_t rows, int64_t cols, int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
}

// Each span must hold `n` elements (a bug otherwise); offset + n past 2^32 - 1 is an error,
// since the kernels index with uint.
inline Status check_u32(const char* kernel, int64_t n, std::initializer_list<DeviceSpan> spans) {
  for (const DeviceSpan& span : spans) {
    RG_CHECK(n >= 0 && span.count >= n, "kernel " << kernel << ": a span of " << span.count << " elements for n = " << n);
    if (span.offset + n > static_cast<int64_t>(std::numeric_limits<cl_uint>::max())) {
      return Status::error(std::string(kernel) + ": element " + std::to_string(span.offset + n) +
                           " is past the 2^32 - 1 elements the kernels index");
    }
  }
  return Status();
}

// Sets the arguments of `name` in `file` (built with `options`) and enqueues `items`
// work-items; items = 0 enqueues nothing.
template <class... Args>
Result<Event> launch_1d(Device& device, const char* file, const char* name, const std::string& options, int64_t items,
                        const Args&... args) {
  if (items == 0) return Event();
  RG_ASSIGN(const Kernel* kernel, device.kernel(file, name, options));
  RG_TRY(set_kernel_args(device, *kernel, args...));
  const size_t local = std::min<size_t>(256, kernel->max_work_group_size);
  const size_t global = (static_cast<size_t>(items) + local - 1) / local * local;
  return device.run(*kernel, 1, &global, &local);
}

// `groups` work-groups of up to `items` work-items each (at most 256 and the kernel's limit), for
// kernels whose groups share local memory (they find themselves by get_group_id, get_local_id);
// groups = 0 enqueues nothing.
template <class... Args>
Result<Event> launch_groups(Device& device, const char* file, const char* name, const std::string& options,
                            int64_t groups, int64_t items, const Args&... args) {
  RG_CHECK(groups >= 0 && items >= 1, "launch_groups(" << name << ", " << groups << ", " << items << ")");
  if (groups == 0) return Event();
  RG_ASSIGN(const Kernel* kernel, device.kernel(file, name, options));
  RG_TRY(set_kernel_args(device, *kernel, args...));
  const size_t local = std::min<size_t>({static_cast<size_t>(items), 256, kernel->max_work_group_size});
  const size_t global = static_cast<size_t>(groups) * local;
  return device.run(*kernel, 1, &global, &local);
}

// Floats of a local-memory tile for kernels that stage global values there (a quarter of the
// device's local memory, 256 to 4096): whatever its size, the kernels' results are the same.
inline int64_t local_tile_floats(const Device& device) {
  return std::clamp<int64_t>(device.info().local_mem_bytes / 16, 256, 4096);
}

// "-cl-fp32-correctly-rounded-divide-sqrt" where the device offers it (CL_DEVICE_SINGLE_FP_CONFIG),
// else "": OpenCL 1.2 allows 2.5 ulp for float division and 3 ulp for sqrt by default, while
// the CPU's are correctly rounded. Kernels that divide or take square roots build with this.
inline std::string division_options(const Device& device) {
  cl_device_fp_config config = 0;
  const cl_int code =
      device.api().clGetDeviceInfo(device.id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config, nullptr);
  return code == CL_SUCCESS && (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0
             ? "-cl-fp32-correctly-rounded-divide-sqrt"
             : "";
}

// Kernels that sum in double as the CPU does (losses, batch-norm statistics): a device without
// cl_khr_fp64 is refused, naming `what`.
inline Status need_fp64(const Device& device, const char* what) {
  if (device.info().has_extension("cl_khr_fp64")) return Status();
  return Status::error(device.label() + ": " + what + " sums in double as the CPU does, and the device has no cl_khr_fp64");
}

// A conv or pooling geometry over `batch` images that a launcher may pass on (a bug otherwise).
inline void check_geometry(const char* what, const ConvGeometry& g, int64_t batch) {
  RG_CHECK(batch >= 0 && g.height > 0 && g.width > 0 && g.channels > 0 && g.kernel > 0 && g.stride > 0 &&
               g.pad >= 0 && g.out_h > 0 && g.out_w > 0,
           "" << what << " " << batch << " x " << g.height << " x " << g.width << " x " << g.channels << " with kernel "
                << g.kernel << ", stride " << g.stride << ", pad " << g.pad << " to " << g.out_h << " x " << g.out_w);
}

}  // namespace rg::ocl::detail
