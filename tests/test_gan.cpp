// GAN training through the library: the generator's gradient through the discriminator
// against central differences (f64), the pair's checks, bit-identical runs and resume, and
// the classifier-based score on distributions whose value is known.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "layer_check.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "train/classifier_score.h"
#include "train/gan.h"

namespace rg {
namespace {

// A small pair on 6x6x1 images: batch norm in G (training-mode statistics), a strided conv
// and a leaky ReLU in D, so every kind of layer DCGAN uses passes a gradient.
const char* kGeneratorCfg =
    "[net]\ninput = 5\nloss = none\n"
    "[dense]\nunits = 18\n[reshape]\nshape = 3x3x2\n[batchnorm]\n[relu]\n"
    "[conv_transpose]\nfilters = 1\nsize = 4\nstride = 2\npad = 1\n[tanh]\n";
const char* kDiscriminatorCfg =
    "[net]\ninput = 6x6x1\nloss = bce_with_logits\n"
    "[conv]\nfilters = 3\nsize = 4\nstride = 2\npad = 1\n[leaky_relu]\nslope = 0.2\n[dense]\nunits = 1\n";

std::unique_ptr<Model> build(const char* text, const char* name, DType dtype, uint64_t seed) {
  auto doc = parse_cfg(text, name);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  auto model = Model::from_cfg(doc.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  std::unique_ptr<Model> m = model.take();
  EXPECT_TRUE(m->init(seed, dtype).ok());
  return m;
}

// d BCE(D(x), 1) / dx through Model::backward's input gradient, against central differences.
TEST(Gan, DiscriminatorInputGradient) {
  auto d = build(kDiscriminatorCfg, "d", DType::f64, 3);
  const int64_t n = 3;
  ASSERT_TRUE(d->reserve(n).ok());
  Rng rng(5);
  Tensor x = make(d->input_shape().batched(n), DType::f64), ones = make(Shape{n, 1}, DType::f64);
  fill_random(x, rng, -1, 1, 1e-3);
  fill_value(ones, 1.0);
  LayerContext ctx;
  ctx.training = true;
  auto objective = [&] { return compute_loss(LossKind::bce_with_logits, d->forward(x, ctx), ones, 1.0, Tensor()); };
  Tensor dx = make(x.shape(), DType::f64);
  fill_value(dx, std::numeric_limits<double>::quiet_NaN());  // must be overwritten
  compute_loss(LossKind::bce_with_logits, d->forward(x, ctx), ones, 1.0, d->output_grad());
  d->backward(ctx, dx);
  check_against_differences("dL/dx", x, dx, objective);
}

// G's parameter gradients of G's loss BCE(D(G(z)), 1), passed from D's input to G's output as
// GanTrainer does, against central differences in each of G's parameters.
TEST(Gan, GeneratorGradientThroughDiscriminator) {
  auto g = build(kGeneratorCfg, "g", DType::f64, 1);
  auto d = build(kDiscriminatorCfg, "d", DType::f64, 2);
  const int64_t n = 4;
  ASSERT_TRUE(g->reserve(n).ok());
  ASSERT_TRUE(d->reserve(n).ok());
  Rng rng(9);
  Tensor z = make(g->input_shape().batched(n), DType::f64), ones = make(Shape{n, 1}, DType::f64);
  fill_random(z, rng, -1, 1);
  fill_value(ones, 1.0);
  for (Param* p : g->params()) fill_random(p->value, rng, -0.8, 0.8);
  LayerContext ctx;
  ctx.training = true;
  ctx.accumulate_grads = false;
  auto objective = [&] {
    return compute_loss(LossKind::bce_with_logits, d->forward(g->forward(z, ctx), ctx), ones, 1.0, Tensor());
  };
  compute_loss(LossKind::bce_with_logits, d->forward(g->forward(z, ctx), ctx), ones, 1.0, d->output_grad());
  d->backward(ctx, g->output_grad());
  g->backward(ctx);
  for (Param* p : g->params()) check_against_differences(p->name, p->value, p->grad, objective);
}

// Every preset builds: a model, or (dcgan) a [gan] document whose two networks fit together.
TEST(Gan, EveryPresetBuildsAndDcganFits) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    auto doc = load_model_cfg(name);
    ASSERT_TRUE(doc.ok()) << doc.status().message();
    if (doc.value().sections.front().kind() == "gan") continue;
    auto model = Model::from_cfg(doc.value());
    ASSERT_TRUE(model.ok()) << model.status().message();
  }
  auto g = Model::from_cfg(load_model_cfg("dcgan-generator").value());
  auto d = Model::from_cfg(load_model_cfg("dcgan-discriminator").value());
  ASSERT_TRUE(g.ok() && d.ok());
  EXPECT_EQ(g.value()->param_count(), 533889);  // 64*6272 + 2*128 + 128*16*64 + 2*64 + 64*16 + 1
  EXPECT_EQ(d.value()->param_count(), 138689);  // 16*64 + 64 + 64*16*128 + 2*128 + 6272 + 1
  EXPECT_EQ(g.value()->input_shape(), Shape{64});
  EXPECT_EQ(g.value()->loss(), LossKind::none);
  EXPECT_TRUE(check_gan_pair(*g.value(), *d.value()).ok());
  auto with_target = parse_cfg("[net]\ninput = 4\nloss = none\ntarget = input\n[dense]\nunits = 4\n", "t.cfg");
  ASSERT_TRUE(with_target.ok());
  auto refused = Model::from_cfg(with_target.value());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("t.cfg:4: [net] key 'target'"), std::string::npos) << refused.status().message();
}

