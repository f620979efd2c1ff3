// The advisor: the fastest measured setting whose quality holds, fitted to a memory budget.
#include "study/advisor.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/memory.h"
#include "base/text_format.h"

namespace rg {

namespace {

// A precision is advised over fp32 only when its quality stays this close to fp32's on the
// same device (accuracy in points, MSE relative): short study runs are noisy.
constexpr double kAccuracyTolerance = 0.01;
constexpr double kMseTolerance = 0.05;
// A second thread is advised when it buys at least this much.
constexpr double kThreadGain = 1.05;

bool quality_holds(const RunRecord& candidate, const RunRecord& fp32) {
  if (!std::isfinite(candidate.quality) || !std::isfinite(fp32.quality)) return candidate.run.precision == "fp32";
  if (candidate.quality_higher_is_better) return candidate.quality >= fp32.quality - kAccuracyTolerance;
  return candidate.quality <= fp32.quality * (1 + kMseTolerance);
}

std::string quality_figure(const RunRecord& r) {
  if (!std::isfinite(r.quality)) return "no quality figure";
  return r.quality_name + " " + format_fixed(r.quality, r.quality_higher_is_better ? 4 : 5);
}

// Samples/s over batch sizes on one device for one network: the devices run (batch 64) and the
// batch-speed runs. Sorted by batch.
struct SpeedPoint {
  int64_t batch;
  double samples_per_s;
  double peak_rss_bytes;
};
std::vector<SpeedPoint> speed_curve(const StudyResult& study, const std::string& network, int device) {
  std::map<int64_t, SpeedPoint> by_batch;
  for (const RunRecord& r : study.runs) {
    if (!r.ok || r.run.network != network || r.run.device != device || r.run.precision != "fp32") continue;
    if (r.run.part != "devices" && r.run.part != "batch-speed") continue;
    by_batch[r.run.batch] = {r.run.batch, r.samples_per_s, r.peak_rss_bytes};
  }
  std::vector<SpeedPoint> curve;
  for (const auto& entry : by_batch) curve.push_back(entry.second);
  return curve;
}

// Samples/s at `batch` from the curve: measured, or interpolated in log(batch) between the two
// measured batches around it (the nearest end beyond them).
double speed_at(const std::vector<SpeedPoint>& curve, int64_t batch) {
  if (curve.empty()) return NAN;
  if (batch <= curve.front().batch) return curve.front().samples_per_s;
  if (batch >= curve.back().batch) return curve.back().samples_per_s;
  for (size_t i = 1; i < curve.size(); ++i) {
    if (batch > curve[i].batch) continue;
    const double t = std::log(static_cast<double>(batch) / curve[i - 1].batch) /
                     std::log(static_cast<double>(curve[i].batch) / curve[i - 1].batch);
    return curve[i - 1].samples_per_s + t * (curve[i].samples_per_s - curve[i - 1].samples_per_s);
  }
  return curve.back().samples_per_s;
}

// Peak RSS as a + b x batch, least squares over the curve (one point: b = 0).
std::pair<double, double> memory_line(const std::vector<SpeedPoint>& curve) {
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const SpeedPoint& p : curve) {
    if (!std::isfinite(p.peak_rss_bytes)) continue;
    n += 1;
    sx += p.batch;
    sy += p.peak_rss_bytes;
    sxx += static_cast<double>(p.batch) * p.batch;
    sxy += p.batch * p.peak_rss_bytes;
  }
  if (n == 0) return {NAN, NAN};
  const double denominator = n * sxx - sx * sx;
  const double b = n > 1 && denominator > 0 ? std::max(0.0, (n * sxy - sx * sy) / denominator) : 0;
  return {(sy - b * sx) / n, b};
}

// The largest batch of the sweep network's accuracy curve (batch part, on the best CPU) whose
// accuracy after its epochs is within a point of the best: past it, larger batches cost accuracy
// at the same learning rate (the thesis's Table 10 shows the same). 0: no sweep.
int64_t accuracy_knee(const StudyResult& study, std::string* network) {
  double best = -1;
  for (const RunRecord& r : study.runs) {
    if (r.ok && r.run.part == "batch" && std::isfinite(r.quality) && r.quality_higher_is_better) best = std::max(best, r.quality);
  }
  int64_t knee = 0;
  for (const RunRecord& r : study.runs) {
    if (r.ok && r.run.part == "batch" && r.quality >= best - kAccuracyTolerance && study.devices[r.run.device].best_cpu) {
      knee = std::max(knee, r.run.batch);
      *network = r.run.network;
    }
  }
  return knee;
}

}  // namespace

