// The int8 model's stages but the direct conv (int8_conv_pairs.cpp): quantize, dequantize, the
// patch rows (int8_patches.h) + qs8_gemm stage of conv and dense layers, the depthwise conv, int8
// max pooling, the int8 add, and f32 layers as they are (a graph model's add or concat of several f32 inputs among them).
#include "quant/int8_stages.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#if defined(__SSE2__)
#include <emmintrin.h>  // the baseline's own instructions (quantize_s8_rows)
#endif

#include "base/check.h"
#include "cpu/kernel_tables.h"
#include "nn/layer.h"
#include "nn/merge_layers.h"
#include "ops/depthwise.h"
#include "ops/pool2d.h"
#include "quant/int8_model.h"
#include "quant/int8_patches.h"

namespace rg {

// quantize_s8's arithmetic (quant_params.h), bit for bit, 16 values at a time on SSE2 (the
// x86 baseline): x * (1 / scale) clamped to [-256, 255] first (maxps gives -256 for NaN), which
// changes no result (past those bounds the final clamp gives p.hi or p.lo whatever the zero
// point); cvtps2dq rounds in the current rounding mode as nearbyint does (to nearest even);
// the int16 lanes are clamped to [p.lo, p.hi] (a grid narrower than int8: pminsw/pmaxsw), the
// saturating packs do the rest.
void quantize_s8_rows(int64_t n, const float* x, QuantParams p, int8_t* q) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 inverse = _mm_set1_ps(1.0f / p.scale), low = _mm_set1_ps(-256.0f), high = _mm_set1_ps(255.0f);
  const __m128i zero_point = _mm_set1_epi32(p.zero_point);
  const __m128i grid_lo = _mm_set1_epi16(static_cast<int16_t>(p.lo)), grid_hi = _mm_set1_epi16(static_cast<int16_t>(p.hi));
  auto four = [&](const float* v) {
    const __m128 r = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_loadu_ps(v), inverse), low), high);
    return _mm_add_epi32(_mm_cvtps_epi32(r), zero_point);
  };
  auto eight = [&](const float* v) {
    return _mm_min_epi16(_mm_max_epi16(_mm_packs_epi32(four(v), four(v + 4)), grid_lo), grid_hi);
  };
  for (; i + 16 <= n; i += 16) {
    const __m128i a = eight(x + i);
    const __m128i b = eight(x + i + 8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm_packs_epi16(a, b));
  }
#endif
  quantize_s8(n - i, x + i, p, q + i);
}

namespace {

class QuantizeStage : public Int8Stage {
 public:
  QuantizeStage(QuantParams p, const Shape& shape) : params_(p) { out_shape = shape; }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const int64_t per = out_shape.numel();
    parallel_for(pool, x.shape()[0], 16, [&](int64_t b, int64_t e) {
      quantize_s8_rows((e - b) * per, x.f32() + b * per, params_, y.data<int8_t>() + b * per);
    });
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "quantize (scale " << params_.scale << ", zero point " << params_.zero_point << ")";
    return os.str();
  }

 private:
  QuantParams params_;
};

class DequantizeStage : public Int8Stage {
 public:
  DequantizeStage(QuantParams p, const Shape& shape) : params_(p) {
    out_shape = shape;
    out_dtype = DType::f32;
  }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const int64_t per = out_shape.numel();
    parallel_for(pool, x.shape()[0], 16, [&](int64_t b, int64_t e) {
      dequantize_s8((e - b) * per, x.data<int8_t>() + b * per, params_, y.f32() + b * per);
    });
  }
  std::string describe() const override { return "dequantize"; }

 private:
  QuantParams params_;
};

