// Mixed-precision training: f16 storage of activations and gradients (Model::set_storage),
// its row chunks, dynamic loss scaling, and fp16 training end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/fp16.h"
#include "nn/loss.h"
#include "model_util.h"
#include "train/loss_scale.h"
#include "train/trainer.h"

namespace rg {
namespace {


// A conv whose output is 32*32*16 = 16384 values a sample, so a chunk holds 8 rows and a batch
// of 20 runs as 8 + 8 + 4; batch norm and dropout take the whole batch in training.
const char* kWideCfg =
    "[net]\ninput = 32x32x3\n[conv]\nfilters = 16\nsize = 3\npad = 1\n[relu]\n[maxpool]\nsize = 2\n"
    "[batchnorm]\n[dropout]\nrate = 0.25\n[dense]\nunits = 10\n";

Tensor random_input(int64_t n, const Shape& shape, uint64_t seed) {
  auto x = Tensor::zeros(shape.batched(n), DType::f32, "input");
  EXPECT_TRUE(x.ok());
  Rng rng(seed, 1);
  for (int64_t i = 0; i < x.value().numel(); ++i) x.value().f32()[i] = rng.uniform_f32();
  return x.value();
}

// |a - b| <= rel * max|b| + abs, element by element.
void expect_close(const Tensor& a, const Tensor& b, double rel, double abs, const std::string& what) {
  ASSERT_EQ(a.numel(), b.numel()) << what;
  double largest = 0;
  for (int64_t i = 0; i < b.numel(); ++i) largest = std::max(largest, std::fabs(double(b.f32()[i])));
  for (int64_t i = 0; i < b.numel(); ++i) {
    ASSERT_NEAR(a.f32()[i], b.f32()[i], rel * largest + abs) << what << " element " << i;
  }
}

struct Pass {
  std::unique_ptr<Model> model;
  Tensor output;
};

// Without max pooling: rounding to f16 makes near ties equal and can move a pool's argmax, a
// difference of structure rather than of precision.
const char* kSmoothCfg =
    "[net]\ninput = 32x32x3\n[conv]\nfilters = 16\nsize = 3\npad = 1\n[relu]\n[batchnorm]\n[dense]\nunits = 10\n";

// The first layer's f32 output for forward_backward's input, from an inference forward: a
// training forward in f32 runs the relu after the conv inside it and keeps no output of the conv's
// own (Model::fuses_relu_after); f16 and bf16 storage fuse nothing.
Tensor f32_first_layer_output(ThreadPool& pool) {
  std::unique_ptr<Model> model = build_model(5, kWideCfg);
  EXPECT_TRUE(model->reserve(20).ok());
  model->forward(random_input(20, model->input_shape(), 9), LayerContext{&pool, false, false});
  return model->activation(0);
}

// One training forward and backward of a cfg on fixed data, in the given storage.
Pass forward_backward(DType storage, ThreadPool& pool, const char* cfg = kWideCfg) {
  Pass pass;
  pass.model = build_model(5, cfg);
  EXPECT_TRUE(pass.model->set_storage(storage).ok());
  EXPECT_TRUE(pass.model->reserve(20).ok());
  const Tensor x = random_input(20, pass.model->input_shape(), 9);
  auto labels = Tensor::zeros(Shape{20}, DType::i32, "labels");
  for (int i = 0; i < 20; ++i) labels.value().data<int32_t>()[i] = i % 10;
  LayerContext ctx{&pool, true, false};
  pass.output = pass.model->forward(x, ctx);
  compute_loss(pass.model->loss(), pass.output, labels.value(), 1.0 / 20, pass.model->output_grad());
  pass.model->backward(ctx);
  return pass;
}

TEST(MixedPrecision, F16StorageKeepsActivationsInF16AndTheOutputInF32) {
  ThreadPool pool(1);
  Pass f16 = forward_backward(DType::f16, pool);
  const size_t layers = f16.model->layers().size();
  for (size_t i = 0; i + 1 < layers; ++i) EXPECT_EQ(f16.model->activation(i).dtype(), DType::f16) << i;
  EXPECT_EQ(f16.model->activation(layers - 1).dtype(), DType::f32);
  EXPECT_EQ(f16.output.dtype(), DType::f32);
  EXPECT_EQ(f16.model->output_grad().dtype(), DType::f32);
}

// The first layer sees the same f32 input either way and computes each row the same, so what
// f16 storage keeps of it is exactly the f32 model's output rounded to f16: the row chunks
// (8 + 8 + 4) cover the batch in order, partial chunk included.
TEST(MixedPrecision, ChunkedFirstLayerIsTheF32OutputRoundedToF16) {
  ThreadPool pool(1);
  Pass f16 = forward_backward(DType::f16, pool);
  const Tensor exact = f32_first_layer_output(pool);
  const Tensor stored = f16.model->activation(0);
  ASSERT_EQ(exact.numel(), stored.numel());
  for (int64_t i = 0; i < exact.numel(); ++i) {
    ASSERT_EQ(stored.data<uint16_t>()[i], f32_to_f16(exact.f32()[i])) << "element " << i;
  }
}

// Every value is rounded to f16 (relative step 2^-11) once per layer: outputs and parameter
// gradients agree with f32 storage to about 1e-3 of their scale.
TEST(MixedPrecision, F16StorageAgreesWithF32WithinHalfPrecision) {
  ThreadPool pool(2);
  Pass f32 = forward_backward(DType::f32, pool, kSmoothCfg);
  Pass f16 = forward_backward(DType::f16, pool, kSmoothCfg);
  expect_close(f16.output, f32.output, 1e-2, 1e-4, "output");
  auto p32 = f32.model->params(), p16 = f16.model->params();
  ASSERT_EQ(p32.size(), p16.size());
  for (size_t i = 0; i < p32.size(); ++i) expect_close(p16[i]->grad, p32[i]->grad, 1e-2, 1e-5, p32[i]->name);
}

// A graph model (nn/model_graph.cpp) on f16 storage: r0's output (16384 values a sample, so
// chunks of 8 rows) feeds a conv, the add and a side conv; the add and the concat widen two
// inputs each into the x chunk, and r0's gradient is the sum of three layers' in f16.
const char* kGraphCfg =
    "[net]\ninput = 32x32x3\n[conv]\nfilters = 16\nsize = 3\npad = 1\n[relu]\nname = r0\n"
    "[conv]\nfilters = 16\nsize = 3\npad = 1\n[batchnorm]\n[relu]\nname = r1\n[add]\ninputs = r0, r1\n"
    "[conv]\nname = side\ninputs = r0\nfilters = 8\nsize = 1\n[concat]\ninputs = add1, side\n[dense]\nunits = 10\n";

TEST(MixedPrecision, GraphModelOnF16StorageAgreesWithF32WithinHalfPrecision) {
  ThreadPool pool(2);
  Pass f32 = forward_backward(DType::f32, pool, kGraphCfg);
  Pass f16 = forward_backward(DType::f16, pool, kGraphCfg);
  ASSERT_TRUE(f16.model->is_graph());
  for (size_t i = 0; i + 1 < f16.model->layers().size(); ++i) EXPECT_EQ(f16.model->activation(i).dtype(), DType::f16);
  expect_close(f16.output, f32.output, 1e-2, 1e-4, "output");
  auto p32 = f32.model->params(), p16 = f16.model->params();
  ASSERT_EQ(p32.size(), p16.size());
  // kSmoothCfg's bounds, but for conv2 and batchnorm1: there batch norm reads a conv's f16-rounded
  // output directly, and its backward (dy less its batch mean, less xhat times mean(dy xhat))
  // cancels: beta's gradient and conv2's bias's (0 in exact arithmetic) are sums over the batch
  // of f16-rounded dy; measured up to 2.1x the bound there (ULP-level noise amplified, not a
  // wrong sum: conv1, whose gradient is the sum of three readers', stays within it).
  for (size_t i = 0; i < p32.size(); ++i) {
    const bool cancels = p32[i]->name.rfind("conv2.", 0) == 0 || p32[i]->name.rfind("batchnorm1.", 0) == 0;
    expect_close(p16[i]->grad, p32[i]->grad, cancels ? 5e-2 : 1e-2, cancels ? 5e-5 : 1e-5, p32[i]->name);
  }
  // What reserve() allocates is what reserved_bytes() plans (model_memory.cpp): no output_grad_
  // of a chain's, no f32 scratch (the sums are made in the chunks).
  const Model::ReservedBytes bytes = f16.model->reserved_bytes(20);
  int64_t gradients = 0;
  for (size_t i = 0; i < f16.model->layers().size(); ++i) {
    const bool last = i + 1 == f16.model->layers().size();
    gradients += f16.model->layer_output_shape(i).numel() * 20 * (last ? 4 : 2);
  }
  EXPECT_EQ(bytes.gradients, gradients);
}

// bf16 storage: the same passes (model_f16.cpp) with bf16's converters: activations kept in bf16,
// the first layer's exactly the f32 output rounded to bf16, and agreement with f32 within bf16's
// step (2^-8 relative: four times the f16 bounds and more), chain and graph.
TEST(MixedPrecision, Bf16StorageIsTheSamePassesWithBf16Rounding) {
  ThreadPool pool(2);
  Pass bf16 = forward_backward(DType::bf16, pool);
  const size_t layers = bf16.model->layers().size();
  for (size_t i = 0; i + 1 < layers; ++i) EXPECT_EQ(bf16.model->activation(i).dtype(), DType::bf16) << i;
  EXPECT_EQ(bf16.output.dtype(), DType::f32);
  const Tensor exact = f32_first_layer_output(pool), stored = bf16.model->activation(0);
  ASSERT_EQ(exact.numel(), stored.numel());
  for (int64_t i = 0; i < exact.numel(); ++i) {
    ASSERT_EQ(stored.data<uint16_t>()[i], f32_to_bf16(exact.f32()[i])) << "element " << i;
  }
  for (const char* cfg : {kSmoothCfg, kGraphCfg}) {
    Pass a = forward_backward(DType::f32, pool, cfg), b = forward_backward(DType::bf16, pool, cfg);
    expect_close(b.output, a.output, 5e-2, 1e-3, "output");
    auto pa = a.model->params(), pb = b.model->params();
    for (size_t i = 0; i < pa.size(); ++i) {
      if (cfg == kGraphCfg && pa[i]->name == "conv2.bias") continue;  // 0 exactly (batch norm follows): noise only
      const bool cancels = pa[i]->name.rfind("conv2.", 0) == 0 || pa[i]->name.rfind("batchnorm1.", 0) == 0;
      expect_close(pb[i]->grad, pa[i]->grad, cancels ? 2e-1 : 5e-2, cancels ? 2e-4 : 5e-5, pa[i]->name);
    }
  }
  const Model::ReservedBytes bytes16 = forward_backward(DType::f16, pool).model->reserved_bytes(20);
  const Model::ReservedBytes bytesb = bf16.model->reserved_bytes(20);
  EXPECT_EQ(bytesb.activations, bytes16.activations) << "two bytes a value, as f16";
  EXPECT_EQ(bytesb.gradients, bytes16.gradients);
}

TEST(MixedPrecision, StorageMustBeF32OrF16) {
  auto model = build_model(1, kWideCfg);
  EXPECT_FALSE(model->set_storage(DType::i8).ok());
  auto f64 = build_model(1, kWideCfg);
  ASSERT_TRUE(f64->init(1, DType::f64).ok());
  EXPECT_FALSE(f64->set_storage(DType::f16).ok()) << "f16 storage widens to f32, not f64";
  EXPECT_FALSE(f64->set_storage(DType::bf16).ok()) << "bf16 too";
}

// f16 weights for inference (Model::store_weights_f16): conv and dense kernels kept in f16, the
// dense layers (one wider than a block of 128 rows) widening them themselves, the conv through
// the model's shared buffer. The output is the f32 model's with those kernels rounded to f16
// (up to the order of sums, and with f16 activations one f16 step), in f32 and in f16 activation storage, in inference and in a
// training-mode forward (batch statistics); biases and batch-norm values stay f32; the bytes
// are counted; training is refused.
const char* kF16WeightsCfg =
    "[net]\ninput = 12x12x3\n[conv]\nfilters = 8\nsize = 3\npad = 1\n[batchnorm]\n[relu]\n[dense]\nunits = "
    "40\n[relu]\n[dense]\nunits = 10\n";

TEST(F16Weights, ForwardIsTheF32ModelWithItsKernelsRoundedToF16) {
  ThreadPool pool(2);
  for (DType storage : {DType::f32, DType::f16}) {
    for (bool training : {false, true}) {
      auto rounded = build_model(3, kF16WeightsCfg);
      auto f16 = build_model(3, kF16WeightsCfg);
      int64_t kernel_elements = 0, other_bytes = 0, widest_conv = 0;
      for (Param* p : rounded->params()) {
        if (p->value.shape().rank() < 2) {
          other_bytes += static_cast<int64_t>(p->value.bytes());
          continue;
        }
        kernel_elements += p->value.numel();
        if (p->name.rfind("conv", 0) == 0) widest_conv = std::max(widest_conv, p->value.numel());
        for (int64_t i = 0; i < p->value.numel(); ++i) p->value.f32()[i] = f16_to_f32(f32_to_f16(p->value.f32()[i]));
      }
      for (Param* p : rounded->buffers()) other_bytes += static_cast<int64_t>(p->value.bytes());
      ASSERT_TRUE(f16->store_weights_f16().ok());
      EXPECT_TRUE(f16->weights_f16());
      const int64_t dense_block = 128 * 40;  // dense1: 12*12*8 = 1152 inputs, widened 128 rows at a time
      EXPECT_EQ(f16->weight_bytes(), 2 * kernel_elements + other_bytes + 4 * (widest_conv + dense_block));
      for (Param* p : f16->params()) {
        EXPECT_EQ(p->value.dtype(), p->value.shape().rank() >= 2 ? DType::f16 : DType::f32) << p->name;
        EXPECT_FALSE(p->grad.defined()) << p->name;
      }
      LayerContext ctx;
      ctx.pool = &pool;
      ctx.training = training;
      Tensor outputs[2];
      Model* models[2] = {rounded.get(), f16.get()};
      for (int m = 0; m < 2; ++m) {
        ASSERT_TRUE(models[m]->set_storage(storage).ok());
        ASSERT_TRUE(models[m]->reserve(9).ok());
        outputs[m] = models[m]->forward(random_input(9, models[m]->input_shape(), 4), ctx);
      }
      // f16 activations: a sum-order difference can move a stored value by one f16 step (2^-11).
      const double rel = storage == DType::f16 ? 2e-3 : 1e-5;
      expect_close(outputs[1], outputs[0], rel, 1e-6, std::string("storage ") + dtype_name(storage) +
                                                          (training ? ", training" : ", inference"));
      for (Param* p : f16->params()) {
        EXPECT_EQ(p->value.dtype(), p->value.shape().rank() >= 2 ? DType::f16 : DType::f32)
            << p->name << " is back in f16 after the forward";
      }
    }
  }
}

TEST(F16Weights, TrainingAndF64ModelsAreRefused) {
  auto model = build_model(3, kF16WeightsCfg);
  ASSERT_TRUE(model->store_weights_f16().ok());
  ThreadPool pool(1);
  TrainOptions options;
  options.log = std::fopen("/dev/null", "w");
  Trainer trainer(*model, pool, options);
  ASSERT_TRUE(trainer.prepare().ok());
  const DataSplit data = make_synthetic(64, 16, 10, 1);
  auto fitted = trainer.fit(data.train, nullptr);
  ASSERT_FALSE(fitted.ok());
  EXPECT_NE(fitted.status().message().find("f16 weights, which are for inference"), std::string::npos)
      << fitted.status().message();
  auto f64 = build_model(3, kF16WeightsCfg);
  ASSERT_TRUE(f64->init(3, DType::f64).ok());
  EXPECT_FALSE(f64->store_weights_f16().ok());
}

struct Grads {
  std::vector<Tensor> tensors;
  std::vector<Param> params;
  std::vector<Param*> pointers() {
    std::vector<Param*> out;
    for (Param& p : params) out.push_back(&p);
    return out;
  }
};

Grads grads_of(std::vector<std::vector<float>> values) {
  Grads g;
  for (size_t i = 0; i < values.size(); ++i) {
    Param p;
    p.name = "p" + std::to_string(i);
    p.grad = Tensor::zeros(Shape{static_cast<int64_t>(values[i].size())}, DType::f32, "grad").take();
    std::memcpy(p.grad.f32(), values[i].data(), values[i].size() * sizeof(float));
    g.params.push_back(p);
  }
  return g;
}

TEST(LossScale, FiniteGradientsAreDividedExactlyAndTheScaleGrows) {
  LossScaleConfig config;
  config.initial = 1024;
  config.growth_interval = 2;
  LossScaler scaler(config);
  Grads g = grads_of({{1024.0f, -3072.0f, 1.0f}, {0.5f}});
  auto ok = scaler.unscale(g.pointers());
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ok.value());
  EXPECT_EQ(g.params[0].grad.f32()[0], 1.0f);
  EXPECT_EQ(g.params[0].grad.f32()[1], -3.0f);
  EXPECT_EQ(g.params[0].grad.f32()[2], 1.0f / 1024);
  EXPECT_EQ(g.params[1].grad.f32()[0], 0.5f / 1024);
  EXPECT_EQ(scaler.scale(), 1024);
  ASSERT_TRUE(scaler.unscale(g.pointers()).value());
  EXPECT_EQ(scaler.scale(), 2048) << "doubles after growth_interval good steps";
  EXPECT_EQ(scaler.good_steps(), 0);
}

TEST(LossScale, InfOrNanSkipsTheStepAndHalvesTheScale) {
  LossScaler scaler(LossScaleConfig{});
  for (float bad : {INFINITY, -INFINITY, NAN}) {
    const double before = scaler.scale();
    Grads g = grads_of({{1.0f}, {2.0f, bad}});
    auto ok = scaler.unscale(g.pointers());
    ASSERT_TRUE(ok.ok());
    EXPECT_FALSE(ok.value());
    EXPECT_EQ(scaler.scale(), before / 2);
  }
  EXPECT_EQ(scaler.skipped_steps(), 3);
}

TEST(LossScale, NonFiniteAtScaleOneIsAnErrorNamingTheParameter) {
  LossScaleConfig config;
  config.initial = 1;
  LossScaler scaler(config);
  Grads g = grads_of({{1.0f}, {NAN}});
  auto ok = scaler.unscale(g.pointers());
  ASSERT_FALSE(ok.ok());
  EXPECT_NE(ok.status().message().find("p1"), std::string::npos) << ok.status().message();
}

// fp16 training end to end on the synthetic data.
const char* kCnnCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\nstride = 2\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n[dropout]\nrate = 0.25\n[dense]\nunits = 16\n[relu]\n[dense]\nunits = 10\n";

const DataSplit& data() {
  static const DataSplit split = make_synthetic(1200, 400, 10, 3);
  return split;
}

TrainOptions options(TrainPrecision precision, int64_t epochs) {
  TrainOptions o;
  o.precision = precision;
  o.epochs = epochs;
  o.batch = 32;
  o.seed = 7;
  o.optimizer.kind = OptimizerKind::adam;
  o.schedule.lr = 0.003;
  o.loss_scale.growth_interval = 10;  // the scale changes within an epoch: resume must restore it
  o.log = std::fopen("/dev/null", "w");
  return o;
}

struct TrainRun {
  std::unique_ptr<Model> model;
  EvalResult test;
  double scale = 0;
  int64_t skipped = 0;
};

TrainRun train(const TrainOptions& o, int threads, const std::string& resume = "", const char* cfg = kCnnCfg) {
  TrainRun run;
  run.model = build_model(o.seed, cfg);
  ThreadPool pool(threads);
  Trainer trainer(*run.model, pool, o);
  EXPECT_TRUE(trainer.prepare().ok());
  if (!resume.empty()) {
    auto ck = read_checkpoint(resume);
    EXPECT_TRUE(ck.ok()) << ck.status().message();
    const Status s = trainer.resume_from(ck.value(), resume);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  auto records = trainer.fit(data().train, nullptr);
  EXPECT_TRUE(records.ok()) << records.status().message();
  run.test = trainer.evaluate(data().test).value();
  run.scale = trainer.loss_scaler().scale();
  run.skipped = trainer.loss_scaler().skipped_steps();
  return run;
}


TEST(MixedPrecisionTraining, LearnsLikeF32AndDoesNotDependOnThreads) {
  TrainRun f32 = train(options(TrainPrecision::fp32, 2), 1);
  TrainRun one = train(options(TrainPrecision::fp16, 2), 1);
  TrainRun two = train(options(TrainPrecision::fp16, 2), 2);
  EXPECT_TRUE(same_weights(*one.model, *two.model));
  EXPECT_GT(one.test.accuracy, 0.8);
  EXPECT_NEAR(one.test.accuracy, f32.test.accuracy, 0.03);
  EXPECT_GT(one.scale, LossScaleConfig{}.initial) << "75 good steps at growth interval 10 grow the scale";
}

// bf16 trains like f32 without loss scaling (f32's exponent range), whatever the threads.
TEST(MixedPrecisionTraining, Bf16LearnsLikeF32WithoutLossScaling) {
  TrainRun f32 = train(options(TrainPrecision::fp32, 2), 1);
  TrainRun one = train(options(TrainPrecision::bf16, 2), 1);
  TrainRun two = train(options(TrainPrecision::bf16, 2), 2);
  EXPECT_TRUE(same_weights(*one.model, *two.model));
  EXPECT_GT(one.test.accuracy, 0.8);
  EXPECT_NEAR(one.test.accuracy, f32.test.accuracy, 0.03);
  EXPECT_EQ(one.scale, LossScaleConfig{}.initial) << "the scaler is not used";
  EXPECT_EQ(one.skipped, 0);
  TrainOptions named;
  ASSERT_TRUE(set_precision("bf16", &named).ok());
  EXPECT_EQ(named.precision, TrainPrecision::bf16);
  EXPECT_EQ(precision_name(named), "bf16");
}

// A residual graph model (conv, batch norm, relu, add) trains in fp16 as in fp32.
TEST(MixedPrecisionTraining, AGraphModelLearnsLikeF32) {
  TrainRun f32 = train(options(TrainPrecision::fp32, 2), 2, "", kSmallResidualCfg);
  TrainRun f16 = train(options(TrainPrecision::fp16, 2), 2, "", kSmallResidualCfg);
  EXPECT_GT(f16.test.accuracy, 0.8);
  EXPECT_NEAR(f16.test.accuracy, f32.test.accuracy, 0.03);
}

TEST(MixedPrecisionTraining, OverflowingScaleBacksOffSkipsStepsAndStillLearns) {
  TrainOptions o = options(TrainPrecision::fp16, 2);
  o.loss_scale.initial = std::ldexp(1.0, 40);  // the first gradients overflow f16 (max 65504)
  o.loss_scale.growth_interval = 1000;
  TrainRun run = train(o, 1);
  EXPECT_GT(run.skipped, 0);
  EXPECT_LT(run.scale, o.loss_scale.initial);
  EXPECT_GT(run.test.accuracy, 0.8);
}

TEST(MixedPrecisionTraining, ResumeRestoresTheLossScaleAndEqualsOneRun) {
  const std::string path = ::testing::TempDir() + "retrograd_test_mixed_resume.ckpt";
  TrainOptions whole = options(TrainPrecision::fp16, 2);
  TrainOptions first = whole;
  first.stop_after = 1;
  first.checkpoint_path = path;
  train(first, 2);
  auto ck = read_checkpoint(path);
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(ck.value().settings.at("precision"), "fp16");
  TrainOptions read_back;
  ASSERT_TRUE(options_from_checkpoint(ck.value(), path, &read_back).ok());
  EXPECT_EQ(read_back.precision, TrainPrecision::fp16);
  TrainRun resumed = train(whole, 2, path);
  TrainRun uninterrupted = train(whole, 2);
  EXPECT_TRUE(same_weights(*resumed.model, *uninterrupted.model));
  EXPECT_EQ(resumed.scale, uninterrupted.scale);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rg
