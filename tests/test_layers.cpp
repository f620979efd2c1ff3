// Layer, loss, model, optimizer and schedule tests: forward against plain references,
// backward against central differences in double (every layer and loss, and a whole model
// through Model::backward), f32 against f64, gradient accumulation, the pooling kernels' two
// backward paths, PyTorch-rule optimizer steps and learning-rate schedules; the layer kinds'
// rows complete.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "layer_check.h"
#include "nn/activation.h"
#include "nn/cfg.h"
#include "nn/dense.h"
#include "nn/layer.h"
#include "nn/layer_registry.h"
#include "nn/loss.h"
#include "nn/merge_layers.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "ops/pool2d.h"
#include "report/layer_profile_table.h"
#include "train/schedule.h"

namespace rg {
namespace {

// ---------------------------------------------------------------- layer specs


std::vector<double> reference_forward(const std::string& name, Layer& layer, const Tensor& x, int64_t n);

std::vector<LayerSpec> layer_specs() {
  std::vector<LayerSpec> specs = {
      {"dense_bias", [] { return std::unique_ptr<Layer>(new Dense(4, Init::glorot_uniform, true)); }, Shape{5}},
      {"dense_no_bias", [] { return std::unique_ptr<Layer>(new Dense(3, Init::he_normal, false)); }, Shape{2, 3}},
      {"relu", [] { return std::unique_ptr<Layer>(new Activation(ActivationKind::relu)); }, Shape{2, 3}},
      {"leaky_relu", [] { return std::unique_ptr<Layer>(new Activation(ActivationKind::leaky_relu, 0.1)); },
       Shape{6}},
      {"sigmoid", [] { return std::unique_ptr<Layer>(new Activation(ActivationKind::sigmoid)); }, Shape{6}},
      {"tanh", [] { return std::unique_ptr<Layer>(new Activation(ActivationKind::tanh)); }, Shape{3, 2}},
      {"softmax", [] { return std::unique_ptr<Layer>(new Activation(ActivationKind::softmax)); }, Shape{7}},
      // x in [-9, 9]: both clamps taken (the chance of x within a step of 0 or 6 is ~1e-7 each)
      {"relu6", [] { return std::unique_ptr<Layer>(new Activation(ActivationKind::relu6)); }, Shape{4, 5}, {}, false,
       9.0},
  };
  for (LayerSpec& spec : specs) {
    spec.reference = [name = spec.name](Layer& layer, const Tensor& x, int64_t n) {
      return reference_forward(name, layer, x, n);
    };
  }
  return specs;
}

// Plain forward reference in double, written from the definitions.
std::vector<double> reference_forward(const std::string& name, Layer& layer, const Tensor& x, int64_t n) {
  const int64_t in = x.numel() / n;
  std::vector<double> xv = values(x), y;
  if (name.rfind("dense", 0) == 0) {
    std::vector<Param*> p = layer.params();
    const int64_t out = p[0]->value.shape()[1];  // W is [in, out]
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double sum = p.size() > 1 ? get(p[1]->value, o) : 0.0;
        for (int64_t j = 0; j < in; ++j) sum += xv[static_cast<size_t>(i * in + j)] * get(p[0]->value, j * out + o);
        y.push_back(sum);
      }
    return y;
  }
  if (name == "softmax") {
    for (int64_t i = 0; i < n; ++i) {
      double total = 0;
      for (int64_t j = 0; j < in; ++j) total += std::exp(xv[static_cast<size_t>(i * in + j)]);
      for (int64_t j = 0; j < in; ++j) y.push_back(std::exp(xv[static_cast<size_t>(i * in + j)]) / total);
    }
    return y;
  }
  for (double v : xv) {
    if (name == "relu") y.push_back(v > 0 ? v : 0);
    if (name == "relu6") y.push_back(std::min(std::max(v, 0.0), 6.0));
    if (name == "leaky_relu") y.push_back(v > 0 ? v : 0.1 * v);
    if (name == "sigmoid") y.push_back(1 / (1 + std::exp(-v)));
    if (name == "tanh") y.push_back(std::tanh(v));
  }
  return y;
}

class LayerTest : public ::testing::TestWithParam<LayerSpec> {};

INSTANTIATE_TEST_SUITE_P(AllLayers, LayerTest, ::testing::ValuesIn(layer_specs()), spec_name);

TEST_P(LayerTest, GradientCheckF64) { check_layer_gradients(GetParam(), 3); }

TEST_P(LayerTest, F32MatchesF64) { compare_f32_f64(GetParam(), 4, nullptr); }

// A dense layer large enough that f32_gemm splits its three products across a pool.
// ---------------------------------------------------------------- layer kinds (nn/layer_registry.h)

TEST(LayerKinds, EveryRowIsComplete) {
  const Status checked = check_layer_kinds(layer_kinds());
  EXPECT_TRUE(checked.ok()) << checked.message();
}

// The check fails on rows that lack an entry or break a rule, naming each row.
TEST(LayerKinds, AnIncompleteRowFailsNamingIt) {
  std::vector<LayerKind> rows = layer_kinds();
  ASSERT_TRUE(check_layer_kinds(rows).ok());
  auto row = [&](const std::string& name) -> LayerKind& {
    for (LayerKind& r : rows)
      if (r.name == name) return r;
    ADD_FAILURE() << "no row " << name;
    return rows.front();
  };
  row("upsample").device = DeviceRun::unset;
  row("tanh").int8 = Int8Role::unset;
  row("global_avgpool").from_cfg = nullptr;
  row("relu").fuses_after = {"conv", "no_such_kind"};
  row("batchnorm").fusion = Int8Fusion::none;
  row("sigmoid").fusion = Int8Fusion::clamp;
  row("relu").clamp = {0.0f, 0.0f};
  row("dense").clamp = {0.0f, 6.0f};
  rows.push_back(rows.front());
  const Status checked = check_layer_kinds(rows);
  ASSERT_FALSE(checked.ok());
  const std::string& m = checked.message();
  EXPECT_NE(m.find("upsample: no device entry"), std::string::npos) << m;
  EXPECT_NE(m.find("tanh: no int8 role"), std::string::npos) << m;
  EXPECT_NE(m.find("global_avgpool: no cfg reader"), std::string::npos) << m;
  EXPECT_NE(m.find("relu: fuses after 'no_such_kind', which is no kind"), std::string::npos) << m;
  EXPECT_NE(m.find("batchnorm: fused in int8 without saying how"), std::string::npos) << m;
  EXPECT_NE(m.find("sigmoid: a fusion rule without the fused role"), std::string::npos) << m;
  EXPECT_NE(m.find("a clamp fusion without a range lo < hi"), std::string::npos) << m;
  EXPECT_NE(m.find("dense: a clamp range without the clamp fusion"), std::string::npos) << m;
  EXPECT_NE(m.find(rows.front().name + ": a second row"), std::string::npos) << m;
}

// Each row's cfg reader builds a layer of that kind, with a cost model (Layer::traffic is pure
// virtual: a kind without one does not compile) that moves its input at least once.
TEST(LayerKinds, EveryKindBuildsFromItsRowWithACostModel) {
  const std::map<std::string, std::string> keys = {  // the keys a kind cannot do without
      {"dense", "units = 3"},  {"conv", "filters = 2\nsize = 3"}, {"conv_transpose", "filters = 2\nsize = 3"},
      {"maxpool", "size = 2"}, {"avgpool", "size = 2"},           {"rcl", "filters = 2"},
      {"depthwise_conv", "size = 3"},
      {"reshape", "shape = 2x4x4"}};
  for (const LayerKind& row : layer_kinds()) {
    SCOPED_TRACE(row.name);
    const auto key = keys.find(row.name);
    auto doc = parse_cfg("[" + row.name + "]\n" + (key == keys.end() ? "" : key->second) + "\n", "kind.cfg");
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    auto made = make_layer(doc.value().sections.at(0));
    ASSERT_TRUE(made.ok()) << made.status().message() << " (give this test the keys the kind needs)";
    EXPECT_EQ(made.value()->kind(), row.name);
    EXPECT_EQ(&layer_kind_of(*made.value()), &row);
    auto* merge = dynamic_cast<MergeLayer*>(made.value().get());  // add, concat: two inputs
    auto output = merge != nullptr ? merge->configure_inputs({Shape{4, 4, 2}, Shape{4, 4, 2}}, {"a", "b"})
                                   : made.value()->configure(Shape{4, 4, 2});
    ASSERT_TRUE(output.ok()) << output.status().message();
    const double in = 32, out = static_cast<double>(output.value().numel());
    EXPECT_GE(made.value()->traffic(in, out).forward, in);
  }
}

// The int8 rules both the engine and QAT read (quant/int8_model.cpp, quant/fake_quant.cpp).
TEST(LayerKinds, Int8RulesOfTheRows) {
  for (const char* before : {"conv", "depthwise_conv", "dense"}) {
    EXPECT_TRUE(int8_fuses_after("batchnorm", before));
    EXPECT_TRUE(int8_fuses_after("relu", before));
    EXPECT_TRUE(int8_fuses_after("relu6", before));
  }
  EXPECT_TRUE(int8_fuses_after("relu6", "batchnorm"));
  EXPECT_TRUE(int8_fuses_after("relu6", "add"));
  EXPECT_FALSE(int8_fuses_after("relu6", "relu"));
  EXPECT_EQ(find_layer_kind("relu6")->fusion, Int8Fusion::clamp);
  EXPECT_EQ(find_layer_kind("relu6")->clamp.lo, 0.0f);
  EXPECT_EQ(find_layer_kind("relu6")->clamp.hi, 6.0f);
  EXPECT_TRUE(int8_fuses_after("relu", "batchnorm"));
  EXPECT_TRUE(int8_fuses_after("relu", "add"));  // the int8 add's clamp
  EXPECT_FALSE(int8_fuses_after("batchnorm", "add"));
  EXPECT_FALSE(int8_fuses_after("relu", "concat"));
  EXPECT_FALSE(int8_fuses_after("batchnorm", "relu"));
  EXPECT_FALSE(int8_fuses_after("relu", "relu"));
  EXPECT_FALSE(int8_fuses_after("leaky_relu", "conv"));
  EXPECT_FALSE(int8_fuses_after("relu", "conv_transpose"));
  EXPECT_FALSE(int8_fuses_after("relu", ""));
  for (const char* kind : {"dropout", "flatten", "reshape", "maxpool"}) EXPECT_TRUE(int8_keeps_input_grid(kind));
  for (const char* kind : {"avgpool", "relu", "conv", "batchnorm"}) EXPECT_FALSE(int8_keeps_input_grid(kind));
}

TEST(Dense, F32MatchesF64ThreadedGemm) {
  ThreadPool pool(2);
  const LayerSpec spec{"dense_large", [] { return std::unique_ptr<Layer>(new Dense(80, Init::he_uniform, true)); },
                       Shape{300}};
  compare_f32_f64(spec, 64, &pool);
}

// Parameter gradients accumulate (backward twice doubles them); dx is overwritten, not
// accumulated; an undefined dx (first layer) still gives parameter gradients.
TEST(Dense, BackwardAccumulatesParamGrads) {
  for (DType dtype : {DType::f64, DType::f32}) {
    SCOPED_TRACE(dtype_name(dtype));
    Dense dense(4, Init::glorot_uniform, true);
    dense.set_name("d");
    ASSERT_EQ(dense.configure(Shape{6}).value(), Shape{4});
    Rng rng(13);
    ASSERT_TRUE(dense.init(rng, dtype).ok());
    std::vector<Param*> params = dense.params();
    ASSERT_EQ(params.size(), 2u);
    EXPECT_EQ(params[0]->name, "d.weight");
    EXPECT_EQ(params[0]->value.shape(), (Shape{6, 4}));  // [in, out]
    EXPECT_EQ(params[1]->name, "d.bias");
    for (Param* p : params) {
      for (double g : values(p->grad)) ASSERT_EQ(g, 0.0) << "grads start at zero";
    }
    Tensor x = make(Shape{5, 6}, dtype), y = make(Shape{5, 4}, dtype), dy = make(Shape{5, 4}, dtype);
    Tensor dx = make(Shape{5, 6}, dtype);
    fill_random(x, rng, -1, 1);
    fill_random(dy, rng, -1, 1);
    const LayerContext ctx;
    dense.forward(x, y, ctx);
    dense.backward(x, y, dy, dx, ctx);
    const std::vector<double> w1 = values(params[0]->grad), b1 = values(params[1]->grad), dx1 = values(dx);
    double norm = 0;
    for (double g : w1) norm += std::fabs(g);
    ASSERT_GT(norm, 0.1);
    dense.backward(x, y, dy, dx, ctx);
    const std::vector<double> w2 = values(params[0]->grad), b2 = values(params[1]->grad), dx2 = values(dx);
    // The second pass adds its sums onto the first in another order: equal to rounding.
    const double tol = dtype == DType::f64 ? 1e-14 : 1e-6;
    for (size_t i = 0; i < w1.size(); ++i) EXPECT_NEAR(w2[i], 2 * w1[i], tol * std::max(1.0, std::fabs(w1[i]))) << i;
    for (size_t i = 0; i < b1.size(); ++i) EXPECT_NEAR(b2[i], 2 * b1[i], tol * std::max(1.0, std::fabs(b1[i]))) << i;
    for (size_t i = 0; i < dx1.size(); ++i) EXPECT_EQ(dx2[i], dx1[i]) << "dx " << i;
    dense.backward(x, y, dy, Tensor(), ctx);  // first layer: no dx
    for (size_t i = 0; i < w1.size(); ++i) {
      EXPECT_NEAR(get(params[0]->grad, static_cast<int64_t>(i)), 3 * w1[i], tol * std::max(1.0, std::fabs(w1[i])));
    }
    // Bias sums dy over the batch.
    for (int64_t j = 0; j < 4; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < 5; ++i) sum += get(dy, i * 4 + j);
      EXPECT_NEAR(b1[static_cast<size_t>(j)], sum, 1e-6);
    }
  }
}

