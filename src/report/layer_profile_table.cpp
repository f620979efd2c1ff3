// train --profile's table (report/layer_profile_table.h).
#include "report/layer_profile_table.h"

#include <cmath>
#include <cstdio>

namespace rg {

LayerProfileReport summarize_layer_profile(const Model& model, const LayerProfile& profile, int64_t batch,
                                           double train_seconds, const PeakFigure& peak) {
  LayerProfileReport report;
  report.batch = batch;
  report.peak = peak;
  const std::vector<LayerProfile::Entry>& entries = profile.entries();
  const int forward = static_cast<int>(LayerPhase::forward);
  if (entries.empty() || batch <= 0) return report;
  report.steps = static_cast<double>(entries.front().samples[forward]) / static_cast<double>(batch);
  if (report.steps <= 0) return report;
  double layer_seconds = 0;
  for (size_t i = 0; i < model.layers().size() && i < entries.size(); ++i) {
    const Layer& layer = *model.layers()[i];
    const LayerProfile::Entry& entry = entries[i];
    LayerProfileRow row;
    row.layer = layer.name();
    row.kind = layer.kind();
    const double flops = static_cast<double>(layer.forward_flops_per_sample());
    for (int p = 0; p < kLayerPhases; ++p) {
      const double seconds = entry.seconds[p], samples = static_cast<double>(entry.samples[p]);
      const bool ran = samples > 0 && seconds > 0;
      layer_seconds += seconds;
      row.ms_per_step[p] = ran ? 1e3 * seconds / report.steps : NAN;
      row.gflops[p] = ran && flops > 0 ? flops * samples / seconds / 1e9 : NAN;
      row.peak_share[p] = peak.gflops > 0 ? row.gflops[p] / peak.gflops : NAN;
    }
    report.rows.push_back(row);
  }
  report.layers_ms = 1e3 * layer_seconds / report.steps;
  report.other_ms = std::max(0.0, 1e3 * train_seconds / report.steps - report.layers_ms);
  return report;
}

namespace {
// One phase's three cells: "  1.234 ms  45.6 GF  12%", blanks where a figure is unknown.
std::string phase_cells(const LayerProfileRow& row, int p) {
  char text[64];
  char ms[16] = "-", gf[16] = "", share[16] = "";
  if (std::isfinite(row.ms_per_step[p])) std::snprintf(ms, sizeof ms, "%.3f", row.ms_per_step[p]);
  if (std::isfinite(row.gflops[p])) std::snprintf(gf, sizeof gf, "%.1f", row.gflops[p]);
  if (std::isfinite(row.peak_share[p])) std::snprintf(share, sizeof share, "%.0f%%", 100 * row.peak_share[p]);
  std::snprintf(text, sizeof text, "  %8s %7s %5s", ms, gf, share);
  return text;
}
}  // namespace

std::string layer_profile_text(const LayerProfileReport& report) {
  std::string out;
  char line[256];
  if (report.steps <= 0) return "  no training step was timed\n";
  std::snprintf(line, sizeof line, "  per step of %lld samples (%.0f steps timed); GFLOP/s of the products the layer "
                "stands for; peak %s GFLOP/s: %s\n", static_cast<long long>(report.batch), report.steps,
                report.peak.gflops > 0 ? std::to_string(static_cast<long long>(std::lround(report.peak.gflops))).c_str()
                                       : "unknown", report.peak.basis.c_str());
  out += line;
  std::snprintf(line, sizeof line, "  %-14s %-10s  %-22s  %-22s  %-22s\n", "", "", "forward", "weight gradient",
                "input gradient");
  out += line;
  std::snprintf(line, sizeof line, "  %-14s %-10s", "layer", "kind");
  out += line;
  for (int p = 0; p < kLayerPhases; ++p) out += "        ms GFLOP/s  peak";
  out += "\n";
  for (const LayerProfileRow& row : report.rows) {
    std::snprintf(line, sizeof line, "  %-14s %-10s", row.layer.c_str(), row.kind.c_str());
    out += line;
    for (int p = 0; p < kLayerPhases; ++p) out += phase_cells(row, p);
    out += "\n";
  }
  std::snprintf(line, sizeof line, "  layers %.3f ms a step; the rest (loss, update, batches) %.3f ms\n",
                report.layers_ms, report.other_ms);
  out += line;
  return out;
}

}  // namespace rg
