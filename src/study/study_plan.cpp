// The study's plan: which runs, in which order, at which sizes.
#include "study/study_plan.h"

#include <algorithm>
#include <cmath>

namespace rg {

std::string StudyRun::id() const { return config_id() + "-r" + std::to_string(round); }

std::string StudyRun::config_id() const {
  std::string text = part + "-" + network + "-d" + std::to_string(device) + "-" + precision + "-b" + std::to_string(batch);
  if (lr > 0) {
    char rate[32];
    std::snprintf(rate, sizeof rate, "-lr%g", lr);
    text += rate;
  }
  if (threads > 0) text += "-t" + std::to_string(threads);
  if (profile) text += "-profile";
  return text;
}

StudyConfig default_study_config(bool quick) {
  StudyConfig c;
  c.quick = quick;
  c.parts = {"devices", "batch-speed", "batch", "lr", "threads", "quality"};
  c.speed_batches = {16, 32, 128, 256};
  c.batches = {4, 8, 16, 32, 64, 128, 256, 512, 1024};
  c.rates = {0.001, 0.005, 0.01, 0.03, 0.05, 0.07};  // the thesis's Table 9
  if (quick) {  // 3 rounds of everything within 8 minutes on 2 cores: fewer configurations, never fewer rounds
    c.networks = {"mlp", "autoencoder", "lenet", "rcnn", "dcgan"};
    c.precisions = {"fp32", "fp16", "int8-train"};
    c.speed_networks = {"mlp", "lenet", "rcnn"};
    c.quality_networks = {"mlp", "autoencoder", "lenet"};
    c.speed_batches = {16, 256};
    c.batches = {8, 32, 128, 512};
    c.rates = {0.001, 0.01, 0.03, 0.07};
    c.sweep_network = "mlp";
    c.sweep_epochs = 2;
    c.lr_epochs = 3;
    c.sweep_limit = 20000;
    c.seconds_per_run = 1.0;  // 3 epochs of a third of a second: shorter ones spread widely on a busy VM
    c.target_accuracy = 0.80;  // the mlp reaches 0.78-0.84 in 3 epochs of 20000: where rates part
    c.extra_rounds = 3;
    c.quality_samples = 4000;  // every quick network leaves chance well before (docs/study.md)
    c.isa_ladder_networks = "mlp,autoencoder,lenet";
  } else {
    c.networks = {"mlp", "autoencoder", "lenet", "cnn", "rcnn", "dcgan"};
    c.precisions = {"fp32", "fp16", "int8-train", "int8-qat"};
    c.quality_networks = {"mlp", "autoencoder", "lenet", "cnn", "rcnn"};
    c.sweep_network = "lenet";
    c.sweep_epochs = 5;
    c.lr_epochs = 10;  // the thesis's "accuracy after 10 epochs"
    c.sweep_limit = 0;
    c.seconds_per_run = 4;
    c.target_accuracy = 0.88;
    c.quality_samples = 30000;
    c.rounds = 5;
    c.isa_ladder_networks = "all";
  }
  return c;
}

namespace {

bool on_ladder(const StudyConfig& config, const std::string& network) {
  if (config.isa_ladder_networks == "all") return true;
  const std::string list = "," + config.isa_ladder_networks + ",";
  return list.find("," + network + ",") != std::string::npos;
}

// The networks of `list` that the devices part studies (all of them when none is).
std::vector<std::string> within_networks(const StudyConfig& config, const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const std::string& n : list)
    if (std::find(config.networks.begin(), config.networks.end(), n) != config.networks.end()) out.push_back(n);
  return out.empty() ? config.networks : out;
}

bool has_part(const StudyConfig& config, const std::string& part) {
  return std::find(config.parts.begin(), config.parts.end(), part) != config.parts.end();
}

}  // namespace

