// --profile (app/layer_profile_option.h).
#include "app/layer_profile_option.h"

#include <algorithm>
#include <cmath>

#include "cpu/cpuid.h"
#include "report/clock.h"
#include "report/hardware_table.h"
#include "report/sysinfo.h"

namespace rg {

void add_profile_option(Args& args) {
  args.flag("profile", "time each layer's forward, weight gradient and input gradient while training (CPU): a "
            "table after training with GFLOP/s and the share of the ISA level's peak (in --json: layer_profile)");
}

Result<std::unique_ptr<LayerProfile>> layer_profile_for(const Args& args, const TrainOptions& options) {
  if (!args.given("profile")) {
    if (options.device != nullptr && args.given("profile-device")) {
      return std::make_unique<LayerProfile>(LayerProfile::Clock::device);
    }
    return std::unique_ptr<LayerProfile>();
  }
  if (options.device != nullptr) {
    return Status::error("--profile times the layers on the CPU; on an OpenCL device --profile-device times each "
                         "kernel and each layer");
  }
  return std::make_unique<LayerProfile>();
}

PeakFigure layer_profile_peak(int threads) {
  const int physical = read_system_info().physical_cores;
  const int cores = physical > 0 ? std::min(threads, physical) : threads;
  return cpu_isa_fp32_peak(hardware_table(), detect_cpu(), active_isa(), cores, measure_cpu_mhz(cores));
}

PeakFigure layer_profile_device_peak(const std::string& device_name) {
  return gpu_fp32_peak(hardware_table(), device_name);
}

namespace {
// A figure, or null where it is unknown (NAN).
nlohmann::json number_or_null(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }
}  // namespace

nlohmann::json layer_profile_json(const LayerProfileReport& report) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerProfileRow& row : report.rows) {
    nlohmann::json entry = {{"layer", row.layer}, {"kind", row.kind}};
    if (!row.fused_into.empty()) entry["fused_into"] = row.fused_into;
    for (int p = 0; p < kLayerPhases; ++p) {
      entry[layer_phase_key(static_cast<LayerPhase>(p))] = {{"ms_per_step", number_or_null(row.ms_per_step[p])},
                        {"gflops", number_or_null(row.gflops[p])},
                        {"peak_share", number_or_null(row.peak_share[p])},
                        {"executed_gflops", number_or_null(row.executed_gflops[p])},
                        {"executed_peak_share", number_or_null(row.executed_share[p])},
                        {"thread_ms_per_step", number_or_null(row.thread_ms_per_step[p])},
                        {"threads_busy_share", number_or_null(row.threads_busy[p])},
                        {"in_regions_share", number_or_null(row.in_regions[p])}};
    }
    layers.push_back(entry);
  }
  return {{"steps", report.steps},
          {"threads", report.threads},
          {"rows_per_step", report.rows_per_step},
          {"layers_ms_per_step", report.layers_ms},
          {"other_ms_per_step", report.other_ms},
          {"peak_gflops", number_or_null(report.peak.gflops > 0 ? report.peak.gflops : NAN)},
          {"peak_basis", report.peak.basis},
          {"layers", layers}};
}

}  // namespace rg