TEST(Gan, PairChecksNameWhatDoesNotFit) {
  auto g = build(kGeneratorCfg, "g.cfg", DType::f32, 1);
  auto d = build(kDiscriminatorCfg, "d.cfg", DType::f32, 2);
  EXPECT_TRUE(check_gan_pair(*g, *d).ok());
  auto wide_d = build("[net]\ninput = 7x7x1\nloss = bce_with_logits\n[dense]\nunits = 1\n", "wide.cfg", DType::f32, 2);
  Status s = check_gan_pair(*g, *wide_d);
  EXPECT_NE(s.message().find("makes samples [6, 6, 1]"), std::string::npos) << s.message();
  auto two_logits = build("[net]\ninput = 6x6x1\nloss = bce_with_logits\n[dense]\nunits = 2\n", "two.cfg", DType::f32, 2);
  s = check_gan_pair(*g, *two_logits);
  EXPECT_NE(s.message().find("one logit"), std::string::npos) << s.message();
  auto plain_g = build("[net]\ninput = 5\nloss = none\n[dense]\nunits = 36\n[reshape]\nshape = 6x6x1\n", "plain.cfg",
                       DType::f32, 1);
  s = check_gan_pair(*plain_g, *d);
  EXPECT_NE(s.message().find("must end in tanh"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("plain.cfg"), std::string::npos) << s.message();
}

// 40 random 6x6 images in [0, 1], labels 0.
Dataset tiny_images() {
  Dataset data;
  data.name = "tiny";
  data.sample_shape = Shape{6, 6, 1};
  data.num_classes = 1;
  data.samples = make(Shape{40, 6, 6, 1}, DType::f32);
  data.labels = make(Shape{40}, DType::i32);
  Rng rng(4);
  fill_random(data.samples, rng, 0, 1);
  return data;
}

TrainOptions gan_options(int64_t epochs, FILE* log) {
  TrainOptions options;
  options.epochs = epochs;
  options.batch = 16;  // 40 samples: two full batches and one of 8
  options.seed = 3;
  options.optimizer.kind = OptimizerKind::adam;
  options.optimizer.beta1 = 0.5;
  options.schedule.lr = 2e-3;
  options.log = log;
  return options;
}

std::vector<float> weights(Model& model) {
  std::vector<float> all;
  for (Param* p : model.params()) all.insert(all.end(), p->value.f32(), p->value.f32() + p->value.numel());
  for (Param* p : model.buffers()) all.insert(all.end(), p->value.f32(), p->value.f32() + p->value.numel());
  return all;
}

struct GanRun {
  std::unique_ptr<Model> g, d;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<GanTrainer> trainer;
};

GanRun start_run(int threads, int64_t epochs) {
  GanRun run;
  run.g = build(kGeneratorCfg, "g", DType::f32, 1);
  run.d = build(kDiscriminatorCfg, "d", DType::f32, 2);
  run.pool.reset(new ThreadPool(threads));
  static FILE* null_log = std::fopen("/dev/null", "w");
  run.trainer.reset(new GanTrainer(*run.g, *run.d, *run.pool, gan_options(epochs, null_log)));
  EXPECT_TRUE(run.trainer->prepare().ok());
  return run;
}

// GAN training is fp32 only: a layer of a precision of its own (cfg `precision`) is refused by
// name, an own fp32 is not.
TEST(Gan, ALayersOwnFixedPointPrecisionIsRefused) {
  GanRun run;
  run.g = build(kGeneratorCfg, "g", DType::f32, 1);
  run.d = build(kDiscriminatorCfg, "d", DType::f32, 2);
  run.pool.reset(new ThreadPool(1));
  static FILE* null_log = std::fopen("/dev/null", "w");
  Layer& first = *run.d->layers().front();
  first.set_own_precision(OwnPrecision{"w8a8e8", GemmPrecision::fixed_point, int8_training_roles()});
  GanTrainer refused(*run.g, *run.d, *run.pool, gan_options(1, null_log));
  const Status status = refused.prepare();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("layer " + first.name() + " has a precision of its own (w8a8e8): GAN training runs in "
                                  "fp32 only"),
            std::string::npos)
      << status.message();
  first.set_own_precision(OwnPrecision{"fp32", GemmPrecision::f32, {}});
  GanTrainer allowed(*run.g, *run.d, *run.pool, gan_options(1, null_log));
  EXPECT_TRUE(allowed.prepare().ok());
}

