// study.json: the study's machine, devices, runs, estimates and advice.
#include "study/study_result.h"

#include "study/json_fields.h"

namespace rg {

namespace {

constexpr int kStudyFormat = 2;  // 2: rounds (run.round, round_loads, epochs' samples/s)

// The study's own scalar fields and lists (the devices, runs, estimates and advice aside).
constexpr auto kStudyFields = [](auto& r, auto&& visit) {
  visit("date", r.date);
  visit("version", r.version);
  visit("quick", r.quick);
  visit("seconds", r.seconds);
  visit("finished", r.finished);
  visit("commands", r.commands);
  visit("not_run", r.not_run);
};

constexpr auto kMachineFields = [](auto& m, auto&& visit) {
  visit("cpu", m.cpu);
  visit("features", m.features);
  visit("caches", m.caches);
  visit("os", m.os);
  visit("logical_cpus", m.logical_cpus);
  visit("cores", m.cores);
  visit("cpu_mhz", m.cpu_mhz);
  visit("cpu_mhz_measured", m.cpu_mhz_measured);
  visit("memory_bytes", m.memory_bytes);
  visit("virtual_machine", m.virtual_machine);
  visit("memory_bandwidth_gbs", m.memory_bandwidth_gbs);
  visit("opencl_note", m.opencl_note);
};

constexpr auto kConfigFields = [](auto& c, auto&& visit) {
  visit("networks", c.networks);
  visit("precisions", c.precisions);
  visit("parts", c.parts);
  visit("sweep_network", c.sweep_network);
  visit("batches", c.batches);
  visit("rates", c.rates);
  visit("sweep_epochs", c.sweep_epochs);
  visit("lr_epochs", c.lr_epochs);
  visit("sweep_limit", c.sweep_limit);
  visit("seconds_per_run", c.seconds_per_run);
  visit("speed_epochs", c.speed_epochs);
  visit("speed_batches", c.speed_batches);
  visit("target_accuracy", c.target_accuracy);
  visit("isa_ladder_networks", c.isa_ladder_networks);
  visit("speed_networks", c.speed_networks);
  visit("quality_networks", c.quality_networks);
  visit("quality_samples", c.quality_samples);
  visit("rounds", c.rounds);
  visit("extra_rounds", c.extra_rounds);
  visit("unstable_spread", c.unstable_spread);
};

constexpr auto kRoundLoadFields = [](auto& l, auto&& visit) {
  visit("round", l.round);
  visit("seconds", l.seconds);
  visit("others", l.others);
  visit("steal", l.steal);
  visit("load1", l.load1);
  visit("cpu_mhz", l.cpu_mhz);
};

}  // namespace

nlohmann::json study_config_json(const StudyConfig& config) { return fields_json(config, kConfigFields); }

std::string config_differences(const nlohmann::json& config, const nlohmann::json& other) {
  std::string text;
  auto add = [&](const std::string& key, const std::string& mine, const std::string& theirs) {
    text += (text.empty() ? "" : ", ") + key + " " + mine + " against " + theirs;
  };
  for (const auto& [key, value] : config.items()) {
    const std::string theirs = other.contains(key) ? other.at(key).dump() : "none";
    if (theirs != value.dump()) add(key, value.dump(), theirs);
  }
  for (const auto& [key, value] : other.items())
    if (!config.contains(key)) add(key, "none", value.dump());
  return text;
}

nlohmann::json study_result_json(const StudyResult& r) {
  nlohmann::json j = fields_json(r, kStudyFields);
  j["retrograd_study"] = kStudyFormat;
  j["machine"] = fields_json(r.machine, kMachineFields);
  j["config"] = fields_json(r.config, kConfigFields);
  j["devices"] = nlohmann::json::array();
  j["runs"] = nlohmann::json::array();
  j["estimates"] = r.estimates;
  j["advice"] = r.advice;
  for (const StudyDevice& d : r.devices) j["devices"].push_back(study_device_json(d));
  for (const RunRecord& run : r.runs) j["runs"].push_back(run_record_json(run));
  j["round_loads"] = nlohmann::json::array();
  for (const RoundLoad& load : r.round_loads) j["round_loads"].push_back(fields_json(load, kRoundLoadFields));
  return j;
}

Result<StudyResult> study_result_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("retrograd_study")) {
    return Status::error("not a retrograd study (no \"retrograd_study\" field): write one with `retrograd study`");
  }
  if (j["retrograd_study"] != kStudyFormat) {
    return Status::error("a study of format " + j["retrograd_study"].dump() + "; this retrograd reads format " +
                         std::to_string(kStudyFormat) + ": run `retrograd study` again");
  }
  StudyResult r;
  RG_TRY(fields_from_json(j, r, kStudyFields));
  if (!j.contains("machine") || !j.contains("config")) return Status::error("missing field \"machine\" or \"config\"");
  RG_TRY(fields_from_json(j["machine"], r.machine, kMachineFields).with_context("machine: "));
  RG_TRY(fields_from_json(j["config"], r.config, kConfigFields).with_context("config: "));
  r.config.quick = r.quick;
  if (!j.contains("devices") || !j["devices"].is_array()) return Status::error("missing field \"devices\"");
  for (size_t i = 0; i < j["devices"].size(); ++i) {
    auto device = study_device_from_json(j["devices"][i]);
    if (!device.ok()) return device.status().with_context("devices[" + std::to_string(i) + "]: ");
    r.devices.push_back(device.take());
  }
  if (!j.contains("runs") || !j["runs"].is_array()) return Status::error("missing field \"runs\"");
  for (size_t i = 0; i < j["runs"].size(); ++i) {
    auto run = run_record_from_json(j["runs"][i]);
    if (!run.ok()) return run.status().with_context("runs[" + std::to_string(i) + "]: ");
    if (run.value().run.device < 0 || run.value().run.device >= static_cast<int>(r.devices.size())) {
      return Status::error("runs[" + std::to_string(i) + "]: device " + std::to_string(run.value().run.device) +
                           " is not one of the " + std::to_string(r.devices.size()) + " devices");
    }
    r.runs.push_back(run.take());
  }
  for (const nlohmann::json& load : j.value("round_loads", nlohmann::json::array())) {
    RoundLoad l;
    RG_TRY(fields_from_json(load, l, kRoundLoadFields).with_context("round_loads: "));
    r.round_loads.push_back(l);
  }
  if (j.contains("estimates")) r.estimates = j["estimates"];
  if (j.contains("advice")) r.advice = j["advice"];
  return r;
}

std::vector<const RunRecord*> runs_of_part(const StudyResult& result, const std::string& part) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : result.figures) {
    if (r.run.part == part) out.push_back(&r);
  }
  return out;
}

}  // namespace rg
