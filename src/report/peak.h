// The FP32 peak a measured GFLOP/s is divided by, with how it was found and its source: from
// the published table (report/hardware_table.h) where the CPU or GPU is listed, at the clock
// measured here where there is one; else, for a CPU, derived from its SIMD features (and said
// so); for an unlisted GPU, none (an efficiency is not guessed).
#pragma once

#include <string>
#include <vector>

#include "cpu/cpuid.h"
#include "cpu/isa.h"
#include "report/hardware_table.h"

namespace rg {

struct PeakFigure {
  double gflops = 0;   // 0: unknown
  std::string basis;   // "2 cores x 2596 MHz (measured) x 32 FP32 flops/cycle (table: Zen 2)"
  std::string source;  // "data/hardware_specs.csv: AMD Ryzen 5 3600 (https://...)", or what it was derived from
  bool from_table = false;
};

// FP32 flops per cycle per core from the SIMD units the features imply, two arithmetic pipes
// assumed (AVX-512 with FMA: 2 x 16 lanes x 2; FMA: 2 x 8 lanes x 2; AVX: 8-lane add + mul; SSE:
// 4-lane add + mul). Two 512-bit FMA units are what Xeon Gold and Platinum have, and AMD's Zen 5
// (family 0x1A) on the desktop and in servers (an EPYC VM of that family ran 54 flops a cycle in
// one convolution here); Zen 4 (family 0x19) and the mobile Zen 5 of the Ryzen AI 300 parts run a
// 512-bit operation as two 256-bit halves: 32, as AVX2's. CPUID cannot show a Xeon with one
// 512-bit FMA unit (some Silver and Bronze parts: 32), nor K8's SSE units of half width (4 a
// cycle): the table's figures, where listed, win.
// For CPUs the table does not list.
double simd_flops_per_cycle(const CpuInfo& cpu);

// FP32 flops a cycle a core of `cpu` reaches running `level`'s kernels: reference 2 (a scalar
// multiply and add), sse2 to sse4.1 8, avx 16, avx2_fma 32, avx512 64 (or 32, as above); never
// more than simd_flops_per_cycle(cpu), the core's own. What a peak becomes with the kernels
// capped at a level.
double isa_flops_per_cycle(Isa level, const CpuInfo& cpu);

// The peak of `cores` cores of `cpu` at `measured_mhz` (0: unknown, then the table's base clock).
PeakFigure cpu_fp32_peak(const std::vector<HardwareSpec>& table, const CpuInfo& cpu, int cores, double measured_mhz);

// The peak of `cores` cores running `level`'s kernels at `measured_mhz` (0: unknown, then none):
// the level's flops a cycle, capped by the table's figure per core where the CPU is listed
// (K8's SSE units of half width: 4, not 8), as a per-layer profile's share of the peak needs.
PeakFigure cpu_isa_fp32_peak(const std::vector<HardwareSpec>& table, const CpuInfo& cpu, Isa level, int cores,
                             double measured_mhz);

// The peak of the OpenCL device named `device_name` (CL_DEVICE_NAME): the table's, at its boost
// clock (drivers report the boost clock as CL_DEVICE_MAX_CLOCK_FREQUENCY).
PeakFigure gpu_fp32_peak(const std::vector<HardwareSpec>& table, const std::string& device_name);

}  // namespace rg
