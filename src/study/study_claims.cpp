// The study's comparisons, decided over the rounds, and the anomalies among them.
#include "study/study_claims.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "base/input_file.h"
#include "study/study_result.h"
#include "study/study_summary.h"

namespace rg {

namespace {

// What a precision's arithmetic allows over fp32 at most, on the CPU or OpenCL: fp16 stores f16
// and computes in f32 (at most the bytes moved halve; a GPU's packed halves at most double the
// arithmetic too), int8-train multiplies 8-bit integers (4 a lane where f32 has 1), int8-qat
// computes in f32 with quantisation on top.
double precision_bound(const std::string& precision) {
  if (precision == "fp16") return 2.0;
  if (precision == "int8-train") return 4.0;
  if (precision == "int8-qat") return 1.0;
  return 1.0;
}

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[160];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

// "other programs took 48% of the CPUs during these rounds, 2% during those": the load each side
// measured, as a likely cause.
std::string load_note(const RunRecord& a, const RunRecord& b, const std::string& a_name, const std::string& b_name) {
  if (!std::isfinite(a.load_others) || !std::isfinite(b.load_others)) return "";
  return "; other programs took " + format("%.0f%%", 100 * a.load_others) + " of the CPUs during the " + a_name +
         " runs and " + format("%.0f%%", 100 * b.load_others) + " during the " + b_name + " runs";
}

class ClaimBuilder {
 public:
  explicit ClaimBuilder(const StudyResult& result) : result_(result) {}

  Claim& speed(const std::string& kind, const RunRecord& a, const RunRecord& b, const std::string& a_name,
               const std::string& b_name) {
    const bool opencl_a = result_.devices[a.run.device].opencl, opencl_b = result_.devices[b.run.device].opencl;
    Claim c = base(kind, a, b, a_name, b_name);
    c.comparison = compare(round_speeds(result_.runs, c.a_id, opencl_a), round_speeds(result_.runs, c.b_id, opencl_b),
                           Effect::ratio, speed_rule_);
    speeds_.push_back(c);
    return speeds_.back();
  }

  void quality(const RunRecord& a, const RunRecord& b, const std::string& a_name, const std::string& b_name) {
    Claim c = base("quality", a, b, a_name, b_name);
    c.higher_is_better = a.quality_higher_is_better;
    c.comparison = compare(round_qualities(result_.runs, c.a_id), round_qualities(result_.runs, c.b_id),
                           quality_effect(c.higher_is_better), quality_decision_rule());
    qualities_.push_back(c);
  }

  std::vector<Claim> decided() {
    decide_family(speeds_, speed_rule_);
    decide_family(qualities_, quality_decision_rule());
    std::vector<Claim> out = speeds_;
    out.insert(out.end(), qualities_.begin(), qualities_.end());
    return out;
  }

 private:
  Claim base(const std::string& kind, const RunRecord& a, const RunRecord& b, const std::string& a_name,
             const std::string& b_name) const {
    Claim c;
    c.kind = kind;
    c.network = a.run.network;
    c.a = a_name;
    c.b = b_name;
    c.a_id = a.run.config_id();
    c.b_id = b.run.config_id();
    return c;
  }
  // Holm over each kind of comparison (ISA levels, precisions, threads, ...): the chance of any
  // false claim of a kind is held to alpha.
  static void decide_family(std::vector<Claim>& claims, const DecisionRule& rule) {
    std::map<std::string, std::vector<Comparison*>> families;
    for (Claim& c : claims) families[c.kind].push_back(&c.comparison);
    for (auto& [kind, family] : families) decide(family, rule);
  }

