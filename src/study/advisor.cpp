// The advisor: the fastest measured setting whose quality holds, fitted to a memory budget.
#include "study/advisor.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/memory.h"
#include "base/text_format.h"
#include "study/study_claims.h"
#include "study/study_summary.h"

namespace rg {

namespace {

// A precision is advised over fp32 only when the quality part measured it learning (beyond
// chance) and its median quality stays this close to fp32's on the same device (accuracy in
// points, MSE relative), and no claim says it is worse beyond the noise.
constexpr double kAccuracyTolerance = 0.01;
constexpr double kMseTolerance = 0.05;

// The study's figure of a configuration (all threads), or null.
const RunRecord* figure_of(const StudyResult& study, const std::string& part, const std::string& network, int device,
                           const std::string& precision, int64_t batch = 64) {
  return find_figure(study.figures, part, network, device, precision, batch, 0);
}

// The claim of a against b, as text for a reason ("1.32x: faster (95% interval ...)").
std::string claim_of(const StudyResult& study, const RunRecord& a, const RunRecord& b, const Claim** out = nullptr) {
  const Claim* c = find_claim(study.claims, a.run.config_id(), b.run.config_id());
  if (out) *out = c;
  return c ? claim_text(*c) : "not compared";
}

bool claimed_faster(const StudyResult& study, const RunRecord& a, const RunRecord& b) {
  const Claim* c = find_claim(study.claims, a.run.config_id(), b.run.config_id());
  return c && c->comparison.verdict > 0 && c->anomaly.empty();
}

// Whether `precision` learns as well as fp32 on `device`, by the quality part; why not, if not.
std::string quality_refusal(const StudyResult& study, const std::string& network, int device, const std::string& precision) {
  const RunRecord* mine = figure_of(study, "quality", network, device, precision);
  const RunRecord* fp32 = figure_of(study, "quality", network, device, "fp32");
  if (!mine || !fp32) return "its quality was not measured on a budget where " + network + " learns (the quality part)";
  if (!fp32->not_learned.empty()) return "fp32 did not learn in the quality part's budget (" + fp32->not_learned + ")";
  if (!mine->not_learned.empty()) return precision + " did not learn in the quality part's budget (" + mine->not_learned + ")";
  const bool holds = mine->quality_higher_is_better ? mine->quality >= fp32->quality - kAccuracyTolerance
                                                    : mine->quality <= fp32->quality * (1 + kMseTolerance);
  const Claim* c = find_claim(study.claims, mine->run.config_id(), fp32->run.config_id());
  const bool worse = c && c->comparison.verdict != 0 && (c->comparison.verdict > 0) != c->higher_is_better;
  if (holds && !worse) return "";
  return "its " + mine->quality_name + " " + format_fixed(mine->quality, 4) + " against " + format_fixed(fp32->quality, 4) +
         " in fp32" + (c ? " (" + claim_text(*c) + ")" : "") + " is past the tolerance";
}

// Samples/s over batch sizes on one device for one network: the devices figure (batch 64) and the
// batch-speed figures. Sorted by batch.
struct SpeedPoint {
  const RunRecord* figure;
  int64_t batch;
  double samples_per_s;
  double peak_rss_bytes;
};
std::vector<SpeedPoint> speed_curve(const StudyResult& study, const std::string& network, int device) {
  std::map<int64_t, SpeedPoint> by_batch;
  for (const RunRecord& r : study.figures) {
    if (!r.ok || r.rounds == 0 || r.run.network != network || r.run.device != device || r.run.precision != "fp32") continue;
    if (r.run.part != "devices" && r.run.part != "batch-speed") continue;
    by_batch[r.run.batch] = {&r, r.run.batch, r.samples_per_s, r.peak_rss_bytes};
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
// median accuracy after its epochs is within a point of the best: past it, larger batches cost
// accuracy at the same learning rate (the thesis's Table 10 shows the same). 0: no sweep.
int64_t accuracy_knee(const StudyResult& study, std::string* network) {
  double best = -1;
  for (const RunRecord* r : runs_of_part(study, "batch"))
    if (r->ok && std::isfinite(r->quality) && r->quality_higher_is_better) best = std::max(best, r->quality);
  int64_t knee = 0;
  for (const RunRecord* r : runs_of_part(study, "batch")) {
    if (r->ok && r->quality >= best - kAccuracyTolerance && study.devices[r->run.device].best_cpu) {
      knee = std::max(knee, r->run.batch);
      *network = r->run.network;
    }
  }
  return knee;
}

// 1. The device: the best CPU level, unless an OpenCL device's fp32 is faster beyond the noise.
const RunRecord* choose_device(const StudyResult& study, const std::string& network, std::vector<std::string>& reasons) {
  const RunRecord* cpu = nullptr;
  for (const RunRecord& r : study.figures)
    if (study.devices[r.run.device].best_cpu && &r == figure_of(study, "devices", network, r.run.device, "fp32")) cpu = &r;
  if (!cpu) return nullptr;
  const RunRecord* chosen = cpu;
  std::string others;
  for (const RunRecord& r : study.figures) {
    if (!study.devices[r.run.device].opencl || &r != figure_of(study, "devices", network, r.run.device, "fp32")) continue;
    others += "; " + study.devices[r.run.device].label + " against " + study.devices[cpu->run.device].label + ": " +
              claim_of(study, r, *cpu);
    if (claimed_faster(study, r, *cpu) && r.samples_per_s > chosen->samples_per_s) chosen = &r;
  }
  const StudyDevice& d = study.devices[chosen->run.device];
  reasons.push_back("device " + d.label + " (" + d.name + "): " + format_fixed(chosen->samples_per_s, 0) +
                    " samples/s in fp32 at batch 64 (the median of " + std::to_string(chosen->rounds) + " rounds)" + others);
  return chosen;
}

// 2. The precision on that device: the fastest one faster than fp32 beyond the noise, within
// its arithmetic's bound (no anomaly), whose quality holds.
const RunRecord* choose_precision(const StudyResult& study, const RunRecord& fp32, std::vector<std::string>& reasons) {
  const RunRecord* chosen = &fp32;
  std::string notes;
  for (const RunRecord& r : study.figures) {
    if (r.run.part != "devices" || r.run.network != fp32.run.network || r.run.device != fp32.run.device ||
        r.run.precision == "fp32" || !r.ok || r.rounds == 0)
      continue;
    const Claim* c = nullptr;
    const std::string speed = claim_of(study, r, fp32, &c);
    const std::string refusal = quality_refusal(study, r.run.network, r.run.device, r.run.precision);
    if (c && !c->anomaly.empty()) {
      notes += " " + r.run.precision + ": " + speed + ", an anomaly (" + c->anomaly + "): not used.";
    } else if (!claimed_faster(study, r, fp32)) {
      notes += " " + r.run.precision + ": " + speed + ".";
    } else if (!refusal.empty()) {
      notes += " " + r.run.precision + " was faster (" + speed + ") but " + refusal + ".";
    } else {
      notes += " " + r.run.precision + ": " + speed + ", quality within the tolerance.";
      if (r.samples_per_s > chosen->samples_per_s) chosen = &r;
    }
  }
  reasons.push_back("precision " + chosen->run.precision + "; each against fp32 on " + study.devices[fp32.run.device].label +
                    ":" + (notes.empty() ? " no other precision was measured." : notes));
  return chosen;
}

// 3. The batch: the fastest measured batch that is faster than 64 beyond the noise, up to the
// accuracy knee.
int64_t choose_batch(const StudyResult& study, const std::vector<SpeedPoint>& curve, const RunRecord& b64,
                     std::vector<std::string>& reasons) {
  std::string knee_network;
  const int64_t knee = accuracy_knee(study, &knee_network);
  const SpeedPoint* best = nullptr;
  std::string measured;
  for (const SpeedPoint& p : curve) {
    measured += (measured.empty() ? " " : ", ") + std::to_string(p.batch) + ": " + format_fixed(p.samples_per_s, 0);
    if (p.batch == 64 || (knee > 0 && p.batch > knee) || !claimed_faster(study, *p.figure, b64)) continue;
    if (!best || p.samples_per_s > best->samples_per_s) best = &p;
  }
  const int64_t batch = best ? best->batch : 64;
  reasons.push_back("batch " + std::to_string(batch) + ": " +
                    (best ? "faster than batch 64 (" + claim_of(study, *best->figure, b64) + ")"
                          : std::string("no measured batch was faster than 64 beyond the noise")) +
                    "; fp32 samples/s by batch:" + measured +
                    (knee > 0 ? "; batches up to " + std::to_string(knee) + " only, past which the " + knee_network +
                                    " sweep's accuracy after its epochs fell more than a point"
                              : ""));
  return batch;
}

// 4. Threads: all of them, unless fewer ran faster beyond the noise (each count against the next
// below it); the load measured meanwhile is cited, since another program's load explains it.
int choose_threads(const StudyResult& study, const RunRecord& all, std::vector<std::string>& reasons) {
  std::vector<const RunRecord*> counts;
  for (const RunRecord* r : runs_of_part(study, "threads"))
    if (r->ok && r->rounds > 0 && r->run.network == all.run.network && r->run.device == all.run.device) counts.push_back(r);
  if (counts.empty()) return 0;
  std::sort(counts.begin(), counts.end(), [](const RunRecord* a, const RunRecord* b) { return a->run.threads < b->run.threads; });
  counts.push_back(&all);
  size_t chosen = counts.size() - 1;
  while (chosen > 0) {
    const Claim* c = find_claim(study.claims, counts[chosen]->run.config_id(), counts[chosen - 1]->run.config_id());
    if (!c || c->comparison.verdict >= 0) break;
    --chosen;
  }
  const int threads = chosen + 1 == counts.size() ? 0 : counts[chosen]->run.threads;
  const int all_threads = all.threads > 0 ? all.threads : study.machine.logical_cpus;
  std::string text = "threads " + (threads > 0 ? std::to_string(threads) : "all " + std::to_string(all_threads)) + ": ";
  for (size_t i = 1; i < counts.size(); ++i) {
    const int t = i + 1 == counts.size() ? all_threads : counts[i]->run.threads;
    text += (i > 1 ? "; " : "") + std::to_string(t) + " against " + std::to_string(counts[i - 1]->run.threads) + ": " +
            claim_of(study, *counts[i], *counts[i - 1]);
  }
  if (std::isfinite(all.load_others)) {
    text += ". Other programs took " + format_fixed(100 * all.load_others, 0) + "% of the CPUs during the all-thread runs" +
            (all.load_others > 0.1 ? ": with a core taken by another program, fewer threads can be faster, and the "
                                     "advice holds only while that load does"
                                   : "");
  }
  reasons.push_back(text);
  return threads;
}

}  // namespace

Result<Advice> advise(const StudyResult& study, const std::string& network, int64_t mem_budget) {
  Advice a;
  a.network = network;
  a.mem_budget = mem_budget;
  const RunRecord* fp32_device = choose_device(study, network, a.reasons);
  if (!fp32_device) {
    return Status::error("the study has no successful fp32 run of " + network + " on the best CPU level (run "
                         "`retrograd study --networks " + network + "`)");
  }
  const RunRecord* chosen = choose_precision(study, *fp32_device, a.reasons);
  const StudyDevice& device = study.devices[chosen->run.device];
  a.device = chosen->run.device;
  a.device_label = device.label;
  a.device_arg = device.device_arg;
  a.isa = device.isa;
  a.precision = chosen->run.precision;
  if (std::any_of(study.devices.begin(), study.devices.end(), [](const StudyDevice& d) { return d.opencl; })) {
    a.reasons.push_back("no CPU+GPU split (--cpu-layers): it copies activations over the bus every step, and one "
                        "device alone was measured at the speeds above");
  }
  const std::vector<SpeedPoint> curve = speed_curve(study, network, a.device);
  a.batch = choose_batch(study, curve, *fp32_device, a.reasons);
  const double precision_factor = chosen->samples_per_s / fp32_device->samples_per_s;  // measured at batch 64
  // Memory: the peak measured over batch sizes as a line; a budget below it splits the batch.
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
  if (!device.opencl) a.threads = choose_threads(study, *fp32_device, a.reasons);
  // The prediction: samples/s at the micro-batch from the fp32 curve (the rounds' medians),
  // scaled by the precision's measured factor; steps of the whole batch.
  a.predicted_samples_per_s = speed_at(curve, a.micro_batch) * precision_factor;
  if (a.threads > 0) {
    if (const RunRecord* t = find_figure(study.figures, "threads", network, a.device, "fp32", 64, a.threads))
      a.predicted_samples_per_s *= t->samples_per_s / fp32_device->samples_per_s;
  }
  a.predicted_steps_per_s = a.predicted_samples_per_s / static_cast<double>(a.batch);
  a.basis = "fp32 samples/s measured on " + device.label + " at batch " +
            (a.micro_batch == a.batch ? std::to_string(a.batch) : "(micro) " + std::to_string(a.micro_batch)) +
            (std::any_of(curve.begin(), curve.end(), [&](const SpeedPoint& p) { return p.batch == a.micro_batch; })
                 ? ""
                 : " (interpolated)") +
            " (medians of the rounds)" +
            (a.precision == "fp32" ? "" : ", x " + format_fixed(precision_factor, 3) + " for " + a.precision + " (measured at batch 64)") +
            (a.threads > 0 ? ", x the " + std::to_string(a.threads) + "-thread run's speed over all threads'" : "");
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
