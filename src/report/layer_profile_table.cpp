// train --profile's table (report/layer_profile_table.h).
#include "report/layer_profile_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rg {

LayerProfileReport summarize_layer_profile(const Model& model, const LayerProfile& profile, double train_seconds,
                                           const PeakFigure& peak) {
  LayerProfileReport report;
  report.peak = peak;
  const std::vector<LayerProfile::Entry>& entries = profile.entries();
  report.steps = profile.steps();
  report.threads = profile.threads();
  if (entries.empty() || report.steps <= 0) return report;
  const double steps = static_cast<double>(report.steps);
  report.rows_per_step = static_cast<double>(entries.front().samples[static_cast<int>(LayerPhase::forward)]) / steps;
  double layer_seconds = 0;
  for (size_t i = 0; i < model.layers().size() && i < entries.size(); ++i) {
    const Layer& layer = *model.layers()[i];
    const LayerProfile::Entry& entry = entries[i];
    LayerProfileRow row;
    row.layer = layer.name();
    row.kind = layer.kind();
    // Fused where the model fuses it and it spent no time of its own (an OpenCL device runs a
    // relu's backward apart: its row shows that time).
    const bool idle = entry.seconds[0] == 0 && entry.seconds[1] == 0 && entry.seconds[2] == 0;
    if (i > 0 && model.fuses_relu_after(i - 1) && idle) row.fused_into = model.layers()[i - 1]->name();
    // A device runs its own products, not the CPU layer's algorithm: no "executed" figures.
    const bool host_algorithm = profile.clock() == LayerProfile::Clock::host;
    const double flops = static_cast<double>(layer.forward_flops_per_sample());
    for (int p = 0; p < kLayerPhases; ++p) {
      const double seconds = entry.seconds[p], samples = static_cast<double>(entry.samples[p]);
      layer_seconds += seconds;
      row.ms_per_step[p] = seconds > 0 ? 1e3 * seconds / steps : NAN;  // shown wherever time was spent
      row.gflops[p] = seconds > 0 && samples > 0 && flops > 0 ? flops * samples / seconds / 1e9 : NAN;
      row.peak_share[p] = peak.gflops > 0 ? row.gflops[p] / peak.gflops : NAN;
      const double executed = host_algorithm ? static_cast<double>(layer.executed_flops_per_sample(p)) : 0.0;
      row.executed_gflops[p] = seconds > 0 && samples > 0 && executed > 0 ? executed * samples / seconds / 1e9 : NAN;
      row.executed_share[p] = peak.gflops > 0 ? row.executed_gflops[p] / peak.gflops : NAN;
      const bool threaded = report.threads > 1 && seconds > 0;
      const double chunks = entry.chunk_seconds[p];
      row.thread_ms_per_step[p] = threaded ? 1e3 * chunks / steps : NAN;
      row.threads_busy[p] = threaded ? chunks / (seconds * report.threads) : NAN;
      row.in_regions[p] = threaded ? entry.region_seconds[p] / seconds : NAN;
    }
    report.rows.push_back(row);
  }
  report.layers_ms = 1e3 * layer_seconds / steps;
  report.other_ms = std::max(0.0, 1e3 * train_seconds / steps - report.layers_ms);
  return report;
}

