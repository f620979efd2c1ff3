// What `retrograd study` measures: the devices it found, and the runs of `retrograd train`
// it makes on them. Three parts, after the published study the project's seeds follow (a
// thesis measuring TensorFlow, PyTorch and MXNet on a GTX 1060):
//   devices: each network on each device (every CPU ISA level up to the best; every OpenCL
//            device) in each training precision: speed, utilisation, memory, quality;
//   batch:   one network over batch sizes 4..1024: steps/s, utilisation, memory, accuracy
//            after N epochs;
//   lr:      the same network over learning rates 1e-3..7e-2: accuracy after N epochs and the
//            time to reach a target accuracy.
// and three for the advisor (study/advisor.h): batch-speed, the networks' speed at batch sizes
// 16..256 on the best CPU level and each GPU; threads, the networks on 1, 2, 4, ... threads below
// all of them; quality, each network in each precision trained on a sample budget where it has
// left chance, so precisions and devices are compared on what they learn, not on a short run.
// Every configuration is measured in rounds (study/study_schedule.h) that interleave them all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/peak.h"

namespace rg {

// A device runs are made on: a CPU ISA level (RETROGRAD_ISA) or an OpenCL device (--device).
struct StudyDevice {
  std::string label;       // "cpu/avx2", "cl:0:0"
  std::string device_arg;  // --device: "cpu" or "cl:0:0"
  std::string isa;         // RETROGRAD_ISA for CPU runs; empty for OpenCL
  std::string name;        // "AMD EPYC (avx2)", "NVIDIA H100 80GB HBM3 (NVIDIA CUDA)"
  std::string kind;        // "CPU" or the OpenCL type: "GPU", "CPU" (PoCL), ...
  bool opencl = false;
  bool best_cpu = false;   // the CPU at its best ISA level: where precisions and sweeps run
  int64_t memory_bytes = 0;  // OpenCL global memory; 0 for the CPU (host memory)
  PeakFigure peak;         // FP32 peak the efficiencies divide by
};

struct StudyRun {
  std::string part;        // "devices", "batch-speed", "batch", "lr", "threads" or "quality"
  std::string network;     // a preset: mlp, autoencoder, lenet, cnn, rcnn, dcgan
  int device = 0;          // index into the study's devices
  std::string precision = "fp32";  // --train-precision
  int64_t batch = 64;
  int64_t epochs = 1;
  int64_t limit = 0;       // training samples (--limit); 0: the study sizes it from a time target
  int64_t test_limit = 0;  // test samples scored (--test-limit); 0: as many as were trained, within [1000, 10000]
  double lr = 0;           // 0: the preset's default
  double val_split = 0;    // lr part: validation held out, for the time to target
  int threads = 0;         // 0: every logical CPU
  bool profile = false;    // OpenCL: --profile-device (waits for every kernel: a companion run, not timed)
  int round = 0;           // the repetition (0, 1, 2, ...); the run's --seed is 1 + round
  int64_t seed() const { return 1 + round; }
  std::string config_id() const;  // "devices-lenet-d3-fp16-b64": the configuration, the same in every round
  std::string id() const;         // config_id() + "-r1": file names of the round's JSON and log
};

struct StudyConfig {
  bool quick = false;
  std::string data;                  // --data for every run ("" = train's default)
  std::vector<std::string> networks;  // devices part
  std::vector<std::string> precisions;  // fp32, fp16, int8-train
  std::vector<std::string> parts;    // devices, batch-speed, batch, lr, threads
  std::vector<int64_t> speed_batches;  // batch-speed: besides the devices part's 64
  std::string sweep_network;         // batch and lr parts
  std::vector<int64_t> batches;      // 4 .. 1024
  std::vector<double> rates;         // 0.001 .. 0.07
  int64_t sweep_epochs = 0, sweep_limit = 0, lr_epochs = 0;
  double seconds_per_run = 0;        // devices part: the time each run is sized to take
  int64_t speed_epochs = 3;          // devices part: epochs a run is cut into (its speed: their median)
  double target_accuracy = 0;        // lr part
  std::string isa_ladder_networks;   // "all" or a comma list: which networks run at the lower ISA levels
  std::vector<std::string> speed_networks;   // batch-speed and threads parts (empty: the devices part's)
  std::vector<std::string> quality_networks; // quality part
  int64_t quality_samples = 0;       // quality part: training samples a run (the budget), at batch 64
  int rounds = 3;                    // repetitions of every configuration, interleaved
  int extra_rounds = 2;              // at most this many more for a figure whose spread is over the threshold
  double unstable_spread = 0.10;     // that threshold: the rounds' interquartile range / median
};

// The defaults of --quick (a few minutes on 2 cores) and of the full study.
StudyConfig default_study_config(bool quick);

struct StudyPlan {
  std::vector<StudyRun> runs;          // each configuration once (round 0), in the order of a round
  std::vector<std::string> not_run;  // combinations the trainers refuse, with the reason, once each
};

// Every configuration of the study over `devices`, in the order a round runs them: CPU levels
// from the lowest, cheap networks first (so each device's speed is known before the dear ones
// are sized), precisions after fp32. Combinations the trainers refuse are not run but listed.
// `logical_cpus` bounds the threads part's sweep (1, 2, 4, ... below it).
StudyPlan plan_study(const StudyConfig& config, const std::vector<StudyDevice>& devices, int logical_cpus);

// The thread counts of the threads part on `logical_cpus`: 1, 2, 4, ... below it (all of them is
// the devices part's run).
std::vector<int> thread_sweep(int logical_cpus);

// Training samples for an epoch of a devices run so that it takes about `seconds` at `gflops`
// (the speed the device showed so far), a whole number of batches: at least `min_batches`, at
// most `available` (0: no bound).
int64_t size_run(double seconds, double gflops, double train_flops_per_sample, int64_t batch, int64_t available,
                 int64_t min_batches = 2);

// The fewest batches an epoch of a speed run has on a device: a GPU's epoch of a few steps ends
// before its queue does (the loss is read a step late), so its time would be short of the work.
int64_t min_batches_per_epoch(const StudyDevice& device);

}  // namespace rg