// Same seed: bit-identical networks whatever the thread count; a run saved after epoch 1 and
// resumed ends where one uninterrupted run does; the losses move.
TEST(Gan, RunsAreDeterministicAndResumeExactly) {
  const Dataset data = tiny_images();
  GanRun one = start_run(1, 2), three = start_run(3, 2);
  std::vector<GanEpochRecord> records;
  for (int e = 0; e < 2; ++e) {
    auto r = one.trainer->train_epoch(data);
    ASSERT_TRUE(r.ok()) << r.status().message();
    records.push_back(r.value());
    ASSERT_TRUE(three.trainer->train_epoch(data).ok());
  }
  EXPECT_EQ(weights(*one.g), weights(*three.g));
  EXPECT_EQ(weights(*one.d), weights(*three.d));
  EXPECT_GT(records[0].loss_d, 0.0);
  EXPECT_GT(records[0].d_real, 0.0);
  EXPECT_LT(records[0].d_real, 1.0);
  EXPECT_NE(records[0].loss_g, records[1].loss_g);

  const std::string g_path = ::testing::TempDir() + "retrograd_gan_g.ckpt";
  const std::string d_path = ::testing::TempDir() + "retrograd_gan_d.ckpt";
  GanRun first = start_run(2, 2);
  ASSERT_TRUE(first.trainer->train_epoch(data).ok());
  ASSERT_TRUE(first.trainer->save(g_path, d_path).ok());
  GanRun resumed = start_run(2, 2);
  auto g_ck = read_checkpoint(g_path);
  auto d_ck = read_checkpoint(d_path);
  ASSERT_TRUE(g_ck.ok() && d_ck.ok());
  const Status s = resumed.trainer->resume_from(g_ck.value(), g_path, d_ck.value(), d_path);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(resumed.trainer->epochs_done(), 1);
  ASSERT_TRUE(resumed.trainer->train_epoch(data).ok());
  EXPECT_EQ(weights(*resumed.g), weights(*one.g));
  EXPECT_EQ(weights(*resumed.d), weights(*one.d));

  // Refused the other way round: a generator's checkpoint does not fit the discriminator.
  GanRun wrong = start_run(1, 2);
  const Status refused = wrong.trainer->resume_from(d_ck.value(), d_path, g_ck.value(), g_path);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find(d_path), std::string::npos) << refused.message();
}

