// The report's peaks and speed sections: each network on each device in each precision, the ISA
// ladder, efficiency against peak, threads, failed runs and combinations not run.
#include <algorithm>
#include <cmath>
#include <map>

#include "report/svg_chart.h"
#include "study/report_published.h"
#include "study/report_sections.h"
#include "study/study_claims.h"

namespace rg::report {

namespace {

int precision_rank(const StudyResult& result, const std::string& precision) {
  const auto& p = result.config.precisions;
  return static_cast<int>(std::find(p.begin(), p.end(), precision) - p.begin());
}

// The devices part's runs, ordered network, device, precision.
std::vector<const RunRecord*> speed_runs(const StudyResult& result) {
  std::vector<const RunRecord*> runs = good_runs(result, "devices");
  const std::vector<std::string> networks = study_networks(result);
  auto key = [&](const RunRecord* r) {
    return std::make_tuple(std::find(networks.begin(), networks.end(), r->run.network) - networks.begin(), r->run.device,
                           precision_rank(result, r->run.precision), r->run.batch);
  };
  std::stable_sort(runs.begin(), runs.end(), [&](const RunRecord* a, const RunRecord* b) { return key(a) < key(b); });
  return runs;
}

// The profiled companion of a timed run, if the study made one: where its GPU figures come from.
const RunRecord* profiled_companion(const StudyResult& result, const RunRecord& run) {
  for (const RunRecord& r : result.runs) {
    if (r.ok && r.run.profile && r.run.part == run.run.part && r.run.network == run.run.network &&
        r.run.device == run.run.device && r.run.precision == run.run.precision && r.run.batch == run.run.batch)
      return &r;
  }
  return nullptr;
}

struct GpuFigures {
  double busy = NAN, copy_ms = NAN, launches = NAN;
};

GpuFigures gpu_figures(const StudyResult& result, const RunRecord& run) {
  GpuFigures g{run.gpu_busy, run.copy_ms_per_step, run.launches_per_step};
  const RunRecord* p = std::isfinite(g.busy) ? nullptr : profiled_companion(result, run);
  if (p) {  // kernel time of the profiled run over the timed run's training time
    g.busy = p->gpu_busy * p->train_seconds / run.train_seconds;
    g.copy_ms = p->copy_ms_per_step;
    g.launches = p->launches_per_step;
  }
  return g;
}

bool shown_device(const StudyDevice* d) { return d && (d->best_cpu || d->opencl); }

// Devices are numbered in the peak notes: "[1]".
std::string peak_ref(const StudyResult& result, int device, const std::vector<int>& devices) {
  const StudyDevice* d = device_at(result, device);
  if (!d || d->peak.gflops <= 0) return "no peak";
  // The note number: the position of the device's distinct peak among those noted.
  std::vector<std::string> keys;
  for (int i : devices) {
    const StudyDevice* o = device_at(result, i);
    if (!o || o->peak.gflops <= 0) continue;
    std::string k = num(o->peak.gflops, 4) + o->peak.basis + o->peak.source;
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  const std::string mine = num(d->peak.gflops, 4) + d->peak.basis + d->peak.source;
  const size_t n = static_cast<size_t>(std::find(keys.begin(), keys.end(), mine) - keys.begin()) + 1;
  return "[" + std::to_string(n) + "]";
}

std::string efficiency_cell(const StudyResult& result, const RunRecord& r, const std::vector<int>& devices) {
  const std::string ref = peak_ref(result, r.run.device, devices);
  if (ref == "no peak") return ref;
  return std::isfinite(r.efficiency) ? percent(r.efficiency) + " " + ref : kNone;
}

void speed_table(Document& doc, const StudyResult& result, const std::vector<const RunRecord*>& runs) {
  std::vector<int> devices;
  for (const RunRecord* r : runs)
    if (std::find(devices.begin(), devices.end(), r->run.device) == devices.end()) devices.push_back(r->run.device);
  Table t;
  t.caption = "Training speed per network, device and precision (batch 64; samples/s: the median of the rounds, "
              "each round's the median epoch; in brackets the rounds' least and greatest)";
  t.group_rows = true;
  t.columns = {{"network"}, {"device"}, {"precision"}, {"samples/s", true}, {"steps/s", true}, {"GFLOP/s", true},
               {"% of peak [note]", true}, {"CPU cores busy (util.)", true}, {"GPU busy", true, true},
               {"transfer ms/step", true, true}, {"launches/step", true, true}, {"peak RSS (MiB)", true},
               {"device memory peak (MiB)", true, true}, {"rounds", true}, {"samples a round", true}};
  for (const RunRecord* r : runs) {
    const GpuFigures g = gpu_figures(result, *r);
    const std::string busy = std::isfinite(r->cpu_cores_busy) ? fixed(r->cpu_cores_busy, 2) + " (" + percent(r->cpu_utilisation, 0) + ")" : kNone;
    t.rows.push_back({r->run.network, device_label(result, r->run.device), r->run.precision, speed_cell(*r),
                      num(r->steps_per_s), num(r->gflops), efficiency_cell(result, *r, devices),
                      busy, percent(g.busy, 0), fixed(g.copy_ms, 2), num(g.launches), mib(r->peak_rss_bytes),
                      mib(r->device_peak_bytes), std::to_string(r->rounds),
                      r->samples_trained > 0 ? num(static_cast<double>(r->samples_trained)) : kNone});
  }
  t.notes = peak_notes(result, devices);
  t.notes.push_back("% of peak = GFLOP/s / the device's FP32 peak in the note its [number] points to; GFLOP/s counts FP32-equivalent flops, the "
                    "same count in every precision. Quality is compared in its own section, on a budget of samples where "
                    "the networks have left chance: a speed run is too short to say anything about it.");
  doc.table(t);
}

std::string samples_chart(const StudyResult& result, const std::vector<const RunRecord*>& runs) {
  BarChart c;
  c.title = "Training samples/s by precision (best CPU level and OpenCL devices)";
  c.value_label = "samples/s (log scale)";
  c.log_scale = true;
  c.series_names = result.config.precisions;
  std::map<std::string, size_t> row_of;
  for (const RunRecord* r : runs) {
    if (!shown_device(device_at(result, r->run.device))) continue;
    const std::string label = r->run.network + " · " + device_label(result, r->run.device);
    if (!row_of.count(label)) {
      row_of[label] = c.labels.size();
      c.labels.push_back(label);
      c.values.push_back(std::vector<double>(c.series_names.size(), NAN));
      c.low.push_back(c.values.back());
      c.high.push_back(c.values.back());
    }
    const size_t s = static_cast<size_t>(precision_rank(result, r->run.precision));
    if (s < c.series_names.size()) {
      c.values[row_of[label]][s] = r->samples_per_s;
      c.low[row_of[label]][s] = r->samples_per_s_low;
      c.high[row_of[label]][s] = r->samples_per_s_high;
    }
  }
  c.note = "higher is better; whiskers: the rounds' least and greatest; n/a: not run in that precision";
  return c.labels.empty() ? "" : render_bar_chart(c, kChartWidth);
}

// The ISA ladder: fp32 samples/s per network per CPU level (levels running the same kernels are
// one device), as a table with each step's claim and as speed-ups with the rounds' range.
void isa_ladder(Document& doc, const StudyResult& result, const std::vector<const RunRecord*>& runs) {
  std::vector<int> levels;
  for (size_t i = 0; i < result.devices.size(); ++i)
    if (!result.devices[i].opencl) levels.push_back(static_cast<int>(i));
  if (levels.size() < 2) return;
  Table t;
  t.caption = "ISA ladder: fp32 samples/s at each CPU instruction-set level (batch 64; median and the rounds' range)";
  t.columns = {{"network"}};
  BarChart c;
  c.title = "ISA ladder: fp32 speed-up over the lowest level measured";
  c.value_label = "speed-up (x)";
  c.value_format = "%.2fx";
  c.reference_value = 1;
  c.reference_label = "1x";
  for (int l : levels) {
    t.columns.push_back({device_label(result, l), true});
    c.series_names.push_back(device_label(result, l));
  }
  t.columns.push_back({"each level against the one below", false, false, true});
  for (const std::string& network : study_networks(result)) {
    std::vector<const RunRecord*> at(levels.size(), nullptr);
    for (size_t i = 0; i < levels.size(); ++i)
      for (const RunRecord* r : runs)
        if (r->run.network == network && r->run.device == levels[i] && r->run.precision == "fp32") at[i] = r;
    if (std::count(at.begin(), at.end(), nullptr) + 2 > static_cast<long>(at.size())) continue;
    std::vector<std::string> row = {network};
    std::string steps;
    const RunRecord* base = nullptr;
    const RunRecord* below = nullptr;
    std::vector<double> value, low, high;
    for (const RunRecord* r : at) {
      row.push_back(r ? speed_cell(*r) : kNone);
      if (r && !base) base = r;
      value.push_back(r ? r->samples_per_s / base->samples_per_s : NAN);
      low.push_back(r ? r->samples_per_s_low / base->samples_per_s : NAN);
      high.push_back(r ? r->samples_per_s_high / base->samples_per_s : NAN);
      if (r && below) {
        const Claim* claim = find_claim(result.claims, r->run.config_id(), below->run.config_id());
        steps += (steps.empty() ? "" : "; ") + device_label(result, r->run.device) + ": " + (claim ? claim_text(*claim) : kNone);
      }
      if (r) below = r;
    }
    row.push_back(steps);
    t.rows.push_back(row);
    c.labels.push_back(network);
    c.values.push_back(value);
    c.low.push_back(low);
    c.high.push_back(high);
  }
  if (t.rows.empty()) return;
  doc.heading(3, "isa-ladder", "ISA ladder");
  doc.paragraph("What the SIMD instruction sets of this CPU are worth: the same network on the same cores, with "
                "the kernels limited to each level (RETROGRAD_ISA). Levels that run the same fp32 kernels are "
                "measured once and shown as one (e.g. sse2..sse4.1). Networks run at only the best level are left out. "
                "A step is called faster or slower only where the rule of the Claims section says so.");
  c.note = "longer is faster; each network against its own lowest level measured; whiskers: the rounds' range";
  doc.charts({render_bar_chart(c, kChartWidth)});
  doc.table(t);
}

std::string efficiency_chart(const StudyResult& result, const std::vector<const RunRecord*>& runs) {
  BarChart c;
  c.title = "Efficiency: fp32 GFLOP/s as % of the device's FP32 peak";
  c.value_label = "% of peak";
  c.value_format = "%.1f%%";
  c.reference_value = 100;
  c.reference_label = "peak";
  std::vector<int> devices;
  for (const RunRecord* r : runs) {
    const StudyDevice* d = device_at(result, r->run.device);
    if (r->run.precision != "fp32" || !shown_device(d) || !std::isfinite(r->efficiency)) continue;
    c.labels.push_back(r->run.network + " · " + d->label);
    c.values.push_back({100 * r->efficiency});
    if (std::find(devices.begin(), devices.end(), r->run.device) == devices.end()) devices.push_back(r->run.device);
  }
  if (c.labels.empty()) return "";
  c.note = "peak: ";
  for (size_t i = 0; i < devices.size(); ++i) {
    const StudyDevice* d = device_at(result, devices[i]);
    c.note += (i ? "; " : "") + d->label + " " + format_number(d->peak.gflops, 4) + " GFLOP/s" +
              (d->peak.from_table ? " (published table)" : " (derived)");
  }
  return render_bar_chart(c, kChartWidth);
}

// The threads sweep: samples/s over 1, 2, 4, ... threads and all of them, per network, with
// each count against the one below it.
void threads_sweep(Document& doc, const StudyResult& result, const std::vector<const RunRecord*>& runs) {
  LineChart chart;
  chart.title = "Threads: fp32 samples/s (batch 64, best CPU level)";
  chart.x_label = "threads";
  chart.y_label = "samples/s";
  chart.log_x = true;
  chart.log_y = true;
  chart.x_ticks_at_data = true;
  Table t;
  t.caption = "Samples/s by thread count (median and the rounds' range), and each count against the one below it";
  t.columns = {{"network"}, {"threads", true}, {"samples/s", true}, {"against the count below", false, false, true},
               {"other programs' CPU share", true}};
  for (const std::string& network : study_networks(result)) {
    std::vector<const RunRecord*> counts;
    for (const RunRecord* r : good_runs(result, "threads"))
      if (r->run.network == network) counts.push_back(r);
    if (counts.empty()) continue;
    std::sort(counts.begin(), counts.end(), [](const RunRecord* a, const RunRecord* b) { return a->run.threads < b->run.threads; });
    for (const RunRecord* r : runs)
      if (r->run.network == network && r->run.precision == "fp32" && device_at(result, r->run.device)->best_cpu &&
          r->run.device == counts.front()->run.device)
        counts.push_back(r);
    ChartSeries series;
    series.name = network;
    for (size_t i = 0; i < counts.size(); ++i) {
      const RunRecord* r = counts[i];
      const int threads = r->run.threads > 0 ? r->run.threads : r->threads;
      const Claim* claim = i ? find_claim(result.claims, r->run.config_id(), counts[i - 1]->run.config_id()) : nullptr;
      t.rows.push_back({network, std::to_string(threads) + (r->run.threads > 0 ? "" : " (all)"), speed_cell(*r),
                        claim ? claim_text(*claim) : kNone, percent(r->load_others, 0)});
      series.x.push_back(threads);
      series.y.push_back(r->samples_per_s);
      series.y_low.push_back(r->samples_per_s_low);
      series.y_high.push_back(r->samples_per_s_high);
    }
    chart.series.push_back(series);
  }
  if (t.rows.empty()) return;
  doc.heading(3, "threads", "Threads");
  chart.note = "error bars: the rounds' least and greatest";
  doc.charts({render_line_chart(chart, kChartWidth, kChartHeight)});
  doc.table(t);
}

void failures(Document& doc, const StudyResult& result) {
  Table t;
  t.caption = "Runs that failed (their error: the child's last lines or its exit)";
  t.columns = {{"part"}, {"network"}, {"device"}, {"precision"}, {"batch", true}, {"learning rate", true, true}, {"error", false, false, true}};
  for (const RunRecord& r : result.runs) {
    if (r.ok) continue;
    t.rows.push_back({r.run.part, r.run.network, device_label(result, r.run.device), r.run.precision,
                      std::to_string(r.run.batch), r.run.lr > 0 ? num(r.run.lr) : kNone, one_line(r.error)});
  }
  if (t.rows.empty() && result.not_run.empty()) return;
  doc.heading(3, "failed", "Failed runs and combinations not run");
  if (t.rows.empty()) doc.paragraph("No run failed.");
  doc.table(t);
  if (!result.not_run.empty()) {
    doc.paragraph("Not run: combinations the trainers refuse, with the reason:");
    doc.list(result.not_run);
  }
}

}  // namespace

void add_peaks_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "peaks", "Peaks: what each efficiency is divided by");
  doc.paragraph("Every % of peak on this page is a measured GFLOP/s divided by its device's FP32 peak below. A peak "
                "from the published hardware table is the table's figure (at the clock measured here where there is "
                "one); a CPU the table does not list gets a peak derived from its SIMD features, and said so. A GPU "
                "with no published peak gets no efficiency.");
  Table t;
  t.caption = "FP32 peak per device (devices with the same peak share a row)";
  t.columns = {{"devices", false, false, true}, {"name", false, false, true}, {"kind"}, {"FP32 peak GFLOP/s", true}, {"from the table"},
               {"basis", false, false, true}, {"source", false, false, true}};
  std::vector<std::string> keys;
  for (const StudyDevice& d : result.devices) {
    const std::string key = d.name.substr(0, d.isa.empty() ? std::string::npos : d.name.rfind(" (")) + "|" + d.kind + "|" +
                            num(d.peak.gflops, 4) + "|" + d.peak.basis + "|" + d.peak.source;
    const size_t k = static_cast<size_t>(std::find(keys.begin(), keys.end(), key) - keys.begin());
    if (k < keys.size()) {
      t.rows[k][0] += ", " + d.label;
      continue;
    }
    keys.push_back(key);
    t.rows.push_back({d.label, key.substr(0, key.find('|')), d.kind, d.peak.gflops > 0 ? num(d.peak.gflops, 4) : "unknown",
                      d.peak.from_table ? "yes" : "no", d.peak.basis.empty() ? kNone : d.peak.basis,
                      d.peak.source.empty() ? kNone : d.peak.source});
  }
  doc.table(t);
}

void add_speed_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "speed", "Speed per device and precision");
  const std::vector<const RunRecord*> runs = speed_runs(result);
  if (runs.empty()) {
    doc.paragraph("No run of the devices part succeeded" + std::string(result.finished ? "." : " before the study stopped."));
  } else {
    doc.paragraph("Each network trained at batch 64 on each device (every CPU instruction-set level, every OpenCL "
                  "device) and, on the best CPU level and the OpenCL devices, in each training precision. "
                  "Samples/s and steps/s are the median epoch's; CPU cores busy is the CPU time of all the child's "
                  "threads over its training time.");
    doc.charts({samples_chart(result, runs), efficiency_chart(result, runs)});
    speed_table(doc, result, runs);
    isa_ladder(doc, result, runs);
    threads_sweep(doc, result, runs);
  }
  doc.heading(3, "published-devices", "Published: GPU against CPU");
  doc.table(published_gpu_cpu_table());
  failures(doc, result);
}

}  // namespace rg::report
