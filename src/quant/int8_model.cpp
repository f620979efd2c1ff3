// Post-training quantization: calibration, BN folding, weight quantization, and the stages.
#include "quant/int8_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#if defined(__SSE2__)
#include <emmintrin.h>  // the baseline's own instructions (quantize_s8_rows)
#endif

#include "base/check.h"
#include "cpu/kernel_tables.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dense.h"
#include "nn/pooling.h"
#include "ops/pool2d.h"
#include "quant/fixed_point.h"
#include "quant/qs8_gemm.h"

namespace rg {

class Int8Stage {
 public:
  virtual ~Int8Stage() = default;
  // x [n, ...] in the stage's input dtype -> y [n, out_shape...] in out_dtype.
  virtual void run(const Tensor& x, const Tensor& y, ThreadPool* pool) = 0;
  virtual int64_t weight_bytes() const { return 0; }
  // Scratch for batches of up to `batch` samples, through the counted allocator.
  virtual Status reserve(int64_t batch) {
    (void)batch;
    return Status();
  }
  virtual int64_t scratch_bytes() const { return 0; }
  virtual std::string describe() const = 0;
  Shape out_shape;
  DType out_dtype = DType::i8;
};

Int8Model::~Int8Model() = default;

namespace {

// n bytes from src to dst, for the short runs of im2col (a kernel row of taps: 5 to a few
// hundred bytes): one fixed 16- or 32-byte move where src has that many readable bytes before
// src_end and dst has the slack (the bytes past n are overwritten by the next run or unused).
inline void copy_run(int8_t* dst, const int8_t* src, int64_t n, const int8_t* src_end) {
  if (n <= 16 && src + 16 <= src_end) {
    std::memcpy(dst, src, 16);
  } else if (n <= 32 && src + 32 <= src_end) {
    std::memcpy(dst, src, 32);
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n));
  }
}

}  // namespace

