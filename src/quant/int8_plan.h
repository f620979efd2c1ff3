// What an Int8Model runs, engine-neutral: one description per stage, in order, as
// Int8Model::quantize chose them; each names the earlier stages it reads (a graph model's stage
// may read any of them, not only the one before it). The CPU builds its stages from it (make_int8_stage,
// int8_stages.h); other engines (the OpenCL one: opencl/model/cl_int8_model.h) read the same
// weights and requantization from it and must give the same bits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/im2col.h"
#include "ops/qs8_add.h"
#include "ops/quant_params.h"
#include "quant/qs8_gemm.h"
#include "tensor/tensor.h"

namespace rg {

class Layer;

enum class Int8StageKind {
  quantize,    // f32 -> int8 by params
  dequantize,  // int8 -> f32 by params
  gemm,        // conv or dense: im2col (padding reads as params.zero_point) and the int8 GEMM
  max_pool,    // int8 max pooling over geometry
  add,         // a graph model's sum of two int8 stages' outputs (ops/qs8_add.h), by `add`
  f32,         // layer as it is, f32 [n, in_shape...] -> [n, out_shape...]
};

// How the CPU runs a gemm stage; every path gives the bits of im2col + qs8_gemm_ref of
// gemm_weights() (and of a 2x2 max pooling after it when pool is set). depthwise: a depthwise
// conv's own stage (weights [kernel^2 x channels], output channel ch reading input channel ch).
enum class Int8GemmPath { gemm, conv_pairs, winograd, depthwise };

struct Int8StagePlan {
  Int8StageKind kind = Int8StageKind::quantize;
  // quantize / dequantize: their parameters; gemm: the input's (its zero point is the padding).
  QuantParams params;
  // gemm: the conv's (dense: the 1x1 conv of a [1, 1, inputs] image); max_pool: the pooling's.
  ConvGeometry geometry;
  // gemm: int8 weights [patch_size x filters] (depthwise: [kernel^2 x channels]), row major, and
  // their requantization.
  std::vector<int8_t> weights;
  int weight_bits = 8;  // gemm: their grid's (weight_qmax); <= 4: the CPU's GEMM stage holds them two a byte
  Qs8OutputStage output;
  Int8GemmPath path = Int8GemmPath::gemm;
  // gemm: a 2x2 stride-2 max pooling over the conv's output is fused (fusable_max_pool_2x2).
  bool pool = false;
  ConvGeometry pool_geometry;  // that pooling's, when pool
  // add: its inputs' and output's constants (a relu after it fused as the clamp).
  Qs8AddParams add;
  // f32: the model's layer (outlives the plan) and its input shape (one sample).
  Layer* layer = nullptr;
  Shape in_shape;
  Shape out_shape;   // one sample of the stage's output
  std::string name;  // the layer's, for errors
  // The stages whose outputs this one reads, in order, by index in the plan (always earlier);
  // -1 the model's input. One, but for the f32 stage of a layer that joins several (add, concat).
  std::vector<int> inputs;

  // gemm: the weights' payload at their bits, stored 8 or (up to 4 bits) 4 a value: what a model
  // file of them holds, before any path's own layout (the GEMM's panel padding, Winograd's
  // transformed int16, the direct conv's pairs: Int8Stage::weight_bytes has those).
  int64_t weight_payload_bytes() const {
    return (static_cast<int64_t>(weights.size()) * (weight_bits <= 4 ? 4 : 8) + 7) / 8;
  }
  // gemm: the output channels.
  int64_t filters() const {
    if (path == Int8GemmPath::depthwise) return geometry.channels;
    const int64_t k = geometry.patch_size();
    return k > 0 ? static_cast<int64_t>(weights.size()) / k : 0;
  }
  // gemm: the weights as a GEMM over patches reads them, [patch_size x filters]; a depthwise
  // conv's as the conv whose filter ch reads input channel ch alone (zeros elsewhere): the same
  // products, so the same bits (what an engine without a depthwise kernel runs, and its test).
  std::vector<int8_t> gemm_weights() const {
    if (path != Int8GemmPath::depthwise) return weights;
    const int64_t c = geometry.channels, taps = geometry.kernel * geometry.kernel;
    std::vector<int8_t> full(static_cast<size_t>(taps * c * c), 0);
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t ch = 0; ch < c; ++ch)
        full[static_cast<size_t>((t * c + ch) * c + ch)] = weights[static_cast<size_t>(t * c + ch)];
    return full;
  }
};

}  // namespace rg
