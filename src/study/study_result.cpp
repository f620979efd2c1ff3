// study.json: the study's machine, devices, runs, estimates and advice.
#include "study/study_result.h"

namespace rg {

namespace {

constexpr int kStudyFormat = 1;

template <class T>
Status read(const nlohmann::json& j, const char* name, T& value) {
  if (!j.contains(name)) return Status::error(std::string("missing field \"") + name + "\"");
  try {
    value = j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    return Status::error(std::string("field \"") + name + "\" has the wrong type");
  }
  return Status();
}

}  // namespace

nlohmann::json study_result_json(const StudyResult& r) {
  const StudyMachine& m = r.machine;
  nlohmann::json j = {
      {"retrograd_study", kStudyFormat},
      {"date", r.date},
      {"version", r.version},
      {"quick", r.quick},
      {"seconds", r.seconds},
      {"finished", r.finished},
      {"machine",
       {{"cpu", m.cpu}, {"features", m.features}, {"caches", m.caches}, {"os", m.os},
        {"logical_cpus", m.logical_cpus}, {"cores", m.cores}, {"cpu_mhz", m.cpu_mhz}, {"cpu_mhz_measured", m.cpu_mhz_measured},
        {"memory_bytes", m.memory_bytes}, {"virtual_machine", m.virtual_machine},
        {"memory_bandwidth_gbs", m.memory_bandwidth_gbs}, {"opencl_note", m.opencl_note}}},
      {"config",
       {{"networks", r.config.networks}, {"precisions", r.config.precisions}, {"parts", r.config.parts},
        {"sweep_network", r.config.sweep_network}, {"batches", r.config.batches}, {"rates", r.config.rates},
        {"sweep_epochs", r.config.sweep_epochs}, {"lr_epochs", r.config.lr_epochs},
        {"sweep_limit", r.config.sweep_limit}, {"seconds_per_run", r.config.seconds_per_run},
        {"speed_epochs", r.config.speed_epochs}, {"speed_batches", r.config.speed_batches},
        {"target_accuracy", r.config.target_accuracy}}},
      {"devices", nlohmann::json::array()},
      {"runs", nlohmann::json::array()},
      {"commands", r.commands},
      {"not_run", r.not_run},
      {"estimates", r.estimates},
      {"advice", r.advice},
  };
  for (const StudyDevice& d : r.devices) j["devices"].push_back(study_device_json(d));
  for (const RunRecord& run : r.runs) j["runs"].push_back(run_record_json(run));
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
  RG_TRY(read(j, "date", r.date));
  RG_TRY(read(j, "version", r.version));
  RG_TRY(read(j, "quick", r.quick));
  RG_TRY(read(j, "seconds", r.seconds));
  RG_TRY(read(j, "finished", r.finished));
  if (!j.contains("machine") || !j.contains("config")) return Status::error("missing field \"machine\" or \"config\"");
  const nlohmann::json& m = j["machine"];
  RG_TRY(read(m, "cpu", r.machine.cpu).with_context("machine: "));
  RG_TRY(read(m, "features", r.machine.features).with_context("machine: "));
  RG_TRY(read(m, "caches", r.machine.caches).with_context("machine: "));
  RG_TRY(read(m, "os", r.machine.os).with_context("machine: "));
  RG_TRY(read(m, "logical_cpus", r.machine.logical_cpus).with_context("machine: "));
  RG_TRY(read(m, "cores", r.machine.cores).with_context("machine: "));
  RG_TRY(read(m, "cpu_mhz", r.machine.cpu_mhz).with_context("machine: "));
  RG_TRY(read(m, "cpu_mhz_measured", r.machine.cpu_mhz_measured).with_context("machine: "));
  RG_TRY(read(m, "memory_bytes", r.machine.memory_bytes).with_context("machine: "));
  RG_TRY(read(m, "virtual_machine", r.machine.virtual_machine).with_context("machine: "));
  RG_TRY(read(m, "memory_bandwidth_gbs", r.machine.memory_bandwidth_gbs).with_context("machine: "));
  RG_TRY(read(m, "opencl_note", r.machine.opencl_note).with_context("machine: "));
  const nlohmann::json& c = j["config"];
  RG_TRY(read(c, "networks", r.config.networks).with_context("config: "));
  RG_TRY(read(c, "precisions", r.config.precisions).with_context("config: "));
  RG_TRY(read(c, "parts", r.config.parts).with_context("config: "));
  RG_TRY(read(c, "sweep_network", r.config.sweep_network).with_context("config: "));
  RG_TRY(read(c, "batches", r.config.batches).with_context("config: "));
  RG_TRY(read(c, "rates", r.config.rates).with_context("config: "));
  RG_TRY(read(c, "sweep_epochs", r.config.sweep_epochs).with_context("config: "));
  RG_TRY(read(c, "lr_epochs", r.config.lr_epochs).with_context("config: "));
  RG_TRY(read(c, "sweep_limit", r.config.sweep_limit).with_context("config: "));
  RG_TRY(read(c, "seconds_per_run", r.config.seconds_per_run).with_context("config: "));
  RG_TRY(read(c, "speed_epochs", r.config.speed_epochs).with_context("config: "));
  RG_TRY(read(c, "speed_batches", r.config.speed_batches).with_context("config: "));
  RG_TRY(read(c, "target_accuracy", r.config.target_accuracy).with_context("config: "));
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
  RG_TRY(read(j, "commands", r.commands));
  RG_TRY(read(j, "not_run", r.not_run));
  if (j.contains("estimates")) r.estimates = j["estimates"];
  if (j.contains("advice")) r.advice = j["advice"];
  return r;
}

std::vector<const RunRecord*> runs_of_part(const StudyResult& result, const std::string& part) {
  std::vector<const RunRecord*> out;
  for (const RunRecord& r : result.runs) {
    if (r.run.part == part) out.push_back(&r);
  }
  return out;
}

}  // namespace rg