namespace {
// A share as "73%", or blank where unknown.
std::string percent(double share) {
  char text[16] = "";
  if (std::isfinite(share)) std::snprintf(text, sizeof text, "%.0f%%", 100 * share);
  return text;
}

// Milliseconds as "1.234", or `unknown` where not finite.
std::string milliseconds(double ms, const char* unknown) {
  char text[32];
  if (!std::isfinite(ms)) return unknown;
  std::snprintf(text, sizeof text, "%.3f", ms);
  return text;
}

// One phase's three cells under "ms GFLOP/s peak": "     1.234    45.6   12%".
std::string cells(const std::string& ms, const std::string& middle, const std::string& right) {
  char text[96];
  std::snprintf(text, sizeof text, "  %8s %7s %5s", ms.c_str(), middle.c_str(), right.c_str());
  return text;
}

// A phase's time, GFLOP/s and share of the peak, blanks where a figure is unknown.
std::string phase_cells(const std::string& ms, double gflops, double share) {
  char gf[16] = "";
  if (std::isfinite(gflops)) std::snprintf(gf, sizeof gf, "%.1f", gflops);
  return cells(ms, gf, percent(share));
}

std::string phase_cells(const LayerProfileRow& row, int p) {
  return phase_cells(milliseconds(row.ms_per_step[p], "-"), row.gflops[p], row.peak_share[p]);
}

bool has_executed(const LayerProfileRow& row) {
  for (int p = 0; p < kLayerPhases; ++p)
    if (std::isfinite(row.executed_gflops[p])) return true;
  return false;
}

// `text` left-aligned in `width` columns (never cut).
std::string padded(const std::string& text, size_t width) {
  return text + std::string(width > text.size() ? width - text.size() : 0, ' ');
}

// A row's threads line: each phase's chunk work (thread-ms a step), its share of the phase in
// parallel regions and the threads' busy share, in the ms, GFLOP/s and peak columns.
std::string threads_line(const LayerProfileRow& row, size_t name_width, size_t kind_width) {
  std::string out = "  " + padded("", name_width) + " " + padded("threads", kind_width);
  for (int p = 0; p < kLayerPhases; ++p)
    out += cells(milliseconds(row.thread_ms_per_step[p], ""), percent(row.in_regions[p]), percent(row.threads_busy[p]));
  return out + "\n";
}
}  // namespace

std::string layer_profile_text(const LayerProfileReport& report) {
  if (report.steps <= 0) return "  no training step was timed\n";
  char figures[160];
  std::snprintf(figures, sizeof figures, "  per step (%lld steps timed, %.0f samples a step through the layers); ",
                static_cast<long long>(report.steps), report.rows_per_step);
  std::string out = figures;
  out += "GFLOP/s of the products the layer stands for (\"executed\": the flops its algorithm did); peak " +
         (report.peak.gflops > 0 ? std::to_string(std::lround(report.peak.gflops)) + " GFLOP/s: " : std::string()) +
         report.peak.basis + "\n";
  if (report.threads > 1) {
    out += "  \"threads\": the parallel chunks' work summed over the " + std::to_string(report.threads) +
           " threads (ms a step; a 1-thread run's ms is the same work unsplit), the share of the phase's time inside "
           "parallel regions (GFLOP/s column; the rest: serial code) and the chunks' share of the threads' time in the "
           "phase (peak column; the rest: waking, waiting for the slowest chunk, serial code)\n";
  }
  size_t name_width = 14, kind_width = 10;
  for (const LayerProfileRow& row : report.rows) {
    name_width = std::max(name_width, row.layer.size());
    kind_width = std::max(kind_width, row.kind.size());
  }
  const std::string lead(2 + name_width + 1 + kind_width, ' ');
  out += lead;
  for (int p = 0; p < kLayerPhases; ++p) out += "  " + padded(layer_phase_name(static_cast<LayerPhase>(p)), 22);
  out += "\n  " + padded("layer", name_width) + " " + padded("kind", kind_width);
  for (int p = 0; p < kLayerPhases; ++p) out += "        ms GFLOP/s  peak";
  out += "\n";
  for (const LayerProfileRow& row : report.rows) {
    out += "  " + padded(row.layer, name_width) + " " + padded(row.kind, kind_width);
    if (!row.fused_into.empty()) out += "  fused into " + row.fused_into + ": its time is that row's";
    for (int p = 0; p < kLayerPhases && row.fused_into.empty(); ++p) out += phase_cells(row, p);
    out += "\n";
    if (has_executed(row)) {
      out += "  " + padded("", name_width) + " " + padded("executed", kind_width);
      for (int p = 0; p < kLayerPhases; ++p) out += phase_cells("", row.executed_gflops[p], row.executed_share[p]);
      out += "\n";
    }
    if (report.threads > 1 && row.fused_into.empty()) out += threads_line(row, name_width, kind_width);
  }
  char totals[128];
  std::snprintf(totals, sizeof totals, "  layers %.3f ms a step; the rest (loss, update, batches) %.3f ms\n",
                report.layers_ms, report.other_ms);
  return out + totals;
}

}  // namespace rg
