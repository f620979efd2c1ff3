// The report's batch-size and learning-rate sections: the sweep network over batch sizes and
// learning rates, every network's speed over batch sizes, and the thesis's figures beside them.
#include <algorithm>
#include <cmath>
#include <map>

#include "report/svg_chart.h"
#include "study/report_published.h"
#include "study/report_sections.h"

namespace rg::report {

namespace {

std::vector<const RunRecord*> sorted_by(std::vector<const RunRecord*> runs, bool by_lr) {
  std::stable_sort(runs.begin(), runs.end(), [&](const RunRecord* a, const RunRecord* b) {
    return by_lr ? a->run.lr < b->run.lr : a->run.batch < b->run.batch;
  });
  return runs;
}

LineChart over_batch(const std::string& title, const std::string& y_label) {
  LineChart c;
  c.title = title;
  c.x_label = "batch size (log scale)";
  c.y_label = y_label;
  c.log_x = true;
  c.x_ticks_at_data = true;
  return c;
}

// A line over the runs; with `low` and `high`, error bars (the rounds' range).
ChartSeries series_of(const std::string& name, const std::vector<const RunRecord*>& runs, double (*x)(const RunRecord&),
                      double (*y)(const RunRecord&), double (*low)(const RunRecord&) = nullptr,
                      double (*high)(const RunRecord&) = nullptr) {
  ChartSeries s;
  s.name = name;
  for (const RunRecord* r : runs) {
    s.x.push_back(x(*r));
    s.y.push_back(y(*r));
    if (low && high) {
      s.y_low.push_back(low(*r));
      s.y_high.push_back(high(*r));
    }
  }
  return s;
}

// The quality's range over the rounds, in the chart's unit (quality_for_chart's).
double quality_low_for_chart(const RunRecord& r) {
  RunRecord low = r;
  low.quality = r.quality_low;
  return quality_for_chart(low);
}
double quality_high_for_chart(const RunRecord& r) {
  RunRecord high = r;
  high.quality = r.quality_high;
  return quality_for_chart(high);
}

// The chart, or "" when no series has a point to draw (a chart of "no data" helps no one).
std::string chart(const LineChart& c) {
  for (const ChartSeries& s : c.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) return render_line_chart(c, kChartWidth, kChartHeight);
  return "";
}

double batch_of(const RunRecord& r) { return static_cast<double>(r.run.batch); }
double lr_of(const RunRecord& r) { return r.run.lr; }

// Every network's samples/s over batch sizes on each device: the batch-speed part and the
// devices part's fp32 run at batch 64.
std::string batch_speed_chart(const StudyResult& result) {
  std::map<std::pair<std::string, int>, std::vector<const RunRecord*>> curves;
  for (const RunRecord* r : good_runs(result, "batch-speed")) curves[{r->run.network, r->run.device}].push_back(r);
  if (curves.empty()) return "";
  for (const RunRecord* r : good_runs(result, "devices")) {
    auto it = curves.find({r->run.network, r->run.device});
    if (it != curves.end() && r->run.precision == "fp32") it->second.push_back(r);
  }
  LineChart c = over_batch("Every network: training samples/s over batch size", "samples/s (log scale)");
  c.log_y = true;
  for (const std::string& network : study_networks(result)) {
    for (auto& [key, runs] : curves) {
      if (key.first != network) continue;
      c.series.push_back(series_of(network + " · " + device_label(result, key.second), sorted_by(runs, false), batch_of,
                                   [](const RunRecord& r) { return r.samples_per_s; },
                                   [](const RunRecord& r) { return r.samples_per_s_low; },
                                   [](const RunRecord& r) { return r.samples_per_s_high; }));
    }
  }
  c.note = "fp32; higher is better; error bars: the rounds' least and greatest";
  return chart(c);
}

std::string accuracy_header(const std::vector<const RunRecord*>& runs, int64_t epochs) {
  const std::string name = runs.empty() || runs[0]->quality_name.empty() ? "quality" : runs[0]->quality_name;
  return name + " after " + std::to_string(epochs) + " epoch" + (epochs == 1 ? "" : "s");
}

}  // namespace

void add_batch_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "batch", "Batch size");
  const std::vector<const RunRecord*> runs = sorted_by(good_runs(result, "batch"), false);
  const std::string network = result.config.sweep_network;
  const int64_t epochs = runs.empty() ? result.config.sweep_epochs : runs[0]->run.epochs;
  if (runs.empty()) {
    doc.paragraph("The batch sweep has no successful run" + std::string(result.finished ? "." : " (the study stopped before it)."));
  } else {
    const std::string device = device_label(result, runs[0]->run.device);
    // The samples an epoch trained on, as the run reported them (a limit of 0 is the whole training set).
    const double per_epoch = static_cast<double>(runs[0]->samples_trained) / static_cast<double>(std::max<int64_t>(1, epochs));
    doc.paragraph("The sweep network (" + network + ") trained for " + std::to_string(epochs) + " epochs of " +
                  num(per_epoch) + " samples at each batch size on " + device +
                  ", fp32, the learning rate its preset's. Larger batches make fewer, bigger steps: steps/s falls "
                  "while samples/s rises until the device is busy; accuracy after a fixed number of epochs usually "
                  "falls at the largest batches, since fewer steps were taken.");
    const std::string acc = accuracy_header(runs, epochs);
    LineChart steps = over_batch(network + " on " + device + ": steps/s over batch size", "steps/s (log scale)");
    steps.log_y = true;
    steps.series.push_back(series_of("steps/s", runs, batch_of, [](const RunRecord& r) { return r.steps_per_s; }));
    steps.series.push_back(series_of("samples/s", runs, batch_of, [](const RunRecord& r) { return r.samples_per_s; },
                                     [](const RunRecord& r) { return r.samples_per_s_low; },
                                     [](const RunRecord& r) { return r.samples_per_s_high; }));
    steps.y_label = "per second (log scale)";
    steps.title = network + " on " + device + ": steps/s and samples/s";
    steps.note = "higher is better";
    LineChart accuracy = over_batch(network + ": " + acc, "%");
    accuracy.series.push_back(
        series_of(network + " (this study)", runs, batch_of, quality_for_chart, quality_low_for_chart, quality_high_for_chart));
    if (runs[0]->quality_name.find("accuracy") != std::string::npos) {
      accuracy.series.push_back(published_batch_accuracy_series());
      accuracy.dashed = {false, true};
      accuracy.note = "dashed: the thesis's Table 10 (another network, data and epochs)";
    } else {
      accuracy.y_label = runs[0]->quality_name;
    }
    LineChart memory = over_batch(network + ": peak resident memory", "MiB");
    memory.y_from_zero = true;
    memory.series.push_back(series_of("peak RSS", runs, batch_of, [](const RunRecord& r) { return r.peak_rss_bytes / 1048576; }));
    memory.series.push_back(series_of("peak tensors", runs, batch_of, [](const RunRecord& r) { return r.peak_tensor_bytes / 1048576; }));
    doc.charts({chart(steps), chart(accuracy), chart(memory), batch_speed_chart(result)});
    Table t;
    t.caption = network + " over batch size on " + device + " (fp32, " + std::to_string(epochs) + " epochs each)";
    t.columns = {{"batch", true}, {"steps/s", true}, {"samples/s", true}, {"CPU utilisation", true},
                 {"GPU busy", true, true}, {"peak RSS (MiB)", true}, {"peak tensors (MiB)", true},
                 {"device memory peak (MiB)", true, true}, {acc, true}, {"training time (s)", true}};
    for (const RunRecord* r : runs) {
      t.rows.push_back({std::to_string(r->run.batch), num(r->steps_per_s), num(r->samples_per_s), percent(r->cpu_utilisation, 0),
                        percent(r->gpu_busy, 0), mib(r->peak_rss_bytes), mib(r->peak_tensor_bytes), mib(r->device_peak_bytes),
                        quality_value(*r), fixed(r->train_seconds, 2)});
    }
    doc.table(t);
  }
  if (runs.empty()) doc.charts({batch_speed_chart(result)});
  doc.heading(3, "published-batch", "Published: batch size on a GTX 1060");
  doc.paragraph("The thesis measured steps/s over the same batch sizes on a GPU, per framework, and the accuracy "
                "after 10 epochs in TensorFlow. Its network, data and hardware differ from this study's.");
  doc.side_by_side_begin();
  doc.table(published_batch_speed_table());
  doc.table(published_batch_accuracy_table());
  doc.side_by_side_end();
}

