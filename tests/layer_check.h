// What the layer tests share: tensor fill and read helpers, central-difference gradient
// checks in double, and the f32-against-f64 comparison, for any Layer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "nn/conv.h"
#include "nn/layer.h"
#include "nn/loss.h"
#include "nn/model.h"

namespace rg {

inline Tensor make(const Shape& shape, DType dtype) {
  auto t = Tensor::zeros(shape, dtype, "test tensor");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? t.take() : Tensor();
}

inline double get(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::f64) return t.data<double>()[i];
  return t.f32()[i];
}

inline void set(const Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::f64) {
    t.data<double>()[i] = v;
  } else {
    t.f32()[i] = static_cast<float>(v);
  }
}

// Uniform in [lo, hi], redrawn while |v| < min_abs (keeps ReLU inputs off the kink).
inline void fill_random(const Tensor& t, Rng& rng, double lo, double hi, double min_abs = 0) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v;
    do {
      v = rng.uniform(lo, hi);
    } while (std::fabs(v) < min_abs);
    set(t, i, v);
  }
}

inline void fill_value(const Tensor& t, double v) {
  for (int64_t i = 0; i < t.numel(); ++i) set(t, i, v);
}

inline std::vector<double> values(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = get(t, i);
  return out;
}

// Gradient checks. Central differences with h = 1e-6 in double: the truncation error is
// h^2 |f'''| / 6 ~ 1e-13 and the cancellation error about 1e-16 |L| / h ~ 1e-10 |L| with
// |L| of order 1-10 here, so a correct gradient agrees to ~1e-9. We demand
// |analytic - numeric| / max(1, |analytic|, |numeric|) < 1e-6 (relative for gradients
// above 1, absolute below, where the difference quotient's own noise dominates); a wrong
// derivative is off by O(0.01-1).
constexpr double kStep = 1e-6;
constexpr double kGradTolerance = 1e-6;

inline double grad_error(double analytic, double numeric) {
  return std::fabs(analytic - numeric) / std::max({1.0, std::fabs(analytic), std::fabs(numeric)});
}

// Compares grad[i] with the central difference of objective() in value[i]: for every i of a
// tensor of up to 512 values; of a larger one the first and last 64 and every 7th between (7 is
// prime to every channel count and kernel width the specs use, so the sample still meets every
// channel, tap and position class; two forwards a value made the wide convolutions' checks take
// minutes under the sanitizers and qemu).
inline void check_against_differences(const std::string& what, const Tensor& value, const Tensor& grad,
                                      const std::function<double()>& objective) {
  ASSERT_EQ(value.numel(), grad.numel()) << what;
  const int64_t numel = value.numel();
  const auto checked = [numel](int64_t i) { return numel <= 512 || i < 64 || i >= numel - 64 || i % 7 == 0; };
  int bad = 0;
  for (int64_t i = 0; i < numel && bad < 5; ++i) {
    if (!checked(i)) continue;
    const double v = get(value, i);
    set(value, i, v + kStep);
    const double plus = objective();
    set(value, i, v - kStep);
    const double minus = objective();
    set(value, i, v);
    const double numeric = (plus - minus) / (2 * kStep);
    const double analytic = get(grad, i);
    if (!(grad_error(analytic, numeric) < kGradTolerance)) {
      ADD_FAILURE() << what << "[" << i << "]: analytic " << analytic << ", central difference " << numeric;
      ++bad;
    }
  }
}

struct LayerSpec {
  std::string name;
  std::function<std::unique_ptr<Layer>()> make;
  Shape input;  // per sample
  // The forward written plainly from the definition, in double, reading the layer's params.
  std::function<std::vector<double>(Layer& layer, const Tensor& x, int64_t n)> reference = {};
  bool training = false;  // the LayerContext's mode (batch statistics, dropout)
  double input_range = 2;  // x in [-input_range, input_range] (relu6: past its clamp at 6)
};

inline std::string spec_name(const ::testing::TestParamInfo<LayerSpec>& info) { return info.param.name; }

