// Post-training int8 quantization of whole models: close to the f32 model on a trained
// network, the same bits on every ISA and thread count (the int8 path is integer arithmetic),
// and the per-layer policy and fallbacks as the report states them. Also every executor on the
// CPU (nn/executor.h: f32 and f16 storage, f16 weights, int8) scored by the one scoring loop.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "base/memory.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "ops/qs8_add.h"
#include "ops/quant_params.h"
#include "quant/int8_model.h"
#include "nn/executor.h"
#include "train/checkpoint.h"
#include "quant/int8_patches.h"
#include "quant/int8_stages.h"
#include "report/int8_profile_table.h"
#include "train/trainer.h"

namespace rg {
namespace {

// conv (padding, BN, ReLU), max pooling, a strided conv, dropout, and two dense layers: every
// int8 stage kind, with padding whose zero point must read as 0.
const char* kCfg =
    "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n"
    "[conv]\nfilters = 8\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n"
    "[conv]\nfilters = 12\nsize = 3\nstride = 2\npad = 1\n[relu]\n"
    "[dropout]\nrate = 0.25\n"
    "[dense]\nunits = 30\n[relu]\n"
    "[dense]\nunits = 10\n";

const DataSplit& data() {
  static const DataSplit split = [] {
    DataSplit s = make_synthetic(1500, 500, 10, 5);
    return s;
  }();
  return split;
}

std::unique_ptr<Model> trained_model(const char* cfg_text, int64_t epochs) {
  auto cfg = parse_cfg(cfg_text, "int8_test.cfg");
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto built = Model::from_cfg(cfg.value());
  EXPECT_TRUE(built.ok()) << built.status().message();
  std::unique_ptr<Model> model = built.take();
  EXPECT_TRUE(model->init(1).ok());
  ThreadPool pool(2);
  TrainOptions options;
  options.epochs = epochs;
  options.batch = 32;
  static FILE* quiet = std::fopen("/dev/null", "w");
  options.log = quiet;
  Trainer trainer(*model, pool, options);
  EXPECT_TRUE(trainer.prepare().ok());
  EXPECT_TRUE(trainer.fit(data().train, nullptr).ok());
  return model;
}

Model& shared_model() {
  static std::unique_ptr<Model> model = trained_model(kCfg, 3);
  return *model;
}

std::unique_ptr<Int8Model> quantize(Model& model, const Int8Options& options, ThreadPool* pool) {
  auto calibration = data().train.first_samples(256);
  EXPECT_TRUE(calibration.ok());
  auto net = Int8Model::quantize(model, calibration.value(), 64, options, pool);
  EXPECT_TRUE(net.ok()) << net.status().message();
  if (!net.ok()) return nullptr;
  EXPECT_TRUE(net.value()->reserve(100).ok());
  return net.take();
}

// The f32 model's logits and the int8 model's for the first 100 test samples.
void both_outputs(Model& model, Int8Model& net, ThreadPool* pool, std::vector<float>* f32, std::vector<float>* int8) {
  auto x = data().test.first_samples(100);
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(model.reserve(100).ok());
  LayerContext ctx{pool, false};
  const Tensor a = model.forward(x.value(), ctx);
  f32->assign(a.f32(), a.f32() + a.numel());
  const Tensor b = net.forward(x.value(), pool);
  int8->assign(b.f32(), b.f32() + b.numel());
}

int argmax(const float* row, int n) {
  int best = 0;
  for (int j = 1; j < n; ++j)
    if (row[j] > row[best]) best = j;
  return best;
}

// What each layer of `net` ran in, by layer name.
std::map<std::string, LayerPrecision> precisions_by_name(const Int8Model& net) {
  std::map<std::string, LayerPrecision> by_name;
  for (const LayerPrecision& layer : net.precisions()) by_name[layer.layer] = layer;
  return by_name;
}

// The f32 and int8 outputs of the first 100 test samples (10 logits each) set side by side: the
// largest logit, the largest difference, and how many samples' argmax agree.
struct OutputAgreement {
  float range = 0, worst = 0;
  int agree = 0;
};
OutputAgreement compare_outputs(Model& model, Int8Model& net, ThreadPool* pool) {
  std::vector<float> f32, int8;
  both_outputs(model, net, pool, &f32, &int8);
  OutputAgreement a;
  for (size_t i = 0; i < f32.size(); ++i) {
    a.range = std::max(a.range, std::fabs(f32[i]));
    a.worst = std::max(a.worst, std::fabs(f32[i] - int8[i]));
  }
  for (size_t s = 0; s < 100; ++s) a.agree += argmax(&f32[s * 10], 10) == argmax(&int8[s * 10], 10);
  return a;
}

// The int8 model tracks its f32 model: at least 95 of the 100 argmaxes agree and no logit is
// further off than `bound` times the largest.
void expect_tracks(Model& model, Int8Model& net, ThreadPool* pool, float bound) {
  const OutputAgreement out = compare_outputs(model, net, pool);
  EXPECT_GE(out.agree, 95);
  EXPECT_LT(out.worst, bound * out.range) << "logits differ by " << out.worst << " of " << out.range;
}

// `model` quantized with minmax calibration (the stage tests' plans: every range seen).
std::unique_ptr<Int8Model> quantize_minmax(Model& model, ThreadPool* pool) {
  Int8Options options;
  options.calibration = CalibrationMethod::minmax;
  return quantize(model, options, pool);
}

// A batch of n random int8 images of a stage's input geometry.
Tensor random_s8_images(const ConvGeometry& g, int64_t n, uint64_t seed) {
  Tensor x = Tensor::zeros(Shape{n, g.height, g.width, g.channels}, DType::i8, "x").take();
  Rng rng(seed, 0);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<int8_t>()[i] = static_cast<int8_t>(std::floor(rng.uniform(-128, 128)));
  return x;
}

// The stage of `plan` on `isa` run over x: its int8 output.
std::vector<int8_t> run_stage(const Int8StagePlan& plan, Isa isa, const Tensor& x, ThreadPool* pool) {
  auto stage = make_int8_stage(plan, isa);
  EXPECT_TRUE(stage.ok()) << stage.status().message();
  if (!stage.ok()) return {};
  const int64_t n = x.shape()[0];
  EXPECT_TRUE(stage.value()->reserve(n).ok());
  const Tensor y = Tensor::zeros(stage.value()->out_shape.batched(n), DType::i8, "y").take();
  stage.value()->run(x, y, pool);
  return std::vector<int8_t>(y.data<int8_t>(), y.data<int8_t>() + y.numel());
}

// Calibration's ranges skip NaN: min/max (f32_vector's min_max) and the percentile sample (NaN
// has no order; sorting it was undefined behaviour). A tensor of NaN only: +inf and -inf, which
// activation_params widens to [0, 0].
TEST(Calibration, RangesSkipNaN) {
  RangeObserver observer;
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 3 == 1 ? NAN : static_cast<float>(i);
  observer.observe(x.data(), static_cast<int64_t>(x.size()));
  float lo = 0, hi = 0;
  observer.range(CalibrationMethod::minmax, 0, &lo, &hi);
  EXPECT_EQ(lo, 0.0f);
  EXPECT_EQ(hi, 999.0f);
  observer.range(CalibrationMethod::percentile, 99.0, &lo, &hi);
  EXPECT_TRUE(std::isfinite(lo) && std::isfinite(hi)) << lo << " " << hi;
  EXPECT_NEAR(lo, 10.0f, 3.0f);  // the 1st percentile of 0..999 without every third value
  EXPECT_NEAR(hi, 989.0f, 3.0f);
  RangeObserver nan_only;
  const std::vector<float> nans(100, NAN);
  nan_only.observe(nans.data(), 100);
  nan_only.range(CalibrationMethod::percentile, 99.0, &lo, &hi);
  EXPECT_EQ(lo, std::numeric_limits<float>::infinity());
  EXPECT_EQ(hi, -std::numeric_limits<float>::infinity());
  const QuantParams q = activation_params(lo, hi);
  EXPECT_TRUE(std::isfinite(q.scale)) << q.scale;
}

TEST(Int8Model, TracksTheF32ModelItWasMadeFrom) {
  ThreadPool pool(2);
  for (CalibrationMethod method : {CalibrationMethod::minmax, CalibrationMethod::percentile}) {
    Int8Options options;
    options.calibration = method;
    auto net = quantize(shared_model(), options, &pool);
    ASSERT_NE(net, nullptr);
    const OutputAgreement out = compare_outputs(shared_model(), *net, &pool);
    EXPECT_GE(out.agree, 95) << calibration_name(method);
    // Percentile ranges clip the rare largest activations on purpose: those outputs move more.
    const float bound = method == CalibrationMethod::minmax ? 0.1f : 0.2f;
    EXPECT_LT(out.worst, bound * out.range) << calibration_name(method) << ": logits differ by " << out.worst << " of "
                                            << out.range;
    for (const LayerPrecision& layer : net->precisions()) {
      if (layer.layer == "dropout1") {
        EXPECT_EQ(layer.precision, "-");
      } else {
        EXPECT_EQ(layer.precision, "int8") << layer.layer << ": " << layer.note;
      }
    }
  }
}

TEST(Int8Model, SameBitsOnEveryIsaAndThreadCount) {
  // Integer arithmetic from the first quantize to the last dequantize: no ISA or split may change a bit.
  // Calibration (the f32 forward) runs on the active ISA; the int8 tiles are each ISA's.
  ThreadPool two(2);
  std::vector<float> want;
  for (Isa isa : all_isas()) {
    if (!isa_supported(isa, detect_cpu().features)) continue;
    Int8Options options;
    options.has_isa = true;
    options.isa = isa;
    auto net = quantize(shared_model(), options, &two);
    ASSERT_NE(net, nullptr);
    auto x = data().test.first_samples(100);
    ASSERT_TRUE(x.ok());
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
      const Tensor out = net->forward(x.value(), pool);
      std::vector<float> got(out.f32(), out.f32() + out.numel());
      if (want.empty()) want = got;
      ASSERT_EQ(got, want) << isa_name(isa) << (pool ? " on 2 threads" : " on 1 thread");
    }
  }
}

TEST(Int8Model, DirectSingleChannelConvGivesTheGemmsBits) {
  // conv1 (1 channel in, with BN, ReLU and a 2x2 max pooling after it) runs as the direct conv
  // with the pooling fused; the same model through im2col, the GEMM and int8 pooling must give
  // the same bits, on every ISA. And a 5x5 conv without padding or pooling (the direct conv's
  // other layout), 6 filters, odd output size.
  const char* unpooled =
      "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n"
      "[conv]\nfilters = 6\nsize = 5\n[relu]\n[conv]\nfilters = 4\nsize = 3\nstride = 2\n[relu]\n"
      "[dense]\nunits = 10\n";
  std::unique_ptr<Model> second = trained_model(unpooled, 1);
  ThreadPool two(2);
  for (Model* model : {&shared_model(), second.get()})
    for (Isa isa : all_isas()) {
      if (!isa_supported(isa, detect_cpu().features)) continue;
      std::vector<float> outputs[2];
      for (bool direct : {true, false}) {
        Int8Options options;
        options.has_isa = true;
        options.isa = isa;
        options.direct_conv = direct;
        auto net = quantize(*model, options, &two);
        ASSERT_NE(net, nullptr);
        EXPECT_EQ(net->summary().find("direct conv") != std::string::npos, direct) << net->summary();
        if (direct && model == &shared_model()) {
          EXPECT_NE(net->summary().find("+ 2x2 max pooling"), std::string::npos) << net->summary();
          for (const LayerPrecision& layer : net->precisions()) {
            if (layer.layer == "maxpool1") {
              EXPECT_EQ(layer.note, "fused into conv1");
            }
          }
        }
        auto x = data().test.first_samples(37);
        ASSERT_TRUE(x.ok());
        const Tensor out = net->forward(x.value(), &two);
        outputs[direct ? 0 : 1].assign(out.f32(), out.f32() + out.numel());
      }
      ASSERT_EQ(outputs[0], outputs[1]) << isa_name(isa);
    }
}

TEST(Int8Model, WinogradConvGivesTheGemmsBits) {
  // conv2 (8 channels in, BN, ReLU, a 2x2 max pooling after it: fused) and conv3 (10 channels
  // in, an odd output) run as Winograd convs; the same model through im2col, the GEMM and the
  // int8 pooling must give the same bits, on every ISA.
  const char* cfg =
      "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n"
      "[conv]\nfilters = 8\nsize = 3\npad = 1\n[relu]\n"
      "[conv]\nfilters = 10\nsize = 3\nbias = false\n[batchnorm]\n[relu]\n[maxpool]\nsize = 2\n"
      "[conv]\nfilters = 12\nsize = 3\n[relu]\n[dense]\nunits = 10\n";
  std::unique_ptr<Model> model = trained_model(cfg, 1);
  ThreadPool two(2);
  for (Isa isa : all_isas()) {
    if (!isa_supported(isa, detect_cpu().features)) continue;
    std::vector<float> outputs[2];
    for (bool winograd : {true, false}) {
      Int8Options options;
      options.has_isa = true;
      options.isa = isa;
      options.winograd = winograd;
      auto net = quantize(*model, options, &two);
      ASSERT_NE(net, nullptr);
      const std::string summary = net->summary();
      EXPECT_EQ(summary.find("Winograd F(2x2, 3x3) 72 x 10 + 2x2 max pooling") != std::string::npos, winograd) << summary;
      EXPECT_EQ(summary.find("Winograd F(2x2, 3x3) 90 x 12 (") != std::string::npos, winograd) << summary;
      for (const LayerPrecision& layer : net->precisions())
        if (layer.layer == "maxpool1") {
          EXPECT_EQ(layer.note, winograd ? "fused into conv2" : "same scale as its input");
        }
      auto x = data().test.first_samples(37);
      ASSERT_TRUE(x.ok());
      const Tensor out = net->forward(x.value(), &two);
      outputs[winograd ? 0 : 1].assign(out.f32(), out.f32() + out.numel());
    }
    ASSERT_EQ(outputs[0], outputs[1]) << isa_name(isa);
  }
}

// A channel's weight step: max / 127 at 8 bits; under 8 bits the candidate clipped range with
// the least squared error (checked by brute force over the same candidates), which with an
// outlier among small weights is narrower than the max's, and never worse than it.
TEST(WeightGrid, ChannelStepIsTheMaxAt8BitsAndTheLeastErrorBelow) {
  std::vector<double> w = {0.01, -0.02, 0.03, 0.015, -0.025, 0.005, 0.02, -0.01, 1.0};  // one outlier
  const double max_abs = 1.0;
  EXPECT_EQ(weight_channel_step(w.data(), 9, 1, 8), max_abs / 127);
  const auto error = [&](double step, int qmax) {
    double e = 0;
    for (double v : w) e += std::pow(v - std::clamp(std::nearbyint(v / step), -1.0 * qmax, 1.0 * qmax) * step, 2);
    return e;
  };
  for (int bits : {2, 3, 4, 6, 7}) {
    const int qmax = weight_qmax(bits);
    const double step = weight_channel_step(w.data(), 9, 1, bits);
    double best = error(max_abs / qmax, qmax);
    for (int c = 50; c >= 25; --c) best = std::min(best, error(max_abs * c / 50.0 / qmax, qmax));
    EXPECT_EQ(error(step, qmax), best) << bits;
    EXPECT_LE(step, max_abs / qmax) << bits;
    EXPECT_GE(step, 0.5 * max_abs / qmax - 1e-12) << bits;
  }
  std::vector<float> strided = {0.5f, 9.0f, -0.25f, 9.0f, 0.125f, 9.0f};  // every other value
  EXPECT_EQ(weight_channel_step(strided.data(), 3, 2, 8), 0.5 / 127);
  std::vector<float> zeros(4, 0.0f);
  EXPECT_EQ(weight_channel_step(zeros.data(), 4, 1, 4), 0.0);
}

TEST(Int8Model, VectorQuantizeIsQuantizeS8BitForBit) {
  std::vector<float> x = {0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, 127.5f, -127.5f, -128.5f,
                          -129.0f, 1e9f, -1e9f, 255.49f, 256.0f, -256.0f, -257.0f, 383.0f, -384.0f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::max(), -std::numeric_limits<float>::max()};
  Rng rng(17, 0);
  while (x.size() < 4096) x.push_back(static_cast<float>(rng.uniform(-300, 300)));
  // All of int8, and the narrower grids of fewer activation bits (4 bits: [-8, 7]; 2: [-2, 1]).
  for (QuantParams p : {QuantParams{1.0f, 0}, QuantParams{1.0f, -128}, QuantParams{1.0f, 127}, QuantParams{0.5f, -7},
                        QuantParams{0.00392157f, -128}, QuantParams{3.0f, 100}, QuantParams{1.0f, -8, -8, 7},
                        QuantParams{0.25f, 3, -8, 7}, QuantParams{1.0f, 0, -2, 1}, QuantParams{2.0f, 31, -32, 31}}) {
    for (size_t n : {x.size(), size_t{15}, size_t{17}, size_t{33}}) {
      std::vector<int8_t> got(n), want(n);
      quantize_s8_rows(static_cast<int64_t>(n), x.data(), p, got.data());
      quantize_s8(static_cast<int64_t>(n), x.data(), p, want.data());
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], want[i]) << "x " << x[i] << " scale " << p.scale << " zero point " << p.zero_point;
    }
  }
}