TEST(Dense, NoBiasHasOnlyWeight) {
  Dense dense(3, Init::zeros, false);
  ASSERT_EQ(dense.configure(Shape{2, 2}).value(), Shape{3});  // any sample shape is flattened
  Rng rng(1);
  ASSERT_TRUE(dense.init(rng, DType::f32).ok());
  ASSERT_EQ(dense.params().size(), 1u);
  EXPECT_EQ(dense.params()[0]->value.shape(), (Shape{4, 3}));  // [in, out]
  for (double w : values(dense.params()[0]->value)) EXPECT_EQ(w, 0.0);
}

// Activations far out: no NaN or Inf in y or dx.
TEST(Activation, ExtremeInputsStayFinite) {
  for (ActivationKind kind :
       {ActivationKind::sigmoid, ActivationKind::tanh, ActivationKind::softmax, ActivationKind::leaky_relu}) {
    for (DType dtype : {DType::f32, DType::f64}) {
      Activation act(kind);
      ASSERT_TRUE(act.configure(Shape{4}).ok());
      Tensor x = make(Shape{2, 4}, dtype), y = make(Shape{2, 4}, dtype);
      Tensor dy = make(Shape{2, 4}, dtype), dx = make(Shape{2, 4}, dtype);
      const double xs[8] = {1000, -1000, 0, 88.8, -745, 745, 1, -1};
      for (int64_t i = 0; i < 8; ++i) set(x, i, xs[i]);
      fill_value(dy, 1.0);
      act.forward(x, y, LayerContext());
      act.backward(x, y, dy, dx, LayerContext());
      for (int64_t i = 0; i < 8; ++i) {
        EXPECT_TRUE(std::isfinite(get(y, i))) << act.kind() << " " << dtype_name(dtype) << " y[" << i << "]";
        EXPECT_TRUE(std::isfinite(get(dx, i))) << act.kind() << " " << dtype_name(dtype) << " dx[" << i << "]";
      }
    }
  }
}

// A layer without a name is its kind and its number among that kind's layers; after a kind that
// ends in a digit, an underscore between (relu6_2 is relu6's second, relu62 would read as a 62nd).
TEST(Model, DefaultNamesAreTheKindAndItsNumber) {
  auto cfg = parse_cfg("[net]\ninput = 4\n[dense]\nunits = 3\n[relu6]\n[dense]\nunits = 2\n[relu6]\n[relu]\n", "n.cfg");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto model = Model::from_cfg(cfg.value());
  ASSERT_TRUE(model.ok()) << model.status().message();
  std::vector<std::string> names;
  for (const auto& layer : model.value()->layers()) names.push_back(layer->name());
  EXPECT_EQ(names, (std::vector<std::string>{"dense1", "relu6_1", "dense2", "relu6_2", "relu1"}));
}