// A conv or dense layer (with its BN and ReLU) as int8 patch rows (Int8Patches) and qs8_gemm.
// Dense is the 1x1 convolution of a [1, 1, in] image.
class GemmStage : public Int8Stage {
 public:
  // w [k x n] and bias [n] in f32 after BN folding; returns why the layer cannot run in int8.
  static Result<std::unique_ptr<GemmStage>> build(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                  const Qs8OutputStage& o, QuantParams in, Isa isa,
                                                  const std::string& name, int weight_bits) {
    auto stage = std::unique_ptr<GemmStage>(new GemmStage());
    stage->geometry_ = g;
    const int64_t k = g.patch_size(), n = static_cast<int64_t>(q.size()) / k;
    stage->out_shape = g.patches() == 1 && g.kernel == 1 ? Shape{n} : Shape{g.out_h, g.out_w, n};
    stage->output_ = o;
    stage->patches_ = Int8Patches(g, static_cast<int8_t>(in.zero_point));
    const std::vector<int8_t> rows = stage->patches_.weights(q, n);  // a pointwise conv's: q itself
    auto packed = pack_qs8_weights(stage->patches_.depth(), n, rows.data(), qs8_gemm_kernel_for(isa, n).nr,
                                   name + " int8 weights", weight_bits <= 4 ? 4 : 8);
    if (!packed.ok()) return packed.status();
    stage->weights_ = packed.take();
    stage->isa_ = isa;
    return stage;
  }

  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const ConvGeometry& g = geometry_;
    const int64_t n = x.shape()[0], filters = weights_.n;
    const int64_t in_sample = g.height * g.width * g.channels, out_sample = g.patches() * filters;
    const int8_t* in = x.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    if (direct()) {  // the input rows are the patch rows
      qs8_gemm(isa_, n * g.patches(), in, qs8_padded_depth(g.patch_size()), weights_, output_, out, filters, pool);
      return;
    }
    const int64_t chunk = chunk_samples(n), rows_bytes = g.patches() * patches_.depth();
    RG_CHECK(static_cast<int64_t>(scratch_.bytes()) >= chunk * per_sample(), "int8 conv not reserved for " << n);
    int8_t* rows = scratch_.data<int8_t>();
    int8_t* padded = rows + chunk * rows_bytes;  // each sample's copy for the row groups
    for (int64_t s0 = 0; s0 < n; s0 += chunk) {
      const int64_t count = std::min(chunk, n - s0);
      parallel_for(pool, count, 1, [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s)
          patches_.rows(in + (s0 + s) * in_sample, padded + s * patches_.scratch_bytes(), rows + s * rows_bytes);
      });
      qs8_gemm(isa_, count * g.patches(), rows, patches_.depth(), weights_, output_, out + s0 * out_sample, filters,
               pool);
    }
  }

  int64_t weight_bytes() const override { return static_cast<int64_t>(weights_.data.bytes()) + 3 * 4 * weights_.n; }
  Status reserve(int64_t batch) override {
    const int64_t bytes = scratch_bytes(batch);
    if (bytes == 0) return Status();
    if (scratch_.defined() && static_cast<int64_t>(scratch_.bytes()) >= bytes) return Status();
    auto t = Tensor::zeros(Shape{bytes}, DType::i8, "int8 patch rows and padded copies");
    if (!t.ok()) return t.status();
    scratch_ = t.take();
    return Status();
  }
  int64_t scratch_bytes(int64_t batch) const override { return direct() ? 0 : chunk_samples(batch) * per_sample(); }
  std::string describe() const override {
    std::ostringstream os;
    os << "int8 GEMM " << geometry_.patch_size() << " x " << weights_.n
       << (!direct() && patches_.row_groups() ? ", rows in 4-byte groups" : "") << " ("
       << qs8_kernel_for_packing(isa_, weights_.nr).name << ")";
    return os.str();
  }

 private:
  GemmStage() = default;

  bool direct() const { return geometry_.pointwise() && geometry_.patch_size() % 4 == 0; }
  // A sample's patch rows and its padded copy (Int8Patches).
  int64_t per_sample() const { return geometry_.patches() * patches_.depth() + patches_.scratch_bytes(); }
  // Samples per chunk: their patch rows and padded copies stay near 256 KB (in L2 while the GEMM reads it, also on
  // the 512 KB L2 of an Athlon 64; 1 MB measured 1-2 % slower on lenet here).
  int64_t chunk_samples(int64_t n) const {
    return std::max<int64_t>(1, std::min(n, (int64_t{1} << 18) / per_sample()));
  }

  ConvGeometry geometry_;
  Qs8PackedWeights weights_;
  Qs8OutputStage output_;
  Isa isa_ = Isa::reference;
  Int8Patches patches_;
  Tensor scratch_;  // i8: [chunk][patches x depth] rows, then [chunk] padded copies
};