// The GAN settles step t after queueing t + 1 (gan.cpp): the CPU runner's flags_of_update(true)
// is the update before the newest, as a device's (tests/test_opencl_train.cpp checks that side).
TEST(Gan, CpuRunnerFlagsTheUpdateBeforeTheNewestWhenAsked) {
  std::unique_ptr<Model> d = build(kDiscriminatorCfg, "d.cfg", DType::f32, 3);
  ThreadPool pool(1);
  Optimizer optimizer(OptimizerConfig{}, d->params());
  ASSERT_TRUE(optimizer.init().ok());
  CpuStepRunner runner(*d, optimizer, LayerContext{&pool, false}, "");
  Param& bad = *d->params()[0];
  for (const bool bad_first : {true, false}) {
    for (int k = 0; k < 2; ++k) {
      for (Param* p : d->params()) std::fill_n(p->grad.f32(), p->grad.numel(), 0.0f);
      std::fill_n(bad.value.f32(), bad.value.numel(), 0.0f);  // a NaN weight would flag every update after
      for (const Tensor& state : optimizer.state()) std::fill_n(state.f32(), state.numel(), 0.0f);
      if ((k == 0) == bad_first) bad.grad.f32()[1] = std::nanf("");
      ASSERT_TRUE(runner.apply_update(0.01).ok());
    }
    auto earlier = runner.flags_of_update(true);
    auto newest = runner.flags_of_update(false);
    ASSERT_TRUE(earlier.ok() && newest.ok());
    EXPECT_EQ(earlier.value().param, bad_first ? bad.name : "");
    EXPECT_EQ(newest.value().param, bad_first ? "" : bad.name);
  }
}

// Issue 29, section 3: buffers of min(batch, samples) rows. A batch of 2^20 over 40 samples
// holds 40 rows (a few KiB, not 2^20 images), and trains as a batch of 40 does, bit for bit.
TEST(Gan, ABatchLargerThanTheDataHoldsTheDataOnly) {
  const Dataset data = tiny_images();
  static FILE* null_log = std::fopen("/dev/null", "w");
  auto run_with = [&](int64_t batch, int64_t* held) {
    GanRun run;
    run.g = build(kGeneratorCfg, "g", DType::f32, 1);
    run.d = build(kDiscriminatorCfg, "d", DType::f32, 2);
    run.pool.reset(new ThreadPool(1));
    TrainOptions options = gan_options(1, null_log);
    options.batch = batch;
    run.trainer.reset(new GanTrainer(*run.g, *run.d, *run.pool, options));
    const int64_t before = host_memory().current_bytes();
    EXPECT_TRUE(run.trainer->prepare(data.size()).ok());
    *held = host_memory().current_bytes() - before;
    EXPECT_TRUE(run.trainer->train_epoch(data).ok());
    return run;
  };
  int64_t held_huge = 0, held_exact = 0;
  GanRun huge = run_with(int64_t{1} << 20, &held_huge);
  GanRun exact = run_with(data.size(), &held_exact);
  EXPECT_EQ(held_huge, held_exact);
  EXPECT_LT(held_huge, int64_t{64} << 20);
  EXPECT_EQ(weights(*huge.g), weights(*exact.g));
  EXPECT_EQ(weights(*huge.d), weights(*exact.d));
}

