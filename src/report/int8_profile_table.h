// eval --int8 --profile's report: each stage of the int8 model (quant/int8_model.h) with its
// time per batch and per sample, its share of the stages' time, and for a conv or dense stage
// its int8 GOP/s, counting the products of the direct convolution or GEMM it stands for (2 ops a
// multiply-add) whatever its path does (Winograd's products are fewer): what to aim a kernel
// change at, and how two machines or two ISA levels compare per stage.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "quant/int8_model.h"

namespace rg {

struct Int8ProfileRow {
  std::string layer;  // the plan's name: the layer the stage came from ("" for quantize and dequantize)
  std::string stage;  // Int8Model::stage_description
  double ms_per_call = 0, us_per_sample = 0, share = 0;
  double gops = 0;  // NAN: the stage counts no products (quantize, pooling, add)
};

struct Int8ProfileReport {
  std::vector<Int8ProfileRow> rows;
  int64_t samples = 0, calls = 0;
  double stage_seconds = 0;  // every stage together
};

// The products (multiply-adds) of one sample through plan's stage: a conv or dense stage's
// direct count, an f32 stage's layer's (Layer::forward_flops_per_sample / 2); 0 otherwise.
int64_t int8_stage_products_per_sample(const Int8StagePlan& plan);

Int8ProfileReport summarize_int8_profile(const Int8Model& model, const Int8StageTimes& times);
std::string int8_profile_text(const Int8ProfileReport& report);
nlohmann::json int8_profile_json(const Int8ProfileReport& report);

}  // namespace rg