// Runs cfg_text's model through a training step with its relus fused (Model::fuses_relu_after:
// want_fused, by layer) and its layers one by one, unfused, each with its own output and gradient:
// the output, the input gradient and every parameter gradient equal bit for bit, in f32 and f64,
// threaded; a fused layer's own output is not kept (activation() undefined), and an inference
// forward fuses nothing. `check(model, report)` then sees the fused step's per-layer profile.
template <class Check>
void expect_fused_relus_give_the_layers_bits(const char* cfg_text, const std::vector<bool>& want_fused, Check check) {
  ThreadPool pool(3);
  const size_t first_fused = static_cast<size_t>(std::find(want_fused.begin(), want_fused.end(), true) - want_fused.begin());
  ASSERT_LT(first_fused, want_fused.size()) << "a case without a fused relu";
  for (DType dtype : {DType::f32, DType::f64}) {
    SCOPED_TRACE(dtype == DType::f32 ? "f32" : "f64");
    auto cfg = parse_cfg(cfg_text, "fused.cfg");
    ASSERT_TRUE(cfg.ok()) << cfg.status().message();
    auto built = Model::from_cfg(cfg.value()), apart = Model::from_cfg(cfg.value());
    ASSERT_TRUE(built.ok() && apart.ok()) << built.status().message();
    Model& model = *built.value();
    const std::vector<std::unique_ptr<Layer>>& layers = apart.value()->layers();
    ASSERT_TRUE(model.init(5, dtype).ok() && apart.value()->init(5, dtype).ok());
    ASSERT_TRUE(model.reserve(7).ok());
    std::vector<bool> fused;
    for (size_t i = 0; i < layers.size(); ++i) fused.push_back(model.fuses_relu_after(i));
    EXPECT_EQ(fused, want_fused);
    const int64_t n = 6;
    Rng rng(17);
    Tensor x = make(model.input_shape().batched(n), dtype), target = make(Shape{n}, DType::i32);
    fill_random(x, rng, -1, 1);
    for (int64_t i = 0; i < n; ++i) target.data<int32_t>()[i] = static_cast<int32_t>(rng.below(3));
    LayerContext ctx;
    ctx.pool = &pool;
    ctx.training = true;
    ctx.accumulate_grads = false;
    LayerProfile profile;
    LayerContext profiled = ctx;
    profiled.profile = &profile;
    const Tensor out = model.forward(x, profiled);
    EXPECT_FALSE(model.activation(first_fused).defined()) << "a fused layer's own output is not kept";
    compute_loss(model.loss(), out, target, 1.0, model.output_grad());
    Tensor dx = make(x.shape(), dtype);
    model.backward(profiled, dx);
    profile.count_step();
    const LayerProfileReport report = summarize_layer_profile(model, profile, 1.0, PeakFigure());
    ASSERT_EQ(report.rows.size(), layers.size());
    check(model, report);
    std::vector<Tensor> acts;
    Tensor in = x;
    for (size_t i = 0; i < layers.size(); ++i) {
      acts.push_back(make(model.layer_output_shape(i).batched(n), dtype));
      layers[i]->forward(in, acts.back(), ctx);
      in = acts.back();
    }
    EXPECT_EQ(values(out), values(in)) << "output";
    Tensor dy = make(in.shape(), dtype);
    compute_loss(model.loss(), in, target, 1.0, dy);
    for (size_t i = layers.size(); i-- > 0;) {
      const Tensor& xi = i == 0 ? x : acts[i - 1];
      Tensor dxi = make(xi.shape(), dtype);
      layers[i]->backward(xi, acts[i], dy, dxi, ctx);
      dy = dxi;
    }
    EXPECT_EQ(values(dx), values(dy)) << "input gradient";
    const std::vector<Param*> fused_params = model.params(), apart_params = apart.value()->params();
    ASSERT_EQ(fused_params.size(), apart_params.size());
    for (size_t k = 0; k < fused_params.size(); ++k)
      EXPECT_EQ(values(fused_params[k]->grad), values(apart_params[k]->grad)) << fused_params[k]->name;
    ctx.training = false;
    model.forward(x, ctx);
    EXPECT_TRUE(model.activation(first_fused).defined()) << "inference fuses nothing";
  }
}

// A batch norm followed by a relu runs as one layer; the profile shows the relu fused into it.
TEST(Model, BatchNormReluFusedGivesTheLayersBits) {
  const char* cfg_text =
      "[net]\ninput = 4x4x3\n[conv]\nfilters = 5\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n[relu]\n[flatten]\n"
      "[dense]\nunits = 8\n[batchnorm]\n[relu]\n[dense]\nunits = 3\n";
  expect_fused_relus_give_the_layers_bits(
      cfg_text, {false, true, false, false, false, true, false, false},
      [](const Model& model, const LayerProfileReport& report) {
        EXPECT_TRUE(model.activation(2).defined());
        EXPECT_EQ(report.rows[2].fused_into, "batchnorm1");
        EXPECT_EQ(report.rows[6].fused_into, "batchnorm2");
        EXPECT_EQ(report.rows[1].fused_into, "");
        EXPECT_GT(report.rows[1].ms_per_step[0], 0.0);
        EXPECT_NE(layer_profile_text(report).find("relu1          relu        fused into batchnorm1"), std::string::npos)
            << layer_profile_text(report);
        // 3 threads: the threads line's shares are shares, where the phase ran.
        EXPECT_EQ(report.threads, 3);
        for (int p = 0; p < kLayerPhases; ++p) {
          for (double share : {report.rows[1].in_regions[p], report.rows[1].threads_busy[p]}) {
            EXPECT_GE(share, 0.0) << "phase " << p;
            EXPECT_LE(share, 1.0 + 1e-9) << "phase " << p;
          }
        }
        EXPECT_NE(layer_profile_text(report).find("threads"), std::string::npos) << layer_profile_text(report);
      });
}

// Every convolution runs the relu after it (ConvLayer::fuses_relu): with a bias and without, by
// the GEMM (gathered, phases, im2col's dx) and by Winograd, transposed and depthwise; a relu after
// a relu or after the flatten stays a layer.
TEST(Model, ConvolutionReluFusedGivesTheLayersBits) {
  const char* cfg_text =
      "[net]\ninput = 8x8x3\n[conv]\nfilters = 5\nsize = 3\npad = 1\n[relu]\n"
      "[conv]\nfilters = 6\nsize = 3\npad = 1\nalgorithm = winograd\nbias = false\n[relu]\n"
      "[conv]\nfilters = 4\nsize = 3\nstride = 2\npad = 1\n[relu]\n[relu]\n"
      "[conv_transpose]\nfilters = 3\nsize = 3\nstride = 2\npad = 1\noutput_pad = 1\n[relu]\n"
      "[depthwise_conv]\nsize = 3\npad = 1\n[relu]\n[conv]\nfilters = 4\nsize = 5\n[relu]\n"
      "[flatten]\n[relu]\n[dense]\nunits = 3\n";
  expect_fused_relus_give_the_layers_bits(
      cfg_text,
      {true, false, true, false, true, false, false, true, false, true, false, true, false, false, false, false},
      [](const Model& model, const LayerProfileReport& report) {
        EXPECT_TRUE(model.activation(1).defined());
        EXPECT_EQ(report.rows[1].fused_into, "conv1");
        EXPECT_EQ(report.rows[8].fused_into, "conv_transpose1");
        EXPECT_EQ(report.rows[6].fused_into, "") << "a relu after a relu";
        EXPECT_EQ(report.rows[14].fused_into, "") << "a relu after the flatten";
      });
  // 128x128x32 images: a padded copy of 540K floats a sample, so conv1 runs the 6 samples in
  // chunks of 1 (each chunk's dy masked before its products, the bias's sum after them all).
  expect_fused_relus_give_the_layers_bits(
      "[net]\ninput = 128x128x32\n[conv]\nfilters = 4\nsize = 3\nstride = 2\npad = 1\n[relu]\n"
      "[conv]\nfilters = 4\nsize = 3\nstride = 2\npad = 1\n[relu]\n[flatten]\n[dense]\nunits = 3\n",
      {true, false, true, false, false, false}, [](const Model&, const LayerProfileReport&) {});
}