// quantize_s8's arithmetic (quant_params.h), bit for bit, 16 values at a time on SSE2 (the
// x86 baseline): x * (1 / scale) clamped to [-256, 255] first (maxps gives -256 for NaN), which
// changes no result (past those bounds the final clamp gives 127 or -128 whatever the zero
// point); cvtps2dq rounds in the current rounding mode as nearbyint does (to nearest even);
// the saturating packs are the clamp to [-128, 127].
void quantize_s8_rows(int64_t n, const float* x, QuantParams p, int8_t* q) {
  int64_t i = 0;
#if defined(__SSE2__)
  const __m128 inverse = _mm_set1_ps(1.0f / p.scale), low = _mm_set1_ps(-256.0f), high = _mm_set1_ps(255.0f);
  const __m128i zero_point = _mm_set1_epi32(p.zero_point);
  auto four = [&](const float* v) {
    const __m128 r = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_loadu_ps(v), inverse), low), high);
    return _mm_add_epi32(_mm_cvtps_epi32(r), zero_point);
  };
  for (; i + 16 <= n; i += 16) {
    const __m128i a = _mm_packs_epi32(four(x + i), four(x + i + 4));
    const __m128i b = _mm_packs_epi32(four(x + i + 8), four(x + i + 12));
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

// A conv's or dense layer's weights w [k x n] and bias [n] (f32 after BN folding) -> int8
// weights q [k x n] and the requantization; the error says why the layer cannot run in int8.
Status quantize_layer(int64_t k, const std::vector<double>& w, const std::vector<double>& bias, QuantParams in,
                      QuantParams out, bool relu, const std::string& name, std::vector<int8_t>* q_out,
                      Qs8OutputStage* o_out) {
  const int64_t n = static_cast<int64_t>(bias.size());
  std::vector<int8_t>& q = *q_out;
  q.assign(static_cast<size_t>(k * n), 0);
  Qs8OutputStage& o = *o_out;
  o = Qs8OutputStage();
  o.zero_point = out.zero_point;
  o.lo = relu ? out.zero_point : -128;
  o.hi = 127;
  for (int64_t j = 0; j < n; ++j) {
    double max_abs = 0;
    for (int64_t p = 0; p < k; ++p) max_abs = std::max(max_abs, std::fabs(w[static_cast<size_t>(p * n + j)]));
    const double scale = max_abs > 0 ? max_abs / 127.0 : 1.0;
    int64_t column_sum = 0;
    for (int64_t p = 0; p < k; ++p) {
      const double v = std::nearbyint(w[static_cast<size_t>(p * n + j)] / scale);
      const int8_t qv = static_cast<int8_t>(std::clamp(v, -127.0, 127.0));
      q[static_cast<size_t>(p * n + j)] = qv;
      column_sum += qv;
    }
    const double product_scale = static_cast<double>(in.scale) * scale;
    const double multiplier = product_scale / out.scale;
    if (!(multiplier < 1.0)) {
      return Status::error(name + ": output channel " + std::to_string(j) + "'s requantization multiplier " +
                           std::to_string(multiplier) + " is not below 1");
    }
    const double bias_q = std::nearbyint(bias[static_cast<size_t>(j)] / product_scale);
    const double folded = bias_q - static_cast<double>(in.zero_point) * static_cast<double>(column_sum);
    // |sum of products| <= k * 128 * 127: with the bias it must stay inside int32.
    if (std::fabs(folded) + static_cast<double>(k) * 128 * 127 >= 2147483647.0) {
      return Status::error(name + ": output channel " + std::to_string(j) + "'s int32 bias " +
                           std::to_string(folded) + " leaves no room for the sums");
    }
    const QuantMultiplier m = quantize_multiplier(multiplier);
    o.bias.push_back(static_cast<int32_t>(folded));
    o.multiplier.push_back(m.multiplier);
    o.shift.push_back(m.shift);
  }
  pad_columns(&o);
  return Status();
}

// A conv or dense layer (with its BN and ReLU) as im2col into int8 patches and qs8_gemm.
// Dense is the 1x1 convolution of a [1, 1, in] image.
class GemmStage : public Int8Stage {
 public:
  // w [k x n] and bias [n] in f32 after BN folding; returns why the layer cannot run in int8.
  static Result<std::unique_ptr<GemmStage>> build(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                  const Qs8OutputStage& o, QuantParams in, Isa isa,
                                                  const std::string& name) {
    auto stage = std::unique_ptr<GemmStage>(new GemmStage());
    stage->geometry_ = g;
    stage->in_ = in;
    const int64_t k = g.patch_size(), n = static_cast<int64_t>(q.size()) / k;
    stage->out_shape = g.patches() == 1 && g.kernel == 1 ? Shape{n} : Shape{g.out_h, g.out_w, n};
    stage->output_ = o;
    auto packed = pack_qs8_weights(k, n, q.data(), qs8_gemm_kernel_for(isa, n).nr, name + " int8 weights");
    if (!packed.ok()) return packed.status();
    stage->weights_ = packed.take();
    stage->isa_ = isa;
    return stage;
  }

  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const ConvGeometry& g = geometry_;
    const int64_t n = x.shape()[0], kpad = qs8_padded_depth(g.patch_size()), filters = weights_.n;
    const int64_t in_sample = g.height * g.width * g.channels, out_sample = g.patches() * filters;
    const int8_t* in = x.data<int8_t>();
    int8_t* out = y.data<int8_t>();
    if (direct()) {  // the input rows are the patch rows
      qs8_gemm(isa_, n * g.patches(), in, kpad, weights_, output_, out, filters, pool);
      return;
    }
    const int64_t chunk = chunk_samples(n);
    RG_CHECK(static_cast<int64_t>(patches_.bytes()) >= chunk * per_sample() + 32, "int8 conv not reserved for " << n);
    int8_t* patches = patches_.data<int8_t>();
    for (int64_t s0 = 0; s0 < n; s0 += chunk) {
      const int64_t count = std::min(chunk, n - s0);
      parallel_for(pool, count, 1, [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s) im2col(in + (s0 + s) * in_sample, patches + s * per_sample());
      });
      qs8_gemm(isa_, count * g.patches(), patches, kpad, weights_, output_, out + s0 * out_sample, filters, pool);
    }
  }

  int64_t weight_bytes() const override {
    return static_cast<int64_t>(weights_.data.bytes()) + 3 * 4 * weights_.n;
  }
  Status reserve(int64_t batch) override {
    if (direct()) return Status();
    const int64_t bytes = chunk_samples(batch) * per_sample() + 32;  // + slack for copy_run's fixed moves
    if (patches_.defined() && static_cast<int64_t>(patches_.bytes()) >= bytes) return Status();
    auto t = Tensor::zeros(Shape{bytes}, DType::i8, "int8 patch matrix");
    if (!t.ok()) return t.status();
    patches_ = t.take();
    return Status();
  }
  int64_t scratch_bytes() const override { return patches_.defined() ? static_cast<int64_t>(patches_.bytes()) : 0; }
  std::string describe() const override {
    std::ostringstream os;
    os << "int8 GEMM " << geometry_.patch_size() << " x " << weights_.n << " ("
       << qs8_kernel_for_packing(isa_, weights_.nr).name << ")";
    return os.str();
  }

 private:
  GemmStage() = default;

  bool direct() const { return geometry_.pointwise() && geometry_.patch_size() % 4 == 0; }
  int64_t per_sample() const { return geometry_.patches() * qs8_padded_depth(geometry_.patch_size()); }
  // Samples per chunk: their patch matrix stays near 1 MB (in L2 while the GEMM reads it).
  int64_t chunk_samples(int64_t n) const {
    return std::max<int64_t>(1, std::min(n, (int64_t{1} << 20) / per_sample()));
  }

  // One image [h, w, c] -> its patch rows [patches, kpad]; padding reads as the zero point
  // (the real value 0), and the bytes past k as 0 (they meet B's zero rows). The geometry is
  // read into locals first: the int8 stores may alias anything, so members would be reloaded
  // after every store.
  void im2col(const int8_t* image, int8_t* cols) const {
    const ConvGeometry& g = geometry_;
    const int64_t c = g.channels, kernel = g.kernel, stride = g.stride, pad = g.pad, height = g.height,
                  width = g.width, out_h = g.out_h, out_w = g.out_w, run = kernel * c, k = g.patch_size();
    const int64_t kpad = qs8_padded_depth(k);
    const int8_t* image_end = image + height * width * c;
    const int8_t zp = static_cast<int8_t>(in_.zero_point);
    for (int64_t oh = 0; oh < out_h; ++oh)
      for (int64_t ow = 0; ow < out_w; ++ow) {
        int8_t* row = cols + (oh * out_w + ow) * kpad;
        int8_t* const row_start = row;
        const int64_t left = ow * stride - pad;
        const bool columns_inside = left >= 0 && left + kernel <= width;
        for (int64_t kh = 0; kh < kernel; ++kh, row += run) {
          const int64_t ih = oh * stride - pad + kh;
          if (ih < 0 || ih >= height) {
            std::fill(row, row + run, zp);
          } else if (columns_inside) {  // the kernel's row of taps is one run of the image row
            copy_run(row, image + (ih * width + left) * c, run, image_end);
          } else {
            for (int64_t kw = 0; kw < kernel; ++kw) {
              const int64_t iw = left + kw;
              if (iw < 0 || iw >= width) {
                std::fill(row + kw * c, row + (kw + 1) * c, zp);
              } else {
                std::copy(image + (ih * width + iw) * c, image + (ih * width + iw + 1) * c, row + kw * c);
              }
            }
          }
        }
        for (int64_t p = k; p < kpad; ++p) row_start[p] = 0;
      }
  }

  ConvGeometry geometry_;
  QuantParams in_;
  Qs8PackedWeights weights_;
  Qs8OutputStage output_;
  Isa isa_ = Isa::reference;
  Tensor patches_;  // i8 [chunk * patches, kpad] + 32
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

