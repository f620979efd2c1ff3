// train --profile's report: each layer's forward, weight-gradient and input-gradient time a
// step (nn/layer_profile.h), its GFLOP/s and its share of the peak of the ISA level it ran at.
// GFLOP/s count the products the layer's algorithm stands for (Layer::forward_flops_per_sample,
// once per phase: a direct convolution's or a GEMM's multiply-adds), whatever the kernel does;
// where the algorithm does other work (Winograd's products and transforms), a second line counts
// that ("executed"). With more than one thread, a third line gives each phase's chunk work summed
// over the threads (ms a step: against a 1-thread run's ms, how much longer the same work took
// split), the share of the phase's time inside parallel regions (the rest: serial code) and the
// chunks' share of the threads' time in the phase (busy: the rest waking, waiting for the slowest
// chunk, or idle beside serial code).
#pragma once

#include <string>
#include <vector>

#include "nn/layer_profile.h"
#include "nn/model.h"
#include "report/peak.h"

namespace rg {

struct LayerProfileRow {
  std::string layer, kind;
  double ms_per_step[kLayerPhases] = {};  // NAN: no time spent in the phase (the first layer's dx)
  double gflops[kLayerPhases] = {};       // NAN: the layer counts no flops, or the phase ran on no rows
  double peak_share[kLayerPhases] = {};   // of the peak; NAN where either is unknown
  // The flops the layer's algorithm really did (Layer::executed_flops_per_sample) over the time,
  // and their share of the peak; NAN where they are the products counted above.
  double executed_gflops[kLayerPhases] = {};
  double executed_share[kLayerPhases] = {};
  std::string fused_into;  // the layer that ran this one inside its own (Model::fuses_relu_after), or empty
  // The pool's chunks in the phase (LayerProfile::Entry::chunk_seconds): ms a step summed over the
  // threads, and their share of threads x the phase's time; the share of the phase's time inside
  // parallel regions (the rest: serial code); NAN without a pool or time.
  double thread_ms_per_step[kLayerPhases] = {};
  double threads_busy[kLayerPhases] = {};
  double in_regions[kLayerPhases] = {};
};

struct LayerProfileReport {
  std::vector<LayerProfileRow> rows;
  int64_t steps = 0;           // optimizer steps timed (LayerProfile::count_step)
  double rows_per_step = 0;    // the first layer's forward rows a step (the batch, but a short last one)
  double layers_ms = 0;        // per step, every layer's phases together
  double other_ms = 0;         // per step: the loss, the update, gathering batches (train time - layers)
  PeakFigure peak;             // of the threads the run used, at the ISA level it ran
  int threads = 1;             // the most a phase ran on (LayerProfile::threads)
};

// `train_seconds`: the training time the profile covers (Trainer::train_seconds).
LayerProfileReport summarize_layer_profile(const Model& model, const LayerProfile& profile, double train_seconds,
                                           const PeakFigure& peak);
std::string layer_profile_text(const LayerProfileReport& report);

}  // namespace rg
