// Training on an OpenCL device through the Trainer: the same weights as the CPU within float
// rounding (the GEMMs sum in another order), bit-identical runs on one device, resume, hybrid
// CPU+GPU layers, the device's budget splitting the batch, and the errors. Without a device
// each test is skipped and says why (PoCL runs them in CI).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/serial.h"
#include "model_util.h"
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "opencl_test_util.h"
#include "train/gan.h"
#include "train/memory_plan.h"
#include "train/trainer.h"

namespace rg::ocl {
namespace {

const char* kMlpCfg = "[net]\ninput = 28x28x1\n[dense]\nunits = 32\n[relu]\n[dense]\nunits = 16\n[tanh]\n"
                      "[dense]\nunits = 10\ninit = glorot\n";

const DataSplit& data() {
  static const DataSplit split = make_synthetic(600, 200, 10, 3);
  return split;
}

TrainOptions options_on(Device* device, int64_t epochs) {
  TrainOptions options;
  options.epochs = epochs;
  options.batch = 32;
  options.seed = 7;
  options.log = std::fopen("/dev/null", "w");
  options.device = device;
  return options;
}

struct DeviceRun {
  std::unique_ptr<Model> model;
  std::vector<EpochRecord> records;
  EvalResult test;
  TransferCounts transfers;
  int64_t micro_batch = 0;
};

DeviceRun train(TrainOptions options, const char* cfg = kMlpCfg, const std::string& resume = "") {
  DeviceRun run;
  run.model = build_model(options.seed, cfg);
  ThreadPool pool(2);
  Trainer trainer(*run.model, pool, options);
  const Status prepared = trainer.prepare();
  EXPECT_TRUE(prepared.ok()) << prepared.message();
  if (!prepared.ok()) return run;
  if (!resume.empty()) {
    auto checkpoint = read_checkpoint(resume);
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().message();
    const Status resumed = trainer.resume_from(checkpoint.value(), resume);
    EXPECT_TRUE(resumed.ok()) << resumed.message();
  }
  auto records = trainer.fit(data().train, nullptr);
  EXPECT_TRUE(records.ok()) << records.status().message();
  if (records.ok()) run.records = records.value();
  auto test = trainer.evaluate(data().test);
  EXPECT_TRUE(test.ok()) << test.status().message();
  if (test.ok()) run.test = test.value();
  if (trainer.device_model() != nullptr) run.transfers = trainer.device_model()->transfers();
  run.micro_batch = trainer.micro_batch();
  return run;
}

// The largest |a - b| over every param and buffer, relative to the largest |b| of its tensor (or
// to `floor` when that is larger: a tensor of near-zero values, such as a fresh bias, compares in
// absolute terms).
double weight_distance(Model& a, Model& b, double floor = 1e-6) {
  std::vector<Param*> pa = a.params(), pb = b.params();
  for (Param* p : a.buffers()) pa.push_back(p);
  for (Param* p : b.buffers()) pb.push_back(p);
  EXPECT_EQ(pa.size(), pb.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(pa.size(), pb.size()); ++i) {
    double diff = 0, scale = floor;
    for (int64_t k = 0; k < pa[i]->value.numel(); ++k) {
      diff = std::max(diff, std::fabs(double(pa[i]->value.f32()[k]) - double(pb[i]->value.f32()[k])));
      scale = std::max(scale, std::fabs(double(pb[i]->value.f32()[k])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

Device* first_device() { return open_devices().devices.front(); }

TEST(OpenclTrain, MlpOnTheDeviceMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    SCOPED_TRACE(optimizer_name(kind));
    TrainOptions on_device = options_on(first_device(), 2), on_cpu = options_on(nullptr, 2);
    on_device.optimizer.kind = on_cpu.optimizer.kind = kind;
    DeviceRun gpu = train(on_device), cpu = train(on_cpu);
    ASSERT_EQ(gpu.records.size(), 2u);
    EXPECT_LT(weight_distance(*gpu.model, *cpu.model), 1e-3);
    EXPECT_NEAR(gpu.records[1].loss, cpu.records[1].loss, 1e-3 * std::max(1.0, cpu.records[1].loss));
    EXPECT_NEAR(gpu.test.accuracy, cpu.test.accuracy, 0.01);
    EXPECT_GT(gpu.test.accuracy, 0.9) << "the mlp should separate the synthetic classes on the device too";
    EXPECT_GT(gpu.transfers.up_bytes, 0);
  }
}

// The device's loss and update flags are read one micro-batch late; a run gone bad still stops
// at the next micro-batch, naming the step it went bad in. Inputs of NaN through a dense layer
// (no ReLU, which would hide them: max(NaN, 0) is 0 on GPUs): with the loss on the CPU the
// loss of step 1 is NaN at once; with it on the device, step 1's gradient flags are read first.
TEST(OpenclTrain, ANaNStopsTrainingAtTheNextMicroBatchNamingItsStep) {
  SKIP_WITHOUT_OPENCL();
  const Dataset nan_data = constant_dataset(64, 4, std::numeric_limits<float>::quiet_NaN());
  for (bool loss_on_host : {false, true}) {
    TrainOptions options = options_on(first_device(), 1);
    options.loss_on_host = loss_on_host;  // batch 32: two steps
    auto model = build_model(options.seed, "[net]\ninput = 4\n[dense]\nunits = 2\n");
    ThreadPool pool(1);
    Trainer trainer(*model, pool, options);
    ASSERT_TRUE(trainer.prepare().ok());
    auto records = trainer.fit(nan_data, nullptr);
    ASSERT_FALSE(records.ok());
    const std::string message = records.status().message();
    EXPECT_NE(message.find(loss_on_host ? "the loss of epoch 1, step 1 became NaN"
                                        : "the gradient of dense1.weight held an Inf or a NaN at epoch 1, step 1"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("training stopped"), std::string::npos) << message;
  }
}

// A finite loss whose gradient overflows, and a finite gradient whose update overflows
// (model_util.h): the device's optimizer kernels flag it and the trainer, reading the flags
// with the next losses, stops saying which, naming the param and the step; the checkpoint of
// before stays as it was. With the loss on the device or the CPU.
TEST(OpenclTrain, AnInfiniteGradientOrUpdateStopsTheRunNamingTheParam) {
  SKIP_WITHOUT_OPENCL();
  for (const bool loss_on_host : {false, true}) {
    SCOPED_TRACE(loss_on_host ? "loss on the CPU" : "loss on the device");
    TrainOptions options = options_on(first_device(), 1);
    options.loss_on_host = loss_on_host;
    for (const bool gradient : {true, false}) expect_an_overflow_to_stop_training(options, gradient);
  }
}

TEST(OpenclTrain, SameSeedOnOneDeviceIsBitIdentical) {
  SKIP_WITHOUT_OPENCL();
  DeviceRun a = train(options_on(first_device(), 1)), b = train(options_on(first_device(), 1));
  EXPECT_TRUE(same_weights(*a.model, *b.model));
}

TEST(OpenclTrain, ResumeAfterAnEpochEqualsOneRun) {
  SKIP_WITHOUT_OPENCL();
  const std::string path = temp_dir() + "/resume_on_device.ckpt";
  TrainOptions whole = options_on(first_device(), 2);
  whole.optimizer.kind = OptimizerKind::adam;
  whole.schedule.kind = ScheduleKind::cosine;
  TrainOptions first = whole;
  first.stop_after = 1;
  first.checkpoint_path = path;
  train(first);
  DeviceRun resumed = train(whole, kMlpCfg, path);
  DeviceRun uninterrupted = train(whole);
  EXPECT_EQ(resumed.records.size(), 1u);
  EXPECT_TRUE(same_weights(*resumed.model, *uninterrupted.model))
      << "the checkpoint holds the device's weights and Adam state after epoch 1";
}

TEST(OpenclTrain, LayersAndLossOnTheCpuGiveTheSameWeightsAndCountTheirCopies) {
  SKIP_WITHOUT_OPENCL();
  DeviceRun device_only = train(options_on(first_device(), 1));
  TrainOptions hybrid = options_on(first_device(), 1);
  hybrid.host_layers = {"dense2", "tanh1"};  // default names: kind + its count
  hybrid.loss_on_host = true;
  DeviceRun mixed = train(hybrid);
  EXPECT_LT(weight_distance(*mixed.model, *device_only.model), 1e-4);
  // Per micro-batch the hybrid run reads dense2's input and sends tanh1's output (and back in
  // backward), and dense2's params after every step: more than the device-only run moves.
  EXPECT_GT(mixed.transfers.down_bytes, device_only.transfers.down_bytes + 600 * 32 * 4);
  EXPECT_GT(mixed.transfers.ups, device_only.transfers.ups);
}

// A graph model (a residual block: relu1's output feeds dense2 and the add) trains on the device
// to the CPU's weights, with the layers of the block on the device and with dense2 on the CPU.
TEST(OpenclTrain, AGraphModelOnTheDeviceMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  const char* cfg = "[net]\ninput = 28x28x1\n[dense]\nunits = 16\n[relu]\n[dense]\nunits = 16\n[tanh]\n"
                    "[add]\ninputs = relu1, tanh1\n[dense]\nunits = 10\ninit = glorot\n";
  TrainOptions on_device = options_on(first_device(), 2), hybrid = options_on(first_device(), 2);
  hybrid.host_layers = {"dense2"};
  DeviceRun gpu = train(on_device, cfg), mixed = train(hybrid, cfg), cpu = train(options_on(nullptr, 2), cfg);
  ASSERT_EQ(gpu.records.size(), 2u);
  ASSERT_EQ(mixed.records.size(), 2u);
  EXPECT_LT(weight_distance(*gpu.model, *cpu.model), 1e-3);
  EXPECT_LT(weight_distance(*mixed.model, *gpu.model), 1e-4);
  EXPECT_NEAR(gpu.records[1].loss, cpu.records[1].loss, 1e-3 * std::max(1.0, cpu.records[1].loss));
  EXPECT_NEAR(gpu.test.accuracy, cpu.test.accuracy, 0.01);
  EXPECT_GT(gpu.test.accuracy, 0.9) << "the residual mlp should separate the synthetic classes on the device too";
}

TEST(OpenclTrain, AnUnknownCpuLayerNameIsAnError) {
  SKIP_WITHOUT_OPENCL();
  TrainOptions options = options_on(first_device(), 1);
  options.host_layers = {"dense9"};
  auto model = build_model(7, kMlpCfg);
  ThreadPool pool(1);
  Trainer trainer(*model, pool, options);
  const Status s = trainer.prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "no layer is named 'dense9'")) << s.message();
  EXPECT_TRUE(contains(s.message(), "dense1")) << s.message();
}

TEST(OpenclTrain, OtherPrecisionsAreRefusedOnTheDevice) {
  SKIP_WITHOUT_OPENCL();
  TrainOptions options = options_on(first_device(), 1);
  options.precision = TrainPrecision::fixed_point;
  auto model = build_model(7, kMlpCfg);
  ThreadPool pool(1);
  Trainer trainer(*model, pool, options);
  const Status s = trainer.prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "fp32 or fp16 only")) << s.message();
}

// Every stateful layer: batch norm (whole-batch statistics) and dropout (masks by sample) among
// layers run on f16 row chunks.
const char* kCnnCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\nstride = 2\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n[dropout]\nrate = 0.25\n[dense]\nunits = 16\n[batchnorm]\n[relu]\n[dropout]\nrate = "
    "0.5\n[dense]\nunits = 10\n";

// Fusion (opencl/model/cl_fusion.h) changes no bit of a run: steps in micro-batches with the loss
// on the device, the evaluation, every weight and batch-norm statistic, fused and with
// RETROGRAD_CL_FUSE=0.
TEST(OpenclTrain, FusedAndUnfusedRunsGiveTheSameBits) {
  SKIP_WITHOUT_OPENCL();
  TrainOptions options = options_on(first_device(), 1);
  options.micro_batch = 16;
  DeviceRun fused = train(options, kCnnCfg), apart;
  {
    ScopedEnv off("RETROGRAD_CL_FUSE", "0");
    apart = train(options, kCnnCfg);
  }
  ASSERT_EQ(fused.records.size(), 1u);
  ASSERT_EQ(apart.records.size(), 1u);
  EXPECT_TRUE(same_weights(*fused.model, *apart.model));
  EXPECT_EQ(fused.records[0].loss, apart.records[0].loss);
  EXPECT_EQ(fused.test.loss, apart.test.loss);
  EXPECT_EQ(fused.test.accuracy, apart.test.accuracy);
}

// Mixed precision on the device: f16 activations and gradients between layers, loss scaling, as
// the CPU's fp16 training; the same weights within f16 rounding (a value rounded to f16 after a
// sum in another order may land on the neighbouring half), and half the activation bytes.
TEST(OpenclTrain, Fp16StorageOnTheDeviceMatchesTheCpusFp16) {
  SKIP_WITHOUT_OPENCL();
  for (const char* cfg : {kMlpCfg, kCnnCfg}) {
    TrainOptions on_device = options_on(first_device(), 1), on_cpu = options_on(nullptr, 1);
    on_device.precision = on_cpu.precision = TrainPrecision::fp16;
    DeviceRun gpu = train(on_device, cfg), cpu = train(on_cpu, cfg);
    ASSERT_EQ(gpu.records.size(), 1u);
    EXPECT_LT(weight_distance(*gpu.model, *cpu.model, 0.1), 1e-2) << cfg;
    EXPECT_NEAR(gpu.records[0].loss, cpu.records[0].loss, 2e-2 * std::max(1.0, cpu.records[0].loss)) << cfg;
    EXPECT_NEAR(gpu.test.accuracy, cpu.test.accuracy, 0.03) << cfg;
  }
  auto model = build_model(7, kCnnCfg);
  auto f32 = ClModel::create(*model, *first_device());
  auto f16 = ClModel::create(*model, *first_device());
  ASSERT_TRUE(f32.ok() && f16.ok());
  ASSERT_TRUE(f16.value()->set_storage(DType::f16).ok());
  const ClModel::ReservedBytes a = f32.value()->reserved_bytes(64), b = f16.value()->reserved_bytes(64);
  const int64_t last = 64 * 10 * 4;  // the output stays f32
  EXPECT_EQ(b.activations - last, (a.activations - last) / 2);
  EXPECT_GT(b.chunks, 0);
  EXPECT_EQ(a.chunks, 0);
}

// A one-hot target (mse against the label's one-hot row): the device counts hits against the
// labels, as the CPU's count_correct does, not against the one-hot matrix.
TEST(OpenclTrain, OneHotModelsCountTheirHitsOnTheDevice) {
  SKIP_WITHOUT_OPENCL();
  const char* cfg = "[net]\ninput = 28x28x1\nloss = mse\n[dense]\nunits = 32\n[relu]\n[dense]\nunits = 10\n";
  DeviceRun gpu = train(options_on(first_device(), 1), cfg), cpu = train(options_on(nullptr, 1), cfg);
  ASSERT_EQ(gpu.records.size(), 1u);
  EXPECT_NEAR(gpu.records[0].accuracy, cpu.records[0].accuracy, 0.01);
  EXPECT_GT(gpu.records[0].accuracy, 0.12);  // above chance (0.1): a hit count against the one-hot floats gives about 0.07
}

// A layer run on the CPU with f16 storage, where the model runs the others on row chunks: the
// CPU layer gets the whole batch (its buffers hold it from forward to backward), so the run
// equals one with every layer on the device but for rounding.
TEST(OpenclTrain, CpuLayersTakeTheWholeBatchUnderF16Chunks) {
  SKIP_WITHOUT_OPENCL();
  static const DataSplit big = make_synthetic(4096, 16, 10, 5);
  auto run_on = [&](std::vector<std::string> host_layers) {
    TrainOptions options = options_on(first_device(), 1);
    options.batch = 2048;  // 2048 rows of 784 values: more than one f16 chunk (1 Mi values)
    options.precision = TrainPrecision::fp16;
    options.host_layers = std::move(host_layers);
    auto model = build_model(options.seed, kMlpCfg);
    ThreadPool pool(2);
    Trainer trainer(*model, pool, options);
    EXPECT_TRUE(trainer.prepare().ok());
    EXPECT_TRUE(trainer.fit(big.train, nullptr).ok());
    return model;
  };
  auto all_device = run_on({}), hybrid = run_on({"dense1"});
  EXPECT_LT(weight_distance(*hybrid, *all_device, 0.1), 1e-3);
}

// Loss scaling's check on the device: a NaN or Inf in a gradient names its param, the rest
// are scaled alike.
TEST(OpenclTrain, DeviceUnscaleNamesTheFirstNonFiniteGradient) {
  SKIP_WITHOUT_OPENCL();
  auto model = build_model(7, kMlpCfg);
  auto cl = ClModel::create(*model, *first_device());
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  Optimizer host(OptimizerConfig{}, model->params());
  ASSERT_TRUE(host.init().ok());
  auto opt = ClOptimizer::create(*first_device(), host, cl.value()->params());
  ASSERT_TRUE(opt.ok()) << opt.status().message();
  std::vector<ClParam*> params = cl.value()->params();
  for (ClParam* p : params) ASSERT_TRUE(write_buffer(p->grad, 0, std::vector<float>(p->numel(), 8.0f).data(), p->numel() * 4).ok());
  auto clean = opt.value().unscale(0.25f);
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(clean.value(), "");
  EXPECT_EQ(download<float>(params[1]->grad, 1).value()[0], 2.0f);
  const float bad[2] = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  ASSERT_TRUE(write_buffer(params[3]->grad, 4, &bad[0], 4).ok());
  ASSERT_TRUE(write_buffer(params[2]->grad, 8, &bad[1], 4).ok());
  auto flagged = opt.value().unscale(1.0f);
  ASSERT_TRUE(flagged.ok());
  EXPECT_EQ(flagged.value(), params[2]->host->name);
}

// The optimizer over the model's ParamArena: one launch a step where one a param ran, the same bits as the per-param launches (SGD with momentum, Adam), the state
// read back in the host's layout, the padding between params still 0, and its guard naming the
// first param whose gradient went bad, or whose update overflowed.
TEST(OpenclTrain, TheArenaOptimizerUpdatesEveryParamInOneLaunchWithTheSameBits) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *first_device();
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    SCOPED_TRACE(kind == OptimizerKind::sgd ? "sgd" : "adam");
    OptimizerConfig config;
    config.kind = kind;
    config.momentum = 0.9f;
    std::unique_ptr<Model> models[2] = {build_model(7, kMlpCfg), build_model(7, kMlpCfg)};
    std::unique_ptr<ClModel> cls[2];
    std::unique_ptr<Optimizer> hosts[2];
    std::unique_ptr<ClOptimizer> opts[2];  // [0] over the arena, [1] a launch a param
    for (int w = 0; w < 2; ++w) {
      auto cl = ClModel::create(*models[w], device);
      ASSERT_TRUE(cl.ok()) << cl.status().message();
      cls[w] = cl.take();
      hosts[w] = std::make_unique<Optimizer>(config, models[w]->params());
      ASSERT_TRUE(hosts[w]->init().ok());
      auto opt = ClOptimizer::create(device, *hosts[w], cls[w]->params(), w == 0 ? cls[w]->param_arena() : nullptr);
      ASSERT_TRUE(opt.ok()) << opt.status().message();
      opts[w] = std::make_unique<ClOptimizer>(opt.take());
    }
    const ParamArena& arena = *cls[0]->param_arena();
    Rng rng(5);
    int64_t launches[2] = {0, 0};
    const std::vector<ClParam*> ps[2] = {cls[0]->params(), cls[1]->params()};
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < ps[0].size(); ++i) {
        std::vector<float> g(static_cast<size_t>(ps[0][i]->numel()));
        for (float& v : g) v = rng.uniform_f32() * 2.0f - 1.0f;
        for (int w = 0; w < 2; ++w) ASSERT_TRUE(write_buffer(ps[w][i]->grad, 0, g.data(), ps[w][i]->numel() * 4).ok());
      }
      for (int w = 0; w < 2; ++w) {
        const int64_t before = device.launches();
        ASSERT_TRUE(opts[w]->step(0.01).ok());
        launches[w] += device.launches() - before;
        auto bad = opts[w]->non_finite_update();
        ASSERT_TRUE(bad.ok() && bad.value().none());
      }
    }
    EXPECT_EQ(launches[0], 3) << "one update a step (the flags are cleared by a fill, no kernel)";
    EXPECT_EQ(launches[1], 3 * static_cast<int64_t>(cls[1]->params().size()));
    for (int w = 0; w < 2; ++w) ASSERT_TRUE(opts[w]->read_state().ok());
    for (size_t i = 0; i < cls[0]->params().size(); ++i) {
      const ClParam& a = *cls[0]->params()[i];
      const ClParam& b = *cls[1]->params()[i];
      EXPECT_TRUE(a.value.is_view()) << a.host->name;
      EXPECT_EQ(arena.offset_of(a.host) % 16, 0) << a.host->name;
      EXPECT_EQ(download<float>(a.value, a.numel()).value(), download<float>(b.value, b.numel()).value()) << a.host->name;
    }
    for (size_t k = 0; k < hosts[0]->state().size(); ++k) {
      const Tensor& a = hosts[0]->state()[k];
      const Tensor& b = hosts[1]->state()[k];
      ASSERT_EQ(a.numel(), b.numel());
      EXPECT_TRUE(std::equal(a.f32(), a.f32() + a.numel(), b.f32())) << "state " << k;
    }
    std::vector<float> all = download<float>(arena.values(), arena.floats()).value();
    for (Param* p : arena.params()) std::fill_n(all.begin() + arena.offset_of(p), p->value.numel(), 0.0f);
    EXPECT_EQ(std::count(all.begin(), all.end(), 0.0f), arena.floats()) << "the padding stays 0";

