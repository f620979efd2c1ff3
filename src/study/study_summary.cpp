// Rounds of one configuration into one record of medians and spreads.
#include "study/study_summary.h"

#include <algorithm>
#include <map>

#include "study/quality_check.h"

namespace rg {

namespace {

double median_of(const std::vector<const RunRecord*>& rounds, double RunRecord::*field) {
  std::vector<double> values;
  for (const RunRecord* r : rounds) values.push_back(r->*field);
  return spread_of(values).median;
}

// The record of a configuration's successful rounds: the first's settings and history, the
// rounds' medians.
RunRecord summary_of(const std::vector<const RunRecord*>& rounds, double unstable_spread) {
  RunRecord s = *rounds.front();
  s.rounds = static_cast<int>(rounds.size());
  std::vector<double> speeds, qualities;
  for (const RunRecord* r : rounds) {
    speeds.push_back(r->samples_per_s);
    qualities.push_back(r->quality);
  }
  const Spread speed = spread_of(speeds), quality = spread_of(qualities);
  s.samples_per_s = speed.median;
  s.samples_per_s_low = speed.min;
  s.samples_per_s_high = speed.max;
  s.speed_spread = speed.n >= 2 ? speed.relative_iqr() : NAN;
  // The quality part's speed is a by-product (one short epoch), never compared: not judged.
  // The batch part's speed is not compared either (no claim rests on it; its figure is the accuracy).
  s.unstable = s.run.part != "quality" && s.run.part != "batch" && std::isfinite(s.speed_spread) &&
               s.speed_spread > unstable_spread;
  s.quality = quality.median;
  s.quality_low = quality.min;
  s.quality_high = quality.max;
  s.steps_per_s = s.samples_per_s / static_cast<double>(s.run.batch);
  s.gflops = s.samples_per_s * s.train_flops_per_sample * 1e-9;
  s.efficiency = s.gflops / s.peak_gflops;
  for (double RunRecord::*field : {&RunRecord::train_seconds, &RunRecord::cpu_cores_busy, &RunRecord::cpu_utilisation,
                                   &RunRecord::gpu_busy, &RunRecord::copy_ms_per_step, &RunRecord::launches_per_step,
                                   &RunRecord::time_to_target, &RunRecord::epochs_to_target, &RunRecord::process_seconds,
                                   &RunRecord::process_cpu_seconds, &RunRecord::load_others, &RunRecord::steal, &RunRecord::machine_gbs,
                                   &RunRecord::quality_chance}) {
    s.*field = median_of(rounds, field);
  }
  for (const RunRecord* r : rounds) {
    for (double RunRecord::*field : {&RunRecord::peak_rss_bytes, &RunRecord::peak_tensor_bytes, &RunRecord::device_peak_bytes}) {
      if (std::isfinite(r->*field)) s.*field = std::isfinite(s.*field) ? std::max(s.*field, r->*field) : r->*field;
    }
  }
  // Quality is judged against chance where it is compared: the quality part.
  if (s.run.part == "quality") {
    const LearnedVerdict learned = left_chance(s.quality_name, s.quality, s.quality_chance, s.run.test_limit);
    if (!learned.learned) s.not_learned = learned.why;
  }
  return s;
}

std::vector<const RunRecord*> rounds_of(const std::vector<RunRecord>& runs, const std::string& config_id) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : runs)
    if (r.ok && r.run.config_id() == config_id) out.push_back(&r);
  return out;
}

}  // namespace

std::vector<RunRecord> summarise_rounds(const std::vector<RunRecord>& runs, double unstable_spread) {
  std::vector<RunRecord> out;
  std::map<std::string, size_t> seen;
  for (const RunRecord& r : runs) {
    const std::string id = r.run.config_id();
    if (seen.count(id)) continue;
    seen[id] = out.size();
    const std::vector<const RunRecord*> good = rounds_of(runs, id);
    if (good.empty()) {
      out.push_back(r);
      out.back().rounds = 0;
    } else {
      out.push_back(summary_of(good, unstable_spread));
    }
  }
  return out;
}

const RunRecord* find_figure(const std::vector<RunRecord>& figures, const std::string& part, const std::string& network,
                             int device, const std::string& precision, int64_t batch, int threads) {
  for (const RunRecord& r : figures) {
    if (r.ok && r.rounds > 0 && r.run.part == part && r.run.network == network && r.run.device == device &&
        r.run.precision == precision && r.run.batch == batch && r.run.threads == threads && !r.run.profile)
      return &r;
  }
  return nullptr;
}

int threads_used(const RunRecord& r, int logical_cpus) {
  return r.run.threads > 0 ? r.run.threads : r.threads > 0 ? r.threads : logical_cpus;
}

RoundSamples round_speeds(const std::vector<RunRecord>& runs, const std::string& config_id, bool opencl) {
  RoundSamples samples;
  for (const RunRecord* r : rounds_of(runs, config_id)) {
    std::vector<double> epochs = epoch_speeds(*r, opencl);
    if (epochs.empty()) epochs = {r->samples_per_s};
    samples.push_back(epochs);
  }
  return samples;
}

RoundSamples round_qualities(const std::vector<RunRecord>& runs, const std::string& config_id) {
  RoundSamples samples;
  for (const RunRecord* r : rounds_of(runs, config_id)) samples.push_back({r->quality});
  return samples;
}

}  // namespace rg