// A depthwise conv (its BN folded, a ReLU in the clamp; plan path depthwise): per output pixel,
// each channel's int32 sum over its taps of x * w (rows through ops/depthwise.h's indirection,
// padding reading the input's zero point, which the bias has folded in), requantized by the
// kernel table's row requantization of `isa`. The same bits as the GEMM stage of gemm_weights().
class DepthwiseStage : public Int8Stage {
 public:
  DepthwiseStage(const Int8StagePlan& plan, Isa isa)
      : geometry_(plan.geometry), weights_(plan.weights), output_(plan.output), zero_point_(plan.params.zero_point),
        requantize_(qs8_gemm_kernel(isa).requantize) {
    out_shape = Shape{geometry_.out_h, geometry_.out_w, geometry_.channels};
  }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const ConvGeometry& g = geometry_;
    const int64_t c = g.channels, in_sample = g.height * g.width * c, out_sample = g.patches() * c;
    const int64_t taps = g.kernel * g.kernel;
    const int8_t* images = x.data<int8_t>();
    depthwise_each_row(
        pool, x.shape()[0], g.out_h, g.out_w * taps, c, static_cast<int8_t>(zero_point_),
        [&](int64_t s, int64_t r, const int8_t* pad, const int8_t** rows) {
          depthwise_forward_row(g, r, images + s * in_sample, pad, rows);
        },
        [&](int64_t s, int64_t r, const int8_t* const* rows) {
          std::vector<int32_t> acc(static_cast<size_t>(c));  // a row's pixels one after another
          int8_t* out = y.data<int8_t>() + s * out_sample + r * g.out_w * c;
          for (int64_t p = 0; p < g.out_w; ++p) {
            sums(rows + p * taps, acc.data());
            requantize_(c, acc.data(), output_.bias.data(), output_.multiplier.data(), output_.shift.data(),
                        output_.zero_point, output_.lo, output_.hi, out + p * c);
          }
        });
  }
  int64_t weight_bytes() const override { return static_cast<int64_t>(weights_.size()) + 3 * 4 * geometry_.channels; }
  std::string describe() const override {
    return "int8 depthwise " + std::to_string(geometry_.kernel) + "x" + std::to_string(geometry_.kernel) + " x " +
           std::to_string(geometry_.channels);
  }

 private:
  // acc[ch] = sum over taps in order of rows[t][ch] * w[t][ch]: channels innermost (the compiler
  // vectorises); |acc| <= taps * 128 * 127 stays far inside int32.
  void sums(const int8_t* const* rows, int32_t* acc) const {
    const int64_t c = geometry_.channels, taps = geometry_.kernel * geometry_.kernel;
    std::fill(acc, acc + c, 0);
    for (int64_t t = 0; t < taps; ++t) {
      const int8_t* x = rows[t];
      const int8_t* w = weights_.data() + t * c;
      for (int64_t ch = 0; ch < c; ++ch) acc[ch] += int32_t{x[ch]} * int32_t{w[ch]};
    }
  }

  ConvGeometry geometry_;
  std::vector<int8_t> weights_;  // [kernel^2 x channels]
  Qs8OutputStage output_;
  int32_t zero_point_;  // the input's: what padding reads
  Qs8RequantizeRow requantize_;
};

