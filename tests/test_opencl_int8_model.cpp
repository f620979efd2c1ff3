// The int8 model on every OpenCL device (ClInt8Model) against the CPU's Int8Model, on the
// presets mlp, lenet and cnn: int8-only models give the same output bits (every int8 stage is
// integer arithmetic, and quantize / dequantize are bit-exact), both for the CPU's im2col path
// and for its defaults (direct conv, Winograd, fused pooling), on batches of 1, 7 and 19.
// A layer kept in f32 runs the device's own f32 layer, whose sums round in another order:
// there the outputs are compared within a tolerance. Graph models: their int8 adds give the
// CPU's bits too; a concat (f32) is refused by name. Scored through the trainer's one loop, the
// device's int8 executor gives the CPU's figures.
#include "opencl_test_util.h"

#include <algorithm>

#include "data/dataset.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "opencl/model/cl_int8_model.h"
#include "quant/int8_model.h"
#include "train/trainer.h"

namespace rg::ocl {
namespace {

constexpr int64_t kBatches[] = {1, 7, 19};
constexpr int64_t kMaxBatch = 19;

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::zeros(shape, DType::f32, "test input").take();
  Rng rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = rng.uniform_f32();
  return t;
}

// A preset, initialised; `scramble`: every param and BN statistic then set to random values
// of about its size (variances positive), so nothing depends on init's regularities.
std::unique_ptr<Model> preset_model(const std::string& name, bool scramble) {
  auto cfg = parse_cfg(preset_cfg(name), name);
  RG_CHECK(cfg.ok(), "" << cfg.status().message());
  auto built = Model::from_cfg(cfg.value());
  RG_CHECK(built.ok(), "" << built.status().message());
  std::unique_ptr<Model> model = built.take();
  RG_CHECK(model->init(7).ok(), "init");
  if (!scramble) return model;
  Rng rng(11);
  for (const auto& layer : model->layers()) {
    std::vector<Param*> all = layer->params();
    for (Param* p : layer->buffers()) all.push_back(p);
    for (Param* p : all) {
      const bool positive = contains(p->name, "running_var") || contains(p->name, "gamma");
      float largest = 0;
      for (int64_t i = 0; i < p->value.numel(); ++i) largest = std::max(largest, std::fabs(p->value.f32()[i]));
      if (largest == 0) largest = 0.1f;
      for (int64_t i = 0; i < p->value.numel(); ++i) {
        const float u = rng.uniform_f32();
        p->value.f32()[i] = positive ? 0.5f + u : largest * (2 * u - 1);
      }
    }
  }
  return model;
}

struct Quantized {
  std::unique_ptr<Int8Model> net;
  bool all_int8 = true;  // every conv and dense layer runs in int8
};

Quantized quantize(Model& model, const Int8Options& options, ThreadPool* pool) {
  const Tensor calibration = random_tensor(model.input_shape().batched(64), 3);
  auto net = Int8Model::quantize(model, calibration, 32, options, pool);
  RG_CHECK(net.ok(), "" << net.status().message());
  Quantized q{net.take()};
  for (const LayerPrecision& p : q.net->precisions())
    if ((p.kind == "conv" || p.kind == "dense") && p.precision != "int8") q.all_int8 = false;
  RG_CHECK(q.net->reserve(kMaxBatch).ok(), "reserve");
  return q;
}

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }

// The CPU's outputs and each device's on batches of 1, 7 and 19: bit for bit when `exact`, else
// within `tolerance` times the largest output's magnitude.
void expect_device_matches(Int8Model& net, const Shape& input, ThreadPool* pool, bool exact, float tolerance,
                           const std::string& what) {
  for (const std::string& failure : open_devices().failures) ADD_FAILURE() << failure;
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label() + " " + what);
    auto cl = ClInt8Model::create(net, *device);
    ASSERT_TRUE(cl.ok()) << cl.status().message();
    ASSERT_TRUE(cl.value()->reserve(kMaxBatch).ok());
    EXPECT_GT(cl.value()->weight_bytes(), 0);
    EXPECT_GT(cl.value()->buffer_bytes(), 0);
    EXPECT_EQ(cl.value()->reserved_bytes(kMaxBatch).device, cl.value()->buffer_bytes())
        << "the executor's reserved_bytes is not what reserve allocated";
    for (int64_t n : kBatches) {
      SCOPED_TRACE("batch " + std::to_string(n));
      const Tensor x = random_tensor(input.batched(n), 100 + static_cast<uint64_t>(n));
      const std::vector<float> want = values(net.forward(x, pool));
      auto got = cl.value()->forward(x);
      ASSERT_TRUE(got.ok()) << got.status().message();
      ASSERT_EQ(got.value().shape(), net.forward(x, pool).shape());
      if (exact) {
        expect_bits(values(got.value()), want, "int8 model output");
        continue;
      }
      float largest = 0, worst = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        largest = std::max(largest, std::fabs(want[i]));
        worst = std::max(worst, std::fabs(got.value().f32()[i] - want[i]));
      }
      EXPECT_LE(worst, tolerance * largest) << "largest output " << largest;
    }
  }
}

