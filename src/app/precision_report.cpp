// The per-precision rows: the trained fp32 model, its int8 post-training quantization and QAT
// fine-tune, and the model trained again in fp16 and int8, each scored on the test split and
// timed at the inference batch.
#include "app/precision_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "base/memory.h"
#include "cpu/isa.h"
#include "cpu/kernel_tables.h"
#include "nn/layer_precision_option.h"
#include "nn/layer_registry.h"
#include "ops/fixed_point_gemm.h"

namespace rg {

void declare_precision_options(Args& args, const char* default_precisions) {
  args.option("precision", "LIST",
              "after training, run the model in each precision of LIST and print one table row each: fp32 (the "
              "model as trained), fp16 or bf16 (the same model trained again in mixed precision), int8 "
              "(post-training quantization of the fp32 model), int8-qat (the fp32 run's last epochs again through "
              "fake int8, or a fine-tune of it: --qat-mode; exported to int8), w<B>a<A>-ptq and w<B>a<A>-qat (the "
              "same with B-bit weights and A-bit activations, 2-8; weights of 4 or fewer held two a byte), int8-train (trained again with int8 GEMMs "
              "forward and backward), a fixed-point shorthand trained again in it (w8a8e8, w4a8, "
              "w16a16g16-sr: --train-precision's grammar), or LAYER=P[+LAYER=P...] (trained again with those "
              "layers' products in P: conv2=w4a8e8)",
              default_precisions);
  args.option("infer-batch", "N", "--precision: inference batch size for the speed column", "256");
  args.option("calibration", "minmax|percentile", "int8: how activation ranges are chosen", "percentile");
  args.option("percentile", "P", "int8: the percentile calibration's upper percentile", "99.99");
  args.option("calib-batches", "N", "int8: training batches (of --infer-batch) seen in calibration", "8");
  args.option("keep-f32", "LIST", "int8: layers kept in f32 (names such as conv1, or first, last)", "none");
  args.option("qat-mode", "last|extra",
              "int8-qat: 'last' reruns the run's last --qat-epochs epochs through fake int8 from the fp32 run's state "
              "before them (same steps, data order and rates: the change against fp32 is what quantization costs); "
              "'extra' fine-tunes the trained fp32 model --qat-epochs more at a constant --qat-lr-scale x --lr",
              "last");
  args.option("qat-epochs", "N", "int8-qat: epochs trained through fake int8", "1");
  args.option("qat-lr-scale", "F", "int8-qat --qat-mode extra: the fine-tune's constant learning rate as a multiple of --lr",
              "0.1");
}

namespace {

// "conv1=w4+dense2=fp32": each LAYER=P with P's canonical name; an error names the entry.
Result<std::string> canonical_layer_row(const std::string& row) {
  if (row.back() == '+' || row.find("++") != std::string::npos || row.front() == '+') {
    return Status::error("--precision: '" + row + "' has an empty LAYER=PRECISION between its '+'");
  }
  std::string out;
  std::stringstream entries(row);
  for (std::string entry; std::getline(entries, entry, '+');) {
    const size_t at = entry.find('=');
    const std::string layer = entry.substr(0, at), own = at == std::string::npos ? "" : entry.substr(at + 1);
    if (layer.empty() || own.empty()) return Status::error("--precision: '" + entry + "' is not LAYER=PRECISION");
    std::string name = own;
    if (own != "fp32" && !names_fixed_point(own)) {
      return Status::error("--precision: " + entry + ": a layer's own precision is fp32 or a fixed-point shorthand "
                           "(w4a8e8, w16a16g16-sr)");
    }
    if (own != "fp32") {
      auto fixed = parse_fixed_point_precision(own);
      if (!fixed.ok()) return fixed.status().with_context("--precision: " + layer + "=: ");
      name = fixed.value().name;
    }
    out += (out.empty() ? "" : "+") + layer + "=" + name;
  }
  return out;
}

// A layer row's entries as --layer-precision writes them (with_layer_precisions' list).
std::string layer_row_list(std::string row) {
  std::replace(row.begin(), row.end(), '+', ',');
  return row;
}

}  // namespace

Result<PrecisionSettings> precision_settings(const Args& args) {
  PrecisionSettings s;
  std::stringstream list(args.text("precision"));
  for (std::string name; std::getline(list, name, ',');) {
    if (name.find('=') != std::string::npos) {  // LAYER=P[+LAYER=P...] (checked against the model: check_layer_rows)
      RG_ASSIGN(name, canonical_layer_row(name));
    } else if (names_int8_export(name)) {  // int8, int8-qat, w4a8-qat, w6a8-ptq...
      auto form = parse_int8_export_precision(name);
      if (!form.ok()) return form.status().with_context("--precision: ");
      name = form.value().name;
    } else if (name != "fp32" && name != "fp16" && name != "bf16") {
      if (!names_fixed_point(name)) {
        return Status::error("--precision: unknown precision '" + name +
                             "' (known: fp32, fp16, bf16, int8, int8-qat, int8-train, fixed-point shorthands such as "
                             "w8a8e8, w16a16g16-sr, and the int8 engine's w4a8-ptq, w4a8-qat: docs/quantization.md)");
      }
      TrainOptions fixed;  // int8-train and the fixed-point shorthands, by their canonical names
      RG_TRY(set_precision(name, &fixed).with_context("--precision: "));
      name = precision_name(fixed);
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
  if (args.text("qat-mode") == "last") {
    s.qat.start = QatStart::last_epochs;
  } else if (args.text("qat-mode") == "extra") {
    s.qat.start = QatStart::extra_epochs;
  } else {
    return Status::error("--qat-mode: '" + args.text("qat-mode") + "' is neither last nor extra");
  }
  RG_ASSIGN(s.qat.epochs, args.integer("qat-epochs", 1, 1000000));
  RG_ASSIGN(s.qat.lr_scale, args.number("qat-lr-scale", 0, 1000));
  return s;
}

Status check_layer_rows(const PrecisionSettings& settings, const CfgDocument& cfg) {
  for (const std::string& name : settings.precisions)
    if (name.find('=') != std::string::npos) {
      RG_TRY(with_layer_precisions(cfg, layer_row_list(name)).status().with_context("--precision: "));
    }
  return Status();
}

bool PrecisionSettings::qat_reruns_last_epochs() const {
  const bool wanted = std::any_of(precisions.begin(), precisions.end(), [](const std::string& name) {
    return names_int8_export(name) && parse_int8_export_precision(name).value().qat;
  });
  return wanted && qat.start == QatStart::last_epochs;
}

namespace {

// The scores of an evaluation (its error: the test data could not be read).
Status fill_scores(PrecisionRow* row, const Result<EvalResult>& scored, bool classifies) {
  if (!scored.ok()) return scored.status();
  const EvalResult& result = scored.value();
  row->classifies = classifies;
  row->test_accuracy = result.accuracy;
  row->test_mse = result.mse;
  row->infer_samples_per_s = result.seconds > 0 ? static_cast<double>(result.samples) / result.seconds : 0;
  return Status();
}

// "4 of 5 conv/dense int8": the layers whose kind's row has the int8 role gemm (nn/layer_registry.h).
std::string int8_gemm_count(const std::vector<LayerPrecision>& layers) {
  int quantized = 0, gemm_layers = 0;
  for (const LayerPrecision& layer : layers) {
    const LayerKind* row = find_layer_kind(layer.kind);
    if (row == nullptr || row->int8 != Int8Role::gemm) continue;
    ++gemm_layers;
    if (layer.precision == "int8") ++quantized;
  }
  return std::to_string(quantized) + " of " + std::to_string(gemm_layers) + " conv/dense int8";
}

// "conv1=w8a8e8 dense3=fp32": the layers with a precision of their own (cfg `precision`,
// --layer-precision), "" where none has.
std::string own_precisions(const Model& model) {
  std::string list;
  for (const auto& layer : model.layers()) {
    const std::string& own = layer->own_precision().name;
    if (!own.empty()) list += (list.empty() ? "" : " ") + layer->name() + "=" + own;
  }
  return list;
}

// fp32: the trained model as it is.
Result<PrecisionRow> fp32_row(Model& model, Trainer& evaluator, const Dataset& test, double train_samples_per_s,
                      const PrecisionSettings& settings) {
  PrecisionRow row;
  row.precision = "fp32";
  const std::string own = own_precisions(model);
  row.what_ran = own.empty() ? "all f32" : "f32 but the layers' own precisions: " + own;
  row.train_samples_per_s = train_samples_per_s;
  row.weight_bytes = model.weight_bytes();
  row.memory_bytes = row.weight_bytes + model.inference_activation_bytes(settings.infer_batch);
  RG_TRY(fill_scores(&row, evaluator.evaluate(test), model.target() != TargetKind::input));
  for (const auto& layer : model.layers()) row.layers.push_back({layer->name(), "f32", "", layer->kind()});
  return row;
}

// A second model of the run's cfg, trained in another precision; its trainer is kept for the
// scores and the fake quantizer's ranges.
struct TrainedCopy {
  std::unique_ptr<Model> net;
  std::unique_ptr<Trainer> trainer;  // destroyed before net
  double samples_per_s = 0;
};

// Trains `net` with `options` (no checkpoint, to options.epochs), from `start` (a snapshot of
// another run of the model, Trainer::start_from) when given.
Result<TrainedCopy> train_copy(std::unique_ptr<Model> net, TrainOptions options, ThreadPool& pool,
                               const Dataset& train, const Checkpoint* start) {
  TrainedCopy run;
  run.net = std::move(net);
  options.checkpoint_path.clear();
  options.stop_after = 0;
  options.after_epoch = nullptr;
  run.trainer = std::make_unique<Trainer>(*run.net, pool, options);
  RG_TRY(run.trainer->prepare());
  if (start != nullptr) {
    RG_TRY(run.trainer->start_from(*start, "the fp32 run's state after epoch " + start->settings.at("epochs_done")));
  }
  RG_TRY(run.trainer->fit(train, nullptr).status());
  run.samples_per_s = static_cast<double>(run.trainer->samples_trained()) / run.trainer->train_seconds();
  return run;
}

// fp16 and the fixed-point precisions (int8-train, w16a16g16, ...): a fresh model of the same
// cfg and seed, trained with the run's settings in `options`' precision.
Result<TrainedCopy> train_again(const Model& model, const TrainOptions& options, ThreadPool& pool, const Dataset& train) {
  RG_ASSIGN(std::unique_ptr<Model> net, Model::from_cfg(model.cfg()));
  RG_TRY(net->init(options.seed));
  std::fprintf(options.log, "\nprecision %s: training the same model from the same seed\n",
               precision_name(options).c_str());
  return train_copy(std::move(net), options, pool, train, nullptr);
}

// How the int8-qat row came from the f32 run of `run` options: "the run's last 1 epoch again",
// "all 5 epochs again, from the initial weights", "fine-tuned 1 epoch at lr 0.001".
std::string qat_text(const QatFineTune& qat, const TrainOptions& run) {
  std::ostringstream os;
  const char* epochs = qat.epochs == 1 ? " epoch" : " epochs";
  const double run_lr = run.schedule.lr;
  if (qat.start == QatStart::last_epochs && qat.epochs >= run.epochs) {
    // From the first step the ranges start from untrained values: short runs lose accuracy.
    if (qat.epochs == 1) {
      os << "the run's one epoch again, from the initial weights";
    } else {
      os << "all " << qat.epochs << " epochs again, from the initial weights";
    }
  } else if (qat.start == QatStart::last_epochs) {
    os << "the run's last " << qat.epochs << epochs << " again";
  } else {
    os << "fine-tuned " << qat.epochs << epochs << " at lr " << run_lr * qat.lr_scale;
  }
  return os.str();
}

// int8-qat, QatStart::last_epochs: a model of the run's cfg continues the fp32 run from `start`
// (its state qat.epochs before the end) through fake quantization, with the run's options.
// QatStart::extra_epochs: a copy of the trained model (weights and batch-norm statistics) trains
// qat.epochs more at a constant qat.lr_scale x the run's rate, with the run's optimizer (fresh
// state) and seed. The ranges start from the first batch's either way.
Result<TrainedCopy> train_qat(Model& model, TrainOptions options, const Int8ExportPrecision& form,
                              const QatFineTune& qat, const Checkpoint* start, ThreadPool& pool, const Dataset& train) {
  const std::string grid = int8_export_name(form.weight_bits, form.activation_bits, false);  // int8, w4a8-ptq
  std::fprintf(options.log, "\nprecision %s: %s through fake %s\n", form.name.c_str(), qat_text(qat, options).c_str(),
               grid.substr(0, grid.find('-')).c_str());
  options.precision = TrainPrecision::int8_qat;
  options.qat_weight_bits = form.weight_bits;
  options.qat_activation_bits = form.activation_bits;
  if (qat.start == QatStart::extra_epochs) {
    RG_ASSIGN(std::unique_ptr<Model> net, qat_copy_of(model, options.seed));
    options.epochs = qat.epochs;
    options.schedule.kind = ScheduleKind::constant;
    options.schedule.lr *= qat.lr_scale;
    return train_copy(std::move(net), options, pool, train, nullptr);
  }
  RG_CHECK(start != nullptr, "int8-qat rerunning the last epochs needs the fp32 run's state before them");
  RG_ASSIGN(std::unique_ptr<Model> net, Model::from_cfg(model.cfg()));
  RG_TRY(net->init(options.seed));  // allocates; start_from overwrites the values
  return train_copy(std::move(net), options, pool, train, start);
}

// Every layer at one precision, conv/dense at another.
// What each layer ran in: `gemm` for a layer with products (nn/layer_registry.h's own_precision
// kinds), `other` for the rest, and a layer's own precision where it has one.
std::vector<LayerPrecision> layer_list(const Model& net, const std::string& gemm, const std::string& other) {
  std::vector<LayerPrecision> out;
  for (const auto& layer : net.layers()) {
    const bool product = layer_kind_of(*layer).own_precision;
    const std::string& own = layer->own_precision().name;
    const std::string ran = own.empty() ? (product ? gemm : other) : own == "fp32" ? "f32" : own + " GEMM";
    out.push_back({layer->name(), ran, own.empty() ? "" : "its own precision", layer->kind()});
  }
  return out;
}

// A row's model trained again: its scores at the inference batch in the precision it trained in,
// and its bytes.
Status score_copy(const TrainedCopy& run, TrainOptions options, ThreadPool& pool, const Dataset& test,
                  const PrecisionSettings& settings, PrecisionRow* row) {
  options.batch = settings.infer_batch;
  options.checkpoint_path.clear();
  Trainer evaluator(*run.net, pool, options);
  RG_TRY(evaluator.prepare());
  RG_TRY(fill_scores(row, evaluator.evaluate(test), run.net->target() != TargetKind::input));
  row->weight_bytes = run.net->weight_bytes();
  row->memory_bytes = row->weight_bytes + run.net->inference_activation_bytes(settings.infer_batch);
  return Status();
}

// fp16 (mixed precision; inference with f16 weights and activations) and int8-train (conv/dense GEMMs on the
// fixed-point kernels, in training and inference): the model trained again in `precision`, then
// scored at the inference batch in that precision.
Result<PrecisionRow> retrained_row(const Model& model, TrainOptions options, const std::string& precision,
                                   ThreadPool& pool, const Dataset& train, const Dataset& test,
                                   const PrecisionSettings& settings) {
  RG_TRY(set_precision(precision, &options));
  RG_ASSIGN(TrainedCopy run, train_again(model, options, pool, train));
  PrecisionRow row;
  row.precision = precision_name(options);
  row.train_samples_per_s = run.samples_per_s;
  if (options.precision == TrainPrecision::fp16) {
    std::ostringstream what;
    what << "f16 acts+grads, f32 math; infer: f16 weights; loss scale 2^"
         << static_cast<int>(std::lround(std::log2(run.trainer->loss_scaler().scale()))) << ", "
         << run.trainer->loss_scaler().skipped_steps() << " steps skipped";
    row.what_ran = what.str();
    row.layers = layer_list(*run.net, "f16", "f16");
    row.layers.back() = {row.layers.back().layer, "f32", "the output stays f32", row.layers.back().kind};
  } else if (options.precision == TrainPrecision::bf16) {
    row.what_ran = "bf16 acts+grads, f32 math and weights (no loss scaling)";
    row.layers = layer_list(*run.net, "bf16", "bf16");
    row.layers.back() = {row.layers.back().layer, "f32", "the output stays f32", row.layers.back().kind};
  } else if (options.fixed_point.name == "int8-train") {
    row.what_ran = "conv/dense GEMMs int8 (dynamic scales, stochastic grads)";
    row.layers = layer_list(*run.net, "int8 GEMM", "f32");
  } else {
    const FixedPointRoles& roles = options.fixed_point.roles;
    const bool fake = product_route(roles.activations, roles.weights) == ProductRoute::fake_quantized;
    row.what_ran = "conv/dense GEMMs " + describe_fixed_point(roles);
    row.layers = layer_list(*run.net, options.fixed_point.name + (fake ? " fake" : " GEMM"), "f32");
  }
  if (options.precision == TrainPrecision::fp16) RG_TRY(run.net->store_weights_f16());
  RG_TRY(score_copy(run, options, pool, test, settings, &row));
  return row;
}

// LAYER=P[+LAYER=P...]: the model trained again from the same seed in fp32 but for those layers'
// products, each in its P (its cfg's precision key, as --layer-precision writes it): what the
// layer alone costs, or a set of widths (precision --sweep --fit-weights).
Result<PrecisionRow> layer_row(const Model& model, const TrainOptions& options, const std::string& spec,
                               ThreadPool& pool, const Dataset& train, const Dataset& test,
                               const PrecisionSettings& settings) {
  RG_ASSIGN(const CfgDocument cfg, with_layer_precisions(model.cfg(), layer_row_list(spec)));
  RG_ASSIGN(std::unique_ptr<Model> net, Model::from_cfg(cfg));
  RG_TRY(net->init(options.seed));
  std::fprintf(options.log, "\nprecision %s: training the same model from the same seed, those layers in their precisions\n",
               spec.c_str());
  RG_ASSIGN(TrainedCopy run, train_copy(std::move(net), options, pool, train, nullptr));
  PrecisionRow row;
  row.precision = spec;
  row.train_samples_per_s = run.samples_per_s;
  row.what_ran = "as the fp32 row but the products of " + layer_row_list(spec);
  row.layers = layer_list(*run.net, "f32", "f32");
  RG_TRY(score_copy(run, options, pool, test, settings, &row));
  return row;
}

// `source` on the int8 engine, with int8.ranges or, without them, ranges calibrated on the first
// training samples; scored by `evaluator` (the fp32 model's, same cfg). Fills the scores, bytes
// and layers; the caller names the row.
Result<PrecisionRow> int8_row(Model& source, const Int8Options& int8, Trainer& evaluator, ThreadPool& pool,
                              const Dataset& train, const Dataset& test, const PrecisionSettings& settings) {
  Tensor calibration;
  if (int8.ranges.empty()) {
    const int64_t count = std::min<int64_t>(train.size(), settings.infer_batch * int8.calibration_batches);
    RG_ASSIGN(calibration, train.first_samples(count));
  }
  RG_ASSIGN(std::unique_ptr<Int8Model> net, Int8Model::quantize(source, calibration, settings.infer_batch, int8, &pool));
  Int8Executor runner(*net, &pool);
  RG_TRY(runner.reserve(settings.infer_batch));
  PrecisionRow row;
  row.weight_bytes = runner.weight_bytes();
  row.weight_payload_bytes = net->weight_payload_bytes();
  row.memory_bytes = row.weight_bytes + runner.reserved_bytes(settings.infer_batch).total();
  row.layers = net->precisions();
  RG_TRY(fill_scores(&row, evaluator.evaluate(test, &runner), source.target() != TargetKind::input));
  return row;
}

// " (4-bit weights, two a byte on the GEMM path; 4-bit activations)" for fewer bits, else nothing.
std::string weight_bits_text(const Int8ExportPrecision& form) {
  std::string parts;
  if (form.weight_bits != 8) {
    parts = std::to_string(form.weight_bits) + "-bit weights" + (form.weight_bits <= 4 ? ", two a byte on the GEMM path" : "");
  }
  if (form.activation_bits != 8) parts += (parts.empty() ? "" : "; ") + std::to_string(form.activation_bits) + "-bit activations";
  return parts.empty() ? "" : " (" + parts + ")";
}

// int8, w<B>a8-ptq: post-training quantization of the trained fp32 model, calibrated.
Result<PrecisionRow> ptq_row(Model& model, const Int8ExportPrecision& form, Trainer& evaluator, ThreadPool& pool,
                             const Dataset& train, const Dataset& test, const PrecisionSettings& settings) {
  Int8Options int8 = settings.int8;
  int8.weight_bits = form.weight_bits;
  int8.activation_bits = form.activation_bits;
  RG_ASSIGN(PrecisionRow row, int8_row(model, int8, evaluator, pool, train, test, settings));
  row.precision = form.name;
  row.what_ran = "int8 PTQ" + weight_bits_text(form) + ": " + int8_gemm_count(row.layers) + ", " +
                 calibration_name(settings.int8.calibration) + " calibration";
  return row;
}

// int8-qat, w<B>a8-qat: the fp32 run's last epochs again, or a fine-tune of it, through fake
// quantization (train_qat), exported with the ranges it learned; train samples/s is its epochs'.
Result<PrecisionRow> qat_row(Model& model, const Int8ExportPrecision& form, const TrainOptions& options,
                             const Checkpoint* start, Trainer& evaluator, ThreadPool& pool, const Dataset& train,
                             const Dataset& test, const PrecisionSettings& settings) {
  RG_ASSIGN(TrainedCopy tuned, train_qat(model, options, form, settings.qat, start, pool, train));
  Int8Options int8 = settings.int8;
  int8.ranges = tuned.trainer->fake_quantizer()->ranges();
  int8.weight_bits = form.weight_bits;
  int8.activation_bits = form.activation_bits;
  RG_ASSIGN(PrecisionRow row, int8_row(*tuned.net, int8, evaluator, pool, train, test, settings));
  row.precision = form.name;
  row.what_ran = "int8 QAT" + weight_bits_text(form) + ": " + int8_gemm_count(row.layers) + ", " +
                 qat_text(settings.qat, options);
  row.train_samples_per_s = tuned.samples_per_s;
  return row;
}

}  // namespace

Result<std::vector<PrecisionRow>> precision_rows(Model& model, const TrainOptions& options, ThreadPool& pool,
                                                 const Dataset& train, const Dataset& test,
                                                 double train_samples_per_s, const PrecisionSettings& settings,
                                                 const Checkpoint* qat_start) {
  const bool classifies = model.target() != TargetKind::input;
  TrainOptions eval_options = options;
  eval_options.batch = settings.infer_batch;
  eval_options.checkpoint_path.clear();
  // Scores the f32 model and the int8 engine at the inference batch (and reserves the f32 model
  // for calibration).
  Trainer evaluator(model, pool, eval_options);
  RG_TRY(evaluator.prepare());
  std::vector<PrecisionRow> rows;
  for (const std::string& precision : settings.precisions) {
    if (precision == "fp32") {
      RG_ASSIGN(PrecisionRow row, fp32_row(model, evaluator, test, train_samples_per_s, settings));
      rows.push_back(row);
    } else if (precision.find('=') != std::string::npos) {  // LAYER=P
      RG_ASSIGN(PrecisionRow row, layer_row(model, options, precision, pool, train, test, settings));
      rows.push_back(row);
    } else if (!names_int8_export(precision)) {  // fp16 and the fixed-point ones
      RG_ASSIGN(PrecisionRow row, retrained_row(model, options, precision, pool, train, test, settings));
      rows.push_back(row);
    } else {
      RG_ASSIGN(const Int8ExportPrecision form, parse_int8_export_precision(precision));
      RG_ASSIGN(PrecisionRow row, form.qat ? qat_row(model, form, options, qat_start, evaluator, pool, train, test, settings)
                                           : ptq_row(model, form, evaluator, pool, train, test, settings));
      rows.push_back(row);
    }
  }
  for (const PrecisionRow& fp32 : rows) {
    if (fp32.precision != "fp32") continue;
    for (PrecisionRow& row : rows) {
      row.change = classifies ? 100.0 * (row.test_accuracy - fp32.test_accuracy) : row.test_mse - fp32.test_mse;
    }
  }
  return rows;
}

std::string precision_table(const std::vector<PrecisionRow>& rows, int64_t infer_batch) {
  std::ostringstream os;
  const bool classifies = rows.empty() || rows.front().classifies;
  int what_width = 57, name_width = 10;  // the columns fit the longest row
  for (const PrecisionRow& r : rows) {
    what_width = std::max(what_width, static_cast<int>(r.what_ran.size()));
    name_width = std::max(name_width, static_cast<int>(r.precision.size()));
  }
  char line[1024];
  std::snprintf(line, sizeof line, "  %-*s %-*s %12s %12s %9s %9s %12s %12s\n", name_width, "precision", what_width,
                "what ran",
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
    std::snprintf(line, sizeof line, "  %-*s %-*s %12s %12.0f %9s %9s %12s %12s\n", name_width, r.precision.c_str(),
                  what_width, r.what_ran.c_str(), train, r.infer_samples_per_s, score, change,
                  format_bytes(r.weight_bytes).c_str(), format_bytes(r.memory_bytes).c_str());
    os << line;
  }
  os << "  (inference at batch " << infer_batch << " on " << isa_name(active_isa()) << "; int8 GEMM "
     << qs8_gemm_kernel(active_isa()).name << "; fp16, int8-train and the other fixed-point rows train the same model again from "
     << "the same seed; int8-qat trains through fake int8 from the fp32 run (how, in its row: its last epochs again, the same "
     << "steps and rates, so its change is what quantization costs; or a fine-tune of the trained model, whose "
     << "change includes what the extra training gains) and exports it with the ranges it learned, train smp/s "
     << "being those epochs'; train smp/s '-': int8 did not train, its weights are the fp32 "
     << "run's; infer memory: weights and the activation buffers of one inference batch)\n";
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
    if (r.weight_payload_bytes >= 0) j["weight_payload_bytes"] = r.weight_payload_bytes;
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
