// The recurrent convolutional layer (RCL) and the rcnn preset: forward against the definition
// written plainly in double, backward through time against central differences in double
// (T = 0, 1, 2, 3; sizes 1, 3 and 5; non-square inputs; in and out channels that differ; batch
// statistics and running ones), f32 against f64, 1, 2 and 3 threads bit for bit, grads that
// overwrite or accumulate, the running statistics of every step, cfg errors, gradients through
// a Model (shared workspace), its state in Model::reserve (a budget failure is a Status), and
// a checkpoint of a trained rcnn that keeps every batch norm's running statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/memory.h"
#include "base/thread_pool.h"
#include "data/dataset.h"
#include "layer_check.h"
#include "nn/cfg.h"
#include "nn/layer_registry.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "nn/recurrent_conv.h"
#include "ops/gemm.h"
#include "train/trainer.h"

namespace rg {
namespace {

RecurrentConvOptions rcl_options(int64_t filters, int64_t kernel, int64_t steps) {
  RecurrentConvOptions o;
  o.filters = filters;
  o.kernel = kernel;
  o.steps = steps;
  return o;
}

// The RCL from its definition, in double, from the layer's params (and buffers in inference):
//   z_0 = conv(u, W_ff), z_t = conv(u, W_ff) + conv(x_{t-1}, W_rec), x_t = relu(BN_t(z_t)).
// Convolutions with stride 1 and zero padding size / 2; BN_t per channel with the biased
// variance of the batch (training) or the running statistics (inference), eps 1e-5.
struct RclReference {
  std::vector<double> y;                                // x_T
  std::vector<std::vector<double>> mean, unbiased_var;  // per step, per channel: z_t's batch statistics
};

RclReference rcl_reference(Layer& layer, const Tensor& u, int64_t n, const Shape& input, const RecurrentConvOptions& o,
                           bool training) {
  const int64_t h = input[0], w = input[1], c = input[2], f = o.filters, k = o.kernel, pad = k / 2;
  std::vector<Param*> p = layer.params(), b = layer.buffers();
  const Tensor& w_ff = p[0]->value;
  const size_t bn_first = o.steps > 0 ? 2 : 1;
  // out [n, h, w, f] = conv of in [n, h, w, channels] with weight [(kh*k + kw)*channels + ch, f]
  auto conv = [&](const std::vector<double>& in, int64_t channels, const Tensor& weight) {
    std::vector<double> out(static_cast<size_t>(n * h * w * f), 0.0);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          for (int64_t q = 0; q < f; ++q) {
            double sum = 0;
            for (int64_t kh = 0; kh < k; ++kh)
              for (int64_t kw = 0; kw < k; ++kw)
                for (int64_t ch = 0; ch < channels; ++ch) {
                  const int64_t ii = i - pad + kh, jj = j - pad + kw;
                  if (ii < 0 || ii >= h || jj < 0 || jj >= w) continue;
                  sum += in[static_cast<size_t>(((s * h + ii) * w + jj) * channels + ch)] *
                         get(weight, ((kh * k + kw) * channels + ch) * f + q);
                }
            out[static_cast<size_t>(((s * h + i) * w + j) * f + q)] = sum;
          }
    return out;
  };
  RclReference ref;
  const std::vector<double> ff = conv(values(u), c, w_ff);
  const int64_t rows = n * h * w;
  std::vector<double> x;
  for (int64_t t = 0; t <= o.steps; ++t) {
    std::vector<double> z = ff;
    if (t > 0) {
      const std::vector<double> rec = conv(x, f, p[1]->value);
      for (size_t i = 0; i < z.size(); ++i) z[i] += rec[i];
    }
    const Tensor& gamma = p[bn_first + 2 * static_cast<size_t>(t)]->value;
    const Tensor& beta = p[bn_first + 2 * static_cast<size_t>(t) + 1]->value;
    std::vector<double> means(static_cast<size_t>(f)), vars(static_cast<size_t>(f));
    x.assign(z.size(), 0.0);
    for (int64_t q = 0; q < f; ++q) {
      double mean = 0, var = 0;
      for (int64_t r = 0; r < rows; ++r) mean += z[static_cast<size_t>(r * f + q)] / double(rows);
      for (int64_t r = 0; r < rows; ++r) var += std::pow(z[static_cast<size_t>(r * f + q)] - mean, 2) / double(rows);
      means[static_cast<size_t>(q)] = mean;
      vars[static_cast<size_t>(q)] = var * double(rows) / double(rows - 1);
      if (!training) {
        mean = get(b[2 * static_cast<size_t>(t)]->value, q);
        var = get(b[2 * static_cast<size_t>(t) + 1]->value, q);
      }
      for (int64_t r = 0; r < rows; ++r) {
        const size_t i = static_cast<size_t>(r * f + q);
        x[i] = std::max(0.0, (z[i] - mean) / std::sqrt(var + 1e-5) * get(gamma, q) + get(beta, q));
      }
    }
    ref.mean.push_back(means);
    ref.unbiased_var.push_back(vars);
  }
  ref.y = x;
  return ref;
}

LayerSpec rcl_spec(const std::string& name, Shape input, RecurrentConvOptions o, bool training = true) {
  LayerSpec spec{name, [o] { return std::unique_ptr<Layer>(new RecurrentConv2D(o)); }, input, nullptr, training};
  spec.reference = [input, o, training](Layer& layer, const Tensor& x, int64_t n) {
    return rcl_reference(layer, x, n, input, o, training).y;
  };
  return spec;
}

std::vector<LayerSpec> rcl_specs() {
  return {
      rcl_spec("rcl_T0", Shape{4, 4, 2}, rcl_options(3, 3, 0)),
      rcl_spec("rcl_T1", Shape{4, 5, 2}, rcl_options(3, 3, 1)),
      rcl_spec("rcl_T3", Shape{4, 5, 3}, rcl_options(2, 3, 3)),
      rcl_spec("rcl_T3_same_channels", Shape{3, 3, 3}, rcl_options(3, 3, 3)),
      rcl_spec("rcl_T3_size1", Shape{3, 4, 2}, rcl_options(3, 1, 3)),
      rcl_spec("rcl_T2_size5_rect", Shape{5, 3, 1}, rcl_options(2, 5, 2)),
      // 16 channels: both convs take their input gradient as a direct convolution
      rcl_spec("rcl_T2_wide", Shape{3, 4, 16}, rcl_options(16, 3, 2)),
      // running statistics at their initial values (mean 0, variance 1): BN_t is a fixed affine map
      rcl_spec("rcl_T3_inference", Shape{4, 3, 2}, rcl_options(3, 3, 3), false),
  };
}

class RclTest : public ::testing::TestWithParam<LayerSpec> {};
INSTANTIATE_TEST_SUITE_P(Rcl, RclTest, ::testing::ValuesIn(rcl_specs()), spec_name);

TEST_P(RclTest, GradientCheckF64) { check_layer_gradients(GetParam(), 3); }
TEST_P(RclTest, F32MatchesF64) { compare_f32_f64(GetParam(), 4, nullptr); }
TEST_P(RclTest, F32MatchesF64Threaded) {
  ThreadPool pool(3);
  compare_f32_f64(GetParam(), 5, &pool);
}

// The specs reach both of Conv2D's routes to dx in the members (im2col's for few channels).
TEST(Rcl, SpecsCoverBothInputGradientRoutes) {
  auto direct = [](int64_t c, int64_t f) {
    Conv2D conv(ConvOptions{f, 3, 1, 1, 0, Init::he_uniform, false, std::nullopt});
    EXPECT_TRUE(conv.configure(Shape{3, 4, c}).ok());
    return conv.direct_input_grad();
  };
  EXPECT_TRUE(direct(16, 16));  // rcl_T2_wide's ff and rec
  EXPECT_FALSE(direct(2, 3));   // rcl_T1's ff
}

// Every result is bit-identical with 1, 2, 3 and 4 threads, for batches of one chunk and of many
// (rcl_chunked's convs split their weight gradients, 72 x 8, over the depth: ops/gemm.h).
TEST(Rcl, ResultsDoNotDependOnThreads) {
  ASSERT_GT(gemm_depth_blocks(72, 8, 16 * 784), 1);
  std::vector<LayerSpec> specs = rcl_specs();
  specs.push_back(rcl_spec("rcl_chunked", Shape{28, 28, 8}, rcl_options(8, 3, 3)));
  for (const LayerSpec& spec : specs) {
    SCOPED_TRACE(spec.name);
    const std::vector<double> one = results_with_threads(spec, 1, 33);
    EXPECT_EQ(one, results_with_threads(spec, 2, 33));
    EXPECT_EQ(one, results_with_threads(spec, 3, 33));
    EXPECT_EQ(one, results_with_threads(spec, 4, 33));
  }
}

// accumulate_grads = false overwrites every grad (the recurrent weight's only at its first
// step, adding the later steps); true adds to them. The first layer's dx may be undefined.
TEST(Rcl, BackwardOverwritesOrAccumulates) {
  RecurrentConv2D rcl(rcl_options(3, 3, 3));
  rcl.set_name("r");
  ASSERT_TRUE(rcl.configure(Shape{5, 4, 2}).ok());
  Rng rng(4);
  ASSERT_TRUE(rcl.init(rng, DType::f64).ok());
  Tensor x = make(Shape{3, 5, 4, 2}, DType::f64), y = make(Shape{3, 5, 4, 3}, DType::f64);
  Tensor dy = make(y.shape(), DType::f64), dx = make(x.shape(), DType::f64);
  fill_random(x, rng, -1, 1);
  fill_random(dy, rng, -1, 1);
  LayerContext ctx;
  ctx.training = true;
  rcl.forward(x, y, ctx);
  ctx.accumulate_grads = false;
  rcl.backward(x, y, dy, dx, ctx);
  std::vector<std::vector<double>> fresh;
  for (Param* p : rcl.params()) fresh.push_back(values(p->grad));
  for (Param* p : rcl.params()) fill_value(p->grad, 1e6);  // stale values must vanish
  rcl.backward(x, y, dy, Tensor(), ctx);
  std::vector<Param*> params = rcl.params();
  for (size_t k = 0; k < params.size(); ++k) EXPECT_EQ(values(params[k]->grad), fresh[k]) << params[k]->name;
  ctx.accumulate_grads = true;
  rcl.backward(x, y, dy, Tensor(), ctx);
  for (size_t k = 0; k < params.size(); ++k) {
    const std::vector<double> twice = values(params[k]->grad);
    for (size_t i = 0; i < twice.size(); ++i)
      ASSERT_NEAR(twice[i], 2 * fresh[k][i], 1e-12 * std::max(1.0, std::fabs(fresh[k][i]))) << params[k]->name;
  }
}

// In training each step's batch norm follows its own z_t (PyTorch's update: momentum 0.1,
// unbiased variance); in inference the running statistics are used, step by step.
TEST(Rcl, RunningStatisticsPerStepAndInference) {
  const Shape input{4, 3, 2};
  const RecurrentConvOptions o = rcl_options(3, 3, 2);
  RecurrentConv2D rcl(o);
  rcl.set_name("r");
  ASSERT_TRUE(rcl.configure(input).ok());
  Rng rng(5);
  ASSERT_TRUE(rcl.init(rng, DType::f64).ok());
  for (Param* p : rcl.params()) fill_random(p->value, rng, -1, 1);
  const int64_t n = 4;
  Tensor x = make(input.batched(n), DType::f64), y = make(Shape{n, 4, 3, 3}, DType::f64);
  fill_random(x, rng, -2, 2);
  const RclReference batch = rcl_reference(rcl, x, n, input, o, true);
  LayerContext ctx;
  ctx.training = true;
  rcl.forward(x, y, ctx);
  std::vector<Param*> b = rcl.buffers();
  ASSERT_EQ(b.size(), 6u);
  for (size_t t = 0; t < 3; ++t)
    for (int64_t q = 0; q < 3; ++q) {
      EXPECT_NEAR(get(b[2 * t]->value, q), 0.1 * batch.mean[t][static_cast<size_t>(q)], 1e-12) << "step " << t;
      EXPECT_NEAR(get(b[2 * t + 1]->value, q), 0.9 + 0.1 * batch.unbiased_var[t][static_cast<size_t>(q)], 1e-12)
          << "step " << t;
    }
  EXPECT_NE(values(b[0]->value), values(b[2]->value)) << "the steps share their statistics";
  // Move the running statistics further, then run in inference on a new batch.
  for (int i = 0; i < 3; ++i) {
    fill_random(x, rng, -2, 2);
    rcl.forward(x, y, ctx);
  }
  fill_random(x, rng, -2, 2);
  ctx.training = false;
  rcl.forward(x, y, ctx);
  const std::vector<double> want = rcl_reference(rcl, x, n, input, o, false).y;
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_NEAR(get(y, i), want[static_cast<size_t>(i)], 1e-12) << i;
  const std::vector<double> with_batch = rcl_reference(rcl, x, n, input, o, true).y;
  double differ = 0;
  for (int64_t i = 0; i < y.numel(); ++i) differ = std::max(differ, std::fabs(get(y, i) - with_batch[static_cast<size_t>(i)]));
  EXPECT_GT(differ, 1e-3) << "inference gave the batch-statistics output";
}

Result<std::unique_ptr<Model>> build(const std::string& text) {
  RG_ASSIGN(CfgDocument doc, parse_cfg(text, "test.cfg"));
  return Model::from_cfg(doc);
}

// Names from the layer's name, stable for checkpoints; counts known before init; the shape.
TEST(RclCfg, ShapesNamesAndCounts) {
  auto built = build("[net]\ninput = 6x5x2\n[rcl]\nfilters = 4\n[rcl]\nname = last\nfilters = 3\nsize = 1\nsteps = 0\n"
                     "[flatten]\n[dense]\nunits = 2\n");
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& model = *built.value();
  EXPECT_EQ(model.layers()[0]->kind(), "rcl");
  EXPECT_EQ(model.layers()[0]->configure(Shape{6, 5, 2}).value(), (Shape{6, 5, 4}));
  EXPECT_EQ(model.layers()[1]->configure(Shape{6, 5, 4}).value(), (Shape{6, 5, 3}));
  const int64_t before = model.param_count();
  ASSERT_TRUE(model.init(1).ok());
  std::vector<std::string> names;
  int64_t allocated = 0;
  for (Param* p : model.params()) {
    names.push_back(p->name);
    allocated += p->value.numel();
  }
  EXPECT_EQ(before, allocated);
  // rcl1: 3x3x2x4 ff, 3x3x4x4 rec, 4 batch norms of 4 channels; last: 1x1x4x3 ff, one batch norm
  EXPECT_EQ(allocated, 72 + 144 + 4 * 8 + 12 + 6 + 6 * 5 * 3 * 2 + 2);
  const std::vector<std::string> want = {
      "rcl1.ff.weight", "rcl1.rec.weight", "rcl1.bn0.gamma", "rcl1.bn0.beta", "rcl1.bn1.gamma", "rcl1.bn1.beta",
      "rcl1.bn2.gamma", "rcl1.bn2.beta",   "rcl1.bn3.gamma", "rcl1.bn3.beta", "last.ff.weight", "last.bn0.gamma",
      "last.bn0.beta",  "dense1.weight",   "dense1.bias"};
  EXPECT_EQ(names, want);
  std::vector<std::string> buffers;
  for (Param* p : model.buffers()) buffers.push_back(p->name);
  EXPECT_EQ(buffers.size(), 10u);
  EXPECT_EQ(buffers.front(), "rcl1.bn0.running_mean");
  EXPECT_EQ(buffers[7], "rcl1.bn3.running_var");
  EXPECT_EQ(buffers.back(), "last.bn0.running_var");
  EXPECT_NE(model.summary().find("3 steps (4 states)"), std::string::npos) << model.summary();
}

TEST(RclCfg, ErrorsNameTheKey) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> bad = {
      {"[rcl]\nfilters = 2\nsize = 4\n", {"key 'size'", "odd"}},
      {"[rcl]\nfilters = 2\nsteps = -1\n", {"key 'steps'", "-1"}},
      {"[rcl]\nsize = 3\n", {"missing required key 'filters'"}},
      {"[rcl]\nfilters = 2\nstride = 2\n", {"unknown key 'stride'"}},
      {"[rcl]\nfilters = 2\ninit = lecun\n", {"key 'init'", "lecun"}},
      {"[rcl]\nfilters = 2\nmomentum = 2\n", {"key 'momentum'"}},
      {"[flatten]\n[rcl]\nfilters = 2\n", {"takes images"}},
  };
  for (const auto& [layers, messages] : bad) {
    auto model = build("[net]\ninput = 8x8x3\n" + layers + "[flatten]\n[dense]\nunits = 2\n");
    ASSERT_FALSE(model.ok()) << layers;
    EXPECT_NE(model.status().message().find("test.cfg:"), std::string::npos) << model.status().message();
    for (const std::string& m : messages) EXPECT_NE(model.status().message().find(m), std::string::npos) << model.status().message();
  }
}

// Two RCLs through Model (its shared workspace for the member convs, pooling between, the
// ping-pong gradients), every parameter against central differences of the loss.
TEST(RclModel, GradientsThroughModel) {
  check_classifier_gradients(
      "[net]\ninput = 6x5x1\nloss = softmax_cross_entropy\n"
      "[conv]\nfilters = 2\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n[relu]\n"
      "[rcl]\nfilters = 3\nsteps = 2\n[maxpool]\nsize = 2\n[rcl]\nfilters = 4\nsteps = 3\n[global_avgpool]\n"
      "[dense]\nunits = 3\n");
}

// Model::reserve allocates the RCL's states through the counted allocator and counts them in
// reserved_bytes; past a budget it returns the error instead of aborting later.
TEST(RclModel, StatesAreReservedAndCounted) {
  const std::string cfg = "[net]\ninput = 8x8x1\n[rcl]\nfilters = 4\nsteps = 3\n[global_avgpool]\n[dense]\nunits = 2\n";
  auto built = build(cfg);
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& model = *built.value();
  ASSERT_TRUE(model.init(1).ok());
  // outputs 256 + 4 + 2, gradient buffers 2 x 256, states (4 z + 3 x + 3 buffers) x 256, in f32
  EXPECT_EQ(model.reserved_bytes(1).activations + model.reserved_bytes(1).layer_state + model.reserved_bytes(1).gradients, (256 + 4 + 2 + 2 * 256 + 10 * 256) * 4);
  MemoryAccount& host = host_memory();
  const int64_t before = host.current_bytes();
  ASSERT_TRUE(model.reserve(16).ok());
  EXPECT_EQ(host.current_bytes() - before, model.reserved_bytes(16).total());

  auto tight = build(cfg);
  ASSERT_TRUE(tight.ok());
  ASSERT_TRUE(tight.value()->init(1).ok());
  // Room for the outputs and one more, not for the states (10 x 64 x 256 f32 = 640 KiB): the
  // reserve is refused before it allocates anything, its message counting the states in.
  const int64_t held = host.current_bytes();
  host.set_budget(held + 64 * (256 + 4 + 2 + 256) * 4);
  const Status refused = tight.value()->reserve(64);
  const int64_t after = host.current_bytes();
  host.set_budget(0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(after, held) << "refused before allocating";
  EXPECT_NE(refused.message().find(format_bytes(tight.value()->reserved_bytes(64).total())), std::string::npos)
      << refused.message();
}

// The preset: its layers, and the shapes the issue asks for.
TEST(Rcnn, PresetBuilds) {
  auto doc = load_model_cfg("rcnn");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  const Model& model = *built.value();
  std::vector<std::string> kinds;
  for (const auto& layer : model.layers()) kinds.push_back(layer->kind());
  const std::vector<std::string> want = {"conv", "batchnorm", "relu", "rcl", "maxpool", "rcl", "maxpool",
                                         "global_avgpool", "dense"};
  EXPECT_EQ(kinds, want);
  for (size_t i : {3u, 5u}) {
    const auto* rcl = dynamic_cast<const RecurrentConv2D*>(model.layers()[i].get());
    ASSERT_NE(rcl, nullptr);
    EXPECT_EQ(rcl->options().steps, 3);
  }
  EXPECT_EQ(model.output_shape(), Shape{10});
  EXPECT_EQ(model.param_count(), 75498);
}

// A trained rcnn's checkpoint restores every param and every step's running statistics bit
// for bit, and the restored model predicts exactly what the trained one does.
TEST(Rcnn, CheckpointKeepsRunningStatistics) {
  const std::string path = ::testing::TempDir() + "retrograd_test_rcl_rcnn.ckpt";
  auto doc = load_model_cfg("rcnn");
  ASSERT_TRUE(doc.ok());
  auto trained = Model::from_cfg(doc.value());
  ASSERT_TRUE(trained.ok());
  Model& model = *trained.value();
  ASSERT_TRUE(model.init(3).ok());
  TrainOptions options;
  options.epochs = 1;
  options.batch = 32;
  options.seed = 3;
  options.checkpoint_path = path;
  options.log = std::fopen("/dev/null", "w");
  const DataSplit data = make_synthetic(96, 32, 10, 3);
  ThreadPool pool(2);
  Trainer trainer(model, pool, options);
  ASSERT_TRUE(trainer.prepare().ok());
  auto records = trainer.fit(data.train, nullptr);
  ASSERT_TRUE(records.ok()) << records.status().message();
  std::fclose(options.log);

  auto other = Model::from_cfg(doc.value());
  ASSERT_TRUE(other.ok());
  Model& restored = *other.value();
  ASSERT_TRUE(restored.init(4).ok());
  auto ck = read_checkpoint(path);
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  ASSERT_TRUE(restore_checkpoint(ck.value(), path, restored, nullptr).ok());
  std::vector<Param*> a = model.buffers(), b = restored.buffers();
  ASSERT_EQ(a.size(), 2u * (1 + 4 + 4));  // the conv's batch norm and 4 per RCL
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->name, b[i]->name);
    EXPECT_EQ(values(a[i]->value), values(b[i]->value)) << a[i]->name;
  }
  EXPECT_NE(values(a[0]->value), std::vector<double>(32, 0.0)) << "the running mean never moved";
  std::vector<Param*> pa = model.params(), pb = restored.params();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(values(pa[i]->value), values(pb[i]->value)) << pa[i]->name;

  ASSERT_TRUE(model.reserve(8).ok());
  ASSERT_TRUE(restored.reserve(8).ok());
  Tensor x = make(model.input_shape().batched(8), DType::f32);
  Rng rng(6);
  fill_random(x, rng, 0, 1);
  LayerContext ctx;
  ctx.pool = &pool;
  EXPECT_EQ(values(model.forward(x, ctx)), values(restored.forward(x, ctx)));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rg
