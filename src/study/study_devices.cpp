// CPU levels from CPUID, OpenCL devices from the loader.
#include "study/study_devices.h"

#include <algorithm>

#include "cpu/isa.h"
#include "cpu/kernel_tables.h"
#include "opencl/platforms.h"
#include "report/hardware_table.h"

namespace rg {

FoundDevices find_study_devices(const SystemInfo& info, bool with_opencl) {
  FoundDevices found;
  const int cores = info.physical_cores > 0 ? info.physical_cores : info.logical_cpus;
  const PeakFigure cpu_peak = cpu_fp32_peak(hardware_table(), info.cpu, cores, info.cpu_mhz);
  const std::string cpu_name = info.cpu.brand.empty() ? "this CPU" : info.cpu.brand;
  const Isa best = best_supported_isa(info.cpu.features);
  // Levels that run the same fp32 kernels (sse2 to sse4.1 today) are one device, measured once at
  // the highest of them (its other kernel families may use more) and labelled with the range.
  std::string group_identity, group_first;
  for (Isa isa : all_isas()) {
    if (!isa_supported(isa, info.cpu.features)) continue;
    const std::string identity = f32_kernels_identity(isa);
    const bool same_as_last = !found.devices.empty() && identity == group_identity;
    if (!same_as_last) group_first = isa_name(isa);
    group_identity = identity;
    StudyDevice d;
    d.isa = isa_name(isa);
    d.label = "cpu/" + (same_as_last ? group_first + ".." : "") + d.isa;
    d.device_arg = "cpu";
    d.name = cpu_name + " (" + d.isa + (same_as_last ? "; from " + group_first + " up the same fp32 kernels" : "") + ")";
    d.kind = "CPU";
    d.best_cpu = isa == best;
    d.peak = cpu_peak;  // the chip's peak at every level: what each level leaves unused shows
    if (same_as_last) found.devices.pop_back();
    found.devices.push_back(d);
  }
  if (!with_opencl) {
    found.opencl_note = "OpenCL not studied (--no-opencl)";
    return found;
  }
  auto platforms = ocl::list_platforms();
  if (!platforms.ok()) {
    found.opencl_note = platforms.status().message();
    return found;
  }
  for (const ocl::PlatformInfo& platform : platforms.value()) {
    for (const ocl::DeviceInfo& info_cl : platform.devices) {
      StudyDevice d;
      d.label = info_cl.label;
      d.device_arg = info_cl.label;
      d.name = info_cl.name + " (" + platform.name + ")";
      d.kind = info_cl.type;
      d.opencl = true;
      d.memory_bytes = info_cl.global_mem_bytes;
      if (info_cl.type == "CPU") {
        // An OpenCL CPU device (PoCL) runs on this same chip: its peak is the chip's.
        d.peak = cpu_peak;
        d.peak.basis += " (an OpenCL CPU device: this machine's CPU)";
      } else {
        d.peak = gpu_fp32_peak(hardware_table(), info_cl.name);
      }
      found.devices.push_back(d);
    }
  }
  if (found.devices.size() == static_cast<size_t>(std::count_if(found.devices.begin(), found.devices.end(),
                                                                [](const StudyDevice& d) { return !d.opencl; }))) {
    found.opencl_note = "OpenCL: the loader found platforms but no devices";
  }
  return found;
}

}  // namespace rg
