// The stages an Int8Model runs one after another (Int8Model::quantize picks and orders them):
// each maps a batch of activations [n, in shape...] to [n, out_shape...], in int8 (with the
// scale and zero point quantize chose for that point of the model) or in f32. The classes are
// private to their .cpp files; these factories are all the model sees.
//   quantize       f32 -> int8, entering the int8 domain
//   dequantize     int8 -> f32, leaving it (before an f32 layer and at the model's end)
//   GEMM           conv or dense (BN folded, ReLU in the clamp): patch rows and qs8_gemm
//   max pooling    int8 -> int8 with the same scale and zero point (max commutes with them)
//   add            two int8 inputs -> their int8 sum (ops/qs8_add.h; run_inputs)
//   conv pairs     a direct single-channel conv, optionally with a 2x2 max pooling fused
//   Winograd       a 3x3 stride-1 conv by integer Winograd F(2x2, 3x3)
//   f32            a layer of the f32 model as it is
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "ops/im2col.h"
#include "ops/quant_params.h"
#include "quant/int8_plan.h"
#include "quant/qs8_gemm.h"
#include "tensor/tensor.h"

namespace rg {

class Layer;

class Int8Stage {
 public:
  virtual ~Int8Stage() = default;
  // x [n, ...] in the stage's input dtype -> y [n, out_shape...] in out_dtype.
  virtual void run(const Tensor& x, const Tensor& y, ThreadPool* pool) = 0;
  // Its inputs (Int8StagePlan::inputs) -> y: run(xs[0]) but for a stage that joins several.
  virtual void run_inputs(const std::vector<Tensor>& xs, const Tensor& y, ThreadPool* pool) { run(xs[0], y, pool); }
  virtual int64_t weight_bytes() const { return 0; }
  // Scratch for batches of up to `batch` samples, through the counted allocator: scratch_bytes(batch).
  virtual Status reserve(int64_t batch) {
    (void)batch;
    return Status();
  }
  virtual int64_t scratch_bytes(int64_t batch) const {
    (void)batch;
    return 0;
  }
  virtual std::string describe() const = 0;
  Shape out_shape;
  DType out_dtype = DType::i8;
};

// f32 [n, shape...] -> int8 by p (quantize_s8_rows).
std::unique_ptr<Int8Stage> make_quantize_stage(QuantParams p, const Shape& shape);
// int8 [n, shape...] -> f32 by p.
std::unique_ptr<Int8Stage> make_dequantize_stage(QuantParams p, const Shape& shape);

// A conv or dense layer as int8 patch rows (int8_patches.h) and qs8_gemm (dense: the 1x1 conv of a
// [1, 1, in] image). q: the int8 weights [patch_size x n], o their requantization, `in` the
// input's parameters (padding reads as its zero point); weights packed for `isa`'s tile, two a
// byte where weight_bits <= 4 (Qs8PackedWeights).
// int8 [n, height, width, channels] -> int8 [n, out_h, out_w, filters] ([n, filters] for dense).
// The error (packing the weights) is why the layer cannot run in int8.
Result<std::unique_ptr<Int8Stage>> make_gemm_stage(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                   const Qs8OutputStage& o, QuantParams in, Isa isa,
                                                   const std::string& name, int weight_bits = 8);

// int8 max pooling: [n, height, width, channels] -> [n, out_h, out_w, channels].
std::unique_ptr<Int8Stage> make_max_pool_stage(const ConvGeometry& g);

// The int8 add of two inputs [n, shape...] (run_inputs) -> [n, shape...], by qs8_add.
std::unique_ptr<Int8Stage> make_add_stage(const Qs8AddParams& params, const Shape& shape);

// A layer of the f32 model run as it is (inference mode): f32 [n, in_shape...] -> f32
// [n, out_shape...]; a layer that joins several inputs (add, concat) reads them all
// (run_inputs). `layer` must outlive the stage.
std::unique_ptr<Int8Stage> make_f32_stage(Layer* layer, const Shape& in_shape, const Shape& out_shape);

// The direct single-channel conv (int8_conv_pairs.cpp): no patch matrix, for first layers on
// grey images. Fits: one input channel, stride 1, a kernel of at most 11, rows of at most 512
// pixels.
bool conv_pairs_fits(const ConvGeometry& g);
// Whether `pool` is a 2x2 window of stride 2 over the conv's whole output, which the direct and
// the Winograd conv stages fuse.
bool fusable_max_pool_2x2(const ConvGeometry& conv, const ConvGeometry& pool);
// q: the int8 weights [kernel^2 x n], with their requantization; `pool`: the 2x2 max pooling
// fused (fusable_max_pool_2x2). int8 [n, height, width, 1] -> int8 [n, out_h, out_w, filters], or
// [n, out_h / 2, out_w / 2, filters] pooled: the same bits as the GEMM stage (and the pooling).
std::unique_ptr<Int8Stage> make_conv_pairs_stage(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                 const Qs8OutputStage& output, QuantParams in, bool pool, Isa isa);

// A 3x3 stride-1 conv (winograd_fits, int8_winograd.h) by integer Winograd F(2x2, 3x3)
// (int8_winograd.cpp): the GEMM stage's operands (q [9 * channels x filters], its output stage
// with the input's zero point folded into the bias, `in`: padding reads as its zero point) and
// the same bits. int8 [n, height, width, channels] -> int8 [n, out_h, out_w, filters], or with
// `pool` (fusable_max_pool_2x2) [n, out_h / 2, out_w / 2, filters]: the same bits as the pooling.
Result<std::unique_ptr<Int8Stage>> make_winograd_stage(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                       const Qs8OutputStage& output, QuantParams in, bool pool,
                                                       Isa isa, const std::string& name);

// The CPU stage a plan entry describes (a gemm by its path, weights packed for `isa`); its
// out_shape is the plan's. The error (packing, Winograd's range) is why it cannot run in int8.
Result<std::unique_ptr<Int8Stage>> make_int8_stage(const Int8StagePlan& plan, Isa isa);

}  // namespace rg