TEST(Activation, FromCfgNamesAndSlope) {
  auto doc = parse_cfg("[leaky_relu]\nslope = 0.25\n[sigmoid]\n[tanh]\n[softmax]\n[relu]\n[relu6]\n", "a.cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const char* kinds[] = {"leaky_relu", "sigmoid", "tanh", "softmax", "relu", "relu6"};
  for (size_t i = 0; i < std::size(kinds); ++i) {
    auto layer = Activation::from_cfg(doc.value().sections[i]);
    ASSERT_TRUE(layer.ok()) << layer.status().message();
    EXPECT_EQ(layer.value()->kind(), kinds[i]);
  }
  auto leaky = Activation::from_cfg(doc.value().sections[0]);
  Tensor x = make(Shape{1, 2}, DType::f64), y = make(Shape{1, 2}, DType::f64);
  set(x, 0, -4.0);
  set(x, 1, 3.0);
  leaky.value()->forward(x, y, LayerContext());
  EXPECT_EQ(get(y, 0), -1.0);  // the cfg's slope, not the default
  EXPECT_EQ(get(y, 1), 3.0);
}

// ---------------------------------------------------------------- pooling kernels (ops/pool2d.h)

// x [h, w, c] with values from {-2, -1, -0, +0, 1, 2}: windows full of ties, +0 and -0 among them.
template <class T>
std::vector<T> tie_heavy(const ConvGeometry& g, Rng& rng) {
  const T set[7] = {T(-2), T(-1), -T(0), T(0), T(1), T(2), std::numeric_limits<T>::quiet_NaN()};
  std::vector<T> x(static_cast<size_t>(g.height * g.width * g.channels));
  for (T& v : x) v = set[rng.below(7)];
  return x;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Max forward is a fold from -inf in window order (std::max keeps the first of equal values, so
// +0 and -0 show which came first), and its backward gives each dy to that first position only.
TEST(Pooling, MaxTakesTheFirstOfEqualValues) {
  const ConvGeometry g = conv_geometry(2, 2, 2, 2, 2, 0).value();
  // channel 0: 1, 3, 3, 2 (the 3 at (0, 1) wins); channel 1: -0, +0, -1, +0 (-0 wins)
  const std::vector<double> x = {1, -0.0, 3, 0.0, 3, -1, 2, 0.0};
  std::vector<double> y(2), dx(8, 99.0), rem(2);
  max_pool_forward(g, x.data(), y.data());
  EXPECT_EQ(y[0], 3.0);
  EXPECT_TRUE(y[1] == 0.0 && std::signbit(y[1]));
  const std::vector<double> dy = {5, 7};
  max_pool_backward(g, x.data(), y.data(), dy.data(), dx.data(), rem.data());
  EXPECT_EQ(dx, (std::vector<double>{0, 7, 5, 0, 0, 0, 0, 0}));
}

// Windows that cannot overlap write each dx element once; the general path zeroes dx and adds
// window by window. Both must give the same bits (and the forward the fold in window order, as
// the row sweep gives it), on tie-heavy data with NaNs, in f32 and f64, with padding, gaps
// between windows and uncovered edges; tiling windows (stride = kernel, no pad) of 1 to 8
// channels take their own loops forward (ops/pool2d.h max_pool_forward_tiled); the backward of
// more channels (9, 17, 32, 33) in f32 the kernel table's.
template <class T>
void expect_disjoint_windows_match_general() {
  const struct {
    int64_t h, w, c, kernel, stride, pad;
  } cases[] = {{8, 8, 6, 2, 2, 0}, {6, 4, 17, 2, 2, 0}, {7, 9, 3, 2, 2, 0}, {6, 7, 5, 3, 3, 1},
               {9, 9, 4, 2, 3, 0}, {5, 5, 2, 2, 2, 1}, {6, 6, 3, 3, 2, 1}, {5, 6, 1, 2, 2, 0},
               {4, 4, 8, 2, 2, 0}, {9, 7, 7, 3, 3, 0}, {4, 6, 5, 2, 2, 0}, {6, 6, 2, 3, 3, 0},
               {4, 4, 9, 2, 2, 0}, {6, 5, 4, 2, 2, 0}, {8, 9, 32, 2, 2, 0}, {7, 6, 33, 3, 3, 0}};
  Rng rng(21);
  for (const auto& k : cases) {
    const ConvGeometry g = conv_geometry(k.h, k.w, k.c, k.kernel, k.stride, k.pad).value();
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + "x" + std::to_string(k.c) + " kernel " +
                 std::to_string(k.kernel) + " stride " + std::to_string(k.stride) + " pad " + std::to_string(k.pad));
    const std::vector<T> x = tie_heavy<T>(g, rng);
    const size_t out = static_cast<size_t>(g.out_h * g.out_w * g.channels);
    std::vector<T> y(out), folded(out, -std::numeric_limits<T>::infinity());
    max_pool_forward(g, x.data(), y.data());
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const PoolWindow w = pool_window(g, oh, ow);
        for (int64_t ih = w.h0; ih < w.h1; ++ih)
          for (int64_t iw = w.w0; iw < w.w1; ++iw)
            for (int64_t ch = 0; ch < g.channels; ++ch) {
              T& m = folded[static_cast<size_t>((oh * g.out_w + ow) * g.channels + ch)];
              m = std::max(m, x[static_cast<size_t>((ih * g.width + iw) * g.channels + ch)]);
            }
      }
    EXPECT_TRUE(same_bits(y, folded)) << "max forward";
    std::vector<T> swept(out);
    max_pool_forward(g, x.data(), swept.data(), true);
    EXPECT_TRUE(same_bits(y, swept)) << "max forward against the row sweep";
    std::vector<T> dy(out);
    for (T& v : dy) v = static_cast<T>(rng.uniform(-1, 1));
    dy[0] = -T(0);  // 0 + -0 is +0: the written dx must say so too
    // dx starts as NaN: every element must be written (or zeroed).
    const std::vector<T> nan(x.size(), std::numeric_limits<T>::quiet_NaN());
    std::vector<T> fast = nan, general = nan, rem(static_cast<size_t>(g.channels));
    max_pool_backward(g, x.data(), y.data(), dy.data(), fast.data(), rem.data());
    max_pool_backward(g, x.data(), y.data(), dy.data(), general.data(), rem.data(), true);
    EXPECT_TRUE(same_bits(fast, general)) << "max backward";
    fast = nan;
    general = nan;
    avg_pool_backward(g, dy.data(), fast.data());
    avg_pool_backward(g, dy.data(), general.data(), true);
    EXPECT_TRUE(same_bits(fast, general)) << "average backward";
  }
}

TEST(Pooling, DisjointWindowsMatchTheGeneralPath) {
  expect_disjoint_windows_match_general<float>();
  expect_disjoint_windows_match_general<double>();
}

// ---------------------------------------------------------------- losses

struct LossData {
  Tensor pred, target;
};

LossData loss_data(LossKind kind, int64_t n, int64_t k, DType dtype, Rng& rng) {
  LossData d;
  d.pred = make(Shape{n, k}, dtype);
  fill_random(d.pred, rng, -3, 3);
  if (kind == LossKind::softmax_cross_entropy) {
    d.target = make(Shape{n}, DType::i32);
    for (int64_t i = 0; i < n; ++i) d.target.data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(k)));
  } else {
    d.target = make(Shape{n, k}, dtype);
    fill_random(d.target, rng, kind == LossKind::mse ? -1 : 0, 1);
    if (kind == LossKind::bce_with_logits) {
      set(d.target, 0, 0.0);  // hard targets too
      set(d.target, 1, 1.0);
    }
  }
  return d;
}

// The summed loss from the definitions, in double.
double reference_loss(LossKind kind, const LossData& d) {
  const int64_t n = d.pred.shape()[0], k = d.pred.shape()[1];
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (kind == LossKind::softmax_cross_entropy) {
      double z = 0;
      for (int64_t c = 0; c < k; ++c) z += std::exp(get(d.pred, i * k + c));
      total += -std::log(std::exp(get(d.pred, i * k + d.target.data<int32_t>()[i])) / z);
      continue;
    }
    double row = 0;
    for (int64_t c = 0; c < k; ++c) {
      const double x = get(d.pred, i * k + c), t = get(d.target, i * k + c);
      if (kind == LossKind::mse) {
        row += (x - t) * (x - t);
      } else {
        const double s = 1 / (1 + std::exp(-x));
        row += -(t * std::log(s) + (1 - t) * std::log(1 - s));
      }
    }
    total += row / static_cast<double>(k);
  }
  return total;
}

class LossTest : public ::testing::TestWithParam<LossKind> {};

std::string loss_param_name(const ::testing::TestParamInfo<LossKind>& info) { return loss_name(info.param); }

INSTANTIATE_TEST_SUITE_P(AllLosses, LossTest,
                         ::testing::Values(LossKind::softmax_cross_entropy, LossKind::mse, LossKind::bce_with_logits),
                         loss_param_name);

TEST_P(LossTest, ValueAndGradientCheckF64) {
  const LossKind kind = GetParam();
  Rng rng(21);
  const LossData d = loss_data(kind, 4, 5, DType::f64, rng);
  Tensor grad = make(d.pred.shape(), DType::f64);
  fill_value(grad, std::numeric_limits<double>::quiet_NaN());
  const double loss = compute_loss(kind, d.pred, d.target, 1.0, grad);
  EXPECT_NEAR(loss, reference_loss(kind, d), 1e-12 * std::max(1.0, std::fabs(loss)));
  EXPECT_EQ(compute_loss(kind, d.pred, d.target, 1.0, Tensor()), loss);  // dpred is optional
  check_against_differences(std::string(loss_name(kind)) + " dpred", d.pred, grad,
                            [&] { return compute_loss(kind, d.pred, d.target, 1.0, Tensor()); });

  // grad_scale scales the gradient only (a power of two: exactly).
  Tensor scaled = make(d.pred.shape(), DType::f64);
  EXPECT_EQ(compute_loss(kind, d.pred, d.target, 0.25, scaled), loss);
  for (int64_t i = 0; i < grad.numel(); ++i) EXPECT_EQ(get(scaled, i), 0.25 * get(grad, i)) << i;
}