  const StudyResult& result_;
  DecisionRule speed_rule_;
  std::vector<Claim> speeds_, qualities_;
};

const RunRecord* figure(const StudyResult& result, const std::string& part, const std::string& network, int device,
                        const std::string& precision, int64_t batch, int threads) {
  return find_figure(result.figures, part, network, device, precision, batch, threads);
}

int best_cpu(const StudyResult& result) {
  for (size_t d = 0; d < result.devices.size(); ++d)
    if (result.devices[d].best_cpu) return static_cast<int>(d);
  return 0;
}

void isa_claims(const StudyResult& result, const std::string& network, ClaimBuilder& claims) {
  const RunRecord* lower = nullptr;
  for (size_t d = 0; d < result.devices.size(); ++d) {
    if (result.devices[d].opencl) continue;
    const RunRecord* here = figure(result, "devices", network, static_cast<int>(d), "fp32", 64, 0);
    if (!here) continue;
    if (lower) {
      const std::string a = result.devices[d].label, b = result.devices[lower->run.device].label;
      Claim& c = claims.speed("isa", *here, *lower, a, b);
      c.anomaly = "a higher ISA level is slower than a lower one" + load_note(*here, *lower, a, b);
    }
    lower = here;
  }
}

void precision_claims(const StudyResult& result, const std::string& network, ClaimBuilder& claims) {
  for (const RunRecord& r : result.figures) {
    if (!r.ok || r.run.network != network || r.run.part != "devices" || r.run.precision == "fp32") continue;
    const RunRecord* fp32 = figure(result, "devices", network, r.run.device, "fp32", r.run.batch, 0);
    if (!fp32) continue;
    const std::string where = " on " + result.devices[r.run.device].label;
    Claim& c = claims.speed("precision", r, *fp32, r.run.precision + where, "fp32" + where);
    c.anomaly = "faster than " + r.run.precision + "'s arithmetic allows over fp32 (at most " +
                format("%.0fx", precision_bound(r.run.precision)) + ")" + load_note(r, *fp32, r.run.precision, "fp32");
  }
}

void thread_claims(const StudyResult& result, const std::string& network, ClaimBuilder& claims) {
  const int device = best_cpu(result);
  std::vector<const RunRecord*> counts;
  for (const RunRecord& r : result.figures)
    if (r.ok && r.run.part == "threads" && r.run.network == network && r.run.device == device) counts.push_back(&r);
  if (counts.empty()) return;
  if (const RunRecord* all = figure(result, "devices", network, device, "fp32", 64, 0)) counts.push_back(all);
  auto threads_of = [&](const RunRecord* r) { return threads_used(*r, result.machine.logical_cpus); };
  std::stable_sort(counts.begin(), counts.end(), [&](const RunRecord* a, const RunRecord* b) { return threads_of(a) < threads_of(b); });
  for (size_t i = 1; i < counts.size(); ++i) {
    const std::string a = std::to_string(threads_of(counts[i])) + " threads", b = std::to_string(threads_of(counts[i - 1])) +
                                                                                    (threads_of(counts[i - 1]) == 1 ? " thread" : " threads");
    Claim& c = claims.speed("threads", *counts[i], *counts[i - 1], a, b);
    c.anomaly = "more threads are slower than fewer" + load_note(*counts[i], *counts[i - 1], a, b);
    // Another program holding half a core or more while the larger count ran explains it: its
    // threads wait on the one that shares a core.
    c.explained_by_load = counts[i]->load_others * result.machine.logical_cpus >= 0.5;
    if (c.explained_by_load) c.anomaly += ": the load explains it, and fewer threads are advised while it lasts";
  }
}

void batch_and_device_claims(const StudyResult& result, const std::string& network, ClaimBuilder& claims) {
  const int cpu = best_cpu(result);
  for (const RunRecord& r : result.figures) {
    if (!r.ok || r.run.network != network) continue;
    if (r.run.part == "batch-speed") {
      if (const RunRecord* b64 = figure(result, "devices", network, r.run.device, "fp32", 64, 0)) {
        const std::string where = " on " + result.devices[r.run.device].label;
        claims.speed("batch", r, *b64, "batch " + std::to_string(r.run.batch) + where, "batch 64" + where);
      }
    }
    if (r.run.part == "devices" && r.run.precision == "fp32" && result.devices[r.run.device].opencl) {
      if (const RunRecord* on_cpu = figure(result, "devices", network, cpu, "fp32", 64, 0))
        claims.speed("device", r, *on_cpu, result.devices[r.run.device].label, result.devices[cpu].label);
    }
  }
}

// The learning rates' speeds against the lowest rate's: the same work, other values.
void value_claims(const StudyResult& result, ClaimBuilder& claims) {
  const RunRecord* lowest = nullptr;
  for (const RunRecord& r : result.figures)
    if (r.ok && r.run.part == "lr" && (!lowest || r.run.lr < lowest->run.lr)) lowest = &r;
  if (!lowest) return;
  for (const RunRecord& r : result.figures) {
    if (!r.ok || r.run.part != "lr" || &r == lowest || r.run.device != lowest->run.device) continue;
    Claim& c = claims.speed("values", r, *lowest, format("lr %g", r.run.lr), format("lr %g", lowest->run.lr));
    c.anomaly = "the same work ran slower with other values: arithmetic on subnormal floats is the usual "
                "cause (x86 slows down on them unless flush-to-zero is set; retrograd sets it, --denormals flush)";
  }
}

void quality_claims(const StudyResult& result, ClaimBuilder& claims) {
  for (const RunRecord& r : result.figures) {
    if (!r.ok || r.run.part != "quality" || !r.not_learned.empty()) continue;
    const int cpu = best_cpu(result);
    const std::string where = " on " + result.devices[r.run.device].label;
    if (r.run.precision != "fp32") {
      const RunRecord* fp32 = figure(result, "quality", r.run.network, r.run.device, "fp32", r.run.batch, 0);
      if (fp32 && fp32->not_learned.empty()) claims.quality(r, *fp32, r.run.precision + where, "fp32" + where);
    } else if (r.run.device != cpu) {
      const RunRecord* on_cpu = figure(result, "quality", r.run.network, cpu, "fp32", r.run.batch, 0);
      if (on_cpu && on_cpu->not_learned.empty())
        claims.quality(r, *on_cpu, "fp32" + where, "fp32 on " + result.devices[cpu].label);
    }
  }
}

// Each claim's anomaly text is written when the claim is made; it stays only where its kind's
// condition holds (a step the wrong way, or a speed-up beyond the precision's bound).
void keep_anomalies_that_hold(std::vector<Claim>& claims) {
  for (Claim& c : claims) {
    const Comparison& k = c.comparison;
    bool holds = false;
    if (c.kind == "isa" || c.kind == "threads") holds = k.verdict < 0;
    if (c.kind == "values") holds = k.verdict < 0 && k.estimate < 0.9;
    if (c.kind == "precision") {
      const std::string precision = c.a.substr(0, c.a.find(' '));
      holds = k.verdict > 0 && k.low > precision_bound(precision);
    }
    if (!holds) c.anomaly.clear();
    c.explained_by_load = c.explained_by_load && holds;
  }
}

}  // namespace

std::vector<Claim> study_claims(const StudyResult& result) {
  ClaimBuilder claims(result);
  std::vector<std::string> networks = result.config.networks;
  for (const RunRecord& r : result.figures)
    if (std::find(networks.begin(), networks.end(), r.run.network) == networks.end()) networks.push_back(r.run.network);
  for (const std::string& network : networks) {
    isa_claims(result, network, claims);
    precision_claims(result, network, claims);
    thread_claims(result, network, claims);
    batch_and_device_claims(result, network, claims);
  }
  value_claims(result, claims);
  quality_claims(result, claims);
  std::vector<Claim> out = claims.decided();
  keep_anomalies_that_hold(out);
  return out;
}

DecisionRule quality_decision_rule() {
  DecisionRule rule;
  rule.min_difference_effect = 0.005;
  rule.min_ratio_effect = 0.05;
  return rule;
}

std::string claim_text(const Claim& claim) {
  const Comparison& k = claim.comparison;
  if (!k.decidable) {
    return "not decidable: " + std::to_string(k.rounds_a) + " against " + std::to_string(k.rounds_b) + " rounds";
  }
  const bool points = k.effect == Effect::difference;
  auto value = [&](double v) { return points ? format("%+.1f points", 100 * v) : format("%.2fx", v); };
  const std::string interval = "95% interval " + value(k.low) + " to " + value(k.high);
  if (k.verdict == 0) {
    const DecisionRule rule = claim.kind == "quality" ? quality_decision_rule() : DecisionRule{};
    const bool below_floor = points ? std::fabs(k.estimate) < rule.min_difference_effect
                                    : std::fabs(std::log(k.estimate)) < std::log(1 + rule.min_ratio_effect);
    const std::string why = below_floor ? "under the least difference claimed"
                            : k.p < 0.05 ? format("Holm-adjusted p %.2f over its kind's comparisons", k.p_adjusted)
                                         : format("p %.2f", k.p);
    return "no measurable difference (" + value(k.estimate) + "; " + interval + "; " + why + ")";
  }
  std::string word;
  if (claim.kind == "quality") {
    const bool better = (k.verdict > 0) == claim.higher_is_better;
    word = better ? (points ? "more accurate" : "lower error") : (points ? "less accurate" : "higher error");
  } else {
    word = k.verdict > 0 ? "faster" : "slower";
  }
  return value(k.estimate) + ": " + word + " (" + interval + ")";
}

const Claim* find_claim(const std::vector<Claim>& claims, const std::string& a_id, const std::string& b_id) {
  for (const Claim& c : claims)
    if (c.a_id == a_id && c.b_id == b_id) return &c;
  return nullptr;
}

void summarise_study(StudyResult& result) {
  result.figures = summarise_rounds(result.runs, result.config.unstable_spread);
  result.claims = study_claims(result);
}

Result<StudyResult> read_study_file(const std::string& path) {
  constexpr int64_t kMaxStudyBytes = int64_t{1} << 30;  // a full study with every round is a few MB
  RG_ASSIGN(InputFile file, open_input_file(path, "a study's study.json"));
  if (file.size > kMaxStudyBytes) {
    return Status::error(path + ": " + std::to_string(file.size) + " bytes, over the 1 GiB a study.json may have");
  }
  std::string text(static_cast<size_t>(file.size), '\0');
  RG_TRY(file.read(text.data(), text.size(), "the study"));
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, false);
  if (json.is_discarded()) return Status::error(path + ": not JSON");
  auto study = study_result_from_json(json);
  if (!study.ok()) return study.status().with_context(path + ": ");
  summarise_study(study.value());
  return study;
}

}  // namespace rg