// Forward against spec.reference; backward with the objective L = sum(y * r), so dy = r,
// against central differences for dx and for every parameter.
inline void check_layer_gradients(const LayerSpec& spec, int64_t n) {
  std::unique_ptr<Layer> layer = spec.make();
  layer->set_name("l");
  auto out = layer->configure(spec.input);
  ASSERT_TRUE(out.ok()) << out.status().message();
  Rng rng(11);
  ASSERT_TRUE(layer->init(rng, DType::f64).ok());
  for (Param* p : layer->params()) {
    ASSERT_EQ(p->value.dtype(), DType::f64) << p->name;
    ASSERT_EQ(p->grad.shape(), p->value.shape()) << p->name;
    fill_random(p->value, rng, -1, 1);  // biases start at 0: give them values that matter
  }
  LayerContext ctx;
  ctx.training = spec.training;
  ctx.noise_stream = 7;
  Tensor x = make(spec.input.batched(n), DType::f64);
  fill_random(x, rng, -spec.input_range, spec.input_range, 1e-3);
  Tensor y = make(out.value().batched(n), DType::f64);
  Tensor r = make(out.value().batched(n), DType::f64);
  fill_random(r, rng, -1, 1);
  Tensor dx = make(x.shape(), DType::f64);
  fill_value(dx, std::numeric_limits<double>::quiet_NaN());  // must be overwritten
  fill_value(y, std::numeric_limits<double>::quiet_NaN());

  const std::vector<double> ref = spec.reference(*layer, x, n);
  layer->forward(x, y, ctx);
  ASSERT_EQ(ref.size(), static_cast<size_t>(y.numel()));
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(get(y, i), ref[static_cast<size_t>(i)], 1e-12) << "y[" << i << "]";

  layer->backward(x, y, r, dx, ctx);

  Tensor scratch = make(y.shape(), DType::f64);
  auto objective = [&] {
    layer->forward(x, scratch, ctx);
    double sum = 0;
    for (int64_t i = 0; i < scratch.numel(); ++i) sum += get(scratch, i) * get(r, i);
    return sum;
  };
  check_against_differences(spec.name + " dx", x, dx, objective);
  for (Param* p : layer->params()) check_against_differences(p->name, p->value, p->grad, objective);
}

// The f32 path (f32_gemm, float math) agrees with the f64 path on the same numbers: params
// copied from the f32 layer (exact in double), the same x and dy. The default tolerance
// suits sums of up to a few thousand terms: each of size <= 1 with errors ~ sqrt(terms) 6e-8
// |partial|, so 2e-5 relative (absolute below 1) leaves a wide margin.
inline void compare_f32_f64(const LayerSpec& spec, int64_t n, ThreadPool* pool, double tolerance = 2e-5) {
  std::unique_ptr<Layer> l32 = spec.make(), l64 = spec.make();
  auto out = l32->configure(spec.input);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(l64->configure(spec.input).ok());
  Rng rng(12);
  ASSERT_TRUE(l32->init(rng, DType::f32).ok());
  ASSERT_TRUE(l64->init(rng, DType::f64).ok());
  std::vector<Param*> p32 = l32->params(), p64 = l64->params();
  ASSERT_EQ(p32.size(), p64.size());
  for (size_t k = 0; k < p32.size(); ++k) {
    ASSERT_EQ(p32[k]->value.dtype(), DType::f32);
    fill_random(p32[k]->value, rng, -0.5, 0.5);
    for (int64_t i = 0; i < p32[k]->value.numel(); ++i) set(p64[k]->value, i, get(p32[k]->value, i));
  }
  const Shape xs = spec.input.batched(n), ys = out.value().batched(n);
  Tensor x32 = make(xs, DType::f32), x64 = make(xs, DType::f64);
  Tensor dy32 = make(ys, DType::f32), dy64 = make(ys, DType::f64);
  fill_random(x32, rng, -spec.input_range, spec.input_range, 1e-3);
  fill_random(dy32, rng, -1, 1);
  for (int64_t i = 0; i < x32.numel(); ++i) set(x64, i, get(x32, i));
  for (int64_t i = 0; i < dy32.numel(); ++i) set(dy64, i, get(dy32, i));
  Tensor y32 = make(ys, DType::f32), y64 = make(ys, DType::f64);
  Tensor dx32 = make(xs, DType::f32), dx64 = make(xs, DType::f64);
  LayerContext ctx;
  ctx.pool = pool;
  ctx.training = spec.training;
  l32->forward(x32, y32, ctx);
  l64->forward(x64, y64, ctx);
  l32->backward(x32, y32, dy32, dx32, ctx);
  l64->backward(x64, y64, dy64, dx64, ctx);

  auto expect_close = [&](const std::string& what, const Tensor& a, const Tensor& b) {
    ASSERT_EQ(a.numel(), b.numel()) << what;
    int bad = 0;
    for (int64_t i = 0; i < a.numel() && bad < 5; ++i) {
      const double got = get(a, i), want = get(b, i);
      if (!(std::fabs(got - want) <= tolerance * std::max(1.0, std::fabs(want)))) {
        ADD_FAILURE() << spec.name << " " << what << "[" << i << "]: f32 " << got << ", f64 " << want;
        ++bad;
      }
    }
  };
  expect_close("y", y32, y64);
  expect_close("dx", dx32, dx64);
  for (size_t k = 0; k < p32.size(); ++k) expect_close(p32[k]->name + " grad", p32[k]->grad, p64[k]->grad);
}