// A single-channel convolution (a first layer on a grey image) without a patch matrix, on
// qs8_conv_kernel's pairs of taps (kh, kw) and (kh, kw + 1), kw = 0, 2, .. (the last of an odd
// kernel with a zero partner). Per sample, the padded image widened to int16 (padding: the
// zero point). With a fused 2x2 max pooling, the kernel's lanes are pooled pixels: pixel j of
// window (dy, dx) and tap (kh, kw) reads the int16 at 2j + dx + kw of image row 2 oh + dy + kh and
// its right neighbour, so the rows themselves are the pair operands. Without pooling each row is
// stored as pairs D[x] = (I[x], I[x + 1]). The pooling takes the max of the int32 sums before
// the requantization, which is non-decreasing: the same bits as pooling its outputs.
class ConvPairsStage : public Int8Stage {
 public:
  // q: the int8 weights [kernel^2 x n], with their requantization.
  ConvPairsStage(const ConvGeometry& g, const std::vector<int8_t>& q, const Qs8OutputStage& output, QuantParams in,
                 bool pool, Isa isa)
      : geometry_(g), output_(output), in_(in), pool_(pool), isa_(isa) {
    const int64_t kk = g.kernel, n = static_cast<int64_t>(q.size()) / (kk * kk);
    filters_ = n;
    out_h_ = pool_ ? g.out_h / 2 : g.out_h;
    out_w_ = pool_ ? g.out_w / 2 : g.out_w;
    out_shape = Shape{out_h_, out_w_, n};
    // Row length in int16, with room for a whole vector of reads past the last pixel.
    row_ = pool_ ? g.padded_width() + 32 : 2 * (g.padded_width() + 16);
    for (int64_t kh = 0; kh < kk; ++kh)
      for (int64_t kw = 0; kw < kk; kw += 2) {
        taps_.push_back({kh, kw});
        for (int64_t f = 0; f < n; ++f) {
          const int32_t a = q[static_cast<size_t>((kh * kk + kw) * n + f)];
          const int32_t b = kw + 1 < kk ? q[static_cast<size_t>((kh * kk + kw + 1) * n + f)] : 0;
          pair_weights_.push_back(static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(a)) |
                                                       (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16)));
        }
      }
  }

  // One input channel, stride 1, a kernel of at most 11 and rows of at most 512 pixels.
  static bool fits(const ConvGeometry& g) {
    return g.channels == 1 && g.stride == 1 && g.kernel <= 11 && g.padded_width() <= 512;
  }
  // A 2x2 window of stride 2 over this conv's whole output.
  static bool fuses_pool(const ConvGeometry& conv, const ConvGeometry& pool) {
    return pool.kernel == 2 && pool.stride == 2 && pool.pad == 0 && pool.height == conv.out_h &&
           pool.width == conv.out_w && pool.channels > 0 && pool.out_h == conv.out_h / 2 &&
           pool.out_w == conv.out_w / 2;
  }

  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const int64_t n = x.shape()[0];
    const int64_t in_sample = geometry_.height * geometry_.width, out_sample = out_shape.numel();
    for (int64_t s0 = 0; s0 < n; s0 += kChunk) {
      const int64_t count = std::min(kChunk, n - s0);
      parallel_for(pool, count, 1, [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s)
          sample(x.data<int8_t>() + (s0 + s) * in_sample, images() + s * image_size(),
                 y.data<int8_t>() + (s0 + s) * out_sample);
      });
    }
  }
  Status reserve(int64_t batch) override {
    (void)batch;
    if (image_.defined()) return Status();
    auto t = Tensor::zeros(Shape{kChunk * image_size() * 2}, DType::i8, "int8 conv widened images");
    if (!t.ok()) return t.status();
    image_ = t.take();
    return Status();
  }
  int64_t scratch_bytes() const override { return image_.defined() ? static_cast<int64_t>(image_.bytes()) : 0; }
  int64_t weight_bytes() const override { return static_cast<int64_t>(pair_weights_.size()) * 4 + 3 * 4 * filters_; }
  std::string describe() const override {
    std::ostringstream os;
    os << "int8 direct conv " << geometry_.kernel << "x" << geometry_.kernel << " x " << filters_
       << (pool_ ? " + 2x2 max pooling" : "") << " (" << qs8_conv_kernel(isa_).name << ")";
    return os.str();
  }

 private:
  static constexpr int64_t kChunk = 16;
  struct Tap {
    int64_t kh, kw;
  };
  int64_t image_size() const { return geometry_.padded_height() * row_; }
  // The scratch as int16 (a byte tensor: the counted allocator has no int16 type).
  int16_t* images() const { return reinterpret_cast<int16_t*>(image_.data<int8_t>()); }

  void sample(const int8_t* image, int16_t* rows, int8_t* out) const {
    const ConvGeometry& g = geometry_;
    const int64_t hp = g.padded_height(), wp = g.padded_width();
    const int16_t zp = static_cast<int16_t>(in_.zero_point);
    int16_t line[512 + 1];
    for (int64_t r = 0; r < hp; ++r) {
      const int64_t ih = r - g.pad;
      int16_t* row = rows + r * row_;
      int16_t* padded = pool_ ? row : line;
      for (int64_t x = 0; x < g.pad; ++x) padded[x] = zp;
      if (ih >= 0 && ih < g.height) {
        const int8_t* in = image + ih * g.width;
        for (int64_t x = 0; x < g.width; ++x) padded[g.pad + x] = in[x];
      } else {
        for (int64_t x = 0; x < g.width; ++x) padded[g.pad + x] = zp;
      }
      for (int64_t x = g.pad + g.width; x < wp + 1; ++x) padded[x] = zp;
      if (pool_) {
        for (int64_t x = wp + 1; x < row_; ++x) row[x] = zp;
      } else {
        for (int64_t x = 0; x < wp; ++x) {
          row[2 * x] = line[x];
          row[2 * x + 1] = line[x + 1];
        }
        for (int64_t x = 2 * wp; x < row_; ++x) row[x] = zp;
      }
    }
    const int64_t window = pool_ ? 4 : 1, pairs = static_cast<int64_t>(taps_.size());
    const int16_t* src[4 * 66];
    const Qs8Requant rq{output_.bias.data(), output_.multiplier.data(), output_.shift.data(), output_.zero_point,
                        output_.lo, output_.hi};
    const Qs8ConvKernel& kernel = qs8_conv_kernel(isa_);
    for (int64_t oh = 0; oh < out_h_; ++oh) {
      for (int64_t w = 0; w < window; ++w) {
        const int64_t dy = pool_ ? w / 2 : 0, dx = pool_ ? w % 2 : 0;
        for (int64_t t = 0; t < pairs; ++t) {
          const Tap& tap = taps_[static_cast<size_t>(t)];
          const int16_t* row = rows + ((pool_ ? 2 * oh : oh) + dy + tap.kh) * row_;
          src[w * pairs + t] = pool_ ? row + dx + tap.kw : row + 2 * tap.kw;
        }
      }
      kernel.conv_pairs(out_w_, window, pairs, src, pair_weights_.data(), filters_, &rq, out + oh * out_w_ * filters_);
    }
  }

  ConvGeometry geometry_;
  Qs8OutputStage output_;
  QuantParams in_;
  bool pool_ = false;
  Isa isa_ = Isa::reference;
  int64_t filters_ = 0, out_h_ = 0, out_w_ = 0, row_ = 0;
  std::vector<Tap> taps_;
  std::vector<int32_t> pair_weights_;  // [pairs][filters]
  Tensor image_;                       // int16 [kChunk][padded height][row_], as bytes
};