TEST_P(LossTest, F32MatchesF64) {
  const LossKind kind = GetParam();
  Rng rng(22);
  const LossData d64 = loss_data(kind, 6, 4, DType::f64, rng);
  LossData d32;
  d32.pred = make(d64.pred.shape(), DType::f32);
  for (int64_t i = 0; i < d64.pred.numel(); ++i) {
    set(d32.pred, i, get(d64.pred, i));
    set(d64.pred, i, get(d32.pred, i));  // the same numbers on both sides
  }
  if (kind == LossKind::softmax_cross_entropy) {
    d32.target = d64.target;
  } else {
    d32.target = make(d64.target.shape(), DType::f32);
    for (int64_t i = 0; i < d64.target.numel(); ++i) {
      set(d32.target, i, get(d64.target, i));
      set(d64.target, i, get(d32.target, i));
    }
  }
  Tensor g32 = make(d32.pred.shape(), DType::f32), g64 = make(d64.pred.shape(), DType::f64);
  const double l32 = compute_loss(kind, d32.pred, d32.target, 1.0 / 6, g32);
  const double l64 = compute_loss(kind, d64.pred, d64.target, 1.0 / 6, g64);
  EXPECT_NEAR(l32, l64, 1e-5 * std::max(1.0, std::fabs(l64)));
  for (int64_t i = 0; i < g32.numel(); ++i) EXPECT_NEAR(get(g32, i), get(g64, i), 1e-6) << i;
}

TEST_P(LossTest, ExtremeLogitsStayFinite) {
  const LossKind kind = GetParam();
  for (DType dtype : {DType::f32, DType::f64}) {
    Rng rng(23);
    LossData d = loss_data(kind, 2, 3, dtype, rng);
    const double xs[6] = {1000, -1000, 0, -800, 800, 3};
    for (int64_t i = 0; i < 6; ++i) set(d.pred, i, xs[i]);
    Tensor grad = make(d.pred.shape(), dtype);
    const double loss = compute_loss(kind, d.pred, d.target, 1.0, grad);
    EXPECT_TRUE(std::isfinite(loss)) << dtype_name(dtype);
    for (int64_t i = 0; i < 6; ++i) EXPECT_TRUE(std::isfinite(get(grad, i))) << dtype_name(dtype) << " " << i;
  }
}

TEST(Loss, NamesAndCountCorrect) {
  EXPECT_EQ(loss_from_name("mse").value(), LossKind::mse);
  EXPECT_EQ(loss_from_name("cross_entropy").value(), LossKind::softmax_cross_entropy);
  EXPECT_FALSE(loss_from_name("hinge").ok());
  EXPECT_STREQ(loss_name(LossKind::bce_with_logits), "bce_with_logits");
  EXPECT_EQ(target_from_name("input").value(), TargetKind::input);
  EXPECT_FALSE(target_from_name("x").ok());
  Tensor pred = make(Shape{3, 3}, DType::f32);
  const float p[9] = {0.1f, 0.7f, 0.2f, 5, -1, 4, -3, -2, -2.5f};
  for (int64_t i = 0; i < 9; ++i) set(pred, i, p[i]);
  const int32_t labels[3] = {1, 2, 1};
  EXPECT_EQ(count_correct(pred, labels), 2);
}

// ---------------------------------------------------------------- whole model

struct ModelCase {
  std::string name;
  std::string cfg;
};

class ModelGradient : public ::testing::TestWithParam<ModelCase> {};

std::string model_case_name(const ::testing::TestParamInfo<ModelCase>& info) { return info.param.name; }

INSTANTIATE_TEST_SUITE_P(
    Models, ModelGradient,
    ::testing::Values(
        ModelCase{"dense_tanh_dense_xent",
                  "[net]\ninput = 5\nloss = softmax_cross_entropy\n[dense]\nunits = 4\n[tanh]\n[dense]\nunits = 3\n"},
        ModelCase{"five_layers_mse_onehot",
                  "[net]\ninput = 2x2x1\nloss = mse\ntarget = onehot\n[dense]\nunits = 6\n[sigmoid]\n[dense]\nunits = "
                  "5\ninit = glorot_normal\n[softmax]\n[dense]\nunits = 3\n"},
        ModelCase{"leaky_bce",
                  "[net]\ninput = 4\nloss = bce_with_logits\n[dense]\nunits = 7\nbias = false\n[leaky_relu]\nslope = "
                  "0.2\n[dense]\nunits = 2\n"},
        // Graph models (model_graph.cpp): a residual block whose input feeds two layers, and a
        // concat of two branches of one conv, each read again later (gradients summed).
        ModelCase{"residual_graph",
                  "[net]\ninput = 4x4x2\n[conv]\nname = stem\nfilters = 3\nsize = 3\npad = 1\n[tanh]\nname = a\n"
                  "[conv]\nfilters = 3\nsize = 3\npad = 1\n[tanh]\n[conv]\nname = b\nfilters = 3\nsize = 1\n"
                  "[add]\ninputs = a, b\n[sigmoid]\n[flatten]\n[dense]\nunits = 3\n"},
        ModelCase{"concat_graph",
                  "[net]\ninput = 3x3x2\nloss = mse\ntarget = onehot\n[conv]\nfilters = 2\nsize = 3\npad = 1\n[tanh]\n"
                  "name = t\n[conv]\nname = c2\nfilters = 3\nsize = 1\ninputs = t\n[sigmoid]\ninputs = t\nname = s\n"
                  "[concat]\ninputs = c2, s, t\n[add]\ninputs = input, input, t\nname = skip\n"
                  "[concat]\ninputs = concat1, skip\n[flatten]\n[dense]\nunits = 4\n"}),
    model_case_name);

// Model::from_cfg, init in f64, reserve, forward, compute_loss into output_grad(), backward;
// every parameter gradient against central differences of the loss.
TEST_P(ModelGradient, MatchesFiniteDifferences) {
  auto doc = parse_cfg(GetParam().cfg, GetParam().name);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& model = *built.value();
  ASSERT_TRUE(model.init(5, DType::f64).ok());
  ASSERT_TRUE(model.reserve(8).ok());
  const int64_t n = 6;  // fewer than reserved: forward works on row views
  Rng rng(31);
  // Biases start at zero; give them values so their effect on later layers is tested.
  for (Param* p : model.params()) {
    if (p->value.shape().rank() == 1) fill_random(p->value, rng, -0.5, 0.5);
  }
  Tensor x = make(model.input_shape().batched(n), DType::f64);
  fill_random(x, rng, -1, 1);
  Tensor target;
  if (model.loss() == LossKind::softmax_cross_entropy) {
    target = make(Shape{n}, DType::i32);
    for (int64_t i = 0; i < n; ++i) {
      target.data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(model.output_shape().numel())));
    }
  } else {
    target = make(model.output_shape().batched(n), DType::f64);
    fill_random(target, rng, 0, 1);
  }
  const LayerContext ctx;
  model.zero_grads();
  const Tensor out = model.forward(x, ctx);
  ASSERT_EQ(out.shape(), model.output_shape().batched(n));
  const double loss = compute_loss(model.loss(), out, target, 1.0, model.output_grad());
  EXPECT_TRUE(std::isfinite(loss));
  model.backward(ctx);
  auto objective = [&] { return compute_loss(model.loss(), model.forward(x, ctx), target, 1.0, Tensor()); };
  EXPECT_EQ(objective(), loss);
  std::vector<Param*> params = model.params();
  ASSERT_FALSE(params.empty());
  for (Param* p : params) {
    double norm = 0;
    for (double g : values(p->grad)) norm += std::fabs(g);
    EXPECT_GT(norm, 0.0) << p->name << " got no gradient";
    check_against_differences(p->name, p->value, p->grad, objective);
  }
}

// ---------------------------------------------------------------- graph models (nn/model_graph.cpp)