    // The guard (SGD), on both sides: a finite gradient whose update overflows the fourth param
    // names it, the gradient finite, even when every gradient is NaN by the time the flags are
    // taken (the next backward ran through the Inf weight first, as in training); then a NaN in
    // the third param's gradient names that one, a bad gradient.
    if (kind != OptimizerKind::sgd) continue;
    const float huge = 3e38f, nan = std::numeric_limits<float>::quiet_NaN();
    for (int w = 0; w < 2; ++w) {
      SCOPED_TRACE(w == 0 ? "arena" : "a launch a param");
      const std::vector<ClParam*>& params = ps[w];
      auto fill = [&](float v) {
        for (ClParam* p : params) ASSERT_TRUE(write_buffer(p->grad, 0, std::vector<float>(p->numel(), v).data(), p->numel() * 4).ok());
      };
      fill(0.0f);
      ASSERT_TRUE(write_buffer(params[3]->grad, 0, &huge, 4).ok());
      ASSERT_TRUE(opts[w]->step(1e30).ok());
      fill(nan);  // the next backward, before the flags are taken
      auto overflow = opts[w]->non_finite_update();
      ASSERT_TRUE(overflow.ok());
      EXPECT_EQ(overflow.value().param, params[3]->host->name);
      EXPECT_TRUE(overflow.value().gradient_finite);
      fill(0.0f);
      ASSERT_TRUE(write_buffer(params[2]->grad, 4, &nan, 4).ok());
      ASSERT_TRUE(opts[w]->step(0.01).ok());
      auto bad = opts[w]->non_finite_update();
      ASSERT_TRUE(bad.ok());
      EXPECT_EQ(bad.value().param, params[2]->host->name);
      EXPECT_FALSE(bad.value().gradient_finite);
      // before_newest (a GAN settles step t after queueing t + 1): the steps before the last only.
      // Each step from weights and momenta of 0 (a NaN in either would flag every step after it).
      for (const bool bad_first : {true, false}) {
        for (int k = 0; k < 2; ++k) {
          fill(0.0f);
          for (ClParam* p : params) {
            ASSERT_TRUE(write_buffer(p->value, 0, std::vector<float>(p->numel(), 0.0f).data(), p->numel() * 4).ok());
          }
          for (const Tensor& state : hosts[w]->state()) std::fill_n(state.f32(), state.numel(), 0.0f);
          ASSERT_TRUE(opts[w]->write_state().ok());
          if ((k == 0) == bad_first) {
            ASSERT_TRUE(write_buffer(params[2]->grad, 4, &nan, 4).ok());
          }
          ASSERT_TRUE(opts[w]->step(0.01).ok());
        }
        auto earlier = opts[w]->non_finite_update(true);
        auto newest = opts[w]->non_finite_update();
        ASSERT_TRUE(earlier.ok() && newest.ok());
        EXPECT_EQ(earlier.value().param, bad_first ? params[2]->host->name : "");
        EXPECT_EQ(newest.value().param, bad_first ? "" : params[2]->host->name);
      }
    }
  }
}

