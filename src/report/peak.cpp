// Peaks for efficiency figures: the published table first, the CPU's SIMD features second.
#include "report/peak.h"

#include <algorithm>

#include "base/text_format.h"

namespace rg {

namespace {

std::string table_source(const HardwareSpec& spec) {
  return "data/hardware_specs.csv: " + spec.device + " (" + spec.sources + ")";
}

// Zen 4, and Zen 5 in the mobile Ryzen AI 300 parts (peak.h): AVX-512 counted as two 256-bit
// halves. Zen 5's desktop, server and Ryzen AI Max parts have full-width 512-bit units.
bool amd_512_bit_as_halves(const CpuInfo& cpu) {
  if (cpu.vendor != "AuthenticAMD") return false;
  if (cpu.family == 0x19) return true;
  const bool mobile_zen5 = cpu.brand.find("Ryzen AI") != std::string::npos &&
                           cpu.brand.find("Ryzen AI Max") == std::string::npos;
  return cpu.family == 0x1A && mobile_zen5;
}

// Intel's client cores with AVX-512 (Cannon, Ice, Tiger and Rocket Lake: "Core" in the brand)
// have one 512-bit FMA unit (ports 0 and 1 fused), not a Xeon Gold's two.
bool intel_client_one_512_bit_unit(const CpuInfo& cpu) {
  return cpu.vendor == "GenuineIntel" && cpu.brand.find("Core") != std::string::npos;
}

// What simd_flops_per_cycle assumed, for a derived peak's basis.
std::string simd_assumption(const CpuInfo& cpu) {
  if (!(cpu.features.avx512f && cpu.features.fma)) return "two pipes assumed";
  if (amd_512_bit_as_halves(cpu)) return "AVX-512 as two 256-bit halves on AMD, two pipes assumed";
  return intel_client_one_512_bit_unit(cpu) ? "one 512-bit FMA unit assumed, as Intel's client cores"
                                            : "two 512-bit FMA units assumed, as Xeon Gold and Platinum";
}

}  // namespace

double simd_flops_per_cycle(const CpuInfo& cpu) {
  const CpuFeatures& f = cpu.features;
  if (f.avx512f && f.fma) return amd_512_bit_as_halves(cpu) || intel_client_one_512_bit_unit(cpu) ? 32 : 64;
  if (f.avx2 && f.fma) return 32;
  if (f.avx) return 16;
  return 8;  // SSE2, the baseline
}

double isa_flops_per_cycle(Isa level, const CpuInfo& cpu) {
  double level_figure = 2;
  switch (level) {
    case Isa::reference: level_figure = 2; break;
    case Isa::sse2:
    case Isa::sse3:
    case Isa::ssse3:
    case Isa::sse41: level_figure = 8; break;
    case Isa::avx: level_figure = 16; break;
    case Isa::avx2_fma: level_figure = 32; break;
    case Isa::avx512: level_figure = 64; break;
  }
  return std::min(level_figure, simd_flops_per_cycle(cpu));
}

PeakFigure cpu_fp32_peak(const std::vector<HardwareSpec>& table, const CpuInfo& cpu, int cores, double measured_mhz) {
  PeakFigure peak;
  const std::string name = cpu.brand.empty() ? "this CPU" : cpu.brand;
  const HardwareSpec* spec = match_hardware(table, cpu.brand, true);
  const std::string core_text = std::to_string(cores) + (cores == 1 ? " core" : " cores");
  if (spec != nullptr && spec->flops_per_cycle_core > 0) {
    peak.from_table = true;
    peak.source = table_source(*spec);
    const double mhz = measured_mhz > 0 ? measured_mhz : spec->base_mhz;
    peak.gflops = cores * mhz * spec->flops_per_cycle_core / 1000;
    peak.basis = core_text + " x " + format_significant(mhz) + " MHz (" + (measured_mhz > 0 ? "measured" : "base clock, table") +
                 ") x " + format_significant(spec->flops_per_cycle_core) + " FP32 flops/cycle (table: " + spec->device + ")";
    return peak;
  }
  if (measured_mhz <= 0) {
    peak.basis = "unknown: " + name + " is not in data/hardware_specs.csv and its clock was not read";
    return peak;
  }
  const double per_cycle = simd_flops_per_cycle(cpu);
  peak.gflops = cores * measured_mhz * per_cycle / 1000;
  peak.basis = core_text + " x " + format_significant(measured_mhz) + " MHz (measured) x " + format_significant(per_cycle) +
               " FP32 flops/cycle (derived from its SIMD features, " + simd_assumption(cpu) + ")";
  peak.source = "derived here: " + name + " is not in data/hardware_specs.csv";
  return peak;
}

PeakFigure cpu_isa_fp32_peak(const std::vector<HardwareSpec>& table, const CpuInfo& cpu, Isa level, int cores,
                             double measured_mhz) {
  PeakFigure peak;
  if (measured_mhz <= 0) {
    peak.basis = "unknown: the clock was not measured";
    return peak;
  }
  double per_cycle = isa_flops_per_cycle(level, cpu);
  std::string whose = "the " + std::string(isa_name(level)) + " level's";
  const HardwareSpec* spec = match_hardware(table, cpu.brand, true);
  if (spec != nullptr && spec->flops_per_cycle_core > 0 && spec->flops_per_cycle_core < per_cycle) {
    per_cycle = spec->flops_per_cycle_core;
    whose = "this CPU's (table: " + spec->device + ")";
    peak.from_table = true;
    peak.source = table_source(*spec);
  }
  peak.gflops = cores * measured_mhz * per_cycle / 1000;
  peak.basis = std::to_string(cores) + (cores == 1 ? " core" : " cores") + " x " + format_significant(measured_mhz) +
               " MHz (measured) x " + format_significant(per_cycle) + " FP32 flops/cycle (" + whose + ")";
  return peak;
}

PeakFigure gpu_fp32_peak(const std::vector<HardwareSpec>& table, const std::string& device_name) {
  PeakFigure peak;
  const HardwareSpec* spec = match_hardware(table, device_name, false);
  if (spec == nullptr) {
    peak.basis = "unknown: " + device_name + " is not in data/hardware_specs.csv";
    return peak;
  }
  peak.from_table = true;
  peak.gflops = spec->fp32_peak_gflops;
  peak.basis = spec->fp32_peak_basis + " (table: " + spec->device + ")";
  peak.source = table_source(*spec);
  return peak;
}

}  // namespace rg