namespace {

// Why a trainer refuses a combination, or empty: GANs train in fp32 only (train/gan.cpp), and
// OpenCL trains in fp32 or fp16 (train/trainer_device.cpp).
std::string refusal(const std::string& network, const std::string& precision, const StudyDevice& device) {
  if (network == "dcgan" && precision != "fp32") return "GAN training runs in fp32 only";
  if (device.opencl && precision != "fp32" && precision != "fp16") {
    return "OpenCL training runs in fp32 or fp16 only; " + precision + " trains on the CPU";
  }
  return "";
}

// A run of `part`: the network, the device and the epochs every run names; the rest as StudyRun's defaults.
StudyRun new_run(const std::string& part, const std::string& network, int device, int64_t epochs) {
  StudyRun run;
  run.part = part;
  run.network = network;
  run.device = device;
  run.epochs = epochs;
  return run;
}

// The devices part on device d: each network in each precision it runs there (fp32 only on the
// lower ISA levels; on an OpenCL CPU device under --quick, fp32 on the sweep network only), and
// why the others are not run.
void plan_device_runs(const StudyConfig& config, const std::vector<StudyDevice>& devices, size_t d, bool has_gpu,
                      StudyPlan* plan) {
  const StudyDevice& device = devices[d];
  if (config.quick && device.opencl && device.kind == "CPU" && has_gpu) {
    plan->not_run.push_back(device.label + " (" + device.name + "): --quick leaves an OpenCL CPU device out when " +
                            "there is a GPU (it is this machine's CPU through another compiler); the full study runs it");
    return;
  }
  // Every precision on the best CPU level and on OpenCL devices; the lower ISA levels show
  // what each level of the CPU buys, in fp32.
  // --quick: an OpenCL CPU device (PoCL: this same chip through another compiler) in fp32 only.
  const bool all_precisions = device.best_cpu || (device.opencl && !(config.quick && device.kind == "CPU"));
  if (device.opencl && !all_precisions && config.precisions.size() > 1) {
    plan->not_run.push_back(device.label + " in precisions other than fp32 and networks other than " +
                            config.sweep_network + ": --quick measures an OpenCL CPU device (this machine's CPU "
                            "through another compiler, 5-20x slower than its own kernels) in fp32 on the sweep "
                            "network only; the full study runs them");
  }
  for (const std::string& network : config.networks) {
    if (!all_precisions && !on_ladder(config, network)) continue;
    if (device.opencl && !all_precisions && network != config.sweep_network) continue;
    for (const std::string& precision : config.precisions) {
      if (!all_precisions && precision != "fp32") continue;
      const std::string why = refusal(network, precision, device);
      if (!why.empty()) {
        const std::string note = network + " in " + precision + " on " + (device.opencl ? "OpenCL" : "the CPU") +
                                 ": " + why;
        if (std::find(plan->not_run.begin(), plan->not_run.end(), note) == plan->not_run.end()) {
          plan->not_run.push_back(note);
        }
        continue;
      }
      StudyRun run = new_run("devices", network, static_cast<int>(d), config.speed_epochs);
      run.precision = precision;
      plan->runs.push_back(run);
    }
  }
}

// The sweeps on each of `sweep_devices`: speed by batch, then quality by batch and by learning rate.
void plan_sweeps(const StudyConfig& config, const std::vector<int>& sweep_devices, std::vector<StudyRun>* runs) {
  const std::vector<std::string> speed_networks = within_networks(config, config.speed_networks);
  for (int d : sweep_devices) {
    for (const std::string& network : has_part(config, "batch-speed") ? speed_networks : std::vector<std::string>{}) {
      for (int64_t batch : config.speed_batches) {
        StudyRun run = new_run("batch-speed", network, d, config.speed_epochs);
        run.batch = batch;
        runs->push_back(run);
      }
    }
  }
  for (int d : sweep_devices) {
    if (has_part(config, "batch")) {
      for (int64_t batch : config.batches) {
        StudyRun run = new_run("batch", config.sweep_network, d, config.sweep_epochs);
        run.batch = batch;
        run.limit = config.sweep_limit;
        run.test_limit = 10000;
        runs->push_back(run);
      }
    }
    if (has_part(config, "lr")) {
      for (double lr : config.rates) {
        StudyRun run = new_run("lr", config.sweep_network, d, config.lr_epochs);
        run.lr = lr;
        run.limit = config.sweep_limit;
        run.val_split = 0.1;
        run.test_limit = 10000;
        runs->push_back(run);
      }
    }
  }
}

// Quality: every precision on a budget of samples where the networks have left chance, on the
// best CPU level and each GPU; the rounds' seeds give its spread.
void plan_quality(const StudyConfig& config, const std::vector<StudyDevice>& devices,
                  const std::vector<int>& sweep_devices, std::vector<StudyRun>* runs) {
  for (int d : sweep_devices) {
    for (const std::string& network : within_networks(config, config.quality_networks)) {
      for (const std::string& precision : config.precisions) {
        if (!refusal(network, precision, devices[d]).empty()) continue;
        StudyRun run = new_run("quality", network, d, 1);
        run.precision = precision;
        run.limit = config.quality_samples;
        run.test_limit = config.quick ? 5000 : 10000;
        runs->push_back(run);
      }
    }
  }
}

}  // namespace

std::vector<int> thread_sweep(int logical_cpus) {
  std::vector<int> counts;
  for (int t = 1; t < logical_cpus; t *= 2) counts.push_back(t);
  return counts;
}

StudyPlan plan_study(const StudyConfig& config, const std::vector<StudyDevice>& devices, int logical_cpus) {
  StudyPlan plan;
  int best_cpu = 0;
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].best_cpu) best_cpu = static_cast<int>(d);
  }
  const bool has_gpu = std::any_of(devices.begin(), devices.end(), [](const StudyDevice& d) { return d.kind == "GPU"; });
  if (has_part(config, "devices")) {
    for (size_t d = 0; d < devices.size(); ++d) plan_device_runs(config, devices, d, has_gpu, &plan);
  }
  // The sweeps on the best CPU level, and on each OpenCL GPU (the thesis swept its GPU).
  std::vector<int> sweep_devices = {best_cpu};
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].opencl && devices[d].kind == "GPU") sweep_devices.push_back(static_cast<int>(d));
  }
  plan_sweeps(config, sweep_devices, &plan.runs);
  // Threads: the best CPU level on 1, 2, 4, ... threads (all of them: the devices part's run).
  if (has_part(config, "threads")) {
    for (const std::string& network : within_networks(config, config.speed_networks)) {
      for (int threads : thread_sweep(logical_cpus)) {
        StudyRun run = new_run("threads", network, best_cpu, config.speed_epochs);
        run.threads = threads;
        plan.runs.push_back(run);
      }
    }
  }
  if (has_part(config, "quality")) plan_quality(config, devices, sweep_devices, &plan.runs);
  return plan;
}

int64_t min_batches_per_epoch(const StudyDevice& device) { return device.kind == "GPU" ? 25 : 2; }

int64_t size_run(double seconds, double gflops, double train_flops_per_sample, int64_t batch, int64_t available,
                 int64_t min_batches) {
  double samples = static_cast<double>(min_batches * batch);
  if (gflops > 0 && train_flops_per_sample > 0) samples = seconds * gflops * 1e9 / train_flops_per_sample;
  int64_t batches = static_cast<int64_t>(std::ceil(samples / static_cast<double>(batch)));
  batches = std::max<int64_t>(batches, min_batches);
  int64_t out = batches * batch;
  if (available > 0) out = std::min(out, std::max<int64_t>(available, batch));
  return out;
}

}  // namespace rg