// A layer of the f32 model run as it is (inference mode).
class F32Stage : public Int8Stage {
 public:
  F32Stage(Layer* layer, const Shape& in_shape, const Shape& shape) : layer_(layer), in_shape_(in_shape) {
    out_shape = shape;
    out_dtype = DType::f32;
  }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    LayerContext ctx{pool, false};
    layer_->forward(x.reshaped(in_shape_.batched(x.shape()[0])), y, ctx);
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
  Shape in_shape_;
};

bool is_identity_at_inference(const std::string& kind) {
  return kind == "dropout" || kind == "flatten" || kind == "reshape";
}

// A conv's or dense layer's weight [k x n] and bias [n] in double, with a following BN folded in.
void folded_weights(const Tensor& weight, const Tensor& bias, const BatchNorm* bn, std::vector<double>* w,
                    std::vector<double>* b) {
  const int64_t k = weight.shape()[0], n = weight.shape()[1];
  w->assign(weight.f32(), weight.f32() + k * n);
  b->assign(static_cast<size_t>(n), 0.0);
  if (bias.defined())
    for (int64_t j = 0; j < n; ++j) (*b)[static_cast<size_t>(j)] = bias.f32()[j];
  if (bn == nullptr) return;
  for (int64_t j = 0; j < n; ++j) {
    const size_t u = static_cast<size_t>(j);
    const double factor = bn->gamma().f32()[j] / std::sqrt(static_cast<double>(bn->running_var().f32()[j]) + bn->eps());
    for (int64_t p = 0; p < k; ++p) (*w)[static_cast<size_t>(p * n + j)] *= factor;
    (*b)[u] = ((*b)[u] - bn->running_mean().f32()[j]) * factor + bn->beta().f32()[j];
  }
}

}  // namespace