class MaxPoolStage : public Int8Stage {
 public:
  explicit MaxPoolStage(const ConvGeometry& g) : geometry_(g) { out_shape = Shape{g.out_h, g.out_w, g.channels}; }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const ConvGeometry& g = geometry_;
    const int64_t in_sample = g.height * g.width * g.channels, out_sample = out_shape.numel();
    const bool two_by_two = g.kernel == 2 && g.stride == 2 && g.pad == 0;
    parallel_for(pool, x.shape()[0], 8, [&](int64_t b, int64_t e) {
      for (int64_t s = b; s < e; ++s) {
        const int8_t* in = x.data<int8_t>() + s * in_sample;
        int8_t* out = y.data<int8_t>() + s * out_sample;
        if (two_by_two) {
          pool_2x2(in, out);
        } else {
          pool_forward_rows(g, in, out, int8_t{-128}, [](int64_t c, const int8_t* px, int8_t* py) {
            for (int64_t ch = 0; ch < c; ++ch) py[ch] = std::max(py[ch], px[ch]);
          });
        }
      }
    });
  }
  std::string describe() const override { return "int8 max pooling"; }

 private:
  // 2x2 windows of stride 2 (every window inside the image): the max of two rows, then of
  // neighbouring pixels, in loops the compiler vectorizes.
  void pool_2x2(const int8_t* in, int8_t* out) const {
    const ConvGeometry& g = geometry_;
    const int64_t c = g.channels, row = g.width * c, pair = 2 * c;
    int8_t rows[4096];
    const bool fits = 2 * g.out_w * c <= static_cast<int64_t>(sizeof rows);
    for (int64_t oh = 0; oh < g.out_h; ++oh, out += g.out_w * c) {
      const int8_t* r0 = in + 2 * oh * row;
      const int8_t* r1 = r0 + row;
      if (!fits) {
        for (int64_t ow = 0; ow < g.out_w; ++ow)
          for (int64_t ch = 0; ch < c; ++ch) {
            const int64_t i = ow * pair + ch;
            out[ow * c + ch] = std::max(std::max(r0[i], r0[i + c]), std::max(r1[i], r1[i + c]));
          }
        continue;
      }
      for (int64_t i = 0; i < g.out_w * pair; ++i) rows[i] = std::max(r0[i], r1[i]);
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int8_t* p = rows + ow * pair;
        int8_t* o = out + ow * c;
        for (int64_t ch = 0; ch < c; ++ch) o[ch] = std::max(p[ch], p[ch + c]);
      }
    }
  }

  ConvGeometry geometry_;
};

class AddStage : public Int8Stage {
 public:
  AddStage(const Qs8AddParams& params, const Shape& shape) : params_(params) { out_shape = shape; }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    (void)x, (void)y, (void)pool;
    RG_CHECK(false, "the int8 add reads two inputs (run_inputs)");
  }
  void run_inputs(const std::vector<Tensor>& xs, const Tensor& y, ThreadPool* pool) override {
    RG_CHECK(xs.size() == 2, "the int8 add of " << xs.size() << " inputs");
    const int64_t per = out_shape.numel();
    parallel_for(pool, y.shape()[0], 16, [&](int64_t b, int64_t e) {
      qs8_add((e - b) * per, xs[0].data<int8_t>() + b * per, xs[1].data<int8_t>() + b * per, params_,
              y.data<int8_t>() + b * per);
    });
  }
  std::string describe() const override { return "int8 add"; }

 private:
  Qs8AddParams params_;
};