// generate(): pixels in [0, 1] from tanh's [-1, 1]; the same stream gives the same samples
// whatever the batch they are made in.
TEST(Gan, GeneratedSamplesArePixelsAndRepeat) {
  GanRun run = start_run(1, 1);
  Tensor a = make(Shape{20, 6, 6, 1}, DType::f32), b = make(Shape{20, 6, 6, 1}, DType::f32);
  ASSERT_TRUE(run.trainer->generate(kFixedNoiseStream, 20, a).ok());
  ASSERT_TRUE(run.trainer->generate(kFixedNoiseStream, 20, b).ok());
  EXPECT_EQ(values(a), values(b));
  for (double v : values(a)) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
  Tensor other = make(Shape{20, 6, 6, 1}, DType::f32);
  ASSERT_TRUE(run.trainer->generate(kScoreNoiseStream, 20, other).ok());
  EXPECT_NE(values(a), values(other));
}

// The step's labels and signs: on real images that are all one grey (0.8), G's samples move
// from about 0.5 (tanh of small values) to that grey; swapped labels would push them away.
TEST(Gan, GeneratorLearnsAConstantImage) {
  Dataset data = tiny_images();
  fill_value(data.samples, 0.8);
  GanRun run = start_run(2, 60);
  Tensor samples = make(Shape{40, 6, 6, 1}, DType::f32);
  auto mean_pixel = [&] {
    EXPECT_TRUE(run.trainer->generate(kFixedNoiseStream, 40, samples).ok());
    double sum = 0;
    for (double v : values(samples)) sum += v;
    return sum / static_cast<double>(samples.numel());
  };
  const double before = mean_pixel();
  EXPECT_LT(std::fabs(before - 0.5), 0.15);
  for (int e = 0; e < 60; ++e) ASSERT_TRUE(run.trainer->train_epoch(data).ok());
  const double after = mean_pixel();
  EXPECT_LT(std::fabs(after - 0.8), 0.1) << "mean generated pixel " << before << " -> " << after;
}

TEST(ClassifierScore, KnownDistributions) {
  // Each sample sure of one class, classes equally often: the score is the class count.
  const int64_t k = 4, n = 8;
  std::vector<double> sure(static_cast<size_t>(n * k), 0.0);
  for (int64_t i = 0; i < n; ++i) sure[static_cast<size_t>(i * k + i % k)] = 1.0;
  ClassifierScore s = score_probabilities(sure, n, k, 2);
  EXPECT_NEAR(s.score, 4.0, 1e-12);
  EXPECT_NEAR(s.score_std, 0.0, 1e-12);
  EXPECT_NEAR(s.confidence, 1.0, 1e-12);
  for (double share : s.shares) EXPECT_NEAR(share, 0.25, 1e-12);
  EXPECT_EQ(s.classes_with_share(0.25), 4);

  // Every sample the same distribution: no information, score 1.
  std::vector<double> same;
  for (int64_t i = 0; i < n; ++i) same.insert(same.end(), {0.7, 0.1, 0.1, 0.1});
  s = score_probabilities(same, n, k, 1);
  EXPECT_NEAR(s.score, 1.0, 1e-12);
  EXPECT_NEAR(s.confidence, 0.7, 1e-12);
  EXPECT_EQ(s.classes_with_share(0.03), 1);

  // Mode collapse onto one sure class: score 1 too, all samples in one class.
  std::vector<double> collapsed;
  for (int64_t i = 0; i < n; ++i) collapsed.insert(collapsed.end(), {0.0, 1.0, 0.0, 0.0});
  s = score_probabilities(collapsed, n, k, 4);
  EXPECT_NEAR(s.score, 1.0, 1e-12);
  EXPECT_NEAR(s.shares[1], 1.0, 1e-12);

  // Two samples (0.9, 0.1) and (0.1, 0.9): marginal (0.5, 0.5), KL = 0.9 ln 1.8 + 0.1 ln 0.2 each.
  s = score_probabilities({0.9, 0.1, 0.1, 0.9}, 2, 2, 1);
  EXPECT_NEAR(s.score, std::exp(0.9 * std::log(1.8) + 0.1 * std::log(0.2)), 1e-12);
  EXPECT_NEAR(s.confidence, 0.9, 1e-12);
}

}  // namespace
}  // namespace rg