// The device budget a run of the mlp in batches of `batch` holds on this device, measured (the
// GEMM's workspace, sized by the device's tuned tiles, differs from device to device).
int64_t budget_of_batch(const DeviceChoice& choice, DeviceOptions options, int64_t batch) {
  auto measured = Device::open(choice, options);
  EXPECT_TRUE(measured.ok()) << measured.status().message();
  if (!measured.ok()) return 0;
  TrainOptions train = options_on(measured.value().get(), 1);
  train.batch = batch;
  auto model = build_model(7, kMlpCfg);
  ThreadPool pool(1);
  Trainer trainer(*model, pool, train);
  EXPECT_TRUE(trainer.prepare().ok());
  return measured.value()->memory().current_bytes();
}

// A budget that holds the params but not a whole batch's buffers: the trainer splits the batch
// into the micro-batches the budget was measured at, the run equals an unsplit one but for
// rounding, and the device's peak stays in the budget.
TEST(OpenclTrain, ADeviceBudgetSplitsTheBatchAndHoldsThePeak) {
  SKIP_WITHOUT_OPENCL();
  const DeviceInfo& info = first_device()->info();
  const DeviceChoice choice{true, info.platform_index, info.device_index};
  DeviceOptions limited;
  limited.test_capabilities = false;
  limited.memory_budget_bytes = budget_of_batch(choice, limited, 64);
  auto device = Device::open(choice, limited);
  ASSERT_TRUE(device.ok()) << device.status().message();
  TrainOptions options = options_on(device.value().get(), 1);
  options.batch = 128;
  DeviceRun split = train(options);
  EXPECT_EQ(split.micro_batch, 64) << "the largest micro-batch the budget holds: the one it was measured at";
  EXPECT_LE(device.value()->memory().peak_bytes(), limited.memory_budget_bytes);
  TrainOptions whole = options_on(first_device(), 1);
  whole.batch = 128;
  DeviceRun unsplit = train(whole);
  EXPECT_LT(weight_distance(*split.model, *unsplit.model), 1e-3);
}