// One f32 forward and backward (grads overwritten) of a batch of n on a pool of `threads`:
// y, dx, every param grad and every buffer (running statistics) in one list, for comparing
// thread counts bit for bit.
inline std::vector<double> results_with_threads(const LayerSpec& spec, int threads, int64_t n) {
  ThreadPool pool(threads);
  std::unique_ptr<Layer> layer = spec.make();
  layer->set_name("l");
  const Shape out = layer->configure(spec.input).value();
  Rng rng(3);
  EXPECT_TRUE(layer->init(rng, DType::f32).ok());
  Tensor x = make(spec.input.batched(n), DType::f32), y = make(out.batched(n), DType::f32);
  Tensor dy = make(out.batched(n), DType::f32), dx = make(spec.input.batched(n), DType::f32);
  fill_random(x, rng, -1, 1);
  fill_random(dy, rng, -1, 1);
  LayerContext ctx;
  ctx.pool = &pool;
  ctx.training = spec.training;
  ctx.accumulate_grads = false;
  layer->forward(x, y, ctx);
  layer->backward(x, y, dy, dx, ctx);
  std::vector<double> all = values(y);
  for (double v : values(dx)) all.push_back(v);
  for (Param* p : layer->params())
    for (double v : values(p->grad)) all.push_back(v);
  for (Param* p : layer->buffers())
    for (double v : values(p->value)) all.push_back(v);
  return all;
}

// A whole classifier (softmax cross-entropy, at least 3 classes) built from cfg text in f64:
// every parameter's gradient through Model::forward/backward against central differences of
// the loss of a batch of 4.
inline void check_classifier_gradients(const std::string& cfg_text) {
  auto doc = parse_cfg(cfg_text, "model.cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& model = *built.value();
  const int64_t n = 4;
  ASSERT_TRUE(model.init(5, DType::f64).ok());
  ASSERT_TRUE(model.reserve(n).ok());
  Rng rng(8);
  for (Param* p : model.params()) fill_random(p->value, rng, -0.8, 0.8);
  Tensor x = make(model.input_shape().batched(n), DType::f64);
  fill_random(x, rng, -1, 1);
  Tensor target = make(Shape{n}, DType::i32);
  for (int64_t i = 0; i < n; ++i) target.data<int32_t>()[i] = static_cast<int32_t>(i % 3);
  LayerContext ctx;
  ctx.training = true;
  const Tensor out = model.forward(x, ctx);
  compute_loss(model.loss(), out, target, 1.0, model.output_grad());
  model.backward(ctx);
  auto objective = [&] { return compute_loss(model.loss(), model.forward(x, ctx), target, 1.0, Tensor()); };
  for (Param* p : model.params()) check_against_differences(p->name, p->value, p->grad, objective);
}

// Convolution options in one call (tests build many).
inline ConvOptions conv_options(int64_t filters, int64_t kernel, int64_t stride, int64_t pad, int64_t output_pad = 0,
                         bool bias = true) {
  ConvOptions o;
  o.filters = filters;
  o.kernel = kernel;
  o.stride = stride;
  o.pad = pad;
  o.output_pad = output_pad;
  o.bias = bias;
  return o;
}

}  // namespace rg