// Add and Concat alone: forward by definition, and backward (written, then added onto what an
// input's gradient holds already) against central differences in double of L = sum(y * r).
void check_merge_layer(MergeLayer& layer, const std::vector<Shape>& shapes, const Shape& expected) {
  std::vector<std::string> names;
  for (size_t k = 0; k < shapes.size(); ++k) names.push_back("in" + std::to_string(k));
  auto out = layer.configure_inputs(shapes, names);
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(out.value(), expected);
  const int64_t n = 3;
  Rng rng(7);
  std::vector<Tensor> xs, dxs, before;
  for (const Shape& s : shapes) {
    xs.push_back(make(s.batched(n), DType::f64));
    fill_random(xs.back(), rng, -1, 1);
    dxs.push_back(make(s.batched(n), DType::f64));
    fill_random(dxs.back(), rng, -1, 1);  // what add_to keeps
    before.push_back(make(s.batched(n), DType::f64));
    before.back().copy_from(dxs.back());
  }
  const Tensor y = make(expected.batched(n), DType::f64), r = make(expected.batched(n), DType::f64);
  fill_random(r, rng, -1, 1);
  const LayerContext ctx;
  auto objective = [&] {
    layer.forward_inputs(xs, y, ctx);
    double sum = 0;
    for (int64_t i = 0; i < y.numel(); ++i) sum += get(y, i) * get(r, i);
    return sum;
  };
  objective();
  std::vector<bool> add_to(shapes.size(), false);
  add_to[0] = true;
  layer.backward_inputs(r, dxs, add_to, ctx);
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Tensor grad = make(shapes[k].batched(n), DType::f64);
    for (int64_t i = 0; i < grad.numel(); ++i) set(grad, i, get(dxs[k], i) - (add_to[k] ? get(before[k], i) : 0.0));
    check_against_differences(names[k], xs[k], grad, objective);
  }
}

TEST(MergeLayers, AddGradientCheckF64) {
  Add add;
  check_merge_layer(add, {Shape{2, 2, 3}, Shape{2, 2, 3}, Shape{2, 2, 3}}, Shape{2, 2, 3});
}

TEST(MergeLayers, ConcatGradientCheckF64) {
  Concat concat;
  check_merge_layer(concat, {Shape{2, 2, 3}, Shape{2, 2, 1}, Shape{2, 2, 2}}, Shape{2, 2, 6});
}

// f32 against f64 on the same numbers: sums and copies, so the f32 results are the f64 ones
// rounded (add: three terms, a few ulps).
TEST(MergeLayers, F32MatchesF64) {
  Add add;
  Concat concat;
  for (MergeLayer* layer : std::vector<MergeLayer*>{&add, &concat}) {
    SCOPED_TRACE(layer->kind());
    const std::vector<Shape> shapes = {Shape{3, 2}, Shape{3, 2}};
    auto out = layer->configure_inputs(shapes, {"a", "b"});
    ASSERT_TRUE(out.ok());
    Rng rng(3);
    std::vector<Tensor> x64, x32, d64, d32;
    for (const Shape& s : shapes) {
      x64.push_back(make(s.batched(4), DType::f64));
      x32.push_back(make(s.batched(4), DType::f32));
      fill_random(x32.back(), rng, -1, 1);
      for (int64_t i = 0; i < x32.back().numel(); ++i) set(x64.back(), i, get(x32.back(), i));
      d64.push_back(make(s.batched(4), DType::f64));
      d32.push_back(make(s.batched(4), DType::f32));
    }
    const Tensor y64 = make(out.value().batched(4), DType::f64), y32 = make(out.value().batched(4), DType::f32);
    const Tensor r64 = make(out.value().batched(4), DType::f64), r32 = make(out.value().batched(4), DType::f32);
    fill_random(r32, rng, -1, 1);
    for (int64_t i = 0; i < r32.numel(); ++i) set(r64, i, get(r32, i));
    const LayerContext ctx;
    layer->forward_inputs(x64, y64, ctx);
    layer->forward_inputs(x32, y32, ctx);
    for (int64_t i = 0; i < y64.numel(); ++i) EXPECT_NEAR(get(y32, i), get(y64, i), 1e-6);
    layer->backward_inputs(r64, d64, {false, true}, ctx);  // d starts at zero: adding is writing
    layer->backward_inputs(r32, d32, {false, true}, ctx);
    for (size_t k = 0; k < d64.size(); ++k)
      for (int64_t i = 0; i < d64[k].numel(); ++i) EXPECT_EQ(get(d32[k], i), get(d64[k], i));
  }
}

// The gradient a graph model passes to its input (which feeds three layers here) against
// central differences of the loss.
TEST(GraphModel, InputGradientMatchesFiniteDifferences) {
  const char* text =
      "[net]\ninput = 2x2x2\nloss = mse\ntarget = onehot\n[conv]\nfilters = 2\nsize = 1\n[tanh]\nname = t\n"
      "[add]\ninputs = input, t, input\n[concat]\ninputs = add1, input\n[flatten]\n[dense]\nunits = 3\n";
  auto doc = parse_cfg(text, "graph.cfg");
  ASSERT_TRUE(doc.ok());
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& model = *built.value();
  ASSERT_TRUE(model.is_graph());
  ASSERT_TRUE(model.init(2, DType::f64).ok());
  ASSERT_TRUE(model.reserve(3).ok());
  Rng rng(5);
  const Tensor x = make(model.input_shape().batched(3), DType::f64), dx = make(x.shape(), DType::f64);
  const Tensor target = make(model.output_shape().batched(3), DType::f64);
  fill_random(x, rng, -1, 1);
  fill_random(target, rng, 0, 1);
  const LayerContext ctx;
  compute_loss(model.loss(), model.forward(x, ctx), target, 1.0, model.output_grad());
  model.backward(ctx, dx);
  auto objective = [&] { return compute_loss(model.loss(), model.forward(x, ctx), target, 1.0, Tensor()); };
  check_against_differences("input", x, dx, objective);
}

// Each bad graph is refused at from_cfg, naming the file, line and rule.
TEST(GraphModel, BadGraphsNameTheLineAndTheRule) {
  const std::string head = "[net]\ninput = 4\n[dense]\nunits = 4\nname = a\n[dense]\nunits = 4\nname = b\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[add]\ninputs = a, nope\n", "g.cfg:10: [add] key 'inputs': 'nope' names no layer"},
      {"[add]\ninputs = a, later\n[dense]\nunits = 4\nname = later\n", "'later' is this layer or a later one"},
      {"[add]\ninputs = a, add1\n", "g.cfg:10: [add] key 'inputs': 'add1' is this layer or a later one"},
      {"[add]\ninputs = a, b\nname = me\n[relu]\ninputs = me, me\n", "relu reads one input, not 2"},
      {"[add]\ninputs = a, b\nname = b\n", "g.cfg:11: [add] key 'name': the name 'b' is used twice"},
      {"[add]\ninputs = a, a\n[dense]\nunits = 2\ninputs = a\n", "g.cfg:6: [dense]: the output of b goes to no layer"},
      {"[dense]\nunits = 3\nname = c\n[add]\ninputs = b, c\n",
       "g.cfg:13: [add] key 'inputs': input b gives [4], input c gives [3]: add sums inputs of one shape"},
      {"[dense]\nunits = 3\nname = c\n[concat]\ninputs = b, c\n[reshape]\nshape = 7\n[add]\ninputs = a, reshape1\n",
       "input a gives [4], input reshape1 gives [7]"},
      {"[add]\n", "g.cfg:9: [add]: add sums two or more inputs (inputs = a, b), not 1"},
      {"[add]\ninputs = a,\n", "an empty name"},
  };
  for (const auto& [tail, expected] : cases) {
    SCOPED_TRACE(tail);
    auto doc = parse_cfg(head + tail, "g.cfg");
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    auto built = Model::from_cfg(doc.value());
    ASSERT_FALSE(built.ok());
    EXPECT_NE(built.status().message().find(expected), std::string::npos) << built.status().message();
  }
}

// resnet20 (nn/presets.cpp): He et al.'s CIFAR ResNet on 28x28x1, a graph of 9 residual adds.
TEST(GraphModel, Resnet20PresetBuilds) {
  auto doc = load_model_cfg("resnet20");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Model& model = *built.value();
  EXPECT_TRUE(model.is_graph());
  // convs 144 + 6 x 2304 + 4608 + 5 x 9216 + 512 + 18432 + 5 x 36864 + 2048, 21 batch norms
  // (1,568 values), dense 650.
  EXPECT_EQ(model.param_count(), 272186);
  int adds = 0;
  for (const auto& layer : model.layers()) adds += layer->kind() == "add";
  EXPECT_EQ(adds, 9);
  EXPECT_EQ(model.output_shape(), Shape{10});
  EXPECT_EQ(model.layer_output_shape(model.layers().size() - 3), (Shape{7, 7, 64}));
}

