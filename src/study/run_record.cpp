// RunRecord and StudyDevice to and from JSON, and runs as CSV: one list of fields each serves all.
#include "study/run_record.h"

#include <cstdio>
#include <type_traits>

#include "base/text_format.h"
#include "study/json_fields.h"

namespace rg {

namespace {

// Every scalar field of a record (history aside), for JSON and CSV.
constexpr auto kRunFields = [](auto& r, auto&& visit) {
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
  visit("round", r.run.round);
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
  visit("load_others", r.load_others);
  visit("steal", r.steal);
  visit("machine_gbs", r.machine_gbs);
  visit("quality_chance", r.quality_chance);
  visit("rounds", r.rounds);
  visit("samples_per_s_low", r.samples_per_s_low);
  visit("samples_per_s_high", r.samples_per_s_high);
  visit("quality_low", r.quality_low);
  visit("quality_high", r.quality_high);
  visit("speed_spread", r.speed_spread);
  visit("unstable", r.unstable);
  visit("not_learned", r.not_learned);
};

constexpr auto kEpochFields = [](auto& p, auto&& visit) {
  visit("epoch", p.epoch);
  visit("seconds", p.seconds);
  visit("loss", p.loss);
  visit("accuracy", p.accuracy);
  visit("val_accuracy", p.val_accuracy);
  visit("samples_per_s", p.samples_per_s);
};

constexpr auto kLayerFields = [](auto& l, auto&& visit) {
  visit("layer", l.layer);
  visit("kind", l.kind);
  for (int p = 0; p < kLayerPhases; ++p) {
    const std::string phase = layer_phase_key(static_cast<LayerPhase>(p));
    visit((phase + "_ms").c_str(), l.ms[p]);
    visit((phase + "_peak_share").c_str(), l.peak_share[p]);
    visit((phase + "_executed_peak_share").c_str(), l.executed_share[p]);
  }
};

constexpr auto kDeviceFields = [](auto& d, auto&& visit) {
  visit("label", d.label);
  visit("device_arg", d.device_arg);
  visit("isa", d.isa);
  visit("name", d.name);
  visit("kind", d.kind);
  visit("opencl", d.opencl);
  visit("best_cpu", d.best_cpu);
  visit("memory_bytes", d.memory_bytes);
};

constexpr auto kPeakFields = [](auto& p, auto&& visit) {
  visit("gflops", p.gflops);
  visit("basis", p.basis);
  visit("source", p.source);
  visit("from_table", p.from_table);
};

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

std::vector<double> epoch_speeds(const RunRecord& record, bool opencl) {
  std::vector<double> speeds;
  for (size_t e = opencl && record.history.size() > 1 ? 1 : 0; e < record.history.size(); ++e) {
    if (std::isfinite(record.history[e].samples_per_s)) speeds.push_back(record.history[e].samples_per_s);
  }
  return speeds;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

nlohmann::json run_record_json(const RunRecord& record) {
  nlohmann::json j = fields_json(record, kRunFields);
  j["history"] = nlohmann::json::array();
  for (const EpochPoint& p : record.history) j["history"].push_back(fields_json(p, kEpochFields));
  if (!record.layers.empty()) {
    j["layers_peak_gflops"] = std::isfinite(record.layers_peak_gflops) ? nlohmann::json(record.layers_peak_gflops)
                                                                       : nlohmann::json();
    j["layers"] = nlohmann::json::array();
    for (const LayerPoint& l : record.layers) j["layers"].push_back(fields_json(l, kLayerFields));
  }
  return j;
}

Result<RunRecord> run_record_from_json(const nlohmann::json& json) {
  if (!json.is_object()) return Status::error("a run is not a JSON object");
  RunRecord record;
  RG_TRY(fields_from_json(json, record, kRunFields));
  if (!json.contains("history") || !json["history"].is_array()) return Status::error("missing field \"history\"");
  for (const nlohmann::json& point : json["history"]) {
    EpochPoint p;
    RG_TRY(fields_from_json(point, p, kEpochFields).with_context("history: "));
    record.history.push_back(p);
  }
  if (json.contains("layers")) {  // profiled runs only (and none before the study kept them)
    if (!json["layers"].is_array()) return Status::error("\"layers\" is not an array");
    for (const nlohmann::json& layer : json["layers"]) {
      LayerPoint l;
      RG_TRY(fields_from_json(layer, l, kLayerFields).with_context("layers: "));
      record.layers.push_back(l);
    }
    const nlohmann::json& peak = json.value("layers_peak_gflops", nlohmann::json());
    record.layers_peak_gflops = peak.is_number() ? peak.get<double>() : NAN;
  }
  return record;
}

nlohmann::json study_device_json(const StudyDevice& d) {
  nlohmann::json j = fields_json(d, kDeviceFields);
  j["peak"] = fields_json(d.peak, kPeakFields);
  return j;
}

Result<StudyDevice> study_device_from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("peak") || !j["peak"].is_object()) return Status::error("a device without \"peak\"");
  StudyDevice d;
  RG_TRY(fields_from_json(j, d, kDeviceFields));
  RG_TRY(fields_from_json(j["peak"], d.peak, kPeakFields).with_context("peak: "));
  return d;
}

std::string run_records_csv(const std::vector<RunRecord>& records, const std::vector<StudyDevice>& devices) {
  std::string header = "device_label,device_name", out;
  const RunRecord names;
  kRunFields(names, [&](const char* name, const auto&) { header += std::string(",") + name; });
  out = header + "\n";
  for (const RunRecord& r : records) {
    const bool known = r.run.device >= 0 && r.run.device < static_cast<int>(devices.size());
    std::string row = known ? csv_cell(devices[r.run.device].label) + "," + csv_cell(devices[r.run.device].name) : ",";
    kRunFields(r, [&](const char*, const auto& value) { row += "," + csv_value(value); });
    out += row + "\n";
  }
  return out;
}

}  // namespace rg
