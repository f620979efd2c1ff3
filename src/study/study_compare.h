// Two studies of one machine side by side (`retrograd compare A B`): every figure both measured,
// compared by the study's own rule (study/statistics.h: rounds against rounds, a 95% interval,
// Holm over each family, the least difference worth a claim), beside the load each run measured,
// so a quiet hour and a busy one are told apart from noise, and a difference is put down to the
// load only where the load can cause it.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "study/run_record.h"
#include "study/statistics.h"

namespace rg {

struct StudyResult;

struct FigureChange {
  std::string config_id;   // StudyRun::config_id, the same in both studies
  std::string label;       // "mlp, devices, cpu/avx2, fp32, batch 64, all threads"
  bool speed = true;       // samples/s; false: the quality (accuracy, MSE, GAN score)
  RunRecord a, b;          // the figure in each study: the rounds' medians and ranges, the load measured
  Comparison comparison;   // B against A: a ratio for speeds and errors, a difference for accuracies
  bool within_ranges = false;  // each median lies within the other's rounds' range
  int threads = 0;         // the threads the runs used
  // Beyond the noise, and one study's runs had fewer CPUs free than their threads needed while the
  // other's did not: the load measured explains it.
  bool load_explains = false;
};

struct StudyComparison {
  std::string a_name, b_name;  // as given
  int logical_cpus = 0;
  std::vector<FigureChange> speeds, qualities;
};

// Errors when the two are not studies of the same settings and devices (nothing to compare).
Result<StudyComparison> compare_studies(const StudyResult& a, const StudyResult& b, const std::string& a_name,
                                        const std::string& b_name);

// The comparison as Markdown: a summary (how many figures differ beyond the noise, how many of those
// the load explains, how many lie outside the other's range), then one table each for speeds and qualities.
std::string comparison_markdown(const StudyComparison& comparison);

}  // namespace rg