// The int8 fusion rule of a graph (nn/layer_registry.h): a layer joins the stage of the one
// before only when it reads that one alone and is its only reader.
TEST(GraphModel, Int8FusionNeverTakesInAPointAnotherLayerReads) {
  auto doc = parse_cfg("[net]\ninput = 6x6x1\n[conv]\nname = c\nfilters = 2\nsize = 3\npad = 1\n[batchnorm]\n"
                       "[add]\ninputs = c, batchnorm1\n[relu]\n[conv]\nfilters = 2\nsize = 1\n[batchnorm]\n"
                       "inputs = relu1\n[add]\ninputs = batchnorm2, conv1\n[flatten]\n[dense]\nunits = 2\n", "g.cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Model& model = *built.value();
  // c batchnorm1 add1 relu1 conv1 batchnorm2 add2 flatten1 dense1
  const std::vector<bool> expected = {false, false /*c feeds the add too*/, false /*add1*/, true /*relu1: add1's clamp*/,
                                      false, false /*batchnorm2 reads relu1, not conv1*/, false, false, false};
  for (size_t j = 0; j < expected.size(); ++j) EXPECT_EQ(int8_fuses_into_previous(model, j), expected[j]) << j;
}

// Executors that run chains only (the OpenCL device, for now) refuse a graph model through
// refuse_graph, naming a layer that names its inputs; f16 storage runs graphs.
TEST(GraphModel, ChainOnlyExecutorsRefuseAGraphByName) {
  auto doc = parse_cfg("[net]\ninput = 4\n[dense]\nunits = 4\nname = a\n[relu]\n[add]\ninputs = a, relu1\n"
                       "[dense]\nunits = 2\n", "g.cfg");
  ASSERT_TRUE(doc.ok());
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  ASSERT_TRUE(built.value()->init(1).ok());
  EXPECT_TRUE(built.value()->set_storage(DType::f16).ok());
  const Status refused = built.value()->refuse_graph("a chain-only executor");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("g.cfg: graph models (layer add1 names its inputs) do not run on a chain-only "
                                   "executor yet: issue 31"),
            std::string::npos) << refused.message();
}

// ---------------------------------------------------------------- optimizers

struct ParamFixture {
  Param p;
  explicit ParamFixture(std::vector<float> w) {
    const auto n = static_cast<int64_t>(w.size());
    p.name = "w";
    p.value = make(Shape{n}, DType::f32);
    p.grad = make(Shape{n}, DType::f32);
    for (int64_t i = 0; i < n; ++i) p.value.f32()[i] = w[static_cast<size_t>(i)];
  }
  void grad(std::vector<float> g) {
    for (size_t i = 0; i < g.size(); ++i) p.grad.f32()[i] = g[i];
  }
  float w(int64_t i) const { return p.value.f32()[i]; }
};

// Hand-computed single-element updates (see optimizer.h for the rules).
TEST(Optimizer, SgdHandComputed) {
  OptimizerConfig plain;
  plain.momentum = 0;
  {
    ParamFixture f({1.0f});
    Optimizer opt(plain, {&f.p});
    ASSERT_TRUE(opt.init().ok());
    EXPECT_TRUE(opt.state().empty());  // no velocity without momentum
    f.grad({0.5f});
    opt.step(0.1);
    EXPECT_FLOAT_EQ(f.w(0), 0.95f);
    opt.step(0.1);
    EXPECT_FLOAT_EQ(f.w(0), 0.90f);
    EXPECT_EQ(opt.steps(), 2);
  }
  {
    OptimizerConfig momentum;  // 0.9
    ParamFixture f({1.0f});
    Optimizer opt(momentum, {&f.p});
    ASSERT_TRUE(opt.init().ok());
    ASSERT_EQ(opt.state().size(), 1u);
    f.grad({0.5f});
    opt.step(0.1);  // v = 0.5, w = 1 - 0.05
    EXPECT_FLOAT_EQ(f.w(0), 0.95f);
    opt.step(0.1);  // v = 0.9 * 0.5 + 0.5 = 0.95, w = 0.95 - 0.095
    EXPECT_FLOAT_EQ(f.w(0), 0.855f);
    EXPECT_FLOAT_EQ(opt.state()[0].f32()[0], 0.95f);
  }
  {
    OptimizerConfig nesterov;
    nesterov.nesterov = true;
    ParamFixture f({1.0f});
    Optimizer opt(nesterov, {&f.p});
    ASSERT_TRUE(opt.init().ok());
    f.grad({0.5f});
    opt.step(0.1);  // v = 0.5, w = 1 - 0.1 (0.5 + 0.9 * 0.5) = 0.905
    EXPECT_FLOAT_EQ(f.w(0), 0.905f);
    opt.step(0.1);  // v = 0.95, w = 0.905 - 0.1 (0.5 + 0.855) = 0.7695
    EXPECT_FLOAT_EQ(f.w(0), 0.7695f);
  }
  {
    OptimizerConfig decay = plain;
    decay.weight_decay = 0.1;
    ParamFixture f({2.0f});
    Optimizer opt(decay, {&f.p});
    ASSERT_TRUE(opt.init().ok());
    f.grad({0.5f});
    opt.step(0.1);  // g = 0.5 + 0.1 * 2 = 0.7, w = 2 - 0.07
    EXPECT_FLOAT_EQ(f.w(0), 1.93f);
  }
}

// Parameters of 100,003, 7, 4,096 and 9,001 values (laid end to end in blocks of 4,096 on the
// pool, odd tails) get the same bits from SGD and Adam on pools of 1, 2, 3 and 5 threads as
// without one; NaNs in late values of the third and fourth parameters flag the third (the first
// in the list) whatever threads update them, and one in the first flags the first.
TEST(Optimizer, UpdatesInBlocksDoNotDependOnThreads) {
  const std::vector<int64_t> sizes{100003, 7, 4096, 9001};
  auto run = [&](OptimizerKind kind, ThreadPool* pool, std::vector<size_t> nan_in) {
    Rng rng(5);
    std::vector<ParamFixture> fixtures;
    fixtures.reserve(sizes.size());
    for (int64_t n : sizes) {
      std::vector<float> w(static_cast<size_t>(n));
      for (float& v : w) v = static_cast<float>(rng.uniform(-1, 1));
      fixtures.emplace_back(w);
      for (int64_t i = 0; i < n; ++i) fixtures.back().p.grad.f32()[i] = static_cast<float>(rng.uniform(-1, 1));
    }
    for (size_t k : nan_in) fixtures[k].p.grad.f32()[sizes[k] - 5] = std::nanf("");
    std::vector<Param*> params;
    for (ParamFixture& f : fixtures) params.push_back(&f.p);
    OptimizerConfig config;
    config.kind = kind;
    Optimizer opt(config, params);
    EXPECT_TRUE(opt.init().ok());
    const Param* flagged = nullptr;
    for (int step = 0; step < 3; ++step) flagged = opt.step(0.01, pool);
    EXPECT_EQ(flagged, nan_in.empty() ? nullptr : params[nan_in.front()]);
    std::vector<float> values;
    for (const ParamFixture& f : fixtures) {
      values.insert(values.end(), f.p.value.f32(), f.p.value.f32() + f.p.value.numel());
    }
    return values;
  };
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    const std::vector<float> alone = run(kind, nullptr, {});
    run(kind, nullptr, {2, 3});
    for (int threads : {1, 2, 3, 5}) {
      ThreadPool pool(threads);
      EXPECT_EQ(run(kind, &pool, {}), alone) << optimizer_name(kind) << ", " << threads << " threads";
      run(kind, &pool, {2, 3});
      run(kind, &pool, {0});
    }
  }
}

TEST(Optimizer, AdamHandComputed) {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::adam;
  ParamFixture f({1.0f, -2.0f});
  Optimizer opt(adam, {&f.p});
  ASSERT_TRUE(opt.init().ok());
  ASSERT_EQ(opt.state().size(), 2u);  // m, s
  // A constant gradient: the bias-corrected m / sqrt(s) is g / |g| at every step, so each
  // step moves lr against the gradient's sign (less eps). 1e-5: the rule, not the last bits
  // (see AdamMatchesFloatPyTorchClosely for those).
  f.grad({0.5f, -4.0f});
  opt.step(0.1);
  EXPECT_NEAR(f.w(0), 0.9f, 1e-5);
  EXPECT_NEAR(f.w(1), -1.9f, 1e-5);
  opt.step(0.1);
  EXPECT_NEAR(f.w(0), 0.8f, 1e-5);
  EXPECT_NEAR(f.w(1), -1.8f, 1e-5);
  EXPECT_NEAR(opt.state()[0].f32()[0], 0.095f, 1e-7);                 // m = 0.9 * 0.05 + 0.1 * 0.5
  EXPECT_NEAR(opt.state()[1].f32()[0], 0.00049975f, 0.00049975 * 1e-4);  // s = 0.999 * 0.00025 + 0.001 * 0.25
  // Then the gradient flips: m = 0.9 * 0.095 - 0.05 = 0.0355, s = 0.999 * 0.00049975 + 0.00025,
  // m_hat = 0.0355 / (1 - 0.9^3), s_hat = s / (1 - 0.999^3).
  f.grad({-0.5f, 4.0f});
  opt.step(0.1);
  const double m = 0.0355, s = 0.999 * 0.00049975 + 0.001 * 0.25;
  const double m_hat = m / (1 - 0.729), s_hat = s / (1 - std::pow(0.999, 3));
  EXPECT_NEAR(f.w(0), 0.8 - 0.1 * m_hat / (std::sqrt(s_hat) + 1e-8), 1e-5);
  EXPECT_EQ(opt.steps(), 3);
}