Result<std::unique_ptr<Int8Model>> Int8Model::quantize(Model& model, const Tensor& calibration, int64_t batch,
                                                       const Int8Options& options, ThreadPool* pool) {
  const auto& layers = model.layers();
  const size_t count = layers.size();
  // Ranges: observers[0] the input, observers[i + 1] layer i's output.
  std::vector<RangeObserver> observers(count + 1);
  const bool learned = !options.ranges.empty();  // by QAT: no calibration
  if (learned && options.ranges.size() != count + 1) {
    return Status::error("int8 export: " + std::to_string(options.ranges.size()) + " learned ranges for " +
                         std::to_string(count + 1) + " points");
  }
  const int64_t samples = learned ? 0 : std::min(calibration.shape()[0], batch * options.calibration_batches);
  if (samples <= 0 && !learned) return Status::error("int8 calibration needs at least one sample");
  if (!learned) RG_TRY(model.reserve(std::min(batch, samples)));
  LayerContext ctx{pool, false};
  for (int64_t begin = 0; begin < samples; begin += batch) {
    const Tensor x = calibration.rows(begin, std::min(samples, begin + batch));
    model.forward(x, ctx);
    observers[0].observe(x.f32(), x.numel());
    for (size_t i = 0; i < count; ++i) {
      const Tensor a = model.activation(i);
      observers[i + 1].observe(a.f32(), a.numel());
    }
  }
  auto params_of = [&](size_t observer) {
    if (learned) return activation_params(options.ranges[observer].first, options.ranges[observer].second);
    float lo = 0, hi = 0;
    const bool model_output = observer == count;
    observers[observer].range(model_output ? CalibrationMethod::minmax : options.calibration, options.percentile, &lo,
                              &hi);
    return activation_params(lo, hi);
  };

  // "first" and "last" name the first and last GEMM layers.
  std::set<std::string> keep = options.keep_f32;
  std::vector<size_t> gemm_layers;
  for (size_t i = 0; i < count; ++i)
    if (layers[i]->kind() == "conv" || layers[i]->kind() == "dense") gemm_layers.push_back(i);
  for (const std::string& name : options.keep_f32) {
    if (name == "first" || name == "last") {
      if (!gemm_layers.empty()) keep.insert(layers[name == "first" ? gemm_layers.front() : gemm_layers.back()]->name());
      continue;
    }
    bool found = false;
    for (const auto& layer : layers) found = found || layer->name() == name;
    if (!found) return Status::error("--keep-f32: the model has no layer '" + name + "'");
  }

  auto net = std::unique_ptr<Int8Model>(new Int8Model());
  bool int8_domain = false;  // is the current activation int8
  QuantParams current;       // its parameters when it is
  size_t current_observer = 0;
  Shape shape = model.input_shape();
  auto add = [&](std::unique_ptr<Int8Stage> stage) {
    shape = stage->out_shape;
    net->stages_.push_back(std::move(stage));
  };
  auto add_f32_layer = [&](size_t i, const std::string& note) {
    if (int8_domain) add(std::make_unique<DequantizeStage>(current, shape));
    add(std::make_unique<F32Stage>(layers[i].get(), shape, model.layer_output_shape(i)));
    int8_domain = false;
    current_observer = i + 1;
    net->precisions_.push_back({layers[i]->name(), "f32", note, layers[i]->kind()});
  };

  for (size_t i = 0; i < count; ++i) {
    Layer* layer = layers[i].get();
    const std::string kind = layer->kind();
    if (is_identity_at_inference(kind)) {
      net->precisions_.push_back({layer->name(), "-", "identity at inference", kind});
      shape = model.layer_output_shape(i);
      current_observer = i + 1;
      continue;
    }
    if (kind == "maxpool" && int8_domain) {
      add(std::make_unique<MaxPoolStage>(static_cast<Pool2D*>(layer)->geometry()));
      net->precisions_.push_back({layer->name(), "int8", "same scale as its input", kind});
      current_observer = i + 1;
      continue;
    }
    if ((kind != "conv" && kind != "dense") || keep.count(layer->name()) > 0) {
      add_f32_layer(i, keep.count(layer->name()) > 0 ? "kept f32 by the policy" : "no int8 kernel");
      continue;
    }
    // The group: this layer, a BatchNorm after it, a ReLU after those.
    size_t end = i;
    const BatchNorm* bn = nullptr;
    if (end + 1 < count && layers[end + 1]->kind() == "batchnorm") bn = static_cast<const BatchNorm*>(layers[++end].get());
    const bool relu = end + 1 < count && layers[end + 1]->kind() == "relu";
    if (relu) ++end;
    ConvGeometry g;
    std::vector<double> w, b;
    if (kind == "conv") {
      const auto* conv = static_cast<const ConvLayer*>(layer);
      g = conv->geometry();
      folded_weights(conv->weight(), conv->bias(), bn, &w, &b);
    } else {
      const auto* dense = static_cast<const Dense*>(layer);
      auto pointwise = conv_geometry(1, 1, dense->inputs(), 1, 1, 0);
      RG_CHECK(pointwise.ok(), "a dense layer's 1x1 geometry");
      g = pointwise.value();
      folded_weights(dense->weight(), dense->bias(), bn, &w, &b);
    }
    const QuantParams in = int8_domain ? current : params_of(current_observer);
    const QuantParams out = params_of(end + 1);
    const Isa isa = options.has_isa ? options.isa : active_isa();
    std::vector<int8_t> q;
    Qs8OutputStage o;
    Status built = quantize_layer(g.patch_size(), w, b, in, out, relu, layer->name(), &q, &o);
    std::unique_ptr<Int8Stage> stage;
    // A 2x2 max pooling right after a direct single-channel conv is fused into it.
    bool pooled = false;
    // The direct conv where it pays: with the pooling fused, or with few filters (its lanes are
    // pixels, so each filter is requantized and stored on its own; with many filters the GEMM's
    // lanes-are-filters layout requantizes whole rows at once).
    if (built.ok() && options.direct_conv && kind == "conv" && ConvPairsStage::fits(g)) {
      pooled = end + 1 < count && layers[end + 1]->kind() == "maxpool" && keep.count(layers[end + 1]->name()) == 0 &&
               ConvPairsStage::fuses_pool(g, static_cast<Pool2D*>(layers[end + 1].get())->geometry());
      if (pooled || static_cast<int64_t>(b.size()) <= 8) stage = std::make_unique<ConvPairsStage>(g, q, o, in, pooled, isa);
    }
    if (stage == nullptr && built.ok()) {
      auto gemm = GemmStage::build(g, q, o, in, isa, layer->name());
      if (gemm.ok()) {
        stage = gemm.take();
      } else {
        built = gemm.status();
      }
    }
    if (!built.ok()) {  // the whole group stays f32
      for (size_t j = i; j <= end; ++j) add_f32_layer(j, built.message());
      i = end;
      continue;
    }
    if (!int8_domain) add(std::make_unique<QuantizeStage>(in, shape));
    add(std::move(stage));
    std::string note;
    for (size_t j = i + 1; j <= end; ++j)
      note += (note.empty() ? "" : ", ") + layers[j]->name() + (layers[j]->kind() == "relu" ? " fused" : " folded");
    net->precisions_.push_back({layer->name(), "int8", note, kind});
    for (size_t j = i + 1; j <= end; ++j)
      net->precisions_.push_back({layers[j]->name(), "int8", "in " + layer->name(), layers[j]->kind()});
    if (pooled) {  // the pooling's output has its input's parameters
      ++end;
      net->precisions_.push_back({layers[end]->name(), "int8", "fused into " + layer->name(), layers[end]->kind()});
    }
    int8_domain = true;
    current = out;
    current_observer = end + 1;
    i = end;
  }
  if (int8_domain) add(std::make_unique<DequantizeStage>(current, shape));
  return net;
}

