// The per-precision rows: fp32 inference of the trained model, and int8 post-training
// quantization of it, each scored on the test split and timed at the inference batch.
#include "app/precision_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/memory.h"
#include "cpu/isa.h"
#include "cpu/kernel_tables.h"

namespace rg {

void declare_precision_options(Args& args, const char* default_precisions) {
  args.option("precision", "LIST",
              "after training, run the model in each precision of LIST (fp32, int8) and print one table row "
              "each; fp16 is not built yet",
              default_precisions);
  args.option("infer-batch", "N", "--precision: inference batch size for the speed column", "256");
  args.option("calibration", "minmax|percentile", "int8: how activation ranges are chosen", "percentile");
  args.option("percentile", "P", "int8: the percentile calibration's upper percentile", "99.99");
  args.option("calib-batches", "N", "int8: training batches (of --infer-batch) seen in calibration", "8");
  args.option("keep-f32", "LIST", "int8: layers kept in f32 (names such as conv1, or first, last)", "none");
}

Result<PrecisionSettings> precision_settings(const Args& args) {
  PrecisionSettings s;
  std::stringstream list(args.text("precision"));
  for (std::string name; std::getline(list, name, ',');) {
    if (name == "fp16") {
      return Status::error("--precision fp16: fp16 storage and mixed-precision training are not built yet "
                           "(issue 6's next step); fp32 and int8 are");
    }
    if (name != "fp32" && name != "int8") {
      return Status::error("--precision: unknown precision '" + name + "' (known: fp32, int8)");
    }
    for (const auto& seen : s.precisions)
      if (seen == name) return Status::error("--precision: " + name + " is listed twice");
    s.precisions.push_back(name);
  }
  if (s.precisions.empty()) return Status::error("--precision: the list is empty");
  RG_ASSIGN(s.infer_batch, args.integer("infer-batch", 1, 1 << 16));
  if (!calibration_from_name(args.text("calibration"), &s.int8.calibration)) {
    return Status::error("--calibration: '" + args.text("calibration") + "' is neither minmax nor percentile");
  }
  RG_ASSIGN(s.int8.percentile, args.number("percentile", 50, 100));
  RG_ASSIGN(s.int8.calibration_batches, args.integer("calib-batches", 1, 1 << 20));
  if (args.text("keep-f32") != "none") {
    std::stringstream layers(args.text("keep-f32"));
    for (std::string name; std::getline(layers, name, ',');)
      if (!name.empty()) s.int8.keep_f32.insert(name);
  }
  return s;
}

namespace {

int64_t f32_weight_bytes(Model& model) {
  int64_t bytes = 0;
  for (Param* p : model.params()) bytes += static_cast<int64_t>(p->value.bytes());
  for (Param* p : model.buffers()) bytes += static_cast<int64_t>(p->value.bytes());
  return bytes;
}

void fill_scores(PrecisionRow* row, const EvalResult& result, bool classifies) {
  row->classifies = classifies;
  row->test_accuracy = result.accuracy;
  row->test_mse = result.mse;
  row->infer_samples_per_s = result.seconds > 0 ? static_cast<double>(result.samples) / result.seconds : 0;
}

std::string int8_what_ran(const Int8Model& net, const Int8Options& options) {
  int quantized = 0, gemm_layers = 0;
  for (const LayerPrecision& layer : net.precisions()) {
    if (layer.kind != "conv" && layer.kind != "dense") continue;
    ++gemm_layers;
    if (layer.precision == "int8") ++quantized;
  }
  std::ostringstream os;
  os << "int8 PTQ: " << quantized << " of " << gemm_layers << " conv/dense int8, "
     << calibration_name(options.calibration) << " calibration";
  return os.str();
}

}  // namespace

Result<std::vector<PrecisionRow>> precision_rows(Model& model, const TrainOptions& options, ThreadPool& pool,
                                                 const Dataset& train, const Dataset& test,
                                                 double train_samples_per_s, const PrecisionSettings& settings) {
  const bool classifies = model.target() != TargetKind::input;
  TrainOptions eval_options = options;
  eval_options.batch = settings.infer_batch;
  eval_options.checkpoint_path.clear();
  // Scores every precision at the inference batch (and reserves the f32 model for calibration).
  Trainer evaluator(model, pool, eval_options);
  if (Status s = evaluator.prepare(); !s.ok()) return s;
  std::vector<PrecisionRow> rows;
  EvalResult fp32_result;
  bool have_fp32 = false;
  for (const std::string& precision : settings.precisions) {
    PrecisionRow row;
    row.precision = precision;
    if (precision == "fp32") {
      fp32_result = evaluator.evaluate(test);
      have_fp32 = true;
      row.what_ran = "all f32";
      row.train_samples_per_s = train_samples_per_s;
      row.weight_bytes = f32_weight_bytes(model);
      int64_t activations = 0;
      for (size_t i = 0; i < model.layers().size(); ++i) activations += model.layer_output_shape(i).numel();
      row.memory_bytes = row.weight_bytes + activations * settings.infer_batch * 4;
      fill_scores(&row, fp32_result, classifies);
      for (const auto& layer : model.layers()) row.layers.push_back({layer->name(), "f32", "", layer->kind()});
    } else {  // int8
      const int64_t calibration_count =
          std::min<int64_t>(train.size(), settings.infer_batch * settings.int8.calibration_batches);
      auto calibration = train.first_samples(calibration_count);
      if (!calibration.ok()) return calibration.status();
      auto quantized = Int8Model::quantize(model, calibration.value(), settings.infer_batch, settings.int8, &pool);
      if (!quantized.ok()) return quantized.status();
      std::unique_ptr<Int8Model> net = quantized.take();
      if (Status s = net->reserve(settings.infer_batch); !s.ok()) return s;
      const EvalResult result = evaluator.evaluate(test, [&](const Tensor& x) { return net->forward(x, &pool); });
      row.what_ran = int8_what_ran(*net, settings.int8);
      row.weight_bytes = net->weight_bytes();
      row.memory_bytes = row.weight_bytes + net->buffer_bytes();
      row.layers = net->precisions();
      fill_scores(&row, result, classifies);
    }
    rows.push_back(row);
  }
  for (PrecisionRow& row : rows) {
    if (!have_fp32) break;
    row.change = classifies ? 100.0 * (row.test_accuracy - fp32_result.accuracy) : row.test_mse - fp32_result.mse;
  }
  return rows;
}

std::string precision_table(const std::vector<PrecisionRow>& rows, int64_t infer_batch) {
  std::ostringstream os;
  const bool classifies = rows.empty() || rows.front().classifies;
  char line[512];
  std::snprintf(line, sizeof line, "  %-9s %-57s %12s %12s %9s %9s %12s %12s\n", "precision", "what ran",
                "train smp/s", "infer smp/s", classifies ? "test acc" : "test MSE",
                classifies ? "vs fp32" : "vs fp32", "weights", "infer memory");
  os << line;
  for (const PrecisionRow& r : rows) {
    char train[32], score[32], change[32];
    if (r.train_samples_per_s > 0) {
      std::snprintf(train, sizeof train, "%.0f", r.train_samples_per_s);
    } else {
      std::snprintf(train, sizeof train, "-");
    }
    if (classifies) {
      std::snprintf(score, sizeof score, "%.4f", r.test_accuracy);
      std::snprintf(change, sizeof change, "%+.2f pt", r.change);
    } else {
      std::snprintf(score, sizeof score, "%.6f", r.test_mse);
      std::snprintf(change, sizeof change, "%+.6f", r.change);
    }
    std::snprintf(line, sizeof line, "  %-9s %-57s %12s %12.0f %9s %9s %12s %12s\n", r.precision.c_str(),
                  r.what_ran.c_str(), train, r.infer_samples_per_s, score, change, format_bytes(r.weight_bytes).c_str(),
                  format_bytes(r.memory_bytes).c_str());
    os << line;
  }
  os << "  (inference at batch " << infer_batch << " on " << isa_name(active_isa()) << "; int8 GEMM "
     << qs8_gemm_kernel(active_isa()).name << "; train smp/s '-': the precision did not train, its weights are "
     << "the fp32 run's; infer memory: weights and the activation buffers of one inference batch)\n";
  for (const PrecisionRow& r : rows) {
    if (r.precision == "fp32") continue;
    os << "  " << r.precision << " per layer:";
    for (const LayerPrecision& layer : r.layers) {
      os << " " << layer.layer << "=" << layer.precision;
      if (!layer.note.empty() && layer.precision == "f32") os << " (" << layer.note << ")";
    }
    os << "\n";
  }
  return os.str();
}

nlohmann::json precision_json(const std::vector<PrecisionRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const PrecisionRow& r : rows) {
    nlohmann::json j = {{"precision", r.precision},
                        {"what_ran", r.what_ran},
                        {"train_samples_per_s", r.train_samples_per_s > 0 ? nlohmann::json(r.train_samples_per_s)
                                                                          : nlohmann::json(nullptr)},
                        {"infer_samples_per_s", r.infer_samples_per_s},
                        {"weight_bytes", r.weight_bytes},
                        {"infer_memory_bytes", r.memory_bytes},
                        {"layers", nlohmann::json::array()}};
    if (r.classifies) {
      j["test_accuracy"] = r.test_accuracy;
      j["change_points"] = r.change;
    } else {
      j["test_mse"] = r.test_mse;
      j["change_mse"] = r.change;
    }
    for (const LayerPrecision& layer : r.layers)
      j["layers"].push_back({{"layer", layer.layer}, {"precision", layer.precision}, {"note", layer.note}});
    out.push_back(j);
  }
  return out;
}

std::string precision_csv(const std::vector<PrecisionRow>& rows) {
  std::ostringstream os;
  os << "precision,what_ran,train_samples_per_s,infer_samples_per_s,test_accuracy,test_mse,change,weight_bytes,"
        "infer_memory_bytes\n";
  for (const PrecisionRow& r : rows) {
    os << r.precision << ",\"" << r.what_ran << "\"," << r.train_samples_per_s << "," << r.infer_samples_per_s << ","
       << (r.classifies ? std::to_string(r.test_accuracy) : "") << "," << (r.classifies ? "" : std::to_string(r.test_mse))
       << "," << r.change << "," << r.weight_bytes << "," << r.memory_bytes << "\n";
  }
  return os.str();
}

}  // namespace rg