// One plan for host and device: made from the host's data and the device's budget together (after
// the trainer placed the params there), it holds the micro-batch the device allows, the host's
// training bytes at it and the device's bytes to the byte; the trainer runs it as given.
TEST(OpenclTrain, OnePlanForHostAndDevice) {
  SKIP_WITHOUT_OPENCL();
  const DeviceInfo& info = first_device()->info();
  const DeviceChoice choice{true, info.platform_index, info.device_index};
  DeviceOptions limited;
  limited.test_capabilities = false;
  limited.memory_budget_bytes = budget_of_batch(choice, limited, 48);
  auto device = Device::open(choice, limited);
  ASSERT_TRUE(device.ok()) << device.status().message();
  TrainOptions options = options_on(device.value().get(), 1);
  options.batch = 128;
  auto model = build_model(7, kMlpCfg);
  ThreadPool pool(1);
  Trainer trainer(*model, pool, options);
  ASSERT_TRUE(trainer.place().ok());
  const DeviceNeed need = trainer.device_need();
  EXPECT_EQ(need.budget, limited.memory_budget_bytes);
  const RunData run{&data().train, nullptr, &data().test};
  auto planned = plan_memory(*model, options, run, 0, StreamChoice::never, &need);
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const MemoryPlan plan = planned.value();
  EXPECT_EQ(plan.micro_batch, 48);
  EXPECT_EQ(plan.device_lowered_from, 128);
  EXPECT_EQ(plan.accumulation_steps, 3);
  EXPECT_EQ(plan.training, Trainer::prepared_bytes(*model, options, 48));
  EXPECT_EQ(plan.device_budget, limited.memory_budget_bytes);
  ASSERT_TRUE(trainer.prepare(plan).ok());
  EXPECT_EQ(trainer.micro_batch(), 48);
  EXPECT_EQ(trainer.plan()->micro_batch, 48);
  EXPECT_EQ(device.value()->memory().current_bytes(), plan.device_placed + plan.device_buffers);
  EXPECT_TRUE(trainer.fit(data().train, nullptr).ok());
  EXPECT_LE(device.value()->memory().peak_bytes(), limited.memory_budget_bytes);
}

