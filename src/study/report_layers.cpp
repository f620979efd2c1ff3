// The study report's "where the time goes": each network's layers at the best CPU level and at
// SSE2 (the Athlon 64's), from the profiled companion runs (study/study_session.cpp): each
// phase's ms a step and its share of that level's own peak, Winograd's executed share beside.
#include <cmath>

#include "study/report_sections.h"
#include "study/study_devices.h"

namespace rg::report {

namespace {

// The devices-part run of `network` that carries a layer profile (a first round's: the rounds'
// figures do not) on a CPU level `which` picks.
template <class Which>
const RunRecord* profiled_run(const StudyResult& result, const std::string& network, Which which) {
  for (const RunRecord& r : result.runs) {
    const StudyDevice* d = device_at(result, r.run.device);
    if (r.ok && r.run.part == "devices" && d && !d->opencl && which(*d) && r.run.network == network &&
        !r.layers.empty())
      return &r;
  }
  return nullptr;
}

// "0.476 / 0.483 / —": the three phases' ms a step.
std::string ms_cell(const LayerPoint& l) {
  std::string out;
  for (int p = 0; p < kLayerPhases; ++p) out += (p ? " / " : "") + (std::isfinite(l.ms[p]) ? fixed(l.ms[p], 3) : kNone);
  return out;
}

// "24% / 63% (exec 46%) / —": each phase's share of the peak, the executed share where it differs.
std::string share_cell(const LayerPoint& l) {
  std::string out;
  for (int p = 0; p < kLayerPhases; ++p) {
    out += p ? " / " : "";
    out += std::isfinite(l.peak_share[p]) ? percent(l.peak_share[p], 0) : kNone;
    if (std::isfinite(l.executed_share[p])) out += " (exec " + percent(l.executed_share[p], 0) + ")";
  }
  return out;
}

const LayerPoint* layer_named(const RunRecord* run, const std::string& name) {
  if (run == nullptr) return nullptr;
  for (const LayerPoint& l : run->layers)
    if (l.layer == name) return &l;
  return nullptr;
}

double step_ms(const RunRecord& run) {
  double total = 0;
  for (const LayerPoint& l : run.layers)
    for (double ms : l.ms) total += std::isfinite(ms) ? ms : 0;
  return total;
}

void network_table(Document& doc, const StudyResult& result, const std::string& network, const RunRecord& best,
                   const RunRecord* sse2) {
  const std::string best_isa = best.isa.empty() ? "best level" : best.isa;
  Table t;
  t.caption = network + ": per layer, forward / weight gradient / input gradient";
  t.columns = {{"layer"}, {"kind"}, {best_isa + " ms a step", true}, {best_isa + " % of its peak", true},
               {"sse2 ms a step", true, true}, {"sse2 % of its peak", true, true}};  // SSE2's kernels
  for (const LayerPoint& l : best.layers) {
    const LayerPoint* low = layer_named(sse2, l.layer);
    t.rows.push_back({l.layer, l.kind, ms_cell(l), share_cell(l), low ? ms_cell(*low) : kNone,
                      low ? share_cell(*low) : kNone});
  }
  t.notes.push_back("The layers' time a step: " + fixed(step_ms(best), 2) + " ms at " + best_isa + " (" +
                    device_label(result, best.run.device) + ", peak " + num(best.layers_peak_gflops, 4) +
                    " GFLOP/s)" +
                    (sse2 ? ", " + fixed(step_ms(*sse2), 2) + " ms at sse2 (peak " + num(sse2->layers_peak_gflops, 4) +
                                " GFLOP/s)"
                          : std::string()) +
                    ". A share counts the products the layer stands for (a direct convolution's); \"exec\" "
                    "counts those its algorithm did (Winograd's products and transforms).");
  doc.table(t);
}

}  // namespace

void add_layers_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "layers", "Where the time goes: each layer on the CPU");
  doc.paragraph("A second run of each network at the best CPU level and at SSE2 (the Athlon 64's level) timed "
                "every layer's forward, weight gradient and input gradient (`retrograd train --profile`); "
                "its own speed is not used. Each share is of that level's own FP32 peak at the run's threads, "
                "so SSE2's column says how well the baseline kernels use an SSE2 core.");
  bool any = false;
  for (const std::string& network : study_networks(result)) {
    const RunRecord* best = profiled_run(result, network, [](const StudyDevice& d) { return d.best_cpu; });
    if (best == nullptr) continue;
    any = true;
    const RunRecord* sse2 = profiled_run(result, network, runs_sse2_kernels);
    doc.details_begin(network + ": " + fixed(step_ms(*best), 2) + " ms of layers a step at " + best->isa);
    network_table(doc, result, network, *best, sse2 == best ? nullptr : sse2);
    doc.details_end();
  }
  if (!any) doc.paragraph("No network's profiled run succeeded" + std::string(result.finished ? "." : " before the study stopped."));
}

}  // namespace rg::report