// PyTorch's float32 Adam scales the squared gradient by float(1 - beta2) = 0.001f (relative
// error 5e-8), so after one step with a constant gradient w moves by lr to a few float ulps.
// Float arithmetic in the update itself costs ~1e-7 relative of a 0.1 step; 3e-7 on w ~ 1
// is a few ulps.
TEST(Optimizer, AdamMatchesFloatPyTorchClosely) {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::adam;
  ParamFixture f({1.0f, -2.0f});
  Optimizer opt(adam, {&f.p});
  ASSERT_TRUE(opt.init().ok());
  f.grad({0.5f, -4.0f});
  opt.step(0.1);
  EXPECT_NEAR(opt.state()[1].f32()[0], 0.25 * 0.001, 0.00025 * 1e-6) << "s after one step: (1 - beta2) g^2";
  EXPECT_NEAR(f.w(0), 0.9, 3e-7);
  EXPECT_NEAR(f.w(1), -1.9, 3e-7);
  opt.step(0.1);
  EXPECT_NEAR(f.w(0), 0.8, 3e-7);
  EXPECT_NEAR(f.w(1), -1.8, 3e-7);
}

// Several steps on a small tensor with changing gradients against the PyTorch rules in
// double (the optimizer computes in float: 1e-5 relative).
void expect_pytorch_rule(const OptimizerConfig& config) {
  Rng rng(41);
  const int n = 7;
  std::vector<float> w0(n);
  for (auto& v : w0) v = static_cast<float>(rng.uniform(-1, 1));
  ParamFixture f(w0);
  ParamFixture f2({0.25f, -0.75f});  // a second parameter: state per parameter, not shared
  Optimizer opt(config, {&f.p, &f2.p});
  ASSERT_TRUE(opt.init().ok());
  std::vector<double> w(w0.begin(), w0.end()), v(n, 0), m(n, 0), s(n, 0);
  const double lrs[5] = {0.1, 0.05, 0.05, 0.2, 0.01};
  for (int t = 1; t <= 5; ++t) {
    std::vector<float> g(n);
    for (auto& x : g) x = static_cast<float>(rng.uniform(-1, 1));
    f.grad(g);
    f2.grad({1.0f, 1.0f});
    opt.step(lrs[t - 1]);
    const double lr = lrs[t - 1];
    for (int i = 0; i < n; ++i) {
      double gi = g[static_cast<size_t>(i)] + config.weight_decay * w[static_cast<size_t>(i)];
      auto& wi = w[static_cast<size_t>(i)];
      if (config.kind == OptimizerKind::sgd) {
        if (config.momentum == 0) {
          wi -= lr * gi;
        } else {
          auto& vi = v[static_cast<size_t>(i)];
          vi = config.momentum * vi + gi;  // PyTorch: buf = g on the first step, the same from 0
          wi -= lr * (config.nesterov ? gi + config.momentum * vi : vi);
        }
      } else {
        auto& mi = m[static_cast<size_t>(i)];
        auto& si = s[static_cast<size_t>(i)];
        mi = config.beta1 * mi + (1 - config.beta1) * gi;
        si = config.beta2 * si + (1 - config.beta2) * gi * gi;
        const double step_size = lr / (1 - std::pow(config.beta1, t));
        const double denom = std::sqrt(si) / std::sqrt(1 - std::pow(config.beta2, t)) + config.eps;
        wi -= step_size * mi / denom;
      }
      EXPECT_NEAR(f.w(i), wi, 1e-5 * std::max(1.0, std::fabs(wi))) << describe(config) << " step " << t << " i " << i;
    }
  }
  EXPECT_EQ(opt.steps(), 5);
}

TEST(Optimizer, SgdVariantsFollowPyTorchRules) {
  OptimizerConfig c;
  c.momentum = 0;
  expect_pytorch_rule(c);
  c.momentum = 0.9;
  expect_pytorch_rule(c);
  c.nesterov = true;
  expect_pytorch_rule(c);
  c.weight_decay = 0.01;
  expect_pytorch_rule(c);
  c.nesterov = false;
  c.momentum = 0.5;
  expect_pytorch_rule(c);
}

TEST(Optimizer, AdamFollowsPyTorchRules) {
  OptimizerConfig c;
  c.kind = OptimizerKind::adam;
  expect_pytorch_rule(c);
  c.weight_decay = 0.05;
  c.beta1 = 0.8;
  c.beta2 = 0.99;
  c.eps = 1e-6;
  expect_pytorch_rule(c);
}

TEST(Optimizer, Names) {
  EXPECT_EQ(optimizer_from_name("adam").value(), OptimizerKind::adam);
  EXPECT_EQ(optimizer_from_name("sgd").value(), OptimizerKind::sgd);
  EXPECT_FALSE(optimizer_from_name("rmsprop").ok());
  OptimizerConfig c;
  c.nesterov = true;
  c.weight_decay = 0.0005;
  EXPECT_EQ(describe(c), "sgd (momentum 0.9, nesterov, weight decay 0.0005)");
}

// ---------------------------------------------------------------- schedules

TEST(Schedule, Constant) {
  Schedule s;
  s.kind = ScheduleKind::constant;
  s.lr = 0.05;
  for (int64_t step : {0, 1, 99, 100000}) EXPECT_EQ(s.rate(step, 10, 5), 0.05);
}

TEST(Schedule, StepDecaysAtEpochBoundaries) {
  Schedule s;
  s.kind = ScheduleKind::step;
  s.lr = 0.1;
  s.step_epochs = 3;
  s.gamma = 0.5;
  const int64_t per_epoch = 10;
  EXPECT_DOUBLE_EQ(s.rate(0, per_epoch, 20), 0.1);
  EXPECT_DOUBLE_EQ(s.rate(29, per_epoch, 20), 0.1);   // epoch 2
  EXPECT_DOUBLE_EQ(s.rate(30, per_epoch, 20), 0.05);  // epoch 3: first decay
  EXPECT_DOUBLE_EQ(s.rate(59, per_epoch, 20), 0.05);
  EXPECT_DOUBLE_EQ(s.rate(60, per_epoch, 20), 0.025);
  EXPECT_DOUBLE_EQ(s.rate(95, per_epoch, 20), 0.1 * 0.125);
}

TEST(Schedule, CosineStartMiddleEnd) {
  Schedule s;
  s.kind = ScheduleKind::cosine;
  s.lr = 0.1;
  s.lr_min = 0.002;
  const int64_t per_epoch = 25, epochs = 4;  // 100 steps
  EXPECT_DOUBLE_EQ(s.rate(0, per_epoch, epochs), 0.1);
  EXPECT_NEAR(s.rate(50, per_epoch, epochs), (0.1 + 0.002) / 2, 1e-15);
  EXPECT_NEAR(s.rate(100, per_epoch, epochs), 0.002, 1e-15);
  EXPECT_NEAR(s.rate(25, per_epoch, epochs), 0.002 + 0.098 * (1 + std::cos(3.14159265358979323846 / 4)) / 2, 1e-15);
  EXPECT_NEAR(s.rate(250, per_epoch, epochs), 0.002, 1e-15);  // past the end: stays at lr_min
  double previous = 1;
  for (int64_t step = 0; step <= 100; ++step) {
    const double r = s.rate(step, per_epoch, epochs);
    EXPECT_LE(r, previous) << step;  // never rises
    previous = r;
  }
}

TEST(Schedule, Names) {
  EXPECT_EQ(schedule_from_name("cosine").value(), ScheduleKind::cosine);
  EXPECT_EQ(schedule_from_name("step").value(), ScheduleKind::step);
  EXPECT_FALSE(schedule_from_name("linear").ok());
  EXPECT_STREQ(schedule_name(ScheduleKind::constant), "constant");
}

}  // namespace
}  // namespace rg