TEST(Int8Model, PolicyKeepsNamedLayersInF32) {
  ThreadPool pool(1);
  Int8Options options;
  options.keep_f32 = {"first", "dense2"};
  auto net = quantize(shared_model(), options, &pool);
  ASSERT_NE(net, nullptr);
  std::map<std::string, std::string> precision;
  for (const LayerPrecision& layer : net->precisions()) precision[layer.layer] = layer.precision;
  EXPECT_EQ(precision["conv1"], "f32");
  EXPECT_EQ(precision["batchnorm1"], "f32");  // without conv1 in int8 nothing folds it
  EXPECT_EQ(precision["maxpool1"], "f32");    // its input is f32 there
  EXPECT_EQ(precision["conv2"], "int8");
  EXPECT_EQ(precision["dense1"], "int8");
  EXPECT_EQ(precision["dense2"], "f32");
  EXPECT_GE(compare_outputs(shared_model(), *net, &pool).agree, 95);

  options.keep_f32 = {"conv9"};
  auto calibration = data().train.first_samples(64);
  ASSERT_TRUE(calibration.ok());
  auto bad = Int8Model::quantize(shared_model(), calibration.value(), 64, options, &pool);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no layer 'conv9'"), std::string::npos) << bad.status().message();
}

TEST(Int8Model, LayersWithoutInt8KernelsRunInF32AndSaySo) {
  const char* cfg =
      "[net]\ninput = 28x28x1\nloss = mse\ntarget = input\n"
      "[dense]\nunits = 20\n[relu]\n[dense]\nunits = 784\n[sigmoid]\n[reshape]\nshape = 28x28x1\n";
  std::unique_ptr<Model> model = trained_model(cfg, 1);
  ThreadPool pool(1);
  auto net = quantize(*model, Int8Options(), &pool);
  ASSERT_NE(net, nullptr);
  std::map<std::string, LayerPrecision> by_name = precisions_by_name(*net);
  EXPECT_EQ(by_name["dense2"].precision, "int8");
  EXPECT_EQ(by_name["sigmoid1"].precision, "f32");
  EXPECT_EQ(by_name["sigmoid1"].note, "no int8 kernel");
  std::vector<float> f32, int8;
  both_outputs(*model, *net, &pool, &f32, &int8);
  double worst = 0;
  for (size_t i = 0; i < f32.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(f32[i] - int8[i])));
  EXPECT_LT(worst, 0.05) << "sigmoid outputs in [0, 1]";
}

