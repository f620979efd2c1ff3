// Everything a study found, as the report writers and `advise` read it, and its JSON form
// (the study's study.json; `advise --study FILE` reads it back).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/run_record.h"
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

struct StudyResult {
  std::string date;          // "2026-11-25 14:02 UTC"
  std::string version;       // retrograd's
  bool quick = false;
  double seconds = 0;        // the study's wall time so far
  bool finished = false;     // false while running or when stopped early: the report says so
  StudyMachine machine;
  StudyConfig config;
  std::vector<StudyDevice> devices;
  std::vector<RunRecord> runs;
  std::vector<std::string> commands;  // per run, the train command (same order as runs)
  std::vector<std::string> not_run;   // combinations the trainers refuse (StudyPlan::not_run)
  nlohmann::json estimates = nlohmann::json::array();  // other machines (roofline; marked estimates)
  nlohmann::json advice = nlohmann::json::array();     // per network (study/advisor.h)
};

nlohmann::json study_result_json(const StudyResult& result);
// Errors name the field and say the file is not a study's (or of another version).
Result<StudyResult> study_result_from_json(const nlohmann::json& json);

// The records of one part ("devices", "batch", "lr", "threads"), successful or not.
std::vector<const RunRecord*> runs_of_part(const StudyResult& result, const std::string& part);

}  // namespace rg