Result<Advice> advise(const StudyResult& study, const std::string& network, int64_t mem_budget) {
  Advice a;
  a.network = network;
  a.mem_budget = mem_budget;
  // 1. Device and precision: the fastest devices run whose quality holds against fp32 there.
  const RunRecord* chosen = nullptr;
  std::string rejected;
  std::map<int, const RunRecord*> fp32_by_device;
  for (const RunRecord& r : study.runs) {
    // The CPU at its best level only: the lower levels are the ladder (what each level is worth),
    // a subset of the best one's instructions, and `train` runs the best unless told otherwise.
    const StudyDevice& d = study.devices[r.run.device];
    if (!d.opencl && !d.best_cpu) continue;
    if (r.ok && r.run.part == "devices" && r.run.network == network && r.run.precision == "fp32") fp32_by_device[r.run.device] = &r;
  }
  if (fp32_by_device.empty()) {
    return Status::error("the study has no successful fp32 run of " + network + " (run `retrograd study --networks " +
                         network + "`)");
  }
  for (const RunRecord& r : study.runs) {
    if (!r.ok || r.run.part != "devices" || r.run.network != network || !fp32_by_device.count(r.run.device)) continue;
    const RunRecord& fp32 = *fp32_by_device[r.run.device];
    if (!quality_holds(r, fp32)) {
      if (r.samples_per_s > fp32.samples_per_s) {
        rejected += " " + r.run.precision + " on " + study.devices[r.run.device].label + " was faster (" +
                    format_fixed(r.samples_per_s / fp32.samples_per_s, 2) + "x fp32) but its " + quality_figure(r) +
                    " against " + format_fixed(fp32.quality, 4) + " in fp32 is past the tolerance.";
      }
      continue;
    }
    if (chosen == nullptr || r.samples_per_s > chosen->samples_per_s) chosen = &r;
  }
  const StudyDevice& device = study.devices[chosen->run.device];
  a.device = chosen->run.device;
  a.device_label = device.label;
  a.device_arg = device.device_arg;
  a.isa = device.isa;
  a.precision = chosen->run.precision;
  std::string others;
  for (const auto& [d, fp32] : fp32_by_device) {
    if (d != a.device) others += (others.empty() ? " " : ", ") + study.devices[d].label + " " + format_fixed(fp32->samples_per_s, 0);
  }
  a.reasons.push_back("device " + device.label + " (" + device.name + "): the fastest measured, " +
                      format_fixed(chosen->samples_per_s, 0) + " samples/s in " + a.precision + " at batch 64" +
                      (others.empty() ? "" : "; fp32 elsewhere:" + others));
  const RunRecord& fp32_here = *fp32_by_device[a.device];
  if (a.precision != "fp32") {
    a.reasons.push_back("precision " + a.precision + ": " +
                        format_fixed(chosen->samples_per_s / fp32_here.samples_per_s, 2) + "x fp32's speed, " +
                        quality_figure(*chosen) + " against " + format_fixed(fp32_here.quality, 4) +
                        " in fp32 (within the tolerance)." + rejected);
  } else {
    a.reasons.push_back("precision fp32: no other precision was both faster and as good here." + rejected);
  }
  if (study.devices.size() > 1 && std::any_of(study.devices.begin(), study.devices.end(), [](const StudyDevice& d) { return d.opencl; })) {
    a.reasons.push_back("no CPU+GPU split (--cpu-layers): it copies activations over the bus every step, and one "
                        "device alone was measured at the speeds above");
  }

  // 2. Batch: the fastest of the measured batch sizes on this device, up to the accuracy knee.
  const std::vector<SpeedPoint> curve = speed_curve(study, network, a.device);
  std::string knee_network;
  const int64_t knee = accuracy_knee(study, &knee_network);
  const double precision_factor = chosen->samples_per_s / fp32_here.samples_per_s;  // measured at batch 64
  a.batch = 64;
  double best_speed = speed_at(curve, 64);
  for (const SpeedPoint& p : curve) {
    if (knee > 0 && p.batch > knee) continue;
    if (p.samples_per_s > best_speed) {
      best_speed = p.samples_per_s;
      a.batch = p.batch;
    }
  }
  std::string measured;
  for (const SpeedPoint& p : curve) {
    measured += (measured.empty() ? " " : ", ") + std::to_string(p.batch) + ": " + format_fixed(p.samples_per_s, 0);
  }
  a.reasons.push_back("batch " + std::to_string(a.batch) + ": the fastest fp32 samples/s measured on " + device.label +
                      " (samples/s by batch:" + measured + ")" +
                      (knee > 0 ? ", up to batch " + std::to_string(knee) + ", past which the " + knee_network +
                                      " sweep's accuracy after its epochs fell more than a point"
                                : ""));
  // 3. Memory: the peak measured over batch sizes as a line; a budget below it splits the batch.
  const auto [fixed_bytes, bytes_per_sample] = memory_line(curve);
  a.micro_batch = a.batch;
  if (mem_budget > 0) {
    if (!(fixed_bytes + bytes_per_sample < static_cast<double>(mem_budget))) {
      return Status::error("--mem-budget " + format_bytes(mem_budget) + ": " + network + " measured a peak of " +
                           format_bytes(static_cast<int64_t>(fixed_bytes)) + " before any batch (code, data, parameters) " +
                           "on " + device.label + "; give at least that");
    }
    while (a.micro_batch > 1 && fixed_bytes + bytes_per_sample * a.micro_batch > static_cast<double>(mem_budget)) a.micro_batch /= 2;
    a.reasons.push_back("memory: peak RSS measured as " + format_bytes(static_cast<int64_t>(fixed_bytes)) + " + " +
                        format_bytes(static_cast<int64_t>(bytes_per_sample)) + " a sample; " +
                        (a.micro_batch == a.batch ? "batch " + std::to_string(a.batch) + " fits " + format_bytes(mem_budget)
                                                  : "micro-batches of " + std::to_string(a.micro_batch) + " fit " +
                                                        format_bytes(mem_budget) + " (train --mem-budget splits the batch)"));
  }
  a.predicted_peak_rss_bytes = fixed_bytes + bytes_per_sample * a.micro_batch;
  // 4. Threads: one thread when the others add nothing (leave the core to the data or a second run).
  a.threads = 0;
  for (const RunRecord& r : study.runs) {
    if (!r.ok || r.run.part != "threads" || r.run.network != network || r.run.device != a.device) continue;
    const double gain = fp32_here.samples_per_s / r.samples_per_s;
    if (gain < kThreadGain) a.threads = 1;
    a.reasons.push_back("threads " + (a.threads == 1 ? std::string("1") : std::to_string(study.machine.logical_cpus)) +
                        ": all " + std::to_string(study.machine.logical_cpus) + " threads ran " + format_fixed(gain, 2) +
                        "x one thread's speed");
  }
  // The prediction: samples/s at the micro-batch from the fp32 curve, scaled by the precision's
  // measured factor; steps of the whole batch.
  a.predicted_samples_per_s = speed_at(curve, a.micro_batch) * precision_factor;
  a.predicted_steps_per_s = a.predicted_samples_per_s / static_cast<double>(a.batch);
  a.basis = "fp32 samples/s measured on " + device.label + " at batch " +
            (a.micro_batch == a.batch ? std::to_string(a.batch) : "(micro) " + std::to_string(a.micro_batch)) +
            (std::any_of(curve.begin(), curve.end(), [&](const SpeedPoint& p) { return p.batch == a.micro_batch; })
                 ? ""
                 : " (interpolated)") +
            (a.precision == "fp32" ? "" : ", x " + format_fixed(precision_factor, 3) + " for " + a.precision + " (measured at batch 64)");
  a.command = {"--model", network, "--batch", std::to_string(a.batch)};
  if (a.precision != "fp32") a.command.insert(a.command.end(), {"--train-precision", a.precision});
  if (device.opencl) a.command.insert(a.command.end(), {"--device", device.device_arg});
  if (a.threads > 0) a.command.insert(a.command.end(), {"--threads", std::to_string(a.threads)});
  if (mem_budget > 0) a.command.insert(a.command.end(), {"--mem-budget", std::to_string(mem_budget)});
  return a;
}

