// One run of the study: the `retrograd train` command line it stands for, run as a child
// process, and its record read back from the child's --json report.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/run_record.h"

namespace rg {

struct RunContext {
  std::string program;       // this binary
  std::string runs_dir;      // each run's JSON, log and (GANs) folder go here
  std::string data;          // --data ("" = train's default)
  std::string judge_path;    // GANs: the classifier checkpoint that scores samples ("" = none: no score)
  int64_t score_samples = 0; // GANs: samples the judge scores after training
  int logical_cpus = 1;
  double target_accuracy = 0;  // lr part
};

// argv of the run, from the program's path on: train --model ... --json JSON_PATH.
std::vector<std::string> train_command(const StudyRun& run, const StudyDevice& device, const RunContext& context,
                                       const std::string& json_path);
// The command as a person would type it (for the report and the logs).
std::string command_text(const std::vector<std::string>& argv, const StudyDevice& device);

// Runs it and reads its record; a failed run is a record with ok false and the reason.
RunRecord measure_run(const StudyRun& run, const StudyDevice& device, const RunContext& context);

// The record from a train --json report (the part that needs no process): speeds from the last
// epoch, utilisation from CPU and device time, quality by the kind of model.
RunRecord record_from_train_report(const StudyRun& run, const StudyDevice& device, const nlohmann::json& report,
                                   int logical_cpus, double target_accuracy);

}  // namespace rg