TEST(OpenclTrain, ABudgetTooSmallForOneSampleSaysWhatItNeeds) {
  SKIP_WITHOUT_OPENCL();
  const DeviceInfo& info = first_device()->info();
  DeviceOptions limited;
  limited.test_capabilities = false;
  auto model = build_model(7, kMlpCfg);
  // values, grads, velocity, each param's arena padding in the three (up to the device's sub-buffer
  // alignment a param: 512 bytes on NVIDIA) and 1 KiB
  const int64_t padding = 3 * static_cast<int64_t>(model->params().size()) * std::max<int64_t>(64, info.base_align_bytes);
  limited.memory_budget_bytes = model->param_bytes() * 3 / 2 + padding + 1024;
  auto device = Device::open(DeviceChoice{true, info.platform_index, info.device_index}, limited);
  ASSERT_TRUE(device.ok()) << device.status().message();
  ThreadPool pool(1);
  Trainer trainer(*model, pool, options_on(device.value().get(), 1));
  const Status s = trainer.prepare();
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), "one sample needs")) << s.message();
  EXPECT_TRUE(contains(s.message(), "--device-mem")) << s.message();
}

// A small GAN pair (every layer kind DCGAN uses) and 40 images of 6x6 for it.
const char* kTinyGenerator = "[net]\ninput = 5\nloss = none\n[dense]\nunits = 18\n[reshape]\nshape = 3x3x2\n"
                             "[batchnorm]\n[relu]\n[conv_transpose]\nfilters = 1\nsize = 4\nstride = 2\npad = 1\n[tanh]\n";
