// A study's runs carried out: every configuration of the plan in rounds that interleave them
// (round 0 of each, then round 1 of each, ...: a slow minute hits them alike), each speed run
// sized in its first round and kept at that size, the machine's load measured around each run
// and each round, figures whose rounds spread too far measured again (a bounded number of extra
// rounds) and then marked unstable, study.json written after every run so a stopped study can
// be resumed (runs already in it are not made again), and a progress line with the time left.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "study/study_plan.h"
#include "study/study_result.h"
#include "study/study_runner.h"

namespace rg {

// One run of the schedule: configuration `config` of the plan, in round `round`.
struct ScheduledRun {
  size_t config = 0;
  int round = 0;
};

// Rounds first_round .. first_round + rounds - 1 of `configs`, interleaved: every configuration's
// round r before any configuration's round r + 1, the configurations in the order given.
std::vector<ScheduledRun> interleaved_rounds(const std::vector<size_t>& configs, int first_round, int rounds);

class StudySession {
 public:
  // `owned[i]`: this process measures configuration i (an MPI job shares them out); `save` writes
  // study.json (called after every run; empty on ranks other than the root).
  StudySession(const StudyPlan& plan, std::vector<bool> owned, const RunContext& context, StudyResult& result,
               std::function<Status()> save);

  // Takes the runs of an earlier, stopped study with the same settings: they are not made again,
  // and their sizes are kept.
  void resume_from(const StudyResult& earlier);

  // Every round, then the extra rounds of unstable figures. Prints a line per run.
  Status run_all();

  double estimated_seconds() const;  // the whole schedule, from the plan and the speeds guessed so far
  // The order keys (round x configurations + configuration) of result.runs, for gathering ranks' runs.
  const std::vector<size_t>& run_keys() const { return keys_; }

 private:
  Status run_schedule(const std::vector<ScheduledRun>& schedule);
  StudyRun sized(const ScheduledRun& scheduled);
  double guessed_gflops(int device, const std::string& network) const;
  double estimate(const StudyRun& run) const;
  std::vector<size_t> unstable_configs() const;

  const StudyPlan& plan_;
  std::vector<bool> owned_;
  const RunContext& context_;
  StudyResult& result_;
  std::function<Status()> save_;
  std::vector<int64_t> limits_;                  // per configuration: its --limit, once sized
  std::map<std::string, double> gflops_;         // network@device -> fp32 GFLOP/s measured (sizes the rest)
  std::map<std::string, double> flops_;          // network -> training flops a sample
  std::map<std::string, int64_t> fp32_limits_;   // network@device -> its fp32 devices run's --limit
  std::set<std::string> done_;                   // run ids already measured (resumed)
  std::vector<size_t> keys_;
  std::vector<double> estimates_;                // per configuration: the seconds a run of it should take
  double estimate_left_ = 0, estimate_done_ = 0, seconds_done_ = 0;
  size_t runs_total_ = 0, runs_done_ = 0;
};

}  // namespace rg
