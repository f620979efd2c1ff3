// The per-precision report of `train --precision` and `retrograd precision`: the trained f32
// model run (and, where the precision has its own training, trained) in each precision, one
// table row each: what ran in which precision, train and inference samples/s, test accuracy
// or MSE and its change against fp32, weight bytes, and the tensor memory of inference.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "quant/fake_quant.h"
#include "quant/int8_model.h"
#include "train/trainer.h"

namespace rg {

// Declares --precision, --infer-batch, --calibration, --percentile, --calib-batches, --keep-f32,
// --qat-mode, --qat-epochs, --qat-lr-scale.
void declare_precision_options(Args& args, const char* default_precisions);

struct PrecisionSettings {
  std::vector<std::string> precisions;  // "fp32", "int8"
  int64_t infer_batch = 256;
  Int8Options int8;
  QatFineTune qat;  // int8-qat: how it comes from the fp32 run
  // int8-qat is asked for in QatStart::last_epochs: it needs the fp32 run's state qat.epochs
  // before the run's end.
  bool qat_reruns_last_epochs() const;
};
// The options read and checked; an unknown or not yet built precision is an error naming it.
Result<PrecisionSettings> precision_settings(const Args& args);
// The LAYER=P rows name layers of `cfg` of a kind a precision applies to (before any training).
Status check_layer_rows(const PrecisionSettings& settings, const CfgDocument& cfg);

struct PrecisionRow {
  std::string precision;      // "fp32", "int8"
  std::string what_ran;       // "all f32", "int8 PTQ: 5 of 5 conv/dense int8, minmax calibration"
  double train_samples_per_s = 0;  // 0: this precision did not train (post-training quantization);
                                   // int8-qat: its fine-tune's
  double infer_samples_per_s = 0;
  bool classifies = true;
  double test_accuracy = 0, test_mse = 0;
  double change = 0;          // against fp32: accuracy points (x100) or MSE difference
  int64_t weight_bytes = 0;
  // The int8 engine's rows: the quantized weight values alone (Int8Model::weight_payload_bytes:
  // w4a8's half of int8's); -1 in other rows.
  int64_t weight_payload_bytes = -1;
  int64_t memory_bytes = 0;   // inference at infer_batch: weights and activation buffers
  std::vector<LayerPrecision> layers;
};

// `model` trained in f32 (train_samples_per_s its training speed); fills one row per precision.
// `qat_start`: the f32 run's state settings.qat.epochs before its end (Trainer::snapshot), needed
// when settings.qat_reruns_last_epochs().
Result<std::vector<PrecisionRow>> precision_rows(Model& model, const TrainOptions& options, ThreadPool& pool,
                                                 const Dataset& train, const Dataset& test,
                                                 double train_samples_per_s, const PrecisionSettings& settings,
                                                 const Checkpoint* qat_start);

// The table, then each non-f32 precision's per-layer list.
std::string precision_table(const std::vector<PrecisionRow>& rows, int64_t infer_batch);
nlohmann::json precision_json(const std::vector<PrecisionRow>& rows);
std::string precision_csv(const std::vector<PrecisionRow>& rows);

}  // namespace rg