const char* kTinyDiscriminator = "[net]\ninput = 6x6x1\nloss = bce_with_logits\n[conv]\nfilters = 3\nsize = 4\n"
                                 "stride = 2\npad = 1\n[leaky_relu]\nslope = 0.2\n[dropout]\nrate = 0.3\n[dense]\nunits = 1\n";
Dataset tiny_gan_images() {
  Dataset real;
  real.name = "tiny";
  real.sample_shape = Shape{6, 6, 1};
  real.num_classes = 1;
  real.samples = Tensor::zeros(Shape{40, 6, 6, 1}, DType::f32, "images").take();
  real.labels = Tensor::zeros(Shape{40}, DType::i32, "labels").take();
  Rng rng(4);
  for (int64_t i = 0; i < real.samples.numel(); ++i) real.samples.f32()[i] = rng.uniform_f32();
  return real;
}
TrainOptions tiny_gan_options(Device* device, double lr) {
  TrainOptions options = options_on(device, 2);
  options.batch = 16;
  options.optimizer.kind = OptimizerKind::adam;
  options.optimizer.beta1 = 0.5;
  options.schedule.lr = lr;
  return options;
}

// The tiny pair trained two epochs on the device, its losses there and on the host (--loss-on
// cpu), and on the CPU: the same networks, epoch losses and beliefs within rounding, the samples
// on the device read back alike. 40 samples in batches of 16: the last batch of 8.
TEST(OpenclTrain, GanOnTheDeviceMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  const Dataset real = tiny_gan_images();
  struct Pair {
    std::unique_ptr<Model> g, d;
    Tensor grid;
    std::vector<GanEpochRecord> records;
    int64_t downs = 0;  // copies the device made back to the host
  };
  auto run = [&](Device* device, bool loss_on_host) {
    Pair pair{build_model(1, kTinyGenerator), build_model(2, kTinyDiscriminator),
              Tensor::zeros(Shape{4, 6, 6, 1}, DType::f32, "grid").take(), {}};
    TrainOptions options = tiny_gan_options(device, 2e-3);
    options.loss_on_host = loss_on_host;
    ThreadPool pool(2);
    GanTrainer trainer(*pair.g, *pair.d, pool, options);
    const Status prepared = trainer.prepare();
    EXPECT_TRUE(prepared.ok()) << prepared.message();
    for (int e = 0; e < 2 && prepared.ok(); ++e) {
      auto record = trainer.train_epoch(real);
      EXPECT_TRUE(record.ok()) << record.status().message();
      if (record.ok()) pair.records.push_back(record.value());
    }
    EXPECT_TRUE(trainer.generate(kFixedNoiseStream, 4, pair.grid).ok());
    // save() brings the device's networks to the host models (checkpoints are its job)
    const std::string g_path = temp_dir() + "/gan_g.ckpt", d_path = temp_dir() + "/gan_d.ckpt";
    EXPECT_TRUE(trainer.save(g_path, d_path).ok());
    pair.downs = trainer.device_transfers().downs;
    return pair;
  };
  const Pair cpu = run(nullptr, false);
  int64_t downs[2] = {0, 0};
  for (const bool loss_on_host : {false, true}) {
    SCOPED_TRACE(loss_on_host ? "the loss on the host" : "the loss on the device");
    const Pair gpu = run(first_device(), loss_on_host);
    downs[loss_on_host] = gpu.downs;
    EXPECT_LT(weight_distance(*gpu.g, *cpu.g), 1e-3);
    EXPECT_LT(weight_distance(*gpu.d, *cpu.d), 1e-3);
    for (int64_t i = 0; i < cpu.grid.numel(); ++i) EXPECT_NEAR(gpu.grid.f32()[i], cpu.grid.f32()[i], 1e-3) << i;
    ASSERT_EQ(gpu.records.size(), 2u);
    ASSERT_EQ(cpu.records.size(), 2u);
    for (size_t e = 0; e < 2; ++e) {
      const GanEpochRecord &a = gpu.records[e], &b = cpu.records[e];
      EXPECT_NEAR(a.loss_d, b.loss_d, 1e-4) << "epoch " << e + 1;
      EXPECT_NEAR(a.loss_g, b.loss_g, 1e-4) << "epoch " << e + 1;
      EXPECT_NEAR(a.d_real, b.d_real, 1e-5) << "epoch " << e + 1;
      EXPECT_NEAR(a.d_fake, b.d_fake, 1e-5) << "epoch " << e + 1;
      EXPECT_NEAR(a.d_fake_after, b.d_fake_after, 1e-5) << "epoch " << e + 1;
      EXPECT_GT(a.loss_d, 0.1) << "epoch " << e + 1;  // a BCE of a few steps: not a zero left unfilled
    }
  }
  // Each loss on the device reads back its rows' losses and the logits; on the host the logits alone.
  EXPECT_EQ(downs[0] - downs[1], 2 * 3 * 3) << "2 epochs of 3 steps, 3 losses a step";
}

