// The study's schedule run: rounds, sizes, loads, extra rounds, progress.
#include "study/study_session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "report/clock.h"
#include "report/machine_load.h"
#include "study/report_doc.h"
#include "study/network_costs.h"
#include "study/study_devices.h"
#include "study/study_summary.h"

namespace rg {

std::vector<ScheduledRun> interleaved_rounds(const std::vector<size_t>& configs, int first_round, int rounds) {
  std::vector<ScheduledRun> schedule;
  for (int round = first_round; round < first_round + rounds; ++round)
    for (size_t config : configs) schedule.push_back({config, round});
  return schedule;
}

namespace {

bool time_sized(const StudyRun& run) { return run.limit == 0 && run.part != "batch" && run.part != "lr"; }

std::string device_key(const StudyRun& run) { return run.network + "@" + std::to_string(run.device); }

// The OpenCL timing run waits for nothing; a companion run with --profile-device gives the
// device's busy share and transfer time (its own speed, slowed by the waits, is not used).
void add_device_profile(RunRecord& record, const StudyDevice& device, const RunContext& context) {
  StudyRun run = record.run;
  run.profile = true;
  const RunRecord profiled = measure_run(run, device, context);
  if (!profiled.ok || !std::isfinite(profiled.gpu_busy)) return;
  const double kernel_seconds = profiled.gpu_busy * profiled.train_seconds;
  const double unprofiled_seconds = static_cast<double>(profiled.samples_trained) / record.samples_per_s;
  record.gpu_busy = std::min(1.0, kernel_seconds / unprofiled_seconds);
  record.copy_ms_per_step = profiled.copy_ms_per_step;
  record.launches_per_step = profiled.launches_per_step;
}

// On the best CPU level and on SSE2 (the Athlon 64's), a companion run with train --profile
// gives each layer's time and share of the level's peak (the report's "where the time goes");
// its own speed, slowed a little by the clock reads, is not used.
void add_layer_profile(RunRecord& record, const StudyDevice& device, const RunContext& context) {
  StudyRun run = record.run;
  run.profile = true;
  const RunRecord profiled = measure_run(run, device, context);
  if (!profiled.ok) return;
  record.layers = profiled.layers;
  record.layers_peak_gflops = profiled.layers_peak_gflops;
}

bool profiles_layers(const StudyRun& run, const StudyDevice& device) {
  return !device.opencl && (device.best_cpu || runs_sse2_kernels(device)) && run.part == "devices" && run.round == 0 &&
         run.precision == "fp32" && run.threads == 0;
}

// "[ 3/52] r1 devices lenet cpu/avx2 fp16 b64  21248 samples/s ... (1.2s, about 3 min left)"
void print_progress(size_t index, size_t total, const RunRecord& r, const StudyDevice& device, double seconds_left) {
  std::printf("[%3zu/%zu] r%d %-11s %-11s %-14s %-10s b%-4lld ", index, total, r.run.round, r.run.part.c_str(),
              r.run.network.c_str(), device.label.c_str(), r.run.precision.c_str(), static_cast<long long>(r.run.batch));
  if (r.run.threads > 0) std::printf("t%d ", r.run.threads);
  if (r.run.lr > 0) std::printf("lr %g ", r.run.lr);
  if (!r.ok) {
    std::printf("failed: %s\n", r.error.c_str());
  } else {
    std::printf("%9.0f samples/s", r.samples_per_s);
    if (std::isfinite(r.quality)) std::printf("  %s %.4g", r.quality_name.c_str(), r.quality);
    if (std::isfinite(r.load_others) && r.load_others > 0.1) std::printf("  (others %.0f%%)", 100 * r.load_others);
    std::printf("  (%.1fs", r.process_seconds);
    if (seconds_left > 0) std::printf(", %s left", report::seconds_text(seconds_left).c_str());
    std::printf(")\n");
  }
  std::fflush(stdout);
}

}  // namespace

StudySession::StudySession(const StudyPlan& plan, std::vector<bool> owned, const RunContext& context,
                           StudyResult& result, std::function<Status()> save)
    : plan_(plan), owned_(std::move(owned)), context_(context), result_(result), save_(std::move(save)) {
  for (const StudyRun& run : plan_.runs) {
    limits_.push_back(run.limit);
    if (!flops_.count(run.network)) {
      auto costs = network_training_costs(run.network, run.batch);
      flops_[run.network] = costs.ok() ? total_flops(costs.value()) : 0;
    }
  }
}

void StudySession::resume_from(const StudyResult& earlier) {
  for (const RunRecord& r : earlier.runs) done_.insert(r.run.id());
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    for (const RunRecord& r : earlier.runs) {
      if (r.run.config_id() != plan_.runs[i].config_id()) continue;
      limits_[i] = r.run.limit;
      if (r.run.part == "devices" && r.run.precision == "fp32") fp32_limits_[device_key(r.run)] = r.run.limit;
      if (r.ok && r.run.part == "devices" && r.run.precision == "fp32") gflops_[device_key(r.run)] = r.gflops;
    }
  }
}