// The int8 add (ops/qs8_add.h) is the real sum of its inputs' values to within one output step
// (its fixed-point scaling rounds twice), over every pair of int8 values; a fused relu clamps at
// the output's zero point; an output scale too small for the fixed point is refused by name.
TEST(Int8Model, Qs8AddIsTheRealSumWithinAStep) {
  const QuantParams a{0.02f, -128}, b{0.3f, 17}, out{0.25f, 5};
  std::vector<int8_t> xa, xb;
  for (int x = -128; x <= 127; ++x)
    for (int y = -128; y <= 127; ++y) xa.push_back(static_cast<int8_t>(x)), xb.push_back(static_cast<int8_t>(y));
  const int64_t n = static_cast<int64_t>(xa.size());
  for (bool relu : {false, true}) {
    auto p = qs8_add_params(a, b, out, relu ? qs8_clamp(out, 0.0f, std::numeric_limits<float>::infinity()) : Qs8Clamp{}, "add1");
    ASSERT_TRUE(p.ok()) << p.status().message();
    std::vector<int8_t> y(xa.size());
    qs8_add(n, xa.data(), xb.data(), p.value(), y.data());
    for (int64_t i = 0; i < n; ++i) {
      const double sum = a.scale * (xa[i] - a.zero_point) + b.scale * (xb[i] - b.zero_point);
      const double level = std::clamp(std::nearbyint(sum / out.scale) + out.zero_point, relu ? out.zero_point : -128.0, 127.0);
      ASSERT_LE(std::fabs(y[static_cast<size_t>(i)] - level), 1.0) << "a " << int(xa[i]) << " b " << int(xb[i]) << " relu " << relu;
    }
  }
  const auto refused = qs8_add_params(a, b, QuantParams{1e-9f, 0}, Qs8Clamp{}, "add1");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("add1: the int8 add's output multiplier"), std::string::npos)
      << refused.status().message();
}