// A step settles after the next one is queued (gan.cpp): training that goes bad still stops at
// the step it went bad in, on the device as on the CPU. A rate of 1e38 overflows D's first
// update (step 1); an infinite pixel makes the loss of the step holding it not finite.
TEST(OpenclTrain, GanStopsAtTheStepThatWentBadOnTheDeviceAsOnTheCpu) {
  SKIP_WITHOUT_OPENCL();
  auto stop_of = [](Device* device, double lr, const Dataset& real) {
    std::unique_ptr<Model> g = build_model(1, kTinyGenerator), d = build_model(2, kTinyDiscriminator);
    ThreadPool pool(1);
    GanTrainer trainer(*g, *d, pool, tiny_gan_options(device, lr));
    EXPECT_TRUE(trainer.prepare().ok());
    auto record = trainer.train_epoch(real);
    EXPECT_FALSE(record.ok());
    return record.ok() ? std::string() : record.status().message();
  };
  const Dataset real = tiny_gan_images();
  const std::string cpu = stop_of(nullptr, 1e38, real), gpu = stop_of(first_device(), 1e38, real);
  EXPECT_TRUE(contains(cpu, "at epoch 1, step 1; training stopped")) << cpu;
  EXPECT_EQ(gpu, cpu);
  Dataset bad = tiny_gan_images();
  bad.samples.f32()[36 * 30 + 7] = std::numeric_limits<float>::infinity();  // image 30's pixel 7
  // Its step in epoch 1's order (gan.cpp: shuffled from (seed, kEpochShuffleStream)), batches of 16.
  Rng shuffle(tiny_gan_options(nullptr, 2e-3).seed, kEpochShuffleStream);
  const std::vector<int32_t> order = shuffled_indices(40, shuffle);
  const int64_t at = std::find(order.begin(), order.end(), 30) - order.begin();
  const std::string step = "at epoch 1, step " + std::to_string(at / 16 + 1) + ";";
  const std::string cpu_bad = stop_of(nullptr, 2e-3, bad), gpu_bad = stop_of(first_device(), 2e-3, bad);
  EXPECT_TRUE(contains(cpu_bad, "a GAN loss became D not finite " + step)) << cpu_bad;
  EXPECT_EQ(gpu_bad, cpu_bad);
}

}  // namespace
}  // namespace rg::ocl

namespace rg::ocl {
namespace {

const char* kQuickCli = "--data synthetic --limit 640 --epochs 1 --threads 1";

TEST(OpenclTrainCli, TrainsOnTheDeviceAndReportsItsMemoryAndCopies) {
  SKIP_WITHOUT_OPENCL();
  const std::string json = temp_dir() + "/device_run.json";
  const Outcome o = run(std::string("train --model mlp --device cl:0:0 --json ") + json + " " + kQuickCli);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "device:    cl:0:0")) << o.output;
  EXPECT_TRUE(contains(o.output, "device memory peak")) << o.output;
  EXPECT_TRUE(contains(o.output, "to the device in")) << o.output;
  std::ifstream in(json);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(contains(text.str(), "\"device\": \"cl:0:0")) << text.str();
}

TEST(OpenclTrainCli, DeviceOptionsAreChecked) {
  SKIP_WITHOUT_OPENCL();
  const struct {
    const char* options;
    const char* error;
  } cases[] = {
      {"--device cl:9:9", "--device"},
      {"--device-mem 64M", "--device-mem applies to an OpenCL --device"},
      {"--device cl:0:0 --loss-on gpu", "'gpu' is not device or cpu"},
      {"--device cl:0:0 --train-precision int8-train", "fp32 or fp16 only"},
      {"--device cl:0:0 --cpu-layers dense7", "no layer is named 'dense7'"},
      {"--device cl:0:0 --precision fp32,int8", "drop --device"},
  };
  for (const auto& c : cases) {
    const Outcome o = run(std::string("train ") + c.options + " " + kQuickCli);
    EXPECT_EQ(o.code, 2) << c.options;
    EXPECT_TRUE(contains(o.output, c.error)) << c.options << ": " << o.output;
  }
}

