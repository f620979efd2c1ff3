// RunRecord to and from JSON and CSV: one list of fields (visit_fields) serves all three.
#include "study/run_record.h"

#include <cstdio>
#include <type_traits>

#include "base/text_format.h"

namespace rg {

namespace {

// Calls visit(name, member) for every scalar field of a record (or of a const one).
template <class Record, class Visit>
void visit_fields(Record& r, Visit&& visit) {
  visit("part", r.run.part);
  visit("network", r.run.network);
  visit("device", r.run.device);
  visit("precision", r.run.precision);
  visit("batch", r.run.batch);
  visit("epochs", r.run.epochs);
  visit("limit", r.run.limit);
  visit("test_limit", r.run.test_limit);
  visit("lr", r.run.lr);
  visit("val_split", r.run.val_split);
  visit("profile", r.run.profile);
  visit("threads_asked", r.run.threads);
  visit("ok", r.ok);
  visit("error", r.error);
  visit("isa", r.isa);
  visit("samples_trained", r.samples_trained);
  visit("threads", r.threads);
  visit("train_seconds", r.train_seconds);
  visit("samples_per_s", r.samples_per_s);
  visit("steps_per_s", r.steps_per_s);
  visit("train_flops_per_sample", r.train_flops_per_sample);
  visit("gflops", r.gflops);
  visit("peak_gflops", r.peak_gflops);
  visit("efficiency", r.efficiency);
  visit("cpu_cores_busy", r.cpu_cores_busy);
  visit("cpu_utilisation", r.cpu_utilisation);
  visit("gpu_busy", r.gpu_busy);
  visit("copy_ms_per_step", r.copy_ms_per_step);
  visit("launches_per_step", r.launches_per_step);
  visit("peak_rss_bytes", r.peak_rss_bytes);
  visit("peak_tensor_bytes", r.peak_tensor_bytes);
  visit("device_peak_bytes", r.device_peak_bytes);
  visit("quality_name", r.quality_name);
  visit("quality", r.quality);
  visit("quality_higher_is_better", r.quality_higher_is_better);
  visit("time_to_target", r.time_to_target);
  visit("epochs_to_target", r.epochs_to_target);
  visit("process_seconds", r.process_seconds);
  visit("process_cpu_seconds", r.process_cpu_seconds);
}

template <class T>
void put(nlohmann::json& j, const char* name, const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) {
      j[name] = nullptr;
      return;
    }
  }
  j[name] = value;
}

// Reads j[name] into `value`: null is NaN for numbers; a missing or mistyped field is an error.
template <class T>
Status get(const nlohmann::json& j, const char* name, T& value) {
  if (!j.contains(name)) return Status::error(std::string("missing field \"") + name + "\"");
  const nlohmann::json& v = j.at(name);
  if constexpr (std::is_floating_point_v<T>) {
    if (v.is_null()) {
      value = NAN;
      return Status();
    }
    if (!v.is_number()) return Status::error(std::string("field \"") + name + "\" is not a number");
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return Status::error(std::string("field \"") + name + "\" is not true or false");
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return Status::error(std::string("field \"") + name + "\" is not a whole number");
  } else {
    if (!v.is_string()) return Status::error(std::string("field \"") + name + "\" is not text");
  }
  value = v.get<T>();
  return Status();
}

template <class T>
std::string csv_value(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isfinite(value) ? format_significant(value) : std::string();
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(value);
  } else {
    return csv_cell(value);
  }
}

}  // namespace

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json run_record_json(const RunRecord& record) {
  nlohmann::json j = nlohmann::json::object();
  visit_fields(record, [&](const char* name, const auto& value) { put(j, name, value); });
  j["history"] = nlohmann::json::array();
  for (const EpochPoint& p : record.history) {
    nlohmann::json point = nlohmann::json::object();
    put(point, "epoch", p.epoch);
    put(point, "seconds", p.seconds);
    put(point, "loss", p.loss);
    put(point, "accuracy", p.accuracy);
    put(point, "val_accuracy", p.val_accuracy);
    j["history"].push_back(point);
  }
  return j;
}

Result<RunRecord> run_record_from_json(const nlohmann::json& json) {
  if (!json.is_object()) return Status::error("a run is not a JSON object");
  RunRecord record;
  Status status;
  visit_fields(record, [&](const char* name, auto& value) {
    if (status.ok()) status = get(json, name, value);
  });
  RG_TRY(status);
  if (!json.contains("history") || !json["history"].is_array()) return Status::error("missing field \"history\"");
  for (const nlohmann::json& point : json["history"]) {
    EpochPoint p;
    RG_TRY(get(point, "epoch", p.epoch).with_context("history: "));
    RG_TRY(get(point, "seconds", p.seconds).with_context("history: "));
    RG_TRY(get(point, "loss", p.loss).with_context("history: "));
    RG_TRY(get(point, "accuracy", p.accuracy).with_context("history: "));
    RG_TRY(get(point, "val_accuracy", p.val_accuracy).with_context("history: "));
    record.history.push_back(p);
  }
  return record;
}

nlohmann::json study_device_json(const StudyDevice& d) {
  nlohmann::json j = {{"label", d.label}, {"device_arg", d.device_arg}, {"isa", d.isa},   {"name", d.name},
                      {"kind", d.kind},   {"opencl", d.opencl},         {"best_cpu", d.best_cpu},
                      {"memory_bytes", d.memory_bytes}};
  j["peak"] = {{"gflops", d.peak.gflops}, {"basis", d.peak.basis}, {"source", d.peak.source},
               {"from_table", d.peak.from_table}};
  return j;
}

Result<StudyDevice> study_device_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("peak") || !j["peak"].is_object()) return Status::error("a device without \"peak\"");
  StudyDevice d;
  RG_TRY(get(j, "label", d.label));
  RG_TRY(get(j, "device_arg", d.device_arg));
  RG_TRY(get(j, "isa", d.isa));
  RG_TRY(get(j, "name", d.name));
  RG_TRY(get(j, "kind", d.kind));
  RG_TRY(get(j, "opencl", d.opencl));
  RG_TRY(get(j, "best_cpu", d.best_cpu));
  RG_TRY(get(j, "memory_bytes", d.memory_bytes));
  const nlohmann::json& peak = j["peak"];
  RG_TRY(get(peak, "gflops", d.peak.gflops).with_context("peak: "));
  RG_TRY(get(peak, "basis", d.peak.basis).with_context("peak: "));
  RG_TRY(get(peak, "source", d.peak.source).with_context("peak: "));
  RG_TRY(get(peak, "from_table", d.peak.from_table).with_context("peak: "));
  return d;
}

std::string run_records_csv(const std::vector<RunRecord>& records, const std::vector<StudyDevice>& devices) {
  std::string header = "device_label,device_name", out;
  const RunRecord names;
  visit_fields(names, [&](const char* name, const auto&) { header += std::string(",") + name; });
  out = header + "\n";
  for (const RunRecord& r : records) {
    const bool known = r.run.device >= 0 && r.run.device < static_cast<int>(devices.size());
    std::string row = known ? csv_cell(devices[r.run.device].label) + "," + csv_cell(devices[r.run.device].name) : ",";
    visit_fields(r, [&](const char*, const auto& value) { row += "," + csv_value(value); });
    out += row + "\n";
  }
  return out;
}

}  // namespace rg
