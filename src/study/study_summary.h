// A study's runs summarised per configuration: every configuration is measured in several rounds
// (its runs differ only in the round and its seed), and the report, the claims and the advisor
// read one record per configuration whose figures are the rounds' medians, with their spread.
#pragma once

#include <string>
#include <vector>

#include "study/run_record.h"
#include "study/statistics.h"

namespace rg {

// One record per configuration (StudyRun::config_id), in the order of each one's first run:
// figures are the successful rounds' medians (peak memory: the largest), samples/s and quality
// carry their least and greatest, `rounds` counts the successful rounds, `unstable` marks a speed
// whose interquartile range over the rounds is over `unstable_spread` of its median, and
// `not_learned` a quality part's figure no better than chance. A configuration with no successful round keeps
// its first failure.
std::vector<RunRecord> summarise_rounds(const std::vector<RunRecord>& runs, double unstable_spread);

// The figure of a configuration with at least one successful round (threads 0: all of them), or null.
const RunRecord* find_figure(const std::vector<RunRecord>& figures, const std::string& part, const std::string& network,
                             int device, const std::string& precision, int64_t batch, int threads);

// The threads a run used: those asked for, else as it ran (all of the machine's logical CPUs).
int threads_used(const RunRecord& run, int logical_cpus);

// The speeds of each successful round of a configuration (its epochs'; OpenCL: but the first), for compare().
RoundSamples round_speeds(const std::vector<RunRecord>& runs, const std::string& config_id, bool opencl);
// The quality of each successful round, one value a round.
RoundSamples round_qualities(const std::vector<RunRecord>& runs, const std::string& config_id);

}  // namespace rg