void add_lr_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "lr", "Learning rate");
  const std::vector<const RunRecord*> runs = sorted_by(good_runs(result, "lr"), true);
  const std::string network = result.config.sweep_network;
  const int64_t epochs = runs.empty() ? result.config.lr_epochs : runs[0]->run.epochs;
  const std::string target = percent(result.config.target_accuracy, 0);
  if (runs.empty()) {
    doc.paragraph("The learning-rate sweep has no successful run" + std::string(result.finished ? "." : " (the study stopped before it)."));
    doc.heading(3, "published-lr", "Published: learning rate");
    doc.table(published_lr_table());
    return;
  }
  {
    const std::string device = device_label(result, runs[0]->run.device);
    doc.paragraph("The sweep network (" + network + ") trained for " + std::to_string(epochs) + " epochs at each "
                  "learning rate on " + device + " (fp32, batch " + std::to_string(runs[0]->run.batch) + "), " +
                  percent(runs[0]->run.val_split, 0) + " of its samples held out: the time and epochs to " + target +
                  " validation accuracy are read off that split after each epoch. Too small a rate learns slowly; "
                  "too large a one overshoots. Beside our table, the thesis's Table 9 (another network and data, "
                  "10 epochs, a 60% target).");
    const std::string acc = accuracy_header(runs, epochs);
    LineChart accuracy;
    accuracy.title = network + ": " + acc + " over learning rate";
    accuracy.x_label = "learning rate (log scale)";
    accuracy.y_label = "%";
    accuracy.log_x = true;
    accuracy.x_ticks_at_data = true;
    LineChart time = accuracy;
    accuracy.series.push_back(
        series_of(network + " (this study)", runs, lr_of, quality_for_chart, quality_low_for_chart, quality_high_for_chart));
    if (runs[0]->quality_name.find("accuracy") != std::string::npos) {
      accuracy.series.push_back(published_lr_accuracy_series());
      accuracy.dashed = {false, true};
      accuracy.note = "dashed: the thesis's Table 9 (another network, data and epochs)";
    }
    time.title = network + ": training time to " + target + " validation accuracy";
    time.y_label = "seconds";
    time.y_from_zero = true;
    time.series.push_back(series_of("time to " + target, runs, lr_of, [](const RunRecord& r) { return r.time_to_target; }));
    time.note = "lower is better; a rate that never reached " + target + " has no point";
    LineChart curves;  // validation accuracy after each epoch, one line per rate
    curves.title = network + ": validation accuracy after each epoch";
    curves.x_label = "epoch";
    curves.y_label = "%";
    curves.x_ticks_at_data = true;
    for (const RunRecord* r : runs) {
      ChartSeries s;
      s.name = "lr " + num(r->run.lr);
      for (const EpochPoint& p : r->history) {
        s.x.push_back(p.epoch);
        s.y.push_back(100 * p.val_accuracy);
      }
      if (std::any_of(s.y.begin(), s.y.end(), [](double v) { return std::isfinite(v); })) curves.series.push_back(s);
    }
    doc.charts({chart(accuracy), chart(time), chart(curves)});
    if (runs[0]->run.val_split > 0 &&
        std::none_of(runs.begin(), runs.end(), [](const RunRecord* r) { return std::isfinite(r->time_to_target); }))
      doc.note("No learning rate reached " + target + " validation accuracy within " + std::to_string(epochs) +
               " epochs, so there is no time-to-target chart.");
    Table t;
    t.caption = network + " over learning rate on " + device;
    t.columns = {{"learning rate", true}, {acc, true}, {"time to " + target + " (s)", true},
                 {"epochs to " + target, true}, {"samples/s", true}};
    for (const RunRecord* r : runs) {
      const bool reached = std::isfinite(r->time_to_target);
      const std::string missing = r->run.val_split > 0 ? "not reached" : kNone;
      t.rows.push_back({num(r->run.lr), quality_value(*r), reached ? fixed(r->time_to_target, 2) : missing,
                        reached ? fixed(r->epochs_to_target, 0) : missing, num(r->samples_per_s)});
    }
    doc.side_by_side_begin();
    doc.table(t);
    doc.table(published_lr_table());
    doc.side_by_side_end();
  }
}

}  // namespace rg::report