// RETROGRAD_CL_FAIL_ABOVE makes every buffer above that size fail as a full GPU does: the batch's
// buffers are tried once more at half the micro-batch, and the run says so; when half fails too,
// the error names the micro-batch and the buffer.
TEST(OpenclTrainCli, AFailedAllocationRetriesOnceWithHalfTheMicroBatch) {
  SKIP_WITHOUT_OPENCL();
  const ScopedEnv fail("RETROGRAD_CL_FAIL_ABOVE", "1000000");  // the mlp's largest param is 784 KiB
  Outcome o = run(std::string("train --model mlp --device cl:0:0 --batch 512 ") + kQuickCli);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "CL_MEM_OBJECT_ALLOCATION_FAILURE")) << o.output;
  EXPECT_TRUE(contains(o.output, "retrying once with micro-batches of 256")) << o.output;
  // Buffers for the 1000 synthetic test samples, the most any set has: half of that fails too.
  o = run(std::string("train --model mlp --device cl:0:0 --batch 1024 ") + kQuickCli);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(contains(o.output, "reserving the device's buffers for micro-batches of 500")) << o.output;
}

// --profile-device: the kernels' table, and the layers' (each layer's commands, its dx apart)
// whose times are the device's own: together no more than the kernels' and copies'.
TEST(OpenclTrainCli, ProfileDeviceListsTheKernelsAndTheLayers) {
  SKIP_WITHOUT_OPENCL();
  const std::string cfg = temp_dir() + "/profile_device.cfg", json = temp_dir() + "/profile_device.json";
  std::ofstream(cfg) << "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\n[relu]\n[conv]\nfilters = 4\n"
                        "size = 3\n[maxpool]\nsize = 2\n[dense]\nunits = 10\n";
  const Outcome o = run("train --model " + cfg + " --device cl:0:0 --profile-device --json " + json + " " + kQuickCli);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "device time by kernel")) << o.output;
  EXPECT_TRUE(contains(o.output, "f32_gemm")) << o.output;
  EXPECT_TRUE(contains(o.output, "layer profile")) << o.output;
  const nlohmann::json report = nlohmann::json::parse(read_file(json));
  const nlohmann::json& layers = report["layer_profile"]["layers"];
  ASSERT_EQ(layers.size(), 5u) << report["layer_profile"].dump();
  const nlohmann::json& conv2 = layers[2];
  EXPECT_EQ(conv2["layer"], "conv2");
  for (const char* phase : {"forward", "weight_grad", "input_grad"}) {
    EXPECT_GT(conv2[phase]["ms_per_step"].get<double>(), 0.0) << phase;
  }
  EXPECT_TRUE(layers[0]["input_grad"]["ms_per_step"].is_null()) << "conv1 computes no dx";
  const double steps = report["layer_profile"]["steps"].get<double>();
  const double layer_seconds = report["layer_profile"]["layers_ms_per_step"].get<double>() * steps / 1e3;
  const nlohmann::json& device = report["device_profile"];
  EXPECT_GT(layer_seconds, 0.0);
  EXPECT_LE(layer_seconds, (device["kernel_seconds"].get<double>() + device["copy_seconds"].get<double>()) * 1.000001);
  // --profile stays the CPU's
  const Outcome cpu_only = run("train --model " + cfg + " --device cl:0:0 --profile " + kQuickCli);
  EXPECT_EQ(cpu_only.code, 2) << cpu_only.output;
  EXPECT_TRUE(contains(cpu_only.output, "--profile-device")) << cpu_only.output;
}

// eval --device scores a checkpoint on the device, fp32 or --int8 (the int8 kernels give the CPU
// int8 engine's bits, so the figures print the same).
TEST(OpenclTrainCli, EvalOnTheDeviceMatchesTheCpuInFp32AndInt8) {
  SKIP_WITHOUT_OPENCL();
  const std::string ckpt = temp_dir() + "/eval_device.ckpt";
  const char* cfg_text = "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\n[relu]\n[maxpool]\nsize = 2\n"
                         "[dense]\nunits = 10\n";
  const std::string cfg = temp_dir() + "/eval_device.cfg";
  std::ofstream(cfg) << cfg_text;
  ASSERT_EQ(run("train --model " + cfg + " --checkpoint " + ckpt + " " + kQuickCli).code, 0);
  // The accuracy line, and for int8 (bit-exact) the loss's too; fp32's GEMMs sum in another order.
  auto figures = [](const std::string& output, bool loss) {
    std::string lines;
    std::istringstream in(output);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("test acc", 0) == 0 || (loss && line.rfind("test loss", 0) == 0)) lines += line + "\n";
    }
    return lines;
  };
  for (const char* int8 : {"", " --int8"}) {
    const Outcome cpu = run("eval --checkpoint " + ckpt + " --data synthetic --threads 1" + int8);
    const Outcome device = run("eval --checkpoint " + ckpt + " --data synthetic --threads 1 --device cl:0:0" + int8);
    ASSERT_EQ(cpu.code, 0) << cpu.output;
    ASSERT_EQ(device.code, 0) << device.output;
    EXPECT_FALSE(figures(cpu.output, true).empty()) << cpu.output;
    EXPECT_EQ(figures(cpu.output, *int8 != 0), figures(device.output, *int8 != 0)) << int8;
    EXPECT_TRUE(contains(device.output, std::string("run by          ") + (*int8 ? "int8" : "fp32"))) << device.output;
    EXPECT_TRUE(contains(device.output, "on cl:0:0")) << device.output;
  }
}

}  // namespace
}  // namespace rg::ocl
