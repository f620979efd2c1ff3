// What a study may claim: every comparison its report and advice make (ISA levels, precisions,
// thread counts, batch sizes, devices, learning rates' speed, precisions' quality), decided by
// one rule over the rounds' samples (study/statistics.h: a bootstrap interval, Holm over each
// family, a minimum effect), and the anomalies among them: results the hardware cannot explain
// (a lower ISA level faster, a precision faster than its arithmetic allows, more threads slower,
// a speed that depends on the values), each with its figures and likely cause.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "study/statistics.h"

namespace rg {

struct StudyResult;

struct Claim {
  std::string kind;      // "isa", "precision", "threads", "batch", "device", "values", "quality"
  std::string network;
  std::string a, b;      // what is compared, as the report names it: "cpu/avx2", "fp16 on cpu/avx2", "2 threads"
  std::string a_id, b_id;  // the configurations (StudyRun::config_id)
  Comparison comparison;   // a against b: samples/s ratio, or quality difference (kind "quality")
  bool higher_is_better = true;  // quality: false for an MSE
  std::string anomaly;     // not empty: what the hardware cannot explain, and the likely cause
  bool explained_by_load = false;  // the anomaly is what the load measured meanwhile explains (more threads
                                   // slower while another program held a core): the advice may follow it
};

// The rule qualities are decided by: accuracies as a difference in points (half a point is the least
// worth a claim), errors (MSE) as a ratio (5%); speeds take DecisionRule's defaults.
DecisionRule quality_decision_rule();
inline Effect quality_effect(bool higher_is_better) { return higher_is_better ? Effect::difference : Effect::ratio; }

// Every comparison of the study's figures, decided: speeds in one family, qualities in another.
std::vector<Claim> study_claims(const StudyResult& result);

// "1.32x faster (95% interval 1.21-1.45x)", "no measurable difference (0.98x, 0.91-1.05x)",
// "0.4 points less accurate (...)", "not decidable: 1 round a side".
std::string claim_text(const Claim& claim);

// The claim comparing configuration a_id against b_id (in that order), or null.
const Claim* find_claim(const std::vector<Claim>& claims, const std::string& a_id, const std::string& b_id);

// Figures and claims from the runs (after a study, or after reading its study.json).
void summarise_study(StudyResult& result);

// A study's study.json read (errors name the file and the field) and summarised.
Result<StudyResult> read_study_file(const std::string& path);

}  // namespace rg
