// A study run as a child `retrograd train`, and its record.
#include "study/study_runner.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/files.h"
#include "base/text_format.h"
#include "study/child_process.h"
#include "study/statistics.h"

namespace rg {

namespace {

double number_or_nan(const nlohmann::json& j, const char* name) {
  return j.contains(name) && j[name].is_number() ? j[name].get<double>() : NAN;
}

// What a failed run said: its "retrograd: ..." error lines, else its last lines (a crash).
std::string failure_text(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> kept, errors;
  for (std::string line; read_line(in, line);) {
    if (line.empty()) continue;
    if (line.rfind("retrograd: ", 0) == 0) errors.push_back(line.substr(11));
    kept.push_back(line);
    if (kept.size() > lines) kept.erase(kept.begin());
  }
  if (!errors.empty()) kept = errors;
  std::string text;
  for (const std::string& line : kept) text += (text.empty() ? "" : " | ") + line;
  return text;
}

// One model's train --profile table (app/layer_profile_option.cpp's JSON) into r.layers, each
// layer's name after `prefix`; a layer a batch norm ran inside its own is left out.
void read_model_profile(const nlohmann::json& profile, const std::string& prefix, RunRecord& r) {
  if (!profile.is_object() || !profile.contains("layers") || !profile["layers"].is_array()) return;
  r.layers_peak_gflops = number_or_nan(profile, "peak_gflops");
  for (const nlohmann::json& layer : profile["layers"]) {
    if (!layer.is_object() || layer.contains("fused_into")) continue;
    LayerPoint l;
    l.layer = prefix + layer.value("layer", "");
    l.kind = layer.value("kind", "");
    for (int p = 0; p < kLayerPhases; ++p) {
      const char* key = layer_phase_key(static_cast<LayerPhase>(p));
      if (!layer.contains(key) || !layer[key].is_object()) continue;
      const nlohmann::json& phase = layer[key];
      l.ms[p] = number_or_nan(phase, "ms_per_step");
      l.peak_share[p] = number_or_nan(phase, "peak_share");
      l.executed_share[p] = number_or_nan(phase, "executed_peak_share");
    }
    r.layers.push_back(l);
  }
}

// A classifier's or autoencoder's one table, or a GAN's two (generator, then discriminator).
void read_layer_profile(const nlohmann::json& profile, RunRecord& r) {
  if (profile.contains("generator")) {
    read_model_profile(profile.value("generator", nlohmann::json()), "G ", r);
    read_model_profile(profile.value("discriminator", nlohmann::json()), "D ", r);
  } else {
    read_model_profile(profile, "", r);
  }
}

}  // namespace

std::vector<std::string> train_command(const StudyRun& run, const StudyDevice& device, const RunContext& context,
                                       const std::string& json_path) {
  std::vector<std::string> argv = {context.program, "train", "--model", run.network, "--epochs",
                                   std::to_string(run.epochs), "--batch", std::to_string(run.batch), "--seed",
                                   std::to_string(run.seed())};
  auto add = [&](const std::string& name, const std::string& value) {
    argv.push_back("--" + name);
    argv.push_back(value);
  };
  if (!context.data.empty()) add("data", context.data);
  if (run.limit > 0) add("limit", std::to_string(run.limit));
  if (run.precision != "fp32") add("train-precision", run.precision);
  if (run.lr > 0) add("lr", format_significant(run.lr));
  if (run.val_split > 0) add("val-split", format_significant(run.val_split));
  if (run.threads > 0) add("threads", std::to_string(run.threads));
  if (device.opencl) add("device", device.device_arg);
  if (run.profile) argv.push_back(device.opencl ? "--profile-device" : "--profile");
  if (run.network == "dcgan") {
    add("out", join_path(context.runs_dir, run.id() + "-gan"));
    argv.push_back("--overwrite");  // the study's own folder: a study run again replaces its runs
    const bool scored = !context.judge_path.empty() && run.part == "devices" && (device.best_cpu || device.opencl);
    add("score-samples", scored ? std::to_string(context.score_samples) : "0");
    if (scored) add("judge", context.judge_path);
  } else if (run.test_limit > 0) {
    add("test-limit", std::to_string(run.test_limit));
  }
  add("json", json_path);
  return argv;
}

std::string command_text(const std::vector<std::string>& argv, const StudyDevice& device) {
  std::string text = device.opencl ? "" : "RETROGRAD_ISA=" + device.isa + " ";
  for (size_t i = 0; i < argv.size(); ++i) text += (i ? " " : "") + (i == 0 ? std::string("retrograd") : argv[i]);
  return text;
}

RunRecord record_from_train_report(const StudyRun& run, const StudyDevice& device, const nlohmann::json& report,
                                   int logical_cpus, double target_accuracy) {
  RunRecord r;
  r.run = run;
  r.ok = true;
  r.isa = report.value("isa", "");
  r.threads = report.value("threads", 0);
  r.train_seconds = number_or_nan(report, "train_seconds");
  const double train_samples = number_or_nan(report, "train_samples");
  const nlohmann::json history = report.value("history", nlohmann::json::array());
  double seconds = 0;
  for (const nlohmann::json& epoch : history) {
    EpochPoint p;
    p.epoch = epoch.value("epoch", 0);
    seconds += number_or_nan(epoch, "seconds");
    p.seconds = seconds;
    p.loss = number_or_nan(epoch, epoch.contains("loss") ? "loss" : "loss_d");
    p.accuracy = number_or_nan(epoch, "accuracy");
    p.val_accuracy = number_or_nan(epoch, "val_accuracy");
    p.samples_per_s = number_or_nan(epoch, "samples_per_s");
    r.history.push_back(p);
    if (std::isnan(r.time_to_target) && p.val_accuracy >= target_accuracy && target_accuracy > 0) {
      r.time_to_target = p.seconds;
      r.epochs_to_target = p.epoch;
    }
  }
  r.samples_trained = static_cast<int64_t>(train_samples) * static_cast<int64_t>(history.size());
  // Speed: the median epoch's, so that a moment of another program's load moves it little.
  const Spread epochs = spread_of(epoch_speeds(r, device.opencl));
  r.samples_per_s = epochs.n > 0 ? epochs.median : number_or_nan(report, "train_samples_per_s");
  r.steps_per_s = r.samples_per_s / static_cast<double>(run.batch);
  r.train_flops_per_sample = number_or_nan(report, "train_flops_per_sample");
  r.gflops = r.samples_per_s * r.train_flops_per_sample * 1e-9;
  r.peak_gflops = device.peak.gflops > 0 ? device.peak.gflops : NAN;
  r.efficiency = r.gflops / r.peak_gflops;
  r.cpu_cores_busy = number_or_nan(report, "train_cpu_seconds") / r.train_seconds;
  r.cpu_utilisation = r.cpu_cores_busy / logical_cpus;
  if (report.contains("device_profile")) {
    const nlohmann::json& profile = report["device_profile"];
    r.gpu_busy = number_or_nan(profile, "kernel_seconds") / r.train_seconds;
    const double steps = static_cast<double>(r.samples_trained) / static_cast<double>(run.batch);
    r.copy_ms_per_step = 1e3 * number_or_nan(profile, "copy_seconds") / steps;
    r.launches_per_step = number_or_nan(profile, "launches") / steps;
  }
  if (report.contains("layer_profile")) read_layer_profile(report["layer_profile"], r);
  r.peak_rss_bytes = number_or_nan(report, "peak_rss_bytes");
  r.peak_tensor_bytes = number_or_nan(report, "peak_tensor_bytes");
  if (device.opencl) r.device_peak_bytes = number_or_nan(report, "device_peak_bytes");
  // Quality: a classifier's test accuracy, an autoencoder's test MSE, a GAN's judge score.
  if (report.value("model", "") == "gan") {
    r.quality_name = "GAN score";
    if (!history.empty() && history.back().contains("score")) r.quality = number_or_nan(history.back()["score"], "score");
  } else if (number_or_nan(report, "test_mse") > 0) {
    r.quality_name = "test MSE";
    r.quality = number_or_nan(report, "test_mse");
    r.quality_higher_is_better = false;
    r.quality_chance = number_or_nan(report, "test_mse_baseline");
  } else {
    r.quality_name = "test accuracy";
    r.quality = number_or_nan(report, "test_accuracy");
    r.quality_chance = number_or_nan(report, "chance_accuracy");
  }
  return r;
}

RunRecord measure_run(const StudyRun& run, const StudyDevice& device, const RunContext& context) {
  const std::string json_path = join_path(context.runs_dir, run.id() + ".json");
  ChildSpec spec;
  spec.argv = train_command(run, device, context, json_path);
  spec.output_path = join_path(context.runs_dir, run.id() + ".log");
  // The ISA level by the environment: each CPU level runs the same binary capped there.
  spec.env = {{"RETROGRAD_ISA", device.opencl ? "" : device.isa}};
  std::remove(json_path.c_str());
  RunRecord failed;
  failed.run = run;
  auto child = run_child(spec);
  if (!child.ok()) {
    failed.error = child.status().message();
    return failed;
  }
  const ChildResult& process = child.value();
  failed.process_seconds = process.wall_seconds;
  failed.process_cpu_seconds = process.cpu_seconds;
  if (!process.ok()) {
    failed.error = process.describe() + ": " + failure_text(spec.output_path, 2);
    return failed;
  }
  std::ifstream in(json_path);
  nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
  if (report.is_discarded()) {
    failed.error = json_path + ": the run ended well but its --json report is not readable JSON";
    return failed;
  }
  RunRecord r = record_from_train_report(run, device, report, context.logical_cpus, context.target_accuracy);
  r.process_seconds = process.wall_seconds;
  r.process_cpu_seconds = process.cpu_seconds;
  if (std::isnan(r.peak_rss_bytes)) r.peak_rss_bytes = static_cast<double>(process.peak_rss_bytes);
  return r;
}

}  // namespace rg
