// The study's report: the document (study/report_doc.h) built section by section, written as
// HTML and Markdown with the CSV and JSON beside it; and the terminal summary.
#include "study/study_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "base/files.h"
#include "base/output_file.h"
#include "base/serial.h"
#include "report/svg_chart.h"
#include "study/estimates.h"
#include "study/report_published.h"
#include "study/report_sections.h"

namespace rg {

namespace report {

std::string device_label(const StudyResult& result, int device) {
  const StudyDevice* d = device_at(result, device);
  return d ? d->label : "device " + std::to_string(device);
}

const StudyDevice* device_at(const StudyResult& result, int device) {
  return device >= 0 && static_cast<size_t>(device) < result.devices.size() ? &result.devices[static_cast<size_t>(device)] : nullptr;
}

std::vector<std::string> study_networks(const StudyResult& result) {
  std::vector<std::string> out = result.config.networks;
  for (const RunRecord& r : result.runs)
    if (std::find(out.begin(), out.end(), r.run.network) == out.end()) out.push_back(r.run.network);
  return out;
}

std::vector<const RunRecord*> good_runs(const StudyResult& result, const std::string& part) {
  std::vector<const RunRecord*> out;
  for (const RunRecord* r : runs_of_part(result, part))
    if (r->ok && !r->run.profile) out.push_back(r);
  return out;
}

static bool is_accuracy(const RunRecord& run) { return run.quality_name.find("accuracy") != std::string::npos; }

std::string quality_value(const RunRecord& run) {
  if (!std::isfinite(run.quality)) return kNone;
  return is_accuracy(run) ? percent(run.quality, 1) : num(run.quality);
}

std::string quality_text(const RunRecord& run) {
  if (!std::isfinite(run.quality)) return kNone;
  return (run.quality_name.empty() ? "quality" : run.quality_name) + " " + quality_value(run);
}

std::string speed_cell(const RunRecord& f) {
  if (!std::isfinite(f.samples_per_s)) return kNone;
  std::string text = num(f.samples_per_s);
  if (f.rounds > 1) text += " (" + num(f.samples_per_s_low) + "-" + num(f.samples_per_s_high) + ")";
  if (f.unstable) text += " unstable";
  return text;
}

std::string quality_cell(const RunRecord& f) {
  if (!std::isfinite(f.quality)) return kNone;
  RunRecord low = f, high = f;
  low.quality = f.quality_low;
  high.quality = f.quality_high;
  std::string text = quality_value(f);
  if (f.rounds > 1 && std::isfinite(f.quality_low)) text += " (" + quality_value(low) + "-" + quality_value(high) + ")";
  return text;
}

double quality_for_chart(const RunRecord& run) { return is_accuracy(run) ? 100 * run.quality : run.quality; }

std::vector<std::string> peak_notes(const StudyResult& result, const std::vector<int>& devices) {
  std::vector<std::string> keys, labels, notes, unknown;
  for (int i : devices) {
    const StudyDevice* d = device_at(result, i);
    if (!d) continue;
    if (d->peak.gflops <= 0) {
      unknown.push_back(d->label);
      continue;
    }
    const std::string key = num(d->peak.gflops, 4) + d->peak.basis + d->peak.source;
    const size_t k = static_cast<size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
    if (k == keys.size()) {
      keys.push_back(key);
      labels.push_back(d->label);
      notes.push_back(num(d->peak.gflops, 4) + " GFLOP/s FP32 = " + d->peak.basis + "; source: " + d->peak.source);
    } else {
      labels[k] += ", " + d->label;
    }
  }
  std::vector<std::string> out;
  for (size_t k = 0; k < notes.size(); ++k) out.push_back("[" + std::to_string(k + 1) + "] peak of " + labels[k] + ": " + notes[k]);
  for (const std::string& u : unknown) out.push_back("peak of " + u + ": unknown (not in the published table): no efficiency");
  return out;
}

std::string one_line(const std::string& text, size_t limit) {
  std::string out;
  for (char c : text) {
    const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > limit) out = out.substr(0, limit) + " ...";
  return out.empty() ? "(no message)" : out;
}

namespace {

std::string gib(double bytes) { return bytes > 0 ? fixed(bytes / (1024.0 * 1024 * 1024), 1) + " GiB" : kNone; }

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::vector<std::string> opencl_names(const StudyResult& result) {
  std::vector<std::string> out;
  for (const StudyDevice& d : result.devices)
    if (d.opencl) out.push_back(d.label + " " + d.name);
  return out;
}

std::string train_command(const nlohmann::json& advice) {
  std::string out = "retrograd train";
  for (const nlohmann::json& part : advice.value("command", nlohmann::json::array())) {
    const std::string p = part.is_string() ? part.get<std::string>() : part.dump();
    out += " " + (p.find_first_of(" \t'\"") == std::string::npos ? p : "'" + p + "'");
  }
  return out;
}

double json_number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

void overview(Document& doc, const StudyResult& result) {
  const StudyMachine& m = result.machine;
  int failed = 0;
  for (const RunRecord& r : result.runs) failed += r.ok ? 0 : 1;
  const std::vector<std::string> cl = opencl_names(result);
  doc.paragraph("**Machine:** " + m.cpu + ", " + std::to_string(m.cores) + " cores / " + std::to_string(m.logical_cpus) +
                " threads, " + gib(static_cast<double>(m.memory_bytes)) + " memory" +
                (m.virtual_machine ? ", a virtual machine" : "") + "; OpenCL: " +
                (cl.empty() ? "none studied" + (m.opencl_note.empty() ? std::string() : " (" + m.opencl_note + ")") : join(cl, "; ")) + ".");
  doc.paragraph("**Study:** " + std::string(result.quick ? "quick (--quick)" : "full") + ", " + result.date +
                ", wall time " + seconds_text(result.seconds) + ", " + std::to_string(result.runs.size()) + " runs: " +
                std::to_string(result.runs.size() - static_cast<size_t>(failed)) + " done, " + std::to_string(failed) +
                " failed. retrograd " + result.version + ".");
  if (!result.finished)
    doc.warning("The study was stopped early (or is still running): this report holds what was measured up to then. "
                "Parts and rows that are missing were not measured.");
  doc.paragraph("**What this page shows.** How each network trains on this machine, measured by retrograd itself: "
                "first the advice (the setting to train each network with, and why); then the machine and the peak "
                "each efficiency is measured against; the speed of every network on every device and precision; how "
                "speed, memory and accuracy change with the batch size and the learning rate; estimates for other "
                "machines (from the roofline: estimates, not measurements); and how each figure was measured. The "
                "published figures of the thesis this study follows (a CIFAR-10 CNN in TensorFlow, PyTorch and MXNet "
                "on a GTX 1060) stand beside ours, labelled: another network, other data, other hardware. "
                "\"—\" marks a figure that was not measured.");
}

void advice_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "advice", "Advice: how to train each network here");
  if (!result.advice.is_array() || result.advice.empty()) {
    doc.paragraph(result.finished ? "No advice: no network has a successful run to base it on."
                                  : "No advice yet: it is made when the study ends, and this one stopped before. "
                                    "`retrograd advise --study study.json` advises from what was measured.");
    return;
  }
  doc.paragraph("The setting each network trained fastest with on this machine without losing quality, and the "
                "command to train it (add --epochs and your data). The prediction is the speed measured, or "
                "interpolated between the batch sizes measured, for that setting.");
  Table t;
  t.caption = "Advised setting per network";
  t.columns = {{"network"}, {"device"}, {"precision"}, {"batch", true}, {"micro-batch", true}, {"threads", true},
               {"predicted steps/s", true}, {"predicted samples/s", true}, {"predicted peak RSS (MiB)", true},
               {"why not advised", false, true, true}};
  for (const nlohmann::json& a : result.advice) {
    const std::string network = a.value("network", std::string("?"));
    if (a.contains("error")) {
      t.rows.push_back({network, kNone, kNone, kNone, kNone, kNone, kNone, kNone, kNone,
                        one_line(a["error"].is_string() ? a["error"].get<std::string>() : a["error"].dump())});
      continue;
    }
    const double threads = json_number(a, "threads");
    t.rows.push_back({network, a.value("device", std::string(kNone)), a.value("precision", std::string(kNone)),
                      num(json_number(a, "batch"), 6), num(json_number(a, "micro_batch"), 6),
                      threads > 0 ? num(threads) : "all", num(json_number(a, "predicted_steps_per_s")),
                      num(json_number(a, "predicted_samples_per_s")), mib(json_number(a, "predicted_peak_rss_bytes"))});
  }
  doc.table(t);
  for (const nlohmann::json& a : result.advice) {
    if (a.contains("error")) continue;
    doc.heading(3, "advice-" + a.value("network", std::string("?")), a.value("network", std::string("?")));
    doc.code({train_command(a)});
    doc.paragraph("Predicted **" + num(json_number(a, "predicted_steps_per_s")) + " steps/s** (" +
                  num(json_number(a, "predicted_samples_per_s")) + " samples/s), from " + a.value("basis", std::string(kNone)) + ".");
    std::vector<std::string> reasons;
    for (const nlohmann::json& r : a.value("reasons", nlohmann::json::array())) reasons.push_back(r.is_string() ? r.get<std::string>() : r.dump());
    doc.list(reasons);
  }
}

void machine_section(Document& doc, const StudyResult& result) {
  const StudyMachine& m = result.machine;
  doc.heading(2, "machine", "Machine");
  Table t;
  t.caption = "This machine";
  t.columns = {{"what"}, {"value", false, false, true}};
  t.rows = {{"CPU", m.cpu},
            {"cores / logical CPUs", std::to_string(m.cores) + " / " + std::to_string(m.logical_cpus)},
            {"clock (as the OS reports it)", m.cpu_mhz > 0 ? fixed(m.cpu_mhz, 0) + " MHz" : kNone},
            {"clock (measured, all cores busy; the CPU peaks use it)", m.cpu_mhz_measured > 0 ? fixed(m.cpu_mhz_measured, 0) + " MHz" : kNone},
            {"instruction sets", m.features.empty() ? kNone : m.features},
            {"caches", m.caches.empty() ? kNone : m.caches},
            {"memory", gib(static_cast<double>(m.memory_bytes))},
            {"memory bandwidth (measured, STREAM-like triad)", m.memory_bandwidth_gbs > 0 ? fixed(m.memory_bandwidth_gbs, 1) + " GB/s" : kNone},
            {"operating system", m.os.empty() ? kNone : m.os},
            {"virtual machine", m.virtual_machine ? "yes: timings may vary with the host's other guests" : "no"}};
  doc.table(t);
  add_noise_table(doc, result);
  Table cl;
  cl.caption = "OpenCL devices studied";
  cl.columns = {{"device"}, {"name"}, {"type"}, {"global memory", true}};
  for (const StudyDevice& d : result.devices)
    if (d.opencl) cl.rows.push_back({d.label, d.name, d.kind, gib(static_cast<double>(d.memory_bytes))});
  if (cl.rows.empty()) doc.paragraph("No OpenCL device was studied: " + (m.opencl_note.empty() ? std::string("none was found.") : m.opencl_note));
  doc.table(cl);
}

void method_section(Document& doc, const StudyResult& result) {
  const StudyConfig& c = result.config;
  doc.heading(2, "method", "How each figure was measured");
  doc.list({
      "Every run is a child process, `retrograd train ... --json FILE` (the commands below); the study reads the "
      "child's JSON report and what the operating system saw of the child. Each run's JSON and log are in runs/.",
      "Rounds: every configuration ran " + std::to_string(c.rounds) + " times, in rounds that interleave all of them "
      "(round r of each before round r+1 of any; round r with --seed 1+r), and up to " + std::to_string(c.extra_rounds) +
      " more times where its speed's rounds spread over " + percent(c.unstable_spread, 0) + " of their median; each "
      "figure is the rounds' median, with their least and greatest.",
      "Speed: a devices run is sized to take about " + fixed(c.seconds_per_run, 1) + " s and cut into " +
          std::to_string(c.speed_epochs) + " epochs; a round's samples/s is its median epoch's (OpenCL: the epochs after the "
          "first, which builds and tunes the kernels); steps/s = samples/s / batch.",
      "GFLOP/s = the model's FP32-equivalent training flops per sample x samples/s: the same count in every "
      "precision, so fp16 and int8 runs are compared on the work done, not on their own peaks.",
      "Efficiency (% of peak) = GFLOP/s / the device's FP32 peak (see Peaks: its basis and source).",
      "CPU cores busy = CPU time of all the child's threads while training / training time; CPU utilisation = "
      "cores busy / logical CPUs (" + std::to_string(result.machine.logical_cpus) + ").",
      "GPU busy = kernel time from a profiled companion run (event profiling waits on every kernel, so that run "
      "is not timed) / the unprofiled run's training time; transfer ms/step and kernel launches/step come from "
      "the same profile.",
      "Peak RSS: the child's peak resident memory; peak tensors: the trainer's own peak of tensor bytes; device "
      "memory peak: the OpenCL buffers'.",
      "Quality: the test accuracy (or test MSE, or GAN score) after the run's budget of samples (epochs x samples "
      "per epoch: the samples trained column), scored on held-out test samples.",
      "Batch and learning-rate sweeps: " + c.sweep_network + ", " + std::to_string(c.sweep_epochs) + " epochs (" +
          std::to_string(c.lr_epochs) + " for the learning rates) on " +
          (c.sweep_limit > 0 ? num(static_cast<double>(c.sweep_limit)) + " samples" : std::string("all the training samples")) +
          "; the time to " + percent(c.target_accuracy, 0) + " is the training time until the held-out "
          "validation accuracy first reached it, checked after each epoch.",
      "Not measured: \"—\" in the tables, empty in runs.csv, null in study.json.",
  });
  Table t;
  t.caption = "The study's settings";
  t.columns = {{"setting"}, {"value"}};
  auto list_of = [](const auto& values) {
    std::string out;
    for (const auto& v : values) out += (out.empty() ? "" : ", ") + num(static_cast<double>(v), 4);
    return out;
  };
  t.rows = {{"study", c.quick ? "quick" : "full"},
            {"parts", join(c.parts, ", ")},
            {"networks", join(c.networks, ", ")},
            {"precisions", join(c.precisions, ", ")},
            {"data", c.data.empty() ? "train's default" : c.data},
            {"batch sizes (batch part)", list_of(c.batches)},
            {"batch sizes (batch-speed part, besides 64)", list_of(c.speed_batches)},
            {"learning rates", list_of(c.rates)},
            {"target validation accuracy", percent(c.target_accuracy, 0)}};
  doc.table(t);
  doc.paragraph("Files beside this page: report.md (the same tables), runs.csv (every run, every figure), "
                "estimates.csv, study.json (everything; `retrograd advise --study study.json` reads it), runs/ "
                "(each run's JSON and log).");
  doc.note(report::published_source());
  if (result.commands.empty()) return;
  doc.details_begin("The " + std::to_string(result.commands.size()) + " commands run, in order");
  std::vector<std::string> lines;
  for (size_t i = 0; i < result.commands.size(); ++i) {
    const bool failed = i < result.runs.size() && !result.runs[i].ok;
    lines.push_back(result.commands[i] + (failed ? "   # failed" : ""));
  }
  doc.code(lines);
  doc.details_end();
}

Document study_document(const StudyResult& result) {
  Document doc;
  doc.title = "How networks train on this machine: retrograd study";
  overview(doc, result);
  doc.toc();
  advice_section(doc, result);
  machine_section(doc, result);
  add_peaks_section(doc, result);
  add_speed_section(doc, result);
  add_layers_section(doc, result);
  add_quality_section(doc, result);
  add_claims_section(doc, result);
  add_batch_section(doc, result);
  add_lr_section(doc, result);
  add_estimates_section(doc, result);
  method_section(doc, result);
  return doc;
}

}  // namespace
}  // namespace report

