// Listing platforms and devices through the loaded entry points; string and number queries.
#include "opencl/platforms.h"

#include <sstream>

#include "opencl/cl_error.h"

namespace rg::ocl {

namespace {

template <class Query, class Object, class Param>
Result<std::string> info_string(Query query, const char* query_name, Object object, Param param) {
  size_t size = 0;
  if (cl_int code = query(object, param, 0, nullptr, &size); code != CL_SUCCESS) return cl_status(query_name, code);
  std::string text(size, '\0');
  if (cl_int code = query(object, param, size, &text[0], nullptr); code != CL_SUCCESS) {
    return cl_status(query_name, code);
  }
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();  // drivers pad
  return text;
}

template <class T>
Result<T> device_value(const ClApi& api, cl_device_id device, cl_device_info param) {
  T value{};
  RG_CL_TRY(api, clGetDeviceInfo, device, param, sizeof value, &value, nullptr);
  return value;
}

std::string type_name(cl_device_type type) {
  if (type & CL_DEVICE_TYPE_GPU) return "GPU";
  if (type & CL_DEVICE_TYPE_CPU) return "CPU";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  return "other";
}

Result<DeviceInfo> read_device(const ClApi& api, const PlatformInfo& platform, int index, cl_device_id id) {
  DeviceInfo d;
  d.platform_index = platform.index;
  d.device_index = index;
  d.label = "cl:" + std::to_string(platform.index) + ":" + std::to_string(index);
  d.platform = platform.id;
  d.id = id;
  d.platform_name = platform.name;
  auto text = [&](cl_device_info param, std::string* out) -> Status {
    RG_ASSIGN(*out, info_string(api.clGetDeviceInfo, "clGetDeviceInfo", id, param));
    return Status();
  };
  RG_TRY(text(CL_DEVICE_NAME, &d.name));
  RG_TRY(text(CL_DEVICE_VENDOR, &d.vendor));
  RG_TRY(text(CL_DEVICE_VERSION, &d.version));
  RG_TRY(text(CL_DEVICE_OPENCL_C_VERSION, &d.opencl_c_version));
  RG_TRY(text(CL_DRIVER_VERSION, &d.driver_version));
  RG_TRY(text(CL_DEVICE_EXTENSIONS, &d.extensions));
  RG_ASSIGN(const cl_device_type type, device_value<cl_device_type>(api, id, CL_DEVICE_TYPE));
  d.type = type_name(type);
  RG_ASSIGN(d.compute_units, device_value<cl_uint>(api, id, CL_DEVICE_MAX_COMPUTE_UNITS));
  RG_ASSIGN(d.max_clock_mhz, device_value<cl_uint>(api, id, CL_DEVICE_MAX_CLOCK_FREQUENCY));
  RG_ASSIGN(const cl_ulong global, device_value<cl_ulong>(api, id, CL_DEVICE_GLOBAL_MEM_SIZE));
  RG_ASSIGN(const cl_ulong max_alloc, device_value<cl_ulong>(api, id, CL_DEVICE_MAX_MEM_ALLOC_SIZE));
  RG_ASSIGN(const cl_ulong local, device_value<cl_ulong>(api, id, CL_DEVICE_LOCAL_MEM_SIZE));
  RG_ASSIGN(const cl_device_local_mem_type local_type,
            device_value<cl_device_local_mem_type>(api, id, CL_DEVICE_LOCAL_MEM_TYPE));
  RG_ASSIGN(d.max_work_group_size, device_value<size_t>(api, id, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  RG_ASSIGN(const cl_uint align_bits, device_value<cl_uint>(api, id, CL_DEVICE_MEM_BASE_ADDR_ALIGN));
  d.base_align_bytes = align_bits / 8;
  d.global_mem_bytes = static_cast<int64_t>(global);
  d.max_alloc_bytes = static_cast<int64_t>(max_alloc);
  d.local_mem_bytes = static_cast<int64_t>(local);
  d.local_mem_dedicated = local_type == CL_LOCAL;
  // Deprecated since OpenCL 2.0 but still answered; a driver that does not is taken as separate memory.
  const auto unified = device_value<cl_bool>(api, id, CL_DEVICE_HOST_UNIFIED_MEMORY);
  d.host_unified_memory = unified.ok() && unified.value() == CL_TRUE;
  return d;
}

}  // namespace

bool DeviceInfo::has_extension(const std::string& extension) const {
  std::istringstream words(extensions);
  std::string word;
  while (words >> word)
    if (word == extension) return true;
  return false;
}

Result<std::vector<PlatformInfo>> list_platforms(const ClApi& api) {
  cl_uint count = 0;
  const cl_int code = api.clGetPlatformIDs(0, nullptr, &count);
  // The ICD loader answers CL_PLATFORM_NOT_FOUND_KHR (-1001) when no driver is registered.
  if (code == -1001 || (code == CL_SUCCESS && count == 0)) {
    return Status::error("no OpenCL platform: the loader " + api.library +
                         " found no driver (none registered in /etc/OpenCL/vendors, or OCL_ICD_FILENAMES / "
                         "OCL_ICD_VENDORS point elsewhere); install one, e.g. pocl-opencl-icd for the CPU" +
                         (code == CL_SUCCESS ? std::string() : " (" + cl_status("clGetPlatformIDs", code).message() + ")"));
  }
  if (code != CL_SUCCESS) return cl_status("clGetPlatformIDs", code);
  std::vector<cl_platform_id> ids(count);
  RG_CL_TRY(api, clGetPlatformIDs, count, ids.data(), nullptr);

  std::vector<PlatformInfo> platforms;
  for (cl_uint p = 0; p < count; ++p) {
    PlatformInfo platform;
    platform.index = static_cast<int>(p);
    platform.id = ids[p];
    RG_ASSIGN(platform.name, info_string(api.clGetPlatformInfo, "clGetPlatformInfo", ids[p], CL_PLATFORM_NAME));
    RG_ASSIGN(platform.vendor, info_string(api.clGetPlatformInfo, "clGetPlatformInfo", ids[p], CL_PLATFORM_VENDOR));
    RG_ASSIGN(platform.version, info_string(api.clGetPlatformInfo, "clGetPlatformInfo", ids[p], CL_PLATFORM_VERSION));
    cl_uint device_count = 0;
    const cl_int devices_code = api.clGetDeviceIDs(ids[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &device_count);
    if (devices_code != CL_SUCCESS || device_count == 0) {
      // A platform with no device answers CL_DEVICE_NOT_FOUND: listed, with the reason.
      platform.devices_error = devices_code == CL_SUCCESS ? "no devices" : cl_status("clGetDeviceIDs", devices_code).message();
      platforms.push_back(std::move(platform));
      continue;
    }
    std::vector<cl_device_id> device_ids(device_count);
    RG_CL_TRY(api, clGetDeviceIDs, ids[p], CL_DEVICE_TYPE_ALL, device_count, device_ids.data(), nullptr);
    for (cl_uint d = 0; d < device_count; ++d) {
      auto device = read_device(api, platform, static_cast<int>(d), device_ids[d]);
      if (!device.ok()) {
        return device.status().with_context("reading device " + std::to_string(d) + " of platform " +
                                            std::to_string(p) + " (" + platform.name + "): ");
      }
      platform.devices.push_back(device.take());
    }
    platforms.push_back(std::move(platform));
  }
  return platforms;
}

Result<std::vector<PlatformInfo>> list_platforms() {
  RG_ASSIGN(const ClApi* api, opencl_api());
  return list_platforms(*api);
}

Status opencl_status() {
  static const Status status = []() -> Status {
    auto platforms = list_platforms();
    if (!platforms.ok()) return platforms.status();
    std::string empty;
    for (const PlatformInfo& platform : platforms.value()) {
      if (!platform.devices.empty()) return Status();
      empty += (empty.empty() ? "" : "; ") + platform.name + ": " + platform.devices_error;
    }
    return Status::error("no OpenCL device: every platform is empty (" + empty + ")");
  }();
  return status;
}

std::string describe_devices(const std::vector<PlatformInfo>& platforms) {
  std::string text;
  for (const PlatformInfo& platform : platforms) {
    for (const DeviceInfo& device : platform.devices) {
      text += device.label + "  " + device.name + " (" + device.type + "; " + platform.name + ")\n";
    }
  }
  return text;
}

}  // namespace rg::ocl
