// Everything a study found, as the report writers and `advise` read it, and its JSON form
// (the study's study.json; `advise --study FILE` reads it back).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/run_record.h"
#include "study/study_claims.h"
#include "study/study_plan.h"

namespace rg {

struct StudyMachine {
  std::string cpu;           // brand string
  std::string features;      // "sse2 sse3 ... avx2 fma f16c"
  std::string caches;        // "L1d 32 KiB, ..."
  std::string os;
  int logical_cpus = 0, cores = 0;
  double cpu_mhz = 0;           // as the OS reports it (often the nominal clock on a VM)
  double cpu_mhz_measured = 0;  // report/clock.h, all cores busy: what the peaks use
  int64_t memory_bytes = 0;
  bool virtual_machine = false;
  double memory_bandwidth_gbs = 0;  // measured here (STREAM-like); 0: not measured
  std::string opencl_note;          // why no OpenCL device was studied, or empty
};

// How loaded the machine was over one round of the study (report/machine_load.h): other
// programs' and the hypervisor's share of all CPUs' time, the load average, the clock.
struct RoundLoad {
  int round = 0;
  double seconds = NAN;
  double others = NAN, steal = NAN, load1 = NAN;
  double cpu_mhz = NAN;  // measured on one core at the round's end
};

struct StudyResult {
  std::string date;          // "2026-11-25 14:02 UTC"
  std::string version;       // retrograd's
  bool quick = false;
  double seconds = 0;        // the study's wall time so far
  bool finished = false;     // false while running or when stopped early: the report says so
  StudyMachine machine;
  StudyConfig config;
  std::vector<StudyDevice> devices;
  std::vector<RunRecord> runs;        // every run, every round
  std::vector<RoundLoad> round_loads;
  // Computed from the runs (summarise_study), not stored: one record per configuration
  // (study/study_summary.h) and what may be claimed from them (study/study_claims.h).
  std::vector<RunRecord> figures;
  std::vector<Claim> claims;
  std::vector<std::string> commands;  // per run, the train command (same order as runs)
  std::vector<std::string> not_run;   // combinations the trainers refuse (StudyPlan::not_run)
  nlohmann::json estimates = nlohmann::json::array();  // other machines (roofline; marked estimates)
  nlohmann::json advice = nlohmann::json::array();     // per network (study/advisor.h)
};

nlohmann::json study_result_json(const StudyResult& result);
// The settings alone: a resumed study must have the same.
nlohmann::json study_config_json(const StudyConfig& config);
// The settings `config` (study_config_json) has otherwise than `other`: "seconds_per_run 0.2 against
// 0.1, networks [\"mlp\"] against [\"lenet\"]" (a key one lacks: "none").
std::string config_differences(const nlohmann::json& config, const nlohmann::json& other);
// Errors name the field and say the file is not a study's (or of another version).
Result<StudyResult> study_result_from_json(const nlohmann::json& json);

// The figures of one part ("devices", "batch", "lr", "threads", ...), successful or not.
std::vector<const RunRecord*> runs_of_part(const StudyResult& result, const std::string& part);

}  // namespace rg