// The speed a run is sized by: what the device showed on this network in fp32; else on the CPU
// level below (x 1.5: a level up is faster); else on another network (the fastest: a GPU's
// GFLOP/s grow with the network's size); else a share of the peak (CPUs reach a good share of it,
// GPUs on these small networks little).
double StudySession::guessed_gflops(int device, const std::string& network) const {
  const auto known = [&](int d) {
    auto it = gflops_.find(network + "@" + std::to_string(d));
    return it == gflops_.end() ? 0.0 : it->second;
  };
  if (known(device) > 0) return known(device);
  const StudyDevice& d = result_.devices[device];
  if (!d.opencl && device > 0 && !result_.devices[device - 1].opencl && known(device - 1) > 0) return 1.5 * known(device - 1);
  double fastest = 0;
  for (const auto& [key, value] : gflops_)
    if (key.substr(key.rfind('@') + 1) == std::to_string(device)) fastest = std::max(fastest, value);
  if (fastest > 0) return fastest;
  return d.peak.gflops > 0 ? d.peak.gflops * (d.kind == "GPU" ? 0.02 : 0.05) : 5;
}

// The run of a scheduled configuration: its round, and its size. A speed run is sized by time in
// its first round (precisions and thread counts take their fp32 run's size: the same work) and
// keeps that size in every round, so its rounds measure the same work.
StudyRun StudySession::sized(const ScheduledRun& scheduled) {
  StudyRun run = plan_.runs[scheduled.config];
  run.round = scheduled.round;
  int64_t& limit = limits_[scheduled.config];
  if (limit == 0 && time_sized(run)) {
    auto fp32 = fp32_limits_.find(device_key(run));
    const bool follows_fp32 = fp32 != fp32_limits_.end() && (run.precision != "fp32" || run.part == "threads");
    limit = follows_fp32 ? fp32->second
                         : size_run(result_.config.seconds_per_run / static_cast<double>(run.epochs),
                                    guessed_gflops(run.device, run.network), flops_[run.network], run.batch, 0,
                                    min_batches_per_epoch(result_.devices[run.device]));
    if (run.part == "devices" && run.precision == "fp32") fp32_limits_[device_key(run)] = limit;
  }
  if (time_sized(plan_.runs[scheduled.config])) {
    run.limit = limit;
    run.test_limit = run.part == "devices" ? std::clamp<int64_t>(run.limit * run.epochs, 1000, 10000) : 1000;
  }
  return run;
}

// Seconds a run should take: its training samples at the speed guessed, its test samples at
// three times that (forward only), and the child's start (loading the data).
double StudySession::estimate(const StudyRun& run) const {
  constexpr double kStartSeconds = 0.4;
  if (run.limit == 0 && time_sized(run)) return result_.config.seconds_per_run + kStartSeconds;
  const double flops = flops_.count(run.network) ? flops_.at(run.network) : 0;
  const double samples_per_s = flops > 0 ? guessed_gflops(run.device, run.network) * 1e9 / flops : 1e4;
  const double train = static_cast<double>(run.limit > 0 ? run.limit : 60000) * static_cast<double>(run.epochs);
  return train / samples_per_s + static_cast<double>(run.test_limit) / (3 * samples_per_s) + kStartSeconds;
}

double StudySession::estimated_seconds() const {
  double total = 0;
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    if (!owned_[i]) continue;
    StudyRun run = plan_.runs[i];
    run.limit = limits_[i];
    total += estimate(run) * (result_.config.rounds - static_cast<int>(std::count_if(done_.begin(), done_.end(), [&](const std::string& id) {
                                return id.rfind(run.config_id() + "-r", 0) == 0;
                              })));
  }
  return total;
}