// A graph model (nn/model_graph.cpp): a residual block (conv, batch norm, relu, conv, batch
// norm, add, relu) and a concat of three. Its stages read the stages of their layers' inputs
// (Int8StagePlan::inputs); the add runs in int8 with the relu after it fused, the concat in f32;
// conv `side` feeds its batch norm and the concat, so the batch norm is not folded into it (that
// point must exist as an output).
const char* kGraphCfg =
    "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n"
    "[conv]\nfilters = 8\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n[relu]\nname = r0\n"
    "[conv]\nfilters = 8\nsize = 3\npad = 1\nbias = false\n[batchnorm]\nname = b2\n"
    "[add]\ninputs = r0, b2\n[relu]\n[maxpool]\nsize = 2\nname = p\n"
    "[conv]\nname = side\nfilters = 4\nsize = 1\n[batchnorm]\nname = sbn\n"
    "[concat]\ninputs = p, side, sbn\n[flatten]\n[dense]\nunits = 10\n";

TEST(Int8Model, AGraphModelTracksItsF32Model) {
  std::unique_ptr<Model> model = trained_model(kGraphCfg, 3);
  ASSERT_TRUE(model->is_graph());
  ThreadPool pool(2);
  Int8Options options;
  options.calibration = CalibrationMethod::minmax;  // percentile clipped this model's logits by 35 % of their range
  auto net = quantize(*model, options, &pool);
  ASSERT_NE(net, nullptr);
  std::map<std::string, LayerPrecision> by_name = precisions_by_name(*net);
  EXPECT_EQ(by_name["conv1"].precision, "int8");
  EXPECT_EQ(by_name["conv1"].note, "batchnorm1 folded, r0 fused");
  EXPECT_EQ(by_name["conv2"].note, "b2 folded");
  EXPECT_EQ(by_name["add1"].precision, "int8");
  EXPECT_EQ(by_name["add1"].note, "relu1 fused");
  EXPECT_EQ(by_name["relu1"].precision, "int8");
  EXPECT_EQ(by_name["p"].precision, "int8");
  EXPECT_EQ(by_name["concat1"].precision, "f32");
  EXPECT_EQ(by_name["side"].precision, "int8");
  EXPECT_EQ(by_name["side"].note, "") << "the concat reads side's output: sbn must not fold into it";
  EXPECT_EQ(by_name["sbn"].precision, "f32");
  std::map<std::string, size_t> inputs;  // the add's and the f32 stages' input counts, by layer
  for (const Int8StagePlan& stage : net->plan()) {
    for (int j : stage.inputs) EXPECT_LT(j, static_cast<int>(&stage - net->plan().data())) << stage.name;
    if (stage.kind == Int8StageKind::f32 || stage.kind == Int8StageKind::add) inputs[stage.name] = stage.inputs.size();
  }
  EXPECT_EQ(inputs["add1"], 2u);
  EXPECT_EQ(inputs["concat1"], 3u);
  expect_tracks(*model, *net, &pool, 0.2f);
}

