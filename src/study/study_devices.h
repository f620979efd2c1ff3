// The devices a study runs on: the CPU at every ISA level it supports (RETROGRAD_ISA caps the
// kernels' level, so each level is measured on the same chip), and every OpenCL device, each
// with the FP32 peak its efficiencies divide by (report/peak.h).
#pragma once

#include <string>
#include <vector>

#include "report/sysinfo.h"
#include "study/study_plan.h"

namespace rg {

struct FoundDevices {
  std::vector<StudyDevice> devices;
  std::string opencl_note;  // why there are no OpenCL devices ("no OpenCL loader: ..."), or empty
};

// Every level from the reference (scalar) code up; `with_opencl` false: the CPU only (--no-opencl).
FoundDevices find_study_devices(const SystemInfo& info, bool with_opencl);

// Whether a CPU device runs the SSE2 level's fp32 kernels, the Athlon 64's (labelled cpu/sse2, or
// cpu/sse2..sse4.1 where the levels up to SSE4.1 run the same ones: find_study_devices).
inline bool runs_sse2_kernels(const StudyDevice& d) {
  return !d.opencl && (d.label == "cpu/sse2" || d.label.rfind("cpu/sse2..", 0) == 0);
}

}  // namespace rg