Status StudySession::run_schedule(const std::vector<ScheduledRun>& schedule) {
  const int cpus = result_.machine.logical_cpus;
  int round = -1;
  LoadSnapshot round_start = read_load_snapshot();
  auto end_round = [&]() {
    if (round < 0) return;
    const LoadInterval load = load_between(round_start, read_load_snapshot(), cpus);
    result_.round_loads.push_back({round, load.seconds, load.others_busy_share, load.steal_share, load.load1,
                                   measure_cpu_mhz(1)});
  };
  for (const ScheduledRun& scheduled : schedule) {
    if (!owned_[scheduled.config]) continue;
    StudyRun run = sized(scheduled);
    if (done_.count(run.id())) continue;
    if (scheduled.round != round) {
      end_round();
      round = scheduled.round;
      round_start = read_load_snapshot();
    }
    const StudyDevice& device = result_.devices[run.device];
    const double estimated = estimates_[scheduled.config];
    const auto start = std::chrono::steady_clock::now();
    const double machine_gbs = fixed_work_gbs();
    const LoadSnapshot before = read_load_snapshot();
    RunRecord record = measure_run(run, device, context_);
    record.machine_gbs = machine_gbs;
    const LoadInterval load = load_between(before, read_load_snapshot(), cpus);
    record.load_others = load.others_busy_share;
    record.steal = load.steal_share;
    // The profiled companion, in the first round: every OpenCL device in the full study; GPUs
    // only in --quick (on PoCL it doubles the dearest runs of all).
    if (record.ok && device.opencl && run.round == 0 && (!result_.config.quick || device.kind == "GPU"))
      add_device_profile(record, device, context_);
    if (record.ok && profiles_layers(run, device)) add_layer_profile(record, device, context_);
    if (record.ok && run.precision == "fp32" && run.threads == 0 && run.part == "devices" && !gflops_.count(device_key(run)))
      gflops_[device_key(run)] = record.gflops;
    seconds_done_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    estimate_done_ += estimated;
    estimate_left_ = std::max(0.0, estimate_left_ - estimated);
    const double pace = estimate_done_ > 0 ? seconds_done_ / estimate_done_ : 1;
    print_progress(++runs_done_, runs_total_, record, device, estimate_left_ * pace);
    result_.commands.push_back(command_text(train_command(run, device, context_, run.id() + ".json"), device));
    result_.runs.push_back(record);
    keys_.push_back(static_cast<size_t>(run.round) * plan_.runs.size() + scheduled.config);
    if (save_) RG_TRY(save_());
  }
  end_round();
  return Status();
}

// The configurations this process measures whose speed spread over their rounds is over the
// threshold (speed runs only: the sweeps' speeds are a by-product of their epochs).
std::vector<size_t> StudySession::unstable_configs() const {
  std::vector<size_t> out;
  const std::vector<RunRecord> figures = summarise_rounds(result_.runs, result_.config.unstable_spread);
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    if (!owned_[i]) continue;
    for (const RunRecord& f : figures)
      if (f.unstable && f.run.config_id() == plan_.runs[i].config_id()) out.push_back(i);
  }
  return out;
}

Status StudySession::run_all() {
  std::vector<size_t> all;
  for (size_t i = 0; i < plan_.runs.size(); ++i)
    if (owned_[i]) all.push_back(i);
  const int rounds = result_.config.rounds;
  runs_total_ = all.size() * static_cast<size_t>(rounds) - std::min(done_.size(), all.size() * static_cast<size_t>(rounds));
  estimate_left_ = estimated_seconds();
  for (size_t i = 0; i < plan_.runs.size(); ++i) {
    StudyRun run = plan_.runs[i];
    run.limit = limits_[i];
    estimates_.push_back(estimate(run));
  }
  RG_TRY(run_schedule(interleaved_rounds(all, 0, rounds)));
  for (int extra = 0; extra < result_.config.extra_rounds; ++extra) {
    const std::vector<size_t> unstable = unstable_configs();
    if (unstable.empty()) break;
    std::printf("%zu figure%s spread over %.0f%% of the median: measuring %s again (round %d)\n", unstable.size(),
                unstable.size() == 1 ? "" : "s", 100 * result_.config.unstable_spread,
                unstable.size() == 1 ? "it" : "them", rounds + extra);
    runs_total_ += unstable.size();
    for (size_t i : unstable) estimate_left_ += estimates_[i];
    RG_TRY(run_schedule(interleaved_rounds(unstable, rounds + extra, 1)));
  }
  return Status();
}

}  // namespace rg