// The test split's figures through `forward` in batches of `rows`, summed as the scoring loop
// summed them before executors (a forward per runner, compute_loss and count_correct per batch;
// an autoencoder's squared error through the sigmoid of its logits).
EvalResult figures_by_hand(const Dataset& test, int64_t rows, const Model& model,
                           const std::function<Tensor(const Tensor&)>& forward) {
  const int64_t n = test.size();
  auto all = test.first_samples(n);
  EXPECT_TRUE(all.ok());
  double loss = 0, squared = 0;
  int64_t correct = 0;
  for (int64_t b = 0; b < n; b += rows) {
    const int64_t e = std::min(n, b + rows);
    const Tensor x = all.value().rows(b, e);
    const Tensor labels = test.labels.rows(b, e);
    const Tensor out = forward(x);
    if (model.target() == TargetKind::input) {
      const Tensor target = x.reshaped(model.output_shape().batched(e - b));
      loss += compute_loss(model.loss(), out, target, 1.0, Tensor());
      double batch_squared = 0;  // a batch's sum, then added: the loop's order of sums
      for (int64_t i = 0; i < out.numel(); ++i) {
        const double d = 1.0 / (1.0 + std::exp(-double(out.f32()[i]))) - double(target.f32()[i]);
        batch_squared += d * d;
      }
      squared += batch_squared;
    } else {
      loss += compute_loss(model.loss(), out, labels, 1.0, Tensor());
      correct += count_correct(out, labels.data<int32_t>());
    }
  }
  EvalResult r;
  r.loss = loss / static_cast<double>(n);
  r.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  r.mse = squared / static_cast<double>(n * model.output_shape().numel());
  return r;
}

// A model of `checkpoint`'s cfg and values, in f16 storage or with f16 weights when asked.
std::unique_ptr<Model> restored(const Checkpoint& checkpoint, const char* cfg_text, DType storage, bool f16_weights) {
  auto cfg = parse_cfg(cfg_text, "executor_test.cfg");
  EXPECT_TRUE(cfg.ok());
  std::unique_ptr<Model> model = Model::from_cfg(cfg.value()).take();
  EXPECT_TRUE(model->init(1).ok());
  EXPECT_TRUE(restore_checkpoint(checkpoint, "the test's checkpoint", *model, nullptr).ok());
  EXPECT_TRUE(model->set_storage(storage).ok());
  if (f16_weights) {
    EXPECT_TRUE(model->store_weights_f16().ok());
  }
  return model;
}

// The trainer's scoring loop over `runner` gives, bit for bit, what its runner gives called
// directly (`forward`), and the executor's forward is that runner's.
void expect_scores_as_runner(Trainer& evaluator, Executor& runner, int64_t rows,
                             const std::function<Tensor(const Tensor&)>& forward) {
  SCOPED_TRACE(runner.description());
  const Dataset& test = data().test;
  ASSERT_TRUE(runner.reserve(rows).ok());
  const EvalResult want = figures_by_hand(test, rows, runner.model(), forward);
  auto got = evaluator.evaluate(test, &runner);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got.value().samples, test.size());
  EXPECT_EQ(got.value().loss, want.loss);
  EXPECT_EQ(got.value().accuracy, want.accuracy);
  if (runner.model().target() == TargetKind::input) {
    EXPECT_EQ(got.value().mse, want.mse);
  }
  auto x = test.first_samples(rows);
  ASSERT_TRUE(x.ok());
  auto through = runner.forward(x.value());
  ASSERT_TRUE(through.ok());
  const std::vector<float> a(through.value().f32(), through.value().f32() + through.value().numel());
  const Tensor direct = forward(x.value());
  ASSERT_EQ(direct.numel(), static_cast<int64_t>(a.size()));
  EXPECT_EQ(std::memcmp(a.data(), direct.f32(), a.size() * sizeof(float)), 0) << "the executor's forward is not its runner's";
}

// One checkpoint scored through every executor the CPU has (the f32 model, f16 storage, f16
// weights, the int8 engine) and the trainer's own: the one loop gives each runner's figures.
TEST(Executor, EveryCpuExecutorScoresTheCheckpointAsItsRunner) {
  ThreadPool pool(2);
  std::unique_ptr<Model> trained = trained_model(kCfg, 1);
  auto checkpoint = checkpoint_in_memory(*trained, nullptr, {});
  ASSERT_TRUE(checkpoint.ok());
  const int64_t rows = 64;
  TrainOptions options;
  options.batch = rows;
  Trainer evaluator(*trained, pool, options);
  ASSERT_TRUE(evaluator.prepare().ok());
  const LayerContext ctx{&pool, false};
  EXPECT_EQ(evaluator.executor().storage(), "fp32");
  expect_scores_as_runner(evaluator, evaluator.executor(), rows, [&](const Tensor& x) { return trained->forward(x, ctx); });
  for (const bool f16_weights : {false, true}) {
    std::unique_ptr<Model> f16 = restored(checkpoint.value(), kCfg, DType::f16, f16_weights);
    ModelExecutor runner(*f16, ctx);
    EXPECT_EQ(runner.storage(), "fp16");
    expect_scores_as_runner(evaluator, runner, rows, [&](const Tensor& x) { return f16->forward(x, ctx); });
  }
  std::unique_ptr<Int8Model> net = quantize(*trained, Int8Options(), &pool);
  ASSERT_NE(net, nullptr);
  Int8Executor int8(*net, &pool);
  EXPECT_EQ(int8.storage(), "int8");
  EXPECT_EQ(&int8.model(), trained.get());
  expect_scores_as_runner(evaluator, int8, rows, [&](const Tensor& x) { return net->forward(x, &pool); });
}

// An autoencoder's MSE through the loop is its runner's; an executor of another model is refused.
TEST(Executor, TheLoopScoresAutoencodersAndRefusesAnotherModel) {
  const char* autoencoder = "[net]\ninput = 28x28x1\nloss = bce_with_logits\ntarget = input\n"
                            "[dense]\nunits = 16\n[relu]\n[dense]\nunits = 784\n";
  ThreadPool pool(2);
  std::unique_ptr<Model> model = trained_model(autoencoder, 1);
  TrainOptions options;
  options.batch = 50;
  Trainer evaluator(*model, pool, options);
  ASSERT_TRUE(evaluator.prepare().ok());
  const LayerContext ctx{&pool, false};
  expect_scores_as_runner(evaluator, evaluator.executor(), 50, [&](const Tensor& x) { return model->forward(x, ctx); });
  Model& classifier = shared_model();
  ModelExecutor other(classifier, ctx);
  auto refused = evaluator.evaluate(data().test, &other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("the trainer's is"), std::string::npos) << refused.status().message();
}

