// Formatting the OpenCL part of `retrograd probe`: opens each device (which runs the
// capability tests at the real allocation limit) and writes one block per device.
#include "opencl/probe_report.h"

#include "base/memory.h"
#include "opencl/capabilities.h"
#include "opencl/device.h"

namespace rg::ocl {

namespace {

constexpr const char* kIndent = "           ";  // under the value column of "opencl     "

std::string yes_no(bool works, const std::string& note) { return (works ? "yes: " : "no: ") + note; }

std::string describe(const Device& device, int64_t budget) {
  const DeviceInfo& d = device.info();
  const Capabilities& c = device.capabilities();
  std::string text = "  " + d.label + "   " + d.name + " (" + d.type + ", " + d.platform_name + ", " +
                     d.opencl_c_version + ", driver " + d.driver_version + ")\n";
  text += std::string(kIndent) + "memory " + format_bytes(d.global_mem_bytes) + ", " + std::to_string(d.compute_units) +
          " compute units at " + std::to_string(d.max_clock_mhz) + " MHz\n";
  std::string alloc = "largest buffer " + format_bytes(c.max_alloc_works) + " allocated, every page written and read back (reported " +
                      format_bytes(c.max_alloc_reported) + ")";
  if (!c.max_alloc_note.empty()) alloc += "; failed at " + c.max_alloc_note;
  text += std::string(kIndent) + alloc + "\n";
  std::string local = c.local_mem_works > 0 ? "local memory " + format_bytes(c.local_mem_works) + " used by a kernel"
                                            : "local memory unusable";
  local += " (reported " + format_bytes(c.local_mem_reported) + (d.local_mem_dedicated ? "" : ", emulated in global memory") + ")";
  if (!c.local_mem_note.empty()) local += "; " + c.local_mem_note;
  text += std::string(kIndent) + local + "\n";
  text += std::string(kIndent) + "fp16 storage (vload_half/vstore_half) " + yes_no(c.fp16_storage, c.fp16_storage_note) + "\n";
  text += std::string(kIndent) + "fp16 arithmetic " + yes_no(c.fp16_arithmetic, c.fp16_arithmetic_note) + "\n";
  if (budget > 0) text += std::string(kIndent) + "budget " + format_bytes(budget) + " (--device-mem)\n";
  text += std::string(kIndent) + "capability tests " + describe_test_cost(c) +
          (d.shares_host_memory() ? " (its buffers are host memory)" : "") + "\n";
  return text;
}

}  // namespace

Result<std::string> opencl_probe_report(const std::string& only_device, int64_t memory_budget_bytes) {
  const auto platforms = list_platforms();
  DeviceChoice only;
  if (!only_device.empty()) {
    RG_ASSIGN(only, parse_device_choice(only_device, platforms));
  }
  if (!platforms.ok()) {
    const std::string why = platforms.status().message();
    return "opencl     off: " + why + "\ngpu        off: " + why + "\n";
  }
  size_t device_count = 0;
  for (const PlatformInfo& platform : platforms.value()) device_count += platform.devices.size();
  std::string text = "opencl     " + opencl_library_name() + ": " + std::to_string(platforms.value().size()) +
                     " platform(s), " + std::to_string(device_count) + " device(s)\n";
  std::string gpus, others, failed;  // labels and names, ", "-separated
  auto add = [](std::string* list, const DeviceInfo& info) { *list += (list->empty() ? "" : ", ") + info.label + " " + info.name; };
  for (const PlatformInfo& platform : platforms.value()) {
    if (platform.devices.empty()) {
      text += "  platform " + std::to_string(platform.index) + " (" + platform.name + "): " + platform.devices_error + "\n";
    }
    for (const DeviceInfo& info : platform.devices) {
      if (!only_device.empty() && (!only.opencl || only.platform != info.platform_index || only.device != info.device_index)) {
        continue;
      }
      DeviceOptions options;
      options.memory_budget_bytes = memory_budget_bytes;
      auto device = Device::open(DeviceChoice{true, info.platform_index, info.device_index}, options);
      if (!device.ok()) {
        text += "  " + info.label + "   " + info.name + ": unusable: " + device.status().message() + "\n";
        if (info.is_gpu()) add(&failed, info);
        continue;
      }
      text += describe(*device.value(), memory_budget_bytes);
      add(info.is_gpu() ? &gpus : &others, info);
    }
  }
  if (!gpus.empty()) {
    text += "gpu        on: " + gpus + " (--device cl:P:D)\n";
  } else if (!failed.empty()) {
    text += "gpu        off: " + failed + " did not open (above)\n";
  } else if (!only_device.empty()) {
    text += "gpu        not tested (--device " + only_device + ")\n";
  } else {
    text += "gpu        off: no OpenCL GPU" + (others.empty() ? std::string() : " (only " + others + ")") +
            "; an NVIDIA driver installed but not registered is found with OCL_ICD_FILENAMES=libnvidia-opencl.so.1\n";
  }
  return text;
}

}  // namespace rg::ocl