Status Int8Model::reserve(int64_t batch) {
  if (batch <= reserved_) return Status();
  outputs_.clear();
  for (const auto& stage : stages_) {
    auto t = Tensor::zeros(stage->out_shape.batched(batch), stage->out_dtype, "int8 model: " + stage->describe());
    if (!t.ok()) return t.status();
    outputs_.push_back(t.take());
    if (Status s = stage->reserve(batch); !s.ok()) return s;
  }
  reserved_ = batch;
  return Status();
}

Tensor Int8Model::forward(const Tensor& x, ThreadPool* pool) {
  const int64_t n = x.shape()[0];
  RG_CHECK(n <= reserved_, "int8 forward of " << n << " samples, reserved " << reserved_);
  Tensor in = x;
  for (size_t s = 0; s < stages_.size(); ++s) {
    const Tensor out = outputs_[s].rows(0, n);
    stages_[s]->run(in, out, pool);
    in = out;
  }
  return in;
}

int64_t Int8Model::weight_bytes() const {
  int64_t bytes = 0;
  for (const auto& stage : stages_) bytes += stage->weight_bytes();
  return bytes;
}

int64_t Int8Model::buffer_bytes() const {
  int64_t bytes = 0;
  for (const Tensor& t : outputs_) bytes += static_cast<int64_t>(t.bytes());
  for (const auto& stage : stages_) bytes += stage->scratch_bytes();
  return bytes;
}

std::string Int8Model::summary() const {
  std::ostringstream os;
  for (const auto& stage : stages_) os << "  " << stage->describe() << "\n";
  return os.str();
}

}  // namespace rg