// A model kept in f16 (activations or weights) is refused by name, not read as f32.
TEST(Int8Model, RefusesAModelKeptInF16) {
  ThreadPool pool(1);
  auto calibration = data().train.first_samples(64);
  ASSERT_TRUE(calibration.ok());
  std::unique_ptr<Model> model = trained_model(kCfg, 0);
  ASSERT_TRUE(model->set_storage(DType::f16).ok());
  auto refused = Int8Model::quantize(*model, calibration.value(), 64, Int8Options(), &pool);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("keeps f16 activations"), std::string::npos) << refused.status().message();
  ASSERT_TRUE(model->set_storage(DType::f32).ok());
  ASSERT_TRUE(model->store_weights_f16().ok());
  refused = Int8Model::quantize(*model, calibration.value(), 64, Int8Options(), &pool);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("keeps f16 weights"), std::string::npos) << refused.status().message();
}

// What the int8 engine says reserve(rows) allocates is what it allocates.
TEST(Executor, Int8ReservedBytesAreWhatReserveAllocates) {
  ThreadPool pool(1);
  auto calibration = data().train.first_samples(128);
  ASSERT_TRUE(calibration.ok());
  for (const bool direct_conv : {false, true}) {  // the first conv by im2col and the GEMM, or direct
    Int8Options options;
    options.direct_conv = direct_conv;
    auto net = Int8Model::quantize(shared_model(), calibration.value(), 64, options, &pool);
    ASSERT_TRUE(net.ok()) << net.status().message();
    Int8Executor runner(*net.value(), &pool);
    const int64_t planned = runner.reserved_bytes(37).total();
    const int64_t before = host_memory().current_bytes();
    ASSERT_TRUE(runner.reserve(37).ok());
    EXPECT_EQ(host_memory().current_bytes() - before, planned);
    EXPECT_EQ(net.value()->buffer_bytes(), planned);
    EXPECT_EQ(runner.reserved_bytes(37).device, 0);
  }
}

// A small mobile-style network: conv, then a depthwise conv with its batch norm folded and its
// relu fused, then a 1x1 conv. The depthwise conv is an int8 stage of its own (no f32 fallback);
// on every ISA and thread count it gives the bits of the same conv as a GEMM over patches
// (gemm_weights: zeros off each channel), and the model tracks its f32 model.
TEST(Int8Model, DepthwiseConvIsAnInt8StageWithTheGemmsBits) {
  std::unique_ptr<Model> model = trained_model(
      "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n[conv]\nfilters = 8\nsize = 3\npad = 1\n[relu]\n"
      "[depthwise_conv]\nname = dw\nsize = 3\nstride = 2\npad = 1\nbias = false\n[batchnorm]\nname = dwbn\n"
      "[relu]\nname = dwrelu\n[conv]\nfilters = 16\nsize = 1\n[relu]\n[maxpool]\nsize = 2\n[dense]\nunits = 10\n",
      2);
  ThreadPool two(2);
  auto net = quantize_minmax(*model, &two);
  ASSERT_NE(net, nullptr);
  std::map<std::string, LayerPrecision> by_name = precisions_by_name(*net);
  EXPECT_EQ(by_name["dw"].precision, "int8");
  EXPECT_EQ(by_name["dw"].note, "dwbn folded, dwrelu fused");
  const Int8StagePlan* dw = nullptr;
  for (const Int8StagePlan& stage : net->plan())
    if (stage.name == "dw") dw = &stage;
  ASSERT_NE(dw, nullptr);
  ASSERT_EQ(dw->path, Int8GemmPath::depthwise);
  expect_tracks(*model, *net, &two, 0.1f);

  Int8StagePlan as_gemm = *dw;
  as_gemm.path = Int8GemmPath::gemm;
  as_gemm.weights = dw->gemm_weights();
  const Tensor x = random_s8_images(dw->geometry, 3, 8);
  std::vector<int8_t> want;
  for (Isa isa : all_isas()) {
    if (!isa_supported(isa, detect_cpu().features)) continue;
    for (const Int8StagePlan* plan : {static_cast<const Int8StagePlan*>(&as_gemm), dw}) {
      for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two}) {
        const std::vector<int8_t> got = run_stage(*plan, isa, x, pool);
        if (want.empty()) want = got;
        ASSERT_EQ(got, want) << isa_name(isa) << (plan == dw ? " depthwise" : " gemm") << (pool ? ", 2 threads" : "");
      }
    }
  }
}

// Weights of 4 bits (w4a8-ptq): on [-7, 7], their payload half the 8-bit model's, exactly; the
// GEMM path holds them two a byte and gives the bits of the values held one a byte, on every
// ISA; 6 bits: [-31, 31], one a byte. The model still tracks the f32 one, looser.
TEST(Int8Model, FourBitWeightsHalveThePayloadAndKeepTheirValuesBits) {
  ThreadPool two(2);
  Int8Options eight;
  eight.calibration = CalibrationMethod::minmax;
  Int8Options four = eight, six = eight, four_gemm = eight;
  four.weight_bits = four_gemm.weight_bits = 4;
  six.weight_bits = 6;
  four_gemm.direct_conv = four_gemm.winograd = false;
  auto net8 = quantize(shared_model(), eight, &two);
  auto net4 = quantize(shared_model(), four, &two);
  auto net6 = quantize(shared_model(), six, &two);
  auto gemm4 = quantize(shared_model(), four_gemm, &two);
  ASSERT_TRUE(net8 && net4 && net6 && gemm4);
  EXPECT_GT(net8->weight_payload_bytes(), 0);
  EXPECT_EQ(2 * net4->weight_payload_bytes(), net8->weight_payload_bytes());
  EXPECT_EQ(net6->weight_payload_bytes(), net8->weight_payload_bytes());
  EXPECT_LT(gemm4->weight_bytes(), net8->weight_bytes()) << "held two a byte";
  EXPECT_NE(precisions_by_name(*gemm4)["conv1"].note.find("4-bit weights two a byte"), std::string::npos)
      << precisions_by_name(*gemm4)["conv1"].note;
  EXPECT_NE(precisions_by_name(*net4)["conv1"].note.find("this path's own form"), std::string::npos)
      << precisions_by_name(*net4)["conv1"].note << " (the direct conv)";
  for (auto [net, qmax] : {std::pair<Int8Model*, int>{net4.get(), 7}, {net6.get(), 31}})
    for (const Int8StagePlan& plan : net->plan()) {
      if (plan.kind != Int8StageKind::gemm) continue;
      int most = 0;
      for (int8_t w : plan.weights) most = std::max(most, std::abs(int{w}));
      EXPECT_EQ(most, qmax) << plan.name << ": each channel's largest weight is on the grid's end";
    }
  for (const Int8StagePlan& plan : gemm4->plan()) {
    if (plan.kind != Int8StageKind::gemm) continue;
    ASSERT_EQ(plan.path, Int8GemmPath::gemm) << plan.name;
    Int8StagePlan one_a_byte = plan;
    one_a_byte.weight_bits = 8;
    const Tensor x = random_s8_images(plan.geometry, 5, 3);
    for (Isa isa : all_isas()) {
      if (!isa_supported(isa, detect_cpu().features)) continue;
      ASSERT_EQ(run_stage(plan, isa, x, &two), run_stage(one_a_byte, isa, x, nullptr)) << plan.name << " " << isa_name(isa);
    }
  }
  std::vector<float> paths[2];
  for (Int8Model* net : {net4.get(), gemm4.get()}) {
    auto x = data().test.first_samples(37);
    const Tensor out = net->forward(x.value(), &two);
    paths[net == gemm4.get()].assign(out.f32(), out.f32() + out.numel());
  }
  EXPECT_EQ(paths[0], paths[1]) << "the direct conv, Winograd and the packed GEMM give the same bits";
  expect_tracks(shared_model(), *net6, &two, 0.2f);
  EXPECT_GE(compare_outputs(shared_model(), *net4, &two).agree, 80) << "4-bit weights without QAT stay near";
  Int8Options nine = eight;
  nine.weight_bits = 9;
  auto calibration = data().train.first_samples(64);
  const auto refused = Int8Model::quantize(shared_model(), calibration.value(), 64, nine, &two);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("weights of 9 bits (2 to 8"), std::string::npos) << refused.status().message();
}