Int8Options im2col_only() {
  Int8Options o;
  o.direct_conv = false;
  o.winograd = false;
  return o;
}

// Both option sets on the CPU give the same bits; the device gives them too.
void expect_presets_exact(bool scramble) {
  ThreadPool pool(2);
  for (const char* name : {"mlp", "lenet", "cnn"}) {
    SCOPED_TRACE(std::string(name) + (scramble ? " (random params)" : ""));
    std::unique_ptr<Model> model = preset_model(name, scramble);
    Quantized plain = quantize(*model, im2col_only(), &pool);
    Quantized fast = quantize(*model, Int8Options(), &pool);
    ASSERT_TRUE(plain.all_int8 && fast.all_int8) << plain.net->summary();
    for (int64_t n : kBatches) {
      const Tensor x = random_tensor(model->input_shape().batched(n), 200 + static_cast<uint64_t>(n));
      expect_bits(values(fast.net->forward(x, &pool)), values(plain.net->forward(x, &pool)), "CPU defaults vs im2col");
    }
    expect_device_matches(*plain.net, model->input_shape(), &pool, true, 0, "im2col plan");
    expect_device_matches(*fast.net, model->input_shape(), &pool, true, 0, "default plan");
  }
}

TEST(OpenclInt8Model, PresetsMatchTheCpuBitForBit) {
  SKIP_WITHOUT_OPENCL();
  expect_presets_exact(false);
}

// 4-bit weights (w4a8-ptq): the device reads the plan's weights one a byte and gives the CPU's bits
// (whose GEMM holds them two a byte); 4-bit activations: refused, naming the grid.
TEST(OpenclInt8Model, FourBitWeightsMatchAndFewerActivationBitsAreRefused) {
  SKIP_WITHOUT_OPENCL();
  ThreadPool pool(2);
  std::unique_ptr<Model> model = preset_model("lenet", false);
  Int8Options w4;
  w4.weight_bits = 4;
  Quantized q = quantize(*model, w4, &pool);
  expect_device_matches(*q.net, model->input_shape(), &pool, true, 0, "w4a8");
  Int8Options a4;
  a4.activation_bits = 4;
  Quantized q4 = quantize(*model, a4, &pool);
  for (Device* device : open_devices().devices) {
    auto cl = ClInt8Model::create(*q4.net, *device);
    ASSERT_FALSE(cl.ok());
    EXPECT_NE(cl.status().message().find("activations of fewer than 8 bits (a grid of [-8, 7])"), std::string::npos)
        << cl.status().message();
  }
}

// The one scoring loop (Trainer::evaluate) over the device's int8 executor gives the CPU int8
// executor's figures bit for bit (an all-int8 plan: the same output bits), and the executor
// reports the device it runs on.
TEST(OpenclInt8Model, ScoredThroughTheLoopAsTheCpuEngine) {
  SKIP_WITHOUT_OPENCL();
  ThreadPool pool(2);
  std::unique_ptr<Model> model = preset_model("lenet", false);
  Quantized q = quantize(*model, Int8Options(), &pool);
  ASSERT_TRUE(q.all_int8);
  const DataSplit split = make_synthetic(64, 100, 10, 5);
  TrainOptions options;
  options.batch = kMaxBatch;
  Trainer evaluator(*model, pool, options);
  ASSERT_TRUE(evaluator.prepare().ok());
  Int8Executor cpu(*q.net, &pool);
  auto want = evaluator.evaluate(split.test, &cpu);
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    auto cl = ClInt8Model::create(*q.net, *device);
    ASSERT_TRUE(cl.ok()) << cl.status().message();
    Executor& runner = *cl.value();
    ASSERT_TRUE(runner.reserve(kMaxBatch).ok());
    EXPECT_EQ(runner.place(), device->label());
    EXPECT_EQ(runner.description(), cpu.description());
    auto got = evaluator.evaluate(split.test, &runner);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(got.value().loss, want.value().loss);
    EXPECT_EQ(got.value().accuracy, want.value().accuracy);
  }
}

TEST(OpenclInt8Model, PresetsWithRandomParamsMatchTheCpuBitForBit) {
  SKIP_WITHOUT_OPENCL();
  expect_presets_exact(true);
}

