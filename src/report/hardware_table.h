// The published hardware figures (data/hardware_specs.csv, docs/hardware_specs.md): parsed from
// the copy embedded in the binary, and matched to this machine's CPU brand string or an OpenCL
// device's name, so that a measured GFLOP/s can be set against the peak it should reach.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

struct HardwareSpec {
  std::string device;        // "Intel Core 2 Duo E8400"
  std::string type;          // "CPU", "GPU", "GPU (mobile)", ...
  std::string architecture;  // "Wolfdale / 45nm"
  std::string match;         // "e8400"; "h100&hbm3|h100&sxm": see matches()
  int cores = 0, threads = 0;              // CPUs; 0 when the cell is not a plain number
  double base_mhz = 0, boost_mhz = 0;      // the cells' leading numbers; 0: not found
  double fp32_peak_gflops = 0;             // at the boost clock (fp32_peak_gflops_num)
  double fp32_base_gflops = 0;             // at the base clock; 0: not published
  std::string fp32_peak_basis;             // how the peak was found ("published (2 x 1280 x 1708 MHz)")
  double fp16_gflops = 0;                  // non-tensor; 0: none or not published
  double mem_bw_gbs = 0;                   // the cell's leading number (GB/s)
  double flops_per_cycle_core = 0;         // CPUs: FP32 flops per cycle per core
  std::string memory, simd_isa, benchmarks, derived, notes, sources;

  bool is_cpu() const { return type == "CPU"; }
};

// The table's rows from CSV text (RFC 4180: quoted cells may hold commas, quotes and line
// breaks). Errors name `origin`, the line and the rule: a missing column, an unclosed quote,
// a row of the wrong width, a match rule that is empty.
Result<std::vector<HardwareSpec>> parse_hardware_table(const std::string& csv, const std::string& origin);

// The embedded table, parsed once (a broken embedded file is a build bug: it aborts).
const std::vector<HardwareSpec>& hardware_table();

// Whether `name` (a CPU brand string or an OpenCL device name) holds every word of one of the
// rule's alternatives: both lowercased and split at anything not a letter or digit, so
// "Intel(R) Core(TM)2 Duo CPU E8400 @ 3.00GHz" holds "e8400" and "NVIDIA H100 80GB HBM3"
// holds "h100&hbm3".
bool hardware_name_matches(const std::string& rule, const std::string& name);

// The row of `table` whose rule `name` matches, among CPUs (cpu) or the rest; null when none
// does, or when two do (an ambiguous name is not guessed).
const HardwareSpec* match_hardware(const std::vector<HardwareSpec>& table, const std::string& name, bool cpu);

}  // namespace rg
