// Roofline estimates for the table's machines from the speeds measured here.
#include "study/estimates.h"

#include <cmath>

#include "base/text_format.h"
#include "cpu/kernel_tables.h"
#include "report/hardware_table.h"
#include "report/peak.h"
#include "study/network_costs.h"

namespace rg {

namespace {

// The fastest successful fp32 devices run of `network` on a device of the class (GPU or not).
const RunRecord* best_fp32_run(const StudyResult& result, const std::string& network, bool gpu) {
  const RunRecord* best = nullptr;
  for (const RunRecord& r : result.figures) {
    const StudyDevice& d = result.devices[r.run.device];
    if (!r.ok || r.run.part != "devices" || r.run.network != network || r.run.precision != "fp32") continue;
    if ((d.kind == "GPU") != gpu || !(r.samples_per_s > 0)) continue;
    if (best == nullptr || r.samples_per_s > best->samples_per_s) best = &r;
  }
  return best;
}

// The kernels' level a listed CPU would run, from its SIMD column ("MMX, SSE, SSE2, SSE3, SSE4a
// (no SSSE3/SSE4.1)" -> sse3): remarks in brackets are dropped first.
std::string isa_of_row(const HardwareSpec& spec) {
  std::string text;
  int depth = 0;
  for (char c : spec.simd_isa) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth == 0 && c != ')') text += c;
  }
  auto has = [&](const char* word) { return hardware_name_matches(word, text); };
  if (has("avx2")) return "avx2";
  if (has("avx")) return "avx";
  if (has("sse4&1") || has("sse4&2")) return "sse4.1";
  if (has("ssse3")) return "ssse3";
  if (has("sse3")) return "sse3";
  return "sse2";
}

// FP32 flops a cycle a core of this machine reaches at a kernel level (report/peak.h): what the
// peak becomes with the kernels capped there. The study's CPU devices are this machine's levels.
double level_flops_per_cycle(const std::string& isa) {
  static const CpuInfo here = detect_cpu();
  const auto level = isa_from_name(isa);
  return isa_flops_per_cycle(level.ok() ? level.value() : Isa::reference, here);
}

// The fp32 devices run of `network` on the CPU level `isa` here, or null.
// A device measured at another level that runs the same fp32 kernels stands for it (the study
// measures sse2 to sse4.1 once).
const RunRecord* fp32_run_at_level(const StudyResult& result, const std::string& network, const std::string& isa) {
  auto level = isa_from_name(isa);
  if (!level.ok()) return nullptr;
  for (const RunRecord& r : result.figures) {
    const StudyDevice& d = result.devices[r.run.device];
    auto device_level = isa_from_name(d.isa);
    if (r.ok && r.run.part == "devices" && r.run.network == network && r.run.precision == "fp32" && !d.opencl &&
        device_level.ok() && f32_kernels_identity(device_level.value()) == f32_kernels_identity(level.value()) &&
        r.samples_per_s > 0) {
      return &r;
    }
  }
  return nullptr;
}

// This machine's roof for a device: its peak, and the bandwidth measured here (CPUs, PoCL) or
// the table's (a listed GPU).
Roof roof_here(const StudyResult& result, const StudyDevice& device) {
  Roof roof;
  roof.gflops = device.peak.gflops;
  if (device.kind != "GPU") {
    roof.gbs = result.machine.memory_bandwidth_gbs;
  } else if (const HardwareSpec* spec = match_hardware(hardware_table(), device.name, false)) {
    roof.gbs = spec->mem_bw_gbs;
  }
  return roof;
}

nlohmann::json number_or_null(double value) { return std::isfinite(value) && value > 0 ? nlohmann::json(value) : nlohmann::json(); }

}  // namespace

