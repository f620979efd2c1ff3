// The thesis's published figures (Tables 5, 6-8, 9, 10), as printed there.
#include "study/report_published.h"

#include <cmath>

namespace rg::report {

namespace {

const std::vector<double> kBatches = {4, 8, 16, 32, 64, 128, 256, 512, 1024};

// Tables 6, 7 and 8 (the GPU, steps/s); NaN where the thesis prints nothing. Table 7's caption
// repeats "TensorFlow_2.0.0" but its body is headed PyTorch 1.4.0.
struct FrameworkRow {
  const char* name;
  const char* table;
  std::vector<double> steps_per_s;
};
const std::vector<FrameworkRow> kBatchSpeed = {
    {"TensorFlow 2.0.0", "Table 6", {0.025, 0.310, 1.151, 3.509, 9.846, 16.148, 62.710, NAN, NAN}},
    {"PyTorch 1.4.0", "Table 7", {1.511, 2.644, 4.940, 6.977, 11.380, 11.917, 12.714, 11.812, 11.812}},
    {"MXNet 1.5.0", "Table 8", {0.031, 0.063, 0.203, 0.563, 1.527, 3.222, 7.067, 14.317, 29.435}},
};

// Table 9 (TensorFlow 2.0.0).
const std::vector<double> kRates = {0.001, 0.005, 0.01, 0.03, 0.05, 0.07};
const std::vector<double> kRateAccuracy = {47.81, 65.40, 69.60, 68.28, 64.03, 58.68};
const std::vector<double> kRateSeconds = {202.54, 64.92, 39.25, 27.49, 38.24, 144.64};
const std::vector<double> kRateEpochs = {24, 7, 4, 3, 4, 16};

// Table 10 (TensorFlow 2.0.0): the first column's batch size is blank in the thesis's text.
const std::vector<double> kAccuracyBatches = {NAN, 8, 16, 32, 128, 256, 512, 1024};
const std::vector<double> kBatchAccuracy = {32.55, 45.83, 63.06, 68.59, 69.77, 64.82, 57.28, 51.02};

std::string cell(double v, int decimals) { return std::isfinite(v) ? fixed(v, decimals) : "not given"; }

}  // namespace

std::string published_source() {
  return "Published figures, not ours: J. Yin, \"Measurement of machine learning performance with different condition "
         "and hyperparameter\", M.S. thesis, The Ohio State University, 2020 - a CIFAR-10 CNN trained in TensorFlow "
         "2.0.0, PyTorch 1.4.0 and MXNet 1.5.0 (fp32) on an NVIDIA GTX 1060 with an Intel Core i7-8650U, Windows 10. "
         "Another network, other data and other hardware than this study's: compare the shape of the curves, not "
         "the numbers.";
}

std::string published_source_short() {
  return "Published figures, not ours: J. Yin's thesis (2020), a CIFAR-10 CNN on an NVIDIA GTX 1060: another network, "
         "other data and other hardware than this study's.";
}

Table published_gpu_cpu_table() {
  Table t;
  t.caption = "Published (thesis Table 5): steps/s at batch 128, GTX 1060 against the i7-8650U CPU, CIFAR-10 CNN";
  t.columns = {{"framework"}, {"GPU steps/s", true}, {"CPU steps/s", true}, {"GPU / CPU", true}};
  const double gpu[] = {16.148, 11.917, 32.22}, cpu[] = {3.328, 4.192, 3.65};
  const char* names[] = {"TensorFlow 2.0.0", "PyTorch 1.4.0", "MXNet 1.5.0"};
  for (int i = 0; i < 3; ++i) t.rows.push_back({names[i], fixed(gpu[i], 3), fixed(cpu[i], 3), fixed(gpu[i] / cpu[i], 1) + "x"});
  t.notes = {published_source()};
  return t;
}

Table published_batch_speed_table() {
  Table t;
  t.caption = "Published (thesis Tables 6-8): steps/s over batch size on the GTX 1060, CIFAR-10 CNN";
  t.columns = {{"batch", true}};
  for (const FrameworkRow& f : kBatchSpeed) t.columns.push_back({std::string(f.name) + " steps/s (" + f.table + ")", true});
  for (size_t b = 0; b < kBatches.size(); ++b) {
    std::vector<std::string> row = {fixed(kBatches[b], 0)};
    for (const FrameworkRow& f : kBatchSpeed) row.push_back(cell(f.steps_per_s[b], 3));
    t.rows.push_back(row);
  }
  t.notes = {published_source_short(),
             "Table 7's caption reads \"TensorFlow_2.0.0\" but its body is headed PyTorch 1.4.0; TensorFlow's "
             "steps/s at batch 512 and 1024 are blank in the thesis."};
  return t;
}

Table published_batch_accuracy_table() {
  Table t;
  t.caption = "Published (thesis Table 10): accuracy after 10 epochs over batch size, TensorFlow 2.0.0, CIFAR-10 CNN";
  t.columns = {{"batch", true}, {"accuracy after 10 epochs", true}};
  for (size_t i = 0; i < kBatchAccuracy.size(); ++i)
    t.rows.push_back({std::isfinite(kAccuracyBatches[i]) ? fixed(kAccuracyBatches[i], 0) : "(blank in the thesis)",
                      fixed(kBatchAccuracy[i], 2) + "%"});
  t.notes = {published_source_short(),
             "The thesis's text prints the first accuracy under a blank batch heading (before 8), and no column for 64."};
  return t;
}

Table published_lr_table() {
  Table t;
  t.caption = "Published (thesis Table 9): accuracy over learning rate, TensorFlow 2.0.0, CIFAR-10 CNN";
  t.columns = {{"learning rate", true}, {"accuracy after 10 epochs", true}, {"time to 60% (s)", true},
               {"epochs to 60%", true}};
  for (size_t i = 0; i < kRates.size(); ++i)
    t.rows.push_back({num(kRates[i]), fixed(kRateAccuracy[i], 2) + "%", fixed(kRateSeconds[i], 2), fixed(kRateEpochs[i], 0)});
  t.notes = {published_source_short()};
  return t;
}

ChartSeries published_lr_accuracy_series() {
  return {"published: thesis CNN, CIFAR-10, 10 epochs", kRates, kRateAccuracy};
}

ChartSeries published_batch_accuracy_series() {
  ChartSeries s{"published: thesis CNN, CIFAR-10, 10 epochs", {}, {}};
  for (size_t i = 0; i < kBatchAccuracy.size(); ++i) {
    if (!std::isfinite(kAccuracyBatches[i])) continue;
    s.x.push_back(kAccuracyBatches[i]);
    s.y.push_back(kBatchAccuracy[i]);
  }
  return s;
}

}  // namespace rg::report
