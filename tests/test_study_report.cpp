// The study's report (study/study_report.h) from a small study made by hand: every section in
// order, well-formed and self-contained HTML, no "nan"/"inf", every efficiency's peak and source
// reachable, the advice's command, failures and combinations not run listed, estimates marked,
// the Markdown's tables, and an unfinished study said to be one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/svg_chart.h"
#include "study/study_claims.h"
#include "study/study_report.h"
#include "portable.h"
#include "xml_check.h"

namespace rg {
namespace {

const std::vector<std::string> kSections = {"advice", "machine", "peaks", "speed", "layers", "batch", "lr", "estimates", "method"};

StudyDevice device(const std::string& label, const std::string& kind, bool opencl, bool best, double gflops,
                   const std::string& source) {
  StudyDevice d;
  d.label = label;
  d.device_arg = opencl ? label : "cpu";
  d.isa = opencl ? "" : label.substr(4);
  d.name = opencl ? "Test GPU 1060" : "Test CPU (" + d.isa + ")";
  d.kind = kind;
  d.opencl = opencl;
  d.best_cpu = best;
  d.memory_bytes = opencl ? (int64_t{6} << 30) : 0;
  d.peak.gflops = gflops;
  d.peak.basis = label + " basis: 2 cores x 3000 MHz x 32 flops/cycle";
  d.peak.source = source;
  d.peak.from_table = opencl;
  return d;
}

RunRecord record(const std::string& part, const std::string& network, int dev, const std::string& precision,
                 int64_t batch, double samples_per_s) {
  RunRecord r;
  r.run.part = part;
  r.run.network = network;
  r.run.device = dev;
  r.run.precision = precision;
  r.run.batch = batch;
  r.run.epochs = 2;
  r.run.limit = 4096;
  r.ok = true;
  r.samples_trained = 8192;
  r.threads = 2;
  r.train_seconds = 8192 / samples_per_s;
  r.samples_per_s = samples_per_s;
  r.steps_per_s = samples_per_s / static_cast<double>(batch);
  r.train_flops_per_sample = 2e6;
  r.gflops = samples_per_s * 2e6 / 1e9;
  r.peak_gflops = dev == 2 ? 4375 : 192;
  r.efficiency = r.gflops / r.peak_gflops;
  r.cpu_cores_busy = 1.8;
  r.cpu_utilisation = 0.9;
  r.peak_rss_bytes = 150e6 + 1e5 * static_cast<double>(batch);
  r.peak_tensor_bytes = 40e6 + 1e5 * static_cast<double>(batch);
  r.quality_name = "test accuracy";
  r.quality = 0.9 - 0.0001 * static_cast<double>(batch);
  return r;
}

StudyResult small_study() {
  StudyResult s;
  s.date = "2026-11-25 14:02 UTC";
  s.version = "0.1.0";
  s.quick = true;
  s.seconds = 195;
  s.finished = true;
  s.machine.cpu = "Test CPU";
  s.machine.features = "sse2 avx2 fma";
  s.machine.caches = "L1d 32 KiB, L2 512 KiB";
  s.machine.os = "Linux test";
  s.machine.logical_cpus = 2;
  s.machine.cores = 2;
  s.machine.cpu_mhz = 3000;
  s.machine.cpu_mhz_measured = 2950;
  s.machine.memory_bytes = int64_t{8} << 30;
  s.machine.memory_bandwidth_gbs = 20;
  s.config = default_study_config(true);
  s.config.networks = {"lenet", "dcgan"};
  s.config.precisions = {"fp32", "fp16"};
  s.config.sweep_network = "lenet";
  s.config.target_accuracy = 0.8;
  s.devices = {device("cpu/sse2", "CPU", false, false, 96, "derived here: Test CPU is not in the table (sse2)"),
               device("cpu/avx2", "CPU", false, true, 192, "derived here: Test CPU is not in the table (avx2)"),
               device("cl:0:0", "GPU", true, false, 4375, "data/hardware_specs.csv: GTX 1060 6GB (vendor page)")};

  RunRecord sse2 = record("devices", "lenet", 0, "fp32", 64, 900);
  RunRecord best = record("devices", "lenet", 1, "fp32", 64, 2500);
  sse2.isa = "sse2";
  best.isa = "avx2";
  // Their profiled companions' layers: conv1 (no input gradient), conv2 under Winograd at avx2.
  LayerPoint conv1{"conv1", "conv", {0.476, 0.483, NAN}, {0.24, 0.24, NAN}, {NAN, NAN, NAN}};
  LayerPoint conv2{"conv2", "conv", {3.353, 3.714, 2.672}, {2.02, 1.82, 2.53}, {0.5, 0.46, 0.63}};
  best.layers = {conv1, conv2};
  best.layers_peak_gflops = 192;
  conv1.ms[0] = 1.9;
  conv2.ms[0] = 12.5;
  conv2.executed_share[0] = conv2.executed_share[1] = conv2.executed_share[2] = NAN;
  sse2.layers = {conv1, conv2};
  sse2.layers_peak_gflops = 96;
  s.runs.push_back(sse2);
  s.runs.push_back(best);
  RunRecord half = record("devices", "lenet", 1, "fp16", 64, 2100);
  half.gflops = NAN;  // not measured: "—", never "nan"
  half.efficiency = NAN;
  half.peak_rss_bytes = NAN;
  s.runs.push_back(half);
  RunRecord gpu = record("devices", "lenet", 2, "fp32", 64, 30000);
  gpu.gpu_busy = 0.42;
  gpu.copy_ms_per_step = 0.31;
  gpu.launches_per_step = 57;
  gpu.device_peak_bytes = 300e6;
  s.runs.push_back(gpu);
  RunRecord failed = record("devices", "lenet", 2, "fp16", 64, NAN);
  failed.ok = false;
  failed.error = "CL_OUT_OF_RESOURCES <&> while\nbuilding";
  s.runs.push_back(failed);
  RunRecord gan = record("devices", "dcgan", 1, "fp32", 64, 300);
  gan.quality_name = "GAN score";
  gan.quality = 1.5;
  s.runs.push_back(gan);
  for (int64_t b : {16, 128}) s.runs.push_back(record("batch-speed", "lenet", 1, "fp32", b, 2000 + 5 * static_cast<double>(b)));
  for (int64_t b : {4, 64, 1024}) s.runs.push_back(record("batch", "lenet", 1, "fp32", b, 500 + 3 * static_cast<double>(b)));
  for (double lr : {0.001, 0.01}) {
    RunRecord r = record("lr", "lenet", 1, "fp32", 64, 2500);
    r.run.lr = lr;
    r.run.val_split = 0.1;
    if (lr > 0.005) {
      r.time_to_target = 3.25;
      r.epochs_to_target = 2;
    }
    for (int e = 1; e <= 2; ++e) r.history.push_back({e, 2.0 * e, 1.0 / e, 0.5 + 0.1 * e, 0.6 + 0.1 * e});
    s.runs.push_back(r);
  }
  s.runs.push_back(record("threads", "lenet", 1, "fp32", 64, 1400));
  for (const RunRecord& r : s.runs) s.commands.push_back("retrograd train --model " + r.run.network + " --json " + r.run.id() + ".json");
  s.not_run = {"dcgan in fp16 on the CPU: GAN training runs in fp32 only"};
  s.estimates = nlohmann::json::array(
      {{{"network", "lenet"}, {"machine", "Intel Core 2 Duo E8400"}, {"type", "CPU"}, {"measured_on", "Test CPU (avx2)"},
        {"efficiency", 0.3}, {"estimated_samples_per_s", 700.0}, {"ceiling_samples_per_s", 2300.0},
        {"compute_bound_share", 0.9}, {"basis", "roofline 2 cores x 3000 MHz; x efficiency 0.3"}},
       {{"network", "lenet"}, {"machine", "NVIDIA GeForce GT 1030"}, {"type", "GPU"}, {"measured_on", ""},
        {"efficiency", nullptr}, {"estimated_samples_per_s", nullptr}, {"ceiling_samples_per_s", 50000.0},
        {"compute_bound_share", 0.5}, {"basis", "no GPU measured here: only the roofline ceiling"}}});
  s.advice = nlohmann::json::array(
      {{{"network", "lenet"}, {"device", "cl:0:0"}, {"device_arg", "cl:0:0"}, {"isa", ""}, {"precision", "fp32"},
        {"batch", 128}, {"micro_batch", 128}, {"threads", 0}, {"mem_budget", 0}, {"predicted_samples_per_s", 30500.0},
        {"predicted_steps_per_s", 238.3}, {"predicted_peak_rss_bytes", 2e8}, {"basis", "fp32 samples/s measured on cl:0:0"},
        {"reasons", {"device cl:0:0: the fastest measured", "batch 128: the fastest before accuracy fell"}},
        {"command", {"--model", "lenet", "--batch", "128", "--device", "cl:0:0"}}},
       {{"network", "dcgan"}, {"error", "no successful run of dcgan on a device to advise from"}}});
  summarise_study(s);  // one figure per configuration (each measured once here)
  return s;
}

std::string without_doctype(const std::string& html) {
  const std::string doctype = "<!DOCTYPE html>";
  return html.rfind(doctype, 0) == 0 ? html.substr(doctype.size()) : html;
}

// "nan" or "inf" as a word (not inside "information"), any case.
bool has_nan_or_inf(const std::string& text) {
  static const std::regex word("(^|[^a-z])(nan|inf|infinity)([^a-z]|$)", std::regex::icase);
  return std::regex_search(text, word);
}

TEST(StudyReport, HtmlHasEverySectionInOrderAndATableOfContents) {
  const std::string html = study_report_html(small_study());
  size_t last = 0;
  for (const std::string& id : kSections) {
    const size_t at = html.find("id=\"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_GT(at, last) << id << " out of order";
    last = at;
    EXPECT_NE(html.find("href=\"#" + id + "\""), std::string::npos) << "no contents link to " << id;
  }
  // The advice comes before the machine: the most useful part first.
  EXPECT_LT(html.find("id=\"advice\""), html.find("id=\"machine\""));
}

// Each network profiled at the best level gets its layers, SSE2's beside them, and Winograd's
// executed share where the layer ran it; in HTML and Markdown.
TEST(StudyReport, TheLayersSectionShowsEachLayerAtTheBestLevelAndAtSse2) {
  const StudyResult study = small_study();
  for (const std::string& text : {study_report_html(study), study_report_markdown(study)}) {
    const size_t at = text.find("Where the time goes");
    ASSERT_NE(at, std::string::npos);
    EXPECT_NE(text.find("lenet: per layer, forward / weight gradient / input gradient", at), std::string::npos);
    EXPECT_NE(text.find("0.476 / 0.483 / —", at), std::string::npos);
    EXPECT_NE(text.find("202% (exec 50%) / 182% (exec 46%) / 253% (exec 63%)", at), std::string::npos);
    EXPECT_NE(text.find("1.900 / 0.483 / —", at), std::string::npos) << "sse2's conv1 beside avx2's";
    EXPECT_NE(text.find("avx2 % of its peak", at), std::string::npos);
    EXPECT_EQ(text.find("dcgan: per layer", at), std::string::npos) << "dcgan was not profiled";
  }
}

TEST(StudyReport, HtmlIsWellFormedSelfContainedAndHasNoNanOrInf) {
  const std::string html = study_report_html(small_study());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(xml_problem(without_doctype(html)), "");
  EXPECT_FALSE(has_nan_or_inf(html));
  for (const char* external : {"<script", "<link", "<img", "@import", "url(", "src=\""})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("—"), std::string::npos) << "figures not measured show as a dash";
}

TEST(StudyReport, EveryDevicesPeakAndSourceIsStatedAndEfficienciesPointToThem) {
  const StudyResult s = small_study();
  const std::string html = study_report_html(s), md = study_report_markdown(s);
  for (const StudyDevice& d : s.devices) {
    EXPECT_NE(html.find(xml_escape(d.peak.source)), std::string::npos) << d.label;
    EXPECT_NE(html.find(xml_escape(d.peak.basis)), std::string::npos) << d.label;
    EXPECT_NE(md.find(d.peak.source), std::string::npos) << d.label;
  }
  // The speed table's efficiencies name their peak's note; the notes give peak and source.
  EXPECT_NE(html.find("[1] peak of cpu/sse2"), std::string::npos);
  EXPECT_NE(html.find("4375 GFLOP/s FP32"), std::string::npos);
}

TEST(StudyReport, AdviceCommandPredictionAndReasonsAppear) {
  const StudyResult s = small_study();
  const std::string command = "retrograd train --model lenet --batch 128 --device cl:0:0";
  const std::string html = study_report_html(s), md = study_report_markdown(s), summary = study_summary_text(s);
  EXPECT_NE(html.find(command), std::string::npos);
  EXPECT_NE(md.find(command), std::string::npos);
  EXPECT_NE(html.find("238"), std::string::npos);
  EXPECT_NE(html.find("batch 128: the fastest before accuracy fell"), std::string::npos);
  EXPECT_NE(html.find("no successful run of dcgan"), std::string::npos);
  EXPECT_NE(summary.find(command), std::string::npos);
  EXPECT_NE(summary.find("238 steps/s"), std::string::npos);
  EXPECT_NE(summary.find("fastest device at batch 64: cl:0:0 (fp32, 30k samples/s)"), std::string::npos) << summary;
  EXPECT_NE(summary.find("1 of "), std::string::npos) << "the failed run is counted";
}

TEST(StudyReport, FailuresNotRunPublishedFiguresAndEstimatesAreLabelled) {
  const std::string html = study_report_html(small_study());
  EXPECT_NE(html.find("CL_OUT_OF_RESOURCES &lt;&amp;&gt; while building"), std::string::npos);
  EXPECT_NE(html.find("dcgan in fp16 on the CPU: GAN training runs in fp32 only"), std::string::npos);
  EXPECT_NE(html.find("thesis Table 9"), std::string::npos);
  EXPECT_NE(html.find("47.81%"), std::string::npos);
  EXPECT_NE(html.find("GTX 1060"), std::string::npos);
  EXPECT_NE(html.find("ESTIMATED training samples/s"), std::string::npos);
  EXPECT_NE(html.find("(ceiling)"), std::string::npos) << "a machine with no estimate shows its ceiling";
  EXPECT_NE(html.find("not reached"), std::string::npos) << "lr 0.001 never reached the target";
  EXPECT_NE(html.find("<details>"), std::string::npos) << "the commands, collapsed";
  EXPECT_NE(html.find("retrograd train --model lenet --json batch-lenet-d1-fp32-b1024-r0.json"), std::string::npos);
}

// Issue 30: a sweep over the whole training set (limit 0) says so, never "on 0 samples".
TEST(StudyReport, ASweepOverTheWholeTrainingSetSaysHowManySamples) {
  StudyResult s = small_study();
  s.config.sweep_limit = 0;
  for (RunRecord& r : s.runs)
    if (r.run.part == "batch") {
      r.run.limit = 0;
      r.samples_trained = 2 * 60000;
      r.run.epochs = 2;
    }
  summarise_study(s);
  const std::string md = study_report_markdown(s);
  EXPECT_EQ(md.find(" 0 samples"), std::string::npos);
  EXPECT_NE(md.find("2 epochs of 60k samples"), std::string::npos);
  EXPECT_NE(md.find("all the training samples"), std::string::npos);
}

TEST(StudyReport, MarkdownHasTheTablesAndNoCharts) {
  const std::string md = study_report_markdown(small_study());
  EXPECT_EQ(md.find("<svg"), std::string::npos);
  EXPECT_FALSE(has_nan_or_inf(md));
  EXPECT_NE(md.find("| network | device | precision | samples/s |"), std::string::npos);
  EXPECT_NE(md.find("| ---: |"), std::string::npos);
  EXPECT_NE(md.find("| 0.001 | 47.81% | 202.54 | 24 |"), std::string::npos) << "the thesis's Table 9";
  EXPECT_NE(md.find("## Batch size"), std::string::npos);
  EXPECT_NE(md.find("](#learning-rate)"), std::string::npos) << "contents link to GitHub's anchors";
  EXPECT_NE(md.find("CL_OUT_OF_RESOURCES &lt;&> while building"), std::string::npos);
}

TEST(StudyReport, AnUnfinishedStudySaysSo) {
  StudyResult s = small_study();
  EXPECT_EQ(study_report_html(s).find("stopped early"), std::string::npos);
  s.finished = false;
  EXPECT_NE(study_report_html(s).find("stopped early"), std::string::npos);
  EXPECT_NE(study_report_markdown(s).find("stopped early"), std::string::npos);
  EXPECT_NE(study_summary_text(s).find("stopped early"), std::string::npos);
}

TEST(StudyReport, AStudyStoppedBeforeAnyRunIsStillAWellFormedPage) {
  StudyResult s;
  s.config = default_study_config(true);
  s.machine.cpu = "Test CPU";
  s.machine.opencl_note = "no OpenCL platform";
  const std::string html = study_report_html(s);
  EXPECT_EQ(xml_problem(without_doctype(html)), "");
  EXPECT_FALSE(has_nan_or_inf(html));
  EXPECT_NE(html.find("stopped early"), std::string::npos);
  EXPECT_NE(html.find("no OpenCL platform"), std::string::npos);
  for (const std::string& id : kSections) EXPECT_NE(html.find("id=\"" + id + "\""), std::string::npos) << id;
}

TEST(StudyReport, WritesTheFiveFiles) {
  const std::string dir = make_temp_folder("rg_study_report_");
  ASSERT_TRUE(write_study_report(small_study(), dir).ok());
  for (const char* name : {"report.html", "report.md", "runs.csv", "estimates.csv", "study.json"}) {
    const std::string path = std::string(dir) + "/" + name;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    in.close();  // Windows removes no open file
    EXPECT_FALSE(text.str().empty()) << name;
    std::remove(path.c_str());
  }
  std::filesystem::remove(dir);
}

}  // namespace
}  // namespace rg