nlohmann::json estimate_other_machines(const StudyResult& result) {
  nlohmann::json out = nlohmann::json::array();
  const std::vector<HardwareSpec>& table = hardware_table();
  for (const std::string& network : result.config.networks) {
    auto costs = network_training_costs(network, 64);
    if (!costs.ok()) continue;
    for (bool gpu : {false, true}) {
      const RunRecord* measured = best_fp32_run(result, network, gpu);
      std::vector<MachineEstimate> estimates;
      std::string measured_on;
      if (measured != nullptr) {
        const StudyDevice& device = result.devices[measured->run.device];
        MeasuredHere here;
        here.roof = roof_here(result, device);
        here.samples_per_s = measured->samples_per_s;
        here.machine = device.name;
        here.gpu = gpu;
        if (here.roof.gflops > 0 && here.roof.gbs > 0) {
          estimates = estimate_machines(costs.value(), here, table);
          measured_on = device.name;
        }
      }
      const StudyDevice* best_cpu = nullptr;
      for (const StudyDevice& d : result.devices) best_cpu = d.best_cpu ? &d : best_cpu;
      for (const HardwareSpec& spec : table) {
        if ((spec.is_cpu()) == gpu) continue;
        // A listed CPU is scaled by the efficiency measured here at the level its kernels would run
        // (an Athlon 64 by the sse3 kernels'), where this CPU has that level.
        const RunRecord* at_level = gpu || best_cpu == nullptr ? nullptr : fp32_run_at_level(result, network, isa_of_row(spec));
        std::vector<MachineEstimate> row_estimates = estimates;
        std::string row_measured_on = measured_on;
        if (at_level != nullptr && at_level != measured) {
          const StudyDevice& device = result.devices[at_level->run.device];
          MeasuredHere here;
          here.roof = roof_here(result, device);
          here.roof.gflops *= level_flops_per_cycle(device.isa) / level_flops_per_cycle(best_cpu->isa);
          here.samples_per_s = at_level->samples_per_s;
          here.machine = device.name;
          if (here.roof.gflops > 0 && here.roof.gbs > 0) {
            row_estimates = estimate_machines(costs.value(), here, {spec});
            for (MachineEstimate& e : row_estimates) e.spec = &spec;  // the row of `table`, not of the copy
            row_measured_on = device.name;
          }
        }
        nlohmann::json row = {{"network", network}, {"machine", spec.device}, {"type", spec.type},
                              {"measured_on", row_measured_on}};
        const Roof roof = roof_of(spec);
        const bool has_roof = roof.gflops > 0 && roof.gbs > 0;
        row["ceiling_samples_per_s"] = has_roof ? number_or_null(1.0 / roofline_seconds_per_sample(costs.value(), roof))
                                                : nlohmann::json();
        row["compute_bound_share"] = has_roof ? nlohmann::json(compute_bound_share(costs.value(), roof)) : nlohmann::json();
        row["estimated_samples_per_s"] = nullptr;
        row["efficiency"] = nullptr;
        row["basis"] = !has_roof ? "no peak or no bandwidth in the table"
                                 : std::string("no ") + (gpu ? "GPU" : "CPU") +
                                       " measured here: only the roofline ceiling (100% efficiency)";
        for (const MachineEstimate& e : row_estimates) {
          if (e.spec == nullptr || e.spec->device != spec.device) continue;
          row["estimated_samples_per_s"] = number_or_null(e.samples_per_s);
          row["efficiency"] = e.samples_per_s > 0 ? nlohmann::json(e.efficiency) : nlohmann::json();
          row["basis"] = e.basis;
        }
        out.push_back(row);
      }
    }
  }
  return out;
}

std::string estimates_csv(const nlohmann::json& estimates) {
  std::string csv = "network,machine,type,measured_on,efficiency,estimated_samples_per_s,ceiling_samples_per_s,"
                    "compute_bound_share,basis\n";
  auto cell = [](const nlohmann::json& v) -> std::string {
    if (v.is_null()) return "";
    if (v.is_number()) return format_significant(v.get<double>());
    return csv_cell(v.get<std::string>());
  };
  for (const nlohmann::json& row : estimates) {
    csv += cell(row["network"]) + "," + cell(row["machine"]) + "," + cell(row["type"]) + "," + cell(row["measured_on"]) +
           "," + cell(row["efficiency"]) + "," + cell(row["estimated_samples_per_s"]) + "," +
           cell(row["ceiling_samples_per_s"]) + "," + cell(row["compute_bound_share"]) + "," + cell(row["basis"]) + "\n";
  }
  return csv;
}

}  // namespace rg
