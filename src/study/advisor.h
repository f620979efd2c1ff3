// `retrograd advise` and the study report's advice: from a study's measurements, how to train
// a network on this machine: the device (the CPU at its best level or an OpenCL device), the
// precision, the batch and micro-batch under a memory budget, the threads, each with its reason,
// and the steps/s that setting was measured (or interpolated) to reach.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/study_result.h"

namespace rg {

struct Advice {
  std::string network;
  int device = 0;                // into the study's devices
  std::string device_label, device_arg, isa;
  std::string precision = "fp32";
  int64_t batch = 64;
  int64_t micro_batch = 64;      // == batch: no split
  int threads = 0;               // 0: every logical CPU
  int64_t mem_budget = 0;        // what was asked (0: none)
  double predicted_samples_per_s = 0;
  double predicted_steps_per_s = 0;
  double predicted_peak_rss_bytes = 0;
  std::string basis;             // which measurements the prediction comes from
  std::vector<std::string> reasons;
  std::vector<std::string> command;  // train's options after `retrograd train` (no --epochs)
};

// Errors when the study has no successful run of `network`, or when the budget cannot hold
// even the smallest measured setting (the message says what it needs).
Result<Advice> advise(const StudyResult& study, const std::string& network, int64_t mem_budget);

nlohmann::json advice_json(const Advice& advice);
std::string advice_text(const Advice& advice);  // the lines `advise` prints

// Every network of the devices part; a network that cannot be advised gets {"network", "error"}.
nlohmann::json advise_every_network(const StudyResult& study, int64_t mem_budget);

}  // namespace rg