// A layer of the f32 model run as it is (inference mode).
class F32Stage : public Int8Stage {
 public:
  F32Stage(Layer* layer, const Shape& in_shape, const Shape& shape)
      : layer_(layer), merge_(dynamic_cast<MergeLayer*>(layer)), in_shape_(in_shape) {
    out_shape = shape;
    out_dtype = DType::f32;
  }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    LayerContext ctx{pool, false};
    layer_->forward(x.reshaped(in_shape_.batched(x.shape()[0])), y, ctx);
  }
  void run_inputs(const std::vector<Tensor>& xs, const Tensor& y, ThreadPool* pool) override {
    if (merge_ == nullptr) return run(xs[0], y, pool);
    LayerContext ctx{pool, false};
    merge_->forward_inputs(xs, y, ctx);  // it reads rows of values: the inputs' shapes do not matter
  }
  int64_t weight_bytes() const override {
    int64_t bytes = 0;
    for (Param* p : layer_->params()) bytes += static_cast<int64_t>(p->value.bytes());
    for (Param* p : layer_->buffers()) bytes += static_cast<int64_t>(p->value.bytes());
    return bytes;
  }
  std::string describe() const override { return "f32 " + layer_->kind(); }

 private:
  Layer* layer_;
  MergeLayer* merge_;  // the layer, when it joins several inputs
  Shape in_shape_;
};

}  // namespace

std::unique_ptr<Int8Stage> make_quantize_stage(QuantParams p, const Shape& shape) {
  return std::make_unique<QuantizeStage>(p, shape);
}

std::unique_ptr<Int8Stage> make_dequantize_stage(QuantParams p, const Shape& shape) {
  return std::make_unique<DequantizeStage>(p, shape);
}

Result<std::unique_ptr<Int8Stage>> make_gemm_stage(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                   const Qs8OutputStage& o, QuantParams in, Isa isa,
                                                   const std::string& name, int weight_bits) {
  auto stage = GemmStage::build(g, q, o, in, isa, name, weight_bits);
  if (!stage.ok()) return stage.status();
  return std::unique_ptr<Int8Stage>(stage.take());
}

std::unique_ptr<Int8Stage> make_max_pool_stage(const ConvGeometry& g) { return std::make_unique<MaxPoolStage>(g); }

std::unique_ptr<Int8Stage> make_add_stage(const Qs8AddParams& params, const Shape& shape) {
  return std::make_unique<AddStage>(params, shape);
}

bool fusable_max_pool_2x2(const ConvGeometry& conv, const ConvGeometry& pool) {
  return pool.kernel == 2 && pool.stride == 2 && pool.pad == 0 && pool.height == conv.out_h &&
         pool.width == conv.out_w && pool.channels > 0 && pool.out_h == conv.out_h / 2 && pool.out_w == conv.out_w / 2;
}

std::unique_ptr<Int8Stage> make_f32_stage(Layer* layer, const Shape& in_shape, const Shape& out_shape) {
  return std::make_unique<F32Stage>(layer, in_shape, out_shape);
}

Result<std::unique_ptr<Int8Stage>> make_int8_stage(const Int8StagePlan& plan, Isa isa) {
  switch (plan.kind) {
    case Int8StageKind::quantize:
      return make_quantize_stage(plan.params, plan.out_shape);
    case Int8StageKind::dequantize:
      return make_dequantize_stage(plan.params, plan.out_shape);
    case Int8StageKind::max_pool:
      return make_max_pool_stage(plan.geometry);
    case Int8StageKind::add:
      return make_add_stage(plan.add, plan.out_shape);
    case Int8StageKind::f32:
      return make_f32_stage(plan.layer, plan.in_shape, plan.out_shape);
    case Int8StageKind::gemm:
      break;
  }
  switch (plan.path) {
    case Int8GemmPath::conv_pairs:
      return make_conv_pairs_stage(plan.geometry, plan.weights, plan.output, plan.params, plan.pool, isa);
    case Int8GemmPath::winograd:
      return make_winograd_stage(plan.geometry, plan.weights, plan.output, plan.params, plan.pool, isa, plan.name);
    case Int8GemmPath::depthwise:
      return std::unique_ptr<Int8Stage>(new DepthwiseStage(plan, isa));
    case Int8GemmPath::gemm:
      break;
  }
  return make_gemm_stage(plan.geometry, plan.weights, plan.output, plan.params, isa, plan.name, plan.weight_bits);
}

}  // namespace rg