std::string study_report_markdown(const StudyResult& result) { return report::render_markdown(report::study_document(result)); }

std::string study_report_html(const StudyResult& result) { return report::render_html(report::study_document(result)); }

std::string study_summary_text(const StudyResult& result) {
  using report::num;
  // The fastest device per network at the devices part's batch, any precision.
  auto fastest = [&](const std::string& network) -> std::string {
    const RunRecord* best = nullptr;
    for (const RunRecord* r : report::good_runs(result, "devices"))
      if (r->run.network == network && (!best || r->samples_per_s > best->samples_per_s)) best = r;
    if (!best) return "";
    return "fastest device at batch " + std::to_string(best->run.batch) + ": " + report::device_label(result, best->run.device) +
           " (" + best->run.precision + ", " + num(best->samples_per_s) + " samples/s)";
  };
  std::string out;
  std::vector<std::string> advised;
  for (const nlohmann::json& a : result.advice) {
    const std::string network = a.value("network", std::string("?"));
    advised.push_back(network);
    const std::string fast = fastest(network);
    if (a.contains("error")) {
      out += network + ": no advice (" + report::one_line(a["error"].is_string() ? a["error"].get<std::string>() : "", 120) + ")" +
             (fast.empty() ? "" : "; " + fast) + "\n";
      continue;
    }
    out += network + ": " + report::train_command(a) + "\n  predicted " + num(report::json_number(a, "predicted_steps_per_s")) +
           " steps/s (" + num(report::json_number(a, "predicted_samples_per_s")) + " samples/s) on " +
           a.value("device", std::string("?")) + ", " + a.value("precision", std::string("?")) +
           (fast.empty() ? "" : "; " + fast) + "\n";
  }
  for (const std::string& network : report::study_networks(result)) {  // measured but not advised
    const std::string fast = fastest(network);
    if (std::find(advised.begin(), advised.end(), network) == advised.end() && !fast.empty()) out += network + ": " + fast + "\n";
  }
  int failed = 0;
  for (const RunRecord& r : result.runs) failed += r.ok ? 0 : 1;
  if (failed > 0) out += std::to_string(failed) + " of " + std::to_string(result.runs.size()) + " runs failed: the report lists them\n";
  if (!result.finished) out += "the study stopped early: the report holds what was measured\n";
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Status write_study_report(const StudyResult& result, const std::string& dir) {
  auto write = [&](const std::string& name, const std::string& text) {
    return write_file_atomic(join_path(dir, name), std::vector<uint8_t>(text.begin(), text.end()));
  };
  RG_TRY(write("study.json", study_result_json(result).dump(2) + "\n"));
  RG_TRY(write("runs.csv", run_records_csv(result.runs, result.devices)));
  RG_TRY(write("estimates.csv", estimates_csv(result.estimates)));
  RG_TRY(write("report.md", study_report_markdown(result)));
  return write("report.html", study_report_html(result));
}

}  // namespace rg
