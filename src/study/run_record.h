// What one run of the study measured, read from the child's `train --json` report and from
// what the operating system saw of the child (study/child_process.h). Figures that do not
// apply or were not measured are NaN (null in JSON, empty in CSV), never 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nn/layer_profile.h"
#include "study/study_plan.h"

namespace rg {

struct EpochPoint {
  int epoch = 0;
  double seconds = 0;        // training time up to the end of this epoch
  double loss = NAN;
  double accuracy = NAN;     // on the training batches
  double val_accuracy = NAN; // on the held-out split (lr part)
  double samples_per_s = NAN;
};

// One layer of a profiled CPU run (train --profile's layer_profile): per phase (forward, weight
// gradient, input gradient) its ms a step and its GFLOP/s' share of the level's peak (NaN: no time
// or no flops), the executed share where its algorithm does other work (Winograd). A GAN's
// layers are named "G conv1", "D conv1".
struct LayerPoint {
  std::string layer, kind;
  double ms[kLayerPhases] = {NAN, NAN, NAN};  // in LayerPhase's order
  double peak_share[kLayerPhases] = {NAN, NAN, NAN};
  double executed_share[kLayerPhases] = {NAN, NAN, NAN};
};

struct RunRecord {
  StudyRun run;
  bool ok = false;
  std::string error;         // why the run failed: the child's last lines, or its exit
  std::string isa;           // the level the child's kernels ran at
  int64_t samples_trained = 0;  // the budget: epochs x samples per epoch
  int threads = 0;
  double train_seconds = NAN;   // all epochs
  double samples_per_s = NAN;   // the last epoch (OpenCL: after the first, which builds and tunes)
  double steps_per_s = NAN;
  double train_flops_per_sample = NAN;  // FP32-equivalent: the same count in every precision
  double gflops = NAN;
  double peak_gflops = NAN;     // the device's (StudyDevice::peak)
  double efficiency = NAN;      // gflops / peak_gflops
  double cpu_cores_busy = NAN;  // CPU seconds of every thread while training / training seconds
  double cpu_utilisation = NAN; // cores busy / logical CPUs
  double gpu_busy = NAN;        // OpenCL: kernel time / training time (event profiling)
  double copy_ms_per_step = NAN;  // OpenCL: host-device transfer time a step
  double launches_per_step = NAN; // OpenCL: kernels launched a step
  double peak_rss_bytes = NAN;  // the child's peak resident memory
  double peak_tensor_bytes = NAN;
  double device_peak_bytes = NAN;
  std::string quality_name;     // "test accuracy", "test MSE", "GAN score"
  double quality = NAN;
  bool quality_higher_is_better = true;
  double time_to_target = NAN;  // lr part: training seconds until the validation accuracy reached the target
  double epochs_to_target = NAN;
  double process_seconds = NAN, process_cpu_seconds = NAN;  // the whole child, start to end
  double load_others = NAN;     // share of all CPUs' time other programs took while the child ran
  double steal = NAN;           // share of all CPUs' time the hypervisor stole meanwhile
  double machine_gbs = NAN;     // report/machine_load.h's fixed work just before the run: the machine's own speed
  double quality_chance = NAN;  // what guessing reaches: the majority class's accuracy, the mean's MSE
  std::vector<EpochPoint> history;
  std::vector<LayerPoint> layers;  // a CPU run's profiled companion's (study/study_session.cpp), else none
  double layers_peak_gflops = NAN; // the peak those shares are of (the level's, the run's threads)

  // A configuration's figures over its rounds (study/study_summary.h): each figure above is the
  // rounds' median (peak memory: the largest); a single run is 1 round with no spread.
  int rounds = 1;
  double samples_per_s_low = NAN, samples_per_s_high = NAN;  // the rounds' least and greatest
  double quality_low = NAN, quality_high = NAN;
  double speed_spread = NAN;    // the rounds' interquartile range of samples/s / their median
  bool unstable = false;        // speed_spread over the study's threshold after the extra rounds
  std::string not_learned;      // why the quality is no better than chance ("" when it is, or unknown)
};

// The speeds a run's samples/s is the median of: its epochs' (OpenCL: but the first, which builds
// the programs and tunes the GEMM).
std::vector<double> epoch_speeds(const RunRecord& record, bool opencl);

nlohmann::json run_record_json(const RunRecord& record);
// Errors name the field; used by `advise` on a study's JSON.
Result<RunRecord> run_record_from_json(const nlohmann::json& json);

nlohmann::json study_device_json(const StudyDevice& device);
Result<StudyDevice> study_device_from_json(const nlohmann::json& json);

// A CSV cell: quoted (RFC 4180) when it holds a comma, a quote or a line break.
std::string csv_cell(const std::string& text);

// The CSV header and one row per record, every figure of run_record_json but the history.
std::string run_records_csv(const std::vector<RunRecord>& records, const std::vector<StudyDevice>& devices);

}  // namespace rg