nlohmann::json advice_json(const Advice& a) {
  return {{"network", a.network},
          {"device", a.device_label},
          {"device_arg", a.device_arg},
          {"isa", a.isa},
          {"precision", a.precision},
          {"batch", a.batch},
          {"micro_batch", a.micro_batch},
          {"threads", a.threads},
          {"mem_budget", a.mem_budget},
          {"predicted_samples_per_s", a.predicted_samples_per_s},
          {"predicted_steps_per_s", a.predicted_steps_per_s},
          {"predicted_peak_rss_bytes", std::isfinite(a.predicted_peak_rss_bytes) ? nlohmann::json(a.predicted_peak_rss_bytes) : nlohmann::json()},
          {"basis", a.basis},
          {"reasons", a.reasons},
          {"command", a.command}};
}

std::string advice_text(const Advice& a) {
  std::string command = "retrograd train";
  for (const std::string& part : a.command) command += " " + part;
  std::string text = a.network + ": " + command + "\n  predicted " + format_fixed(a.predicted_steps_per_s, 1) + " steps/s (" +
                     format_fixed(a.predicted_samples_per_s, 0) + " samples/s) from " + a.basis + "\n";
  for (const std::string& reason : a.reasons) text += "  - " + reason + "\n";
  return text;
}

nlohmann::json advise_every_network(const StudyResult& study, int64_t mem_budget) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& network : study.config.networks) {
    auto advice = advise(study, network, mem_budget);
    out.push_back(advice.ok() ? advice_json(advice.value())
                              : nlohmann::json{{"network", network}, {"error", advice.status().message()}});
  }
  return out;
}

}  // namespace rg
