// A study's runs dealt out to the ranks and gathered back.
#include "study/study_ranks.h"

#include <map>

#include <nlohmann/json.hpp>

namespace rg {

std::vector<int> study_run_owners(const StudyPlan& plan, int ranks) {
  std::vector<int> owners(plan.runs.size(), 0);
  std::map<std::string, int> group_owner;  // network@device of time-sized runs -> rank
  int next = 0;
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    const StudyRun& run = plan.runs[i];
    const bool time_sized = run.limit == 0 && run.part != "batch" && run.part != "lr";
    if (!time_sized) {
      owners[i] = next++ % ranks;
      continue;
    }
    const std::string group = run.network + "@" + std::to_string(run.device);
    auto it = group_owner.find(group);
    if (it == group_owner.end()) it = group_owner.emplace(group, next++ % ranks).first;
    owners[i] = it->second;
  }
  return owners;
}

Status gather_study_runs(Communicator& comm, const std::vector<size_t>& plan_indexes, StudyResult* result) {
  nlohmann::json sent = nlohmann::json::array();
  for (size_t i = 0; i < plan_indexes.size(); ++i) {
    sent.push_back({{"index", plan_indexes[i]}, {"record", run_record_json(result->runs[i])}, {"command", result->commands[i]}});
  }
  RG_ASSIGN(const std::vector<std::string> texts, comm.gather(sent.dump()));
  if (!comm.is_root()) return Status();
  std::map<size_t, std::pair<RunRecord, std::string>> all;  // plan index -> record and command
  for (size_t r = 0; r < texts.size(); ++r) {
    const std::string where = "the study's runs from rank " + std::to_string(r) + ": ";
    const nlohmann::json runs = nlohmann::json::parse(texts[r], nullptr, false);
    if (!runs.is_array()) return Status::error(where + "not a JSON array");
    for (const nlohmann::json& run : runs) {
      if (!run.is_object() || !run.contains("index") || !run["index"].is_number_unsigned() || !run.contains("record") ||
          !run.contains("command") || !run["command"].is_string()) {
        return Status::error(where + "a run without its index, record or command");
      }
      auto record = run_record_from_json(run["record"]);
      if (!record.ok()) return record.status().with_context(where);
      all[run["index"].get<size_t>()] = {record.take(), run["command"].get<std::string>()};
    }
  }
  result->runs.clear();
  result->commands.clear();
  for (const auto& [index, run] : all) {
    result->runs.push_back(run.first);
    result->commands.push_back(run.second);
  }
  return Status();
}

}  // namespace rg