// Activations of 4 bits (w8a4-ptq): every grid but the model's output [-8, 7] (activation_params),
// each stage's outputs on it whatever its input, on every ISA; the same model at 8 bits keeps
// int8's grids; an OpenCL device refuses the narrower grid (checked in test_opencl_int8_model).
TEST(Int8Model, FewerActivationBitsKeepEveryValueOnTheirGrid) {
  ThreadPool two(2);
  Int8Options four;
  four.calibration = CalibrationMethod::minmax;
  four.activation_bits = 4;
  auto net = quantize(shared_model(), four, &two);
  ASSERT_NE(net, nullptr);
  const std::vector<Int8StagePlan>& plan = net->plan();
  int narrow = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const Int8StagePlan& p = plan[i];
    if (p.kind == Int8StageKind::quantize) {
      EXPECT_EQ(p.params.lo, -8);
      EXPECT_EQ(p.params.hi, 7);
    }
    if (p.kind != Int8StageKind::gemm) continue;
    const bool last = i + 1 == plan.size() || plan[i + 1].kind == Int8StageKind::dequantize;
    if (last) continue;  // the model's output keeps 8 bits
    ++narrow;
    EXPECT_GE(p.output.lo, -8) << p.name;
    EXPECT_LE(p.output.hi, 7) << p.name;
    const Tensor x = random_s8_images(p.geometry, 3, 11);
    for (Isa isa : all_isas()) {
      if (!isa_supported(isa, detect_cpu().features)) continue;
      for (int8_t v : run_stage(p, isa, x, &two)) ASSERT_TRUE(v >= p.output.lo && v <= p.output.hi) << p.name << " " << int{v};
    }
  }
  EXPECT_GE(narrow, 2) << "the convs and the hidden dense layers";
  EXPECT_GE(compare_outputs(shared_model(), *net, &two).agree, 50) << "4-bit activations, no QAT: still informative";
  Int8Options bad = four;
  bad.activation_bits = 9;
  auto calibration = data().train.first_samples(64);
  EXPECT_FALSE(Int8Model::quantize(shared_model(), calibration.value(), 64, bad, &two).ok());
}

// A clamp fusion's range on an output's grid: relu's floor is the zero point, its top all of
// int8; relu6's 6 on a grid of [0, 12] is the middle step, rounded as quantize_s8 rounds.
TEST(Int8Model, ClampRangesOnTheOutputsGrid) {
  const QuantParams wide{12.0f / 255.0f, -128};
  const Qs8Clamp relu6 = qs8_clamp(wide, 0.0f, 6.0f);
  EXPECT_EQ(relu6.lo, -128);
  EXPECT_EQ(relu6.hi, 0);  // 6 / (12 / 255) = 127.5: to even, 128, less 128
  const Qs8Clamp relu = qs8_clamp(QuantParams{0.05f, -7}, 0.0f, std::numeric_limits<float>::infinity());
  EXPECT_EQ(relu.lo, -7);
  EXPECT_EQ(relu.hi, 127);
}

// relu6 joins the int8 stage before it as the requantization's clamp to [0, 6] on its output's
// grid, after a conv, a depthwise conv's batch norm, an add and a dense layer: every stage int8,
// the model tracks its f32 model, and on every ISA and path the stage's bits are those of the
// stage without the clamp, clamped (the clamp here narrowed to 10 steps over the zero point,
// since a calibrated relu6 output's own range already ends at 6).
TEST(Int8Model, Relu6IsTheClampOfTheStageBeforeIt) {
  std::unique_ptr<Model> model = trained_model(
      "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n[conv]\nname = c\nfilters = 8\nsize = 3\npad = 1\n"
      "[relu6]\nname = cr\n[depthwise_conv]\nname = dw\nsize = 3\nstride = 2\npad = 1\nbias = false\n"
      "[batchnorm]\nname = dwbn\n[relu6]\nname = dwr\n[conv]\nname = pw\nfilters = 8\nsize = 1\n"
      "[add]\nname = sum\ninputs = pw, dwr\n[relu6]\nname = sumr\n[flatten]\n[dense]\nname = d\nunits = 16\n"
      "[relu6]\nname = dr\n[dense]\nunits = 10\n",
      2);
  ThreadPool two(2);
  auto net = quantize_minmax(*model, &two);
  ASSERT_NE(net, nullptr);
  std::map<std::string, LayerPrecision> by_name = precisions_by_name(*net);
  EXPECT_EQ(by_name["c"].note, "cr fused");
  EXPECT_EQ(by_name["dw"].note, "dwbn folded, dwr fused");
  EXPECT_EQ(by_name["sum"].note, "sumr fused");
  EXPECT_EQ(by_name["d"].note, "dr fused");
  for (const char* layer : {"c", "cr", "dw", "dwr", "sum", "sumr", "d", "dr"}) {
    EXPECT_EQ(by_name[layer].precision, "int8") << layer << ": " << by_name[layer].note;
  }
  expect_tracks(*model, *net, &two, 0.1f);

  for (const Int8StagePlan& plan : net->plan()) {
    if (plan.kind != Int8StageKind::gemm || (plan.name != "c" && plan.name != "dw" && plan.name != "d")) continue;
    SCOPED_TRACE(plan.name);
    EXPECT_EQ(plan.output.lo, plan.output.zero_point);  // relu6's 0
    Int8StagePlan open = plan, narrow = plan;
    open.output.lo = -128;
    open.output.hi = 127;
    narrow.output.hi = std::min(plan.output.zero_point + 10, 127);
    const Tensor x = random_s8_images(plan.geometry, 3, 9);
    for (Isa isa : all_isas()) {
      if (!isa_supported(isa, detect_cpu().features)) continue;
      const std::vector<int8_t> outputs[2] = {run_stage(open, isa, x, &two), run_stage(narrow, isa, x, &two)};
      ASSERT_EQ(outputs[0].size(), outputs[1].size());
      int clamped = 0;
      for (size_t i = 0; i < outputs[0].size(); ++i) {
        const int want = std::clamp<int>(outputs[0][i], plan.output.zero_point, narrow.output.hi);
        ASSERT_EQ(outputs[1][i], want) << isa_name(isa) << " element " << i;
        clamped += outputs[0][i] > narrow.output.hi;
      }
      EXPECT_GT(clamped, 0) << isa_name(isa) << ": the narrowed clamp never bit";
    }
  }
}

