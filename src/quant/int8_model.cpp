// Post-training quantization: calibration, BN folding, weight quantization, and the stages.
#include "quant/int8_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

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

class QuantizeStage : public Int8Stage {
 public:
  QuantizeStage(QuantParams p, const Shape& shape) : params_(p) { out_shape = shape; }
  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const int64_t per = out_shape.numel();
    parallel_for(pool, x.shape()[0], 16, [&](int64_t b, int64_t e) {
      quantize_s8((e - b) * per, x.f32() + b * per, params_, y.data<int8_t>() + b * per);
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

// A conv or dense layer (with its BN and ReLU) as im2col into int8 patches and qs8_gemm.
// Dense is the 1x1 convolution of a [1, 1, in] image.
class GemmStage : public Int8Stage {
 public:
  // w [k x n] and bias [n] in f32 after BN folding; returns why the layer cannot run in int8.
  static Result<std::unique_ptr<GemmStage>> build(const ConvGeometry& g, const std::vector<double>& w,
                                                  const std::vector<double>& bias, QuantParams in, QuantParams out,
                                                  bool relu, Isa isa, const std::string& name) {
    auto stage = std::unique_ptr<GemmStage>(new GemmStage());
    stage->geometry_ = g;
    stage->in_ = in;
    const int64_t k = g.patch_size(), n = static_cast<int64_t>(bias.size());
    stage->out_shape = g.patches() == 1 && g.kernel == 1 ? Shape{n} : Shape{g.out_h, g.out_w, n};
    std::vector<int8_t> q(static_cast<size_t>(k * n));
    Qs8OutputStage& o = stage->output_;
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
    auto packed = pack_qs8_weights(k, n, q.data(), qs8_gemm_kernel(isa).nr, name + " int8 weights");
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
       << qs8_gemm_kernel(isa_).name << ")";
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
  // (the real value 0), and the bytes past k as 0 (they meet B's zero rows).
  void im2col(const int8_t* image, int8_t* cols) const {
    const ConvGeometry& g = geometry_;
    const int8_t* image_end = image + g.height * g.width * g.channels;
    const int64_t c = g.channels, kpad = qs8_padded_depth(g.patch_size());
    const int8_t zp = static_cast<int8_t>(in_.zero_point);
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        int8_t* row = cols + (oh * g.out_w + ow) * kpad;
        const int64_t left = ow * g.stride - g.pad;
        const bool columns_inside = left >= 0 && left + g.kernel <= g.width;
        for (int64_t kh = 0; kh < g.kernel; ++kh) {
          const int64_t ih = oh * g.stride - g.pad + kh;
          if (ih < 0 || ih >= g.height) {
            std::fill(row, row + g.kernel * c, zp);
          } else if (columns_inside) {  // the kernel's row of taps is one run of the image row
            copy_run(row, image + (ih * g.width + left) * c, g.kernel * c, image_end);
          } else {
            for (int64_t kw = 0; kw < g.kernel; ++kw) {
              const int64_t iw = left + kw;
              if (iw < 0 || iw >= g.width) {
                std::fill(row + kw * c, row + (kw + 1) * c, zp);
              } else {
                std::copy(image + (ih * g.width + iw) * c, image + (ih * g.width + iw + 1) * c, row + kw * c);
              }
            }
          }
          row += g.kernel * c;
        }
        std::fill(row, row + (kpad - g.patch_size()), int8_t{0});
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
    parallel_for(pool, x.shape()[0], 8, [&](int64_t b, int64_t e) {
      for (int64_t s = b; s < e; ++s)
        pool_forward_rows(g, x.data<int8_t>() + s * in_sample, y.data<int8_t>() + s * out_sample, int8_t{-128},
                          [](int64_t c, const int8_t* px, int8_t* py) {
                            for (int64_t ch = 0; ch < c; ++ch) py[ch] = std::max(py[ch], px[ch]);
                          });
    });
  }
  std::string describe() const override { return "int8 max pooling"; }

 private:
  ConvGeometry geometry_;
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
    auto stage = GemmStage::build(g, w, b, in, out, relu, options.has_isa ? options.isa : active_isa(), layer->name());
    if (!stage.ok()) {  // the whole group stays f32
      for (size_t j = i; j <= end; ++j) add_f32_layer(j, stage.status().message());
      i = end;
      continue;
    }
    if (!int8_domain) add(std::make_unique<QuantizeStage>(in, shape));
    add(stage.take());
    std::string note;
    for (size_t j = i + 1; j <= end; ++j)
      note += (note.empty() ? "" : ", ") + layers[j]->name() + (layers[j]->kind() == "relu" ? " fused" : " folded");
    net->precisions_.push_back({layer->name(), "int8", note, kind});
    for (size_t j = i + 1; j <= end; ++j)
      net->precisions_.push_back({layers[j]->name(), "int8", "in " + layer->name(), layers[j]->kind()});
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
