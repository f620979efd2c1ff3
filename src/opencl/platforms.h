// The OpenCL platforms and devices this machine has, as their drivers report them (the
// reported figures; capabilities.h tests what actually works), and why OpenCL is off
// when it is: no loader, no platform, or an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "opencl/cl_api.h"

namespace rg::ocl {

struct DeviceInfo {
  int platform_index = 0;
  int device_index = 0;
  std::string label;  // "cl:P:D", as --device takes it
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string platform_name;
  std::string name;
  std::string vendor;
  std::string type;              // "GPU", "CPU", "accelerator" or "other"
  std::string version;           // CL_DEVICE_VERSION: "OpenCL 3.0 ..."
  std::string opencl_c_version;  // CL_DEVICE_OPENCL_C_VERSION: "OpenCL C 1.2 ..."
  std::string driver_version;
  std::string extensions;        // space-separated
  uint32_t compute_units = 0;
  uint32_t max_clock_mhz = 0;
  int64_t global_mem_bytes = 0;
  int64_t max_alloc_bytes = 0;   // CL_DEVICE_MAX_MEM_ALLOC_SIZE as reported
  int64_t base_align_bytes = 0;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8: where a sub-buffer may start
  int64_t local_mem_bytes = 0;   // CL_DEVICE_LOCAL_MEM_SIZE as reported
  bool local_mem_dedicated = false;  // CL_LOCAL, not emulated in global memory
  bool host_unified_memory = false;  // CL_DEVICE_HOST_UNIFIED_MEMORY: its memory is the host's
  size_t max_work_group_size = 0;

  bool has_extension(const std::string& extension) const;
  bool is_gpu() const { return type == "GPU"; }
  // Its buffers take host memory: a CPU device (PoCL) or an integrated GPU.
  bool shares_host_memory() const { return host_unified_memory || type == "CPU"; }
};

struct PlatformInfo {
  int index = 0;
  cl_platform_id id = nullptr;
  std::string name;
  std::string vendor;
  std::string version;
  std::vector<DeviceInfo> devices;
  std::string devices_error;  // why `devices` is empty, when clGetDeviceIDs failed
};

// Every platform and its devices. Errors: no loader (cl_api.h's message), no platform (the
// loader found no driver: names the loader and what to install), or a failed query.
Result<std::vector<PlatformInfo>> list_platforms(const ClApi& api);
Result<std::vector<PlatformInfo>> list_platforms();  // through opencl_api()

// Ok when at least one OpenCL device exists; else the reason, e.g. "no OpenCL loader:
// cannot load libOpenCL.so.1: ..." or "no OpenCL platform: ...". Listed once per process.
Status opencl_status();

// One line per device: "cl:0:0  NAME (TYPE; PLATFORM)".
std::string describe_devices(const std::vector<PlatformInfo>& platforms);

}  // namespace rg::ocl