// eval --profile's GOP/s count a conv stage's direct products whatever its path: patches x
// filters x patch (a depthwise conv's taps alone), and nothing for stages without products.
TEST(Int8Profile, CountsTheDirectProducts) {
  Int8StagePlan conv;
  conv.kind = Int8StageKind::gemm;
  conv.geometry = conv_geometry(28, 28, 3, 3, 1, 1).value();
  conv.weights.assign(9 * 3 * 32, 1);
  conv.path = Int8GemmPath::winograd;
  EXPECT_EQ(int8_stage_products_per_sample(conv), 784 * 32 * 27);
  Int8StagePlan depthwise = conv;
  depthwise.path = Int8GemmPath::depthwise;
  depthwise.weights.assign(9 * 3, 1);
  EXPECT_EQ(int8_stage_products_per_sample(depthwise), 784 * 3 * 9);
  Int8StagePlan dense;
  dense.kind = Int8StageKind::gemm;
  dense.geometry = conv_geometry(1, 1, 400, 1, 1, 0).value();
  dense.weights.assign(400 * 120, 1);
  EXPECT_EQ(int8_stage_products_per_sample(dense), 400 * 120);
  Int8StagePlan quantize;
  quantize.kind = Int8StageKind::quantize;
  EXPECT_EQ(int8_stage_products_per_sample(quantize), 0);
}

// The patch rows' two layouts give every output pixel the same sums: the row groups (a kernel
// row's taps and the bytes after them to a 4-byte group, from a padded copy) against the direct
// convolution of the image, padding read as the zero point; and the taps layout too. Geometries
// where the row groups apply (one channel at 3x3, channels a multiple of 4) and where they do not.
TEST(Int8Patches, BothLayoutsGiveTheConvolutionsSums) {
  Rng rng(11);
  struct Geo {
    int64_t h, w, c, kernel, stride, pad;
  };
  for (const Geo& k : {Geo{28, 28, 1, 3, 1, 1}, Geo{7, 5, 1, 3, 2, 2}, Geo{6, 9, 1, 3, 1, 0}, Geo{9, 9, 4, 3, 2, 1},
                       Geo{10, 7, 8, 5, 1, 2}, Geo{8, 8, 3, 3, 1, 1}, Geo{12, 12, 1, 5, 1, 2}}) {
    const ConvGeometry g = conv_geometry(k.h, k.w, k.c, k.kernel, k.stride, k.pad).value();
    const int64_t filters = 3, taps = g.patch_size();
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + "x" + std::to_string(k.c) + " kernel " +
                 std::to_string(k.kernel) + " stride " + std::to_string(k.stride) + " pad " + std::to_string(k.pad));
    std::vector<int8_t> image(static_cast<size_t>(k.h * k.w * k.c)), q(static_cast<size_t>(taps * filters));
    for (auto& v : image) v = static_cast<int8_t>(static_cast<int64_t>(rng.below(256)) - 128);
    for (auto& v : q) v = static_cast<int8_t>(static_cast<int64_t>(rng.below(255)) - 127);
    const int8_t zero_point = -7;
    const Int8Patches patches(g, zero_point);
    EXPECT_EQ(patches.row_groups(), k.c % 4 == 0 || (k.c == 1 && k.kernel == 3));
    std::vector<int8_t> rows(static_cast<size_t>(g.patches() * patches.depth()), 99);
    std::vector<int8_t> scratch(static_cast<size_t>(patches.scratch_bytes()), 55);
    patches.rows(image.data(), scratch.data(), rows.data());
    const std::vector<int8_t> w = patches.weights(q, filters);
    ASSERT_EQ(static_cast<int64_t>(w.size()), patches.depth() * filters);
    for (int64_t oy = 0; oy < g.out_h; ++oy)
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        for (int64_t f = 0; f < filters; ++f) {
          int32_t want = 0, got = 0;
          for (int64_t t = 0; t < taps; ++t) {
            const int64_t kh = t / (k.kernel * k.c), kw = t / k.c % k.kernel, ch = t % k.c;
            const int64_t y = oy * k.stride - k.pad + kh, x = ox * k.stride - k.pad + kw;
            const bool inside = y >= 0 && y < k.h && x >= 0 && x < k.w;
            want += (inside ? image[static_cast<size_t>((y * k.w + x) * k.c + ch)] : zero_point) * q[static_cast<size_t>(t * filters + f)];
          }
          const int8_t* row = rows.data() + (oy * g.out_w + ox) * patches.depth();
          for (int64_t p = 0; p < patches.depth(); ++p) got += row[p] * w[static_cast<size_t>(p * filters + f)];
          ASSERT_EQ(got, want) << "pixel " << oy << ", " << ox << " filter " << f;
        }
  }
}

}  // namespace
}  // namespace rg