// Strides, padding on odd sizes, a non-square pooling window and an odd channel count: the
// device's im2col and pooling geometry against the CPU's on shapes the presets lack (and relu6
// fused as the clamp, as relu is). The
// depthwise conv (the CPU's own int8 stage) runs on the device as its GEMM (gemm_weights).
TEST(OpenclInt8Model, StridedAndPaddedConvsMatchTheCpuBitForBit) {
  SKIP_WITHOUT_OPENCL();
  const char* cfg_text =
      "[net]\ninput = 13x11x3\nloss = softmax_cross_entropy\n"
      "[conv]\nfilters = 5\nsize = 3\nstride = 2\npad = 1\n[batchnorm]\n[relu]\n"
      "[maxpool]\nsize = 3\nstride = 2\npad = 1\n"
      "[depthwise_conv]\nsize = 3\npad = 1\n[batchnorm]\n[relu6]\n"
      "[conv]\nfilters = 9\nsize = 2\n[relu6]\n"
      "[dense]\nunits = 6\n";
  auto cfg = parse_cfg(cfg_text, "strided.cfg");
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  auto built = Model::from_cfg(cfg.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  std::unique_ptr<Model> model = built.take();
  ASSERT_TRUE(model->init(5).ok());
  ThreadPool pool(2);
  for (const Int8Options& options : {im2col_only(), Int8Options()}) {
    Quantized q = quantize(*model, options, &pool);
    ASSERT_TRUE(q.all_int8) << q.net->summary();
    expect_device_matches(*q.net, model->input_shape(), &pool, true, 0, "strided");
  }
}

// The defaults plan fused pooling into lenet's direct first conv and cnn's Winograd conv: the
// device runs those as a GEMM and a pooling, whose bits are the same.
TEST(OpenclInt8Model, TheDefaultPlansFuseWhatTheDeviceSplits) {
  ThreadPool pool(2);
  for (const char* name : {"lenet", "cnn"}) {
    std::unique_ptr<Model> model = preset_model(name, false);
    Quantized fast = quantize(*model, Int8Options(), &pool);
    bool fused = false;
    for (const Int8StagePlan& p : fast.net->plan()) fused = fused || (p.kind == Int8StageKind::gemm && p.pool);
    EXPECT_TRUE(fused) << name << ":\n" << fast.net->summary();
  }
}

// An f32 layer between a dequantize and a quantize runs the device's f32 layer: its sums round
// in another order than the CPU's, and a quantize after it can then land one step away, so the
// outputs agree within a tolerance (int8 steps of the later layers), not bit for bit.
TEST(OpenclInt8Model, LayersKeptInF32MatchWithinTolerance) {
  SKIP_WITHOUT_OPENCL();
  ThreadPool pool(2);
  struct Case {
    const char* preset;
    const char* keep;
    float tolerance;
  };
  for (const Case& c : {Case{"lenet", "first", 0.05f}, Case{"mlp", "last", 1e-5f}, Case{"cnn", "first", 0.05f}}) {
    SCOPED_TRACE(std::string(c.preset) + " keeping " + c.keep);
    std::unique_ptr<Model> model = preset_model(c.preset, true);
    Int8Options options = im2col_only();
    options.keep_f32 = {c.keep};
    Quantized q = quantize(*model, options, &pool);
    bool has_f32 = false;
    for (const Int8StagePlan& p : q.net->plan()) has_f32 = has_f32 || p.kind == Int8StageKind::f32;
    ASSERT_TRUE(has_f32) << q.net->summary();
    expect_device_matches(*q.net, model->input_shape(), &pool, false, c.tolerance, "f32 layer kept");
  }
}

// Graph models (stages that read earlier stages than the one before): a residual block whose
// stages are all int8 (two adds, the first with the relu after it fused: qs8_add; r0's output
// read by three layers) gives the CPU's bits; a concat, f32 on the CPU, is refused by the
// device naming it, rather than run as a chain.
std::unique_ptr<Model> cfg_model(const char* text) {
  auto cfg = parse_cfg(text, "graph.cfg");
  RG_CHECK(cfg.ok(), "" << cfg.status().message());
  auto built = Model::from_cfg(cfg.value());
  RG_CHECK(built.ok(), "" << built.status().message());
  RG_CHECK(built.value()->init(7).ok(), "init");
  return built.take();
}

TEST(OpenclInt8Model, GraphModelsMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  ThreadPool pool(2);
  std::unique_ptr<Model> residual = cfg_model(
      "[net]\ninput = 12x12x2\n[conv]\nfilters = 8\nsize = 3\npad = 1\n[batchnorm]\n[relu]\nname = r0\n"
      "[conv]\nfilters = 8\nsize = 3\npad = 1\n[batchnorm]\nname = b2\n[add]\ninputs = r0, b2\n[relu]\n"
      "[add]\ninputs = relu1, r0\n[flatten]\n[dense]\nunits = 10\n");
  Quantized q = quantize(*residual, im2col_only(), &pool);
  int adds = 0;
  for (const Int8StagePlan& p : q.net->plan()) {
    adds += p.kind == Int8StageKind::add;
    EXPECT_NE(p.kind, Int8StageKind::f32) << p.name;
  }
  EXPECT_EQ(adds, 2);
  expect_device_matches(*q.net, residual->input_shape(), &pool, true, 0, "residual graph");
  std::unique_ptr<Model> joined = cfg_model("[net]\ninput = 6\n[dense]\nunits = 4\nname = a\n[relu]\n"
                                            "[concat]\ninputs = a, relu1\n[dense]\nunits = 3\n");
  Quantized c = quantize(*joined, Int8Options(), &pool);
  for (Device* device : open_devices().devices) {
    auto cl = ClInt8Model::create(*c.net, *device);
    ASSERT_FALSE(cl.ok());
    EXPECT_NE(cl.status().message().find("layer concat1 joins 2 inputs in f32, which the device int8 model does not run"),
              std::string::npos) << cl.status().message();
  }
}

}  // namespace
}  // namespace rg::ocl
