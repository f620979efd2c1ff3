// The device layers (opencl/model/) against their CPU layers on every OpenCL device:
// pooling, upsample and dropout bit for bit (same arithmetic, same order), then whole presets
// through ClModel for one training step, within a tolerance (the GEMMs sum in another order).
// Without a device each test is skipped and says why.
#include <algorithm>
#include <cmath>

#include "nn/activation.h"
#include "nn/layer_registry.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "opencl/model/cl_layer.h"
#include "opencl/model/cl_model.h"
#include "opencl_test_util.h"

namespace rg::ocl {
namespace {

Tensor host_tensor(const Shape& shape, const std::vector<float>& values) {
  Tensor t = Tensor::zeros(shape, DType::f32, "test tensor").take();
  std::copy(values.begin(), values.end(), t.f32());
  return t;
}

std::vector<float> values_of(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }

// Values on a grid of quarters: max pooling meets ties (the first equal position wins).
std::vector<float> random_quarters(Rng& rng, int64_t n) {
  std::vector<float> v = random_floats(rng, static_cast<size_t>(n), -2.0f, 2.0f);
  for (float& x : v) x = std::floor(x * 4.0f) / 4.0f;
  return v;
}

// One layer of cfg text on input [n, input...]: the CPU layer and its device layer see the
// same x (quarters in [-2, 2] times `scale`) and dy under `ctx`; y and dx must match bit for
// bit, and no write may leave its span.
void expect_layer_matches(Device& device, const std::string& cfg, const Shape& input, int64_t n,
                          const LayerContext& ctx, uint64_t seed, float scale) {
  SCOPED_TRACE(cfg + " on " + input.batched(n).str() + (ctx.training ? " training" : " inference") + " stream " +
               std::to_string(ctx.noise_stream) + " offset " + std::to_string(ctx.row_offset));
  auto doc = parse_cfg(cfg, "layer.cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto made = make_layer(doc.value().sections.at(0));
  ASSERT_TRUE(made.ok()) << made.status().message();
  std::unique_ptr<Layer> layer = made.take();
  auto output = layer->configure(input);
  ASSERT_TRUE(output.ok()) << output.status().message();
  Rng init_rng(seed);
  ASSERT_TRUE(layer->init(init_rng, DType::f32).ok());
  auto cl = make_cl_layer(*layer, input, output.value(), device);
  ASSERT_TRUE(cl.ok()) << cl.status().message();

  Rng rng(seed + 1);
  std::vector<float> x = random_quarters(rng, input.numel() * n);
  for (float& v : x) v *= scale;
  const std::vector<float> dy = random_floats(rng, static_cast<size_t>(output.value().numel() * n));
  // CPU
  const Tensor hx = host_tensor(input.batched(n), x), hdy = host_tensor(output.value().batched(n), dy);
  const Tensor hy = host_tensor(output.value().batched(n), {}), hdx = host_tensor(input.batched(n), {});
  layer->forward(hx, hy, ctx);
  layer->backward(hx, hy, hdy, hdx, ctx);
  // device: outputs start as 9s, so whatever is left unwritten shows
  Guarded gx = guarded_f32(device, x, "x"), gdy = guarded_f32(device, dy, "dy");
  Guarded gy = guarded_f32(device, std::vector<float>(dy.size(), 9.0f), "y");
  Guarded gdx = guarded_f32(device, std::vector<float>(x.size(), 9.0f), "dx");
  const ClContext cl_ctx{ctx, DeviceSpan{}};
  ASSERT_TRUE(cl.value()->forward(n, gx.span, gy.span, cl_ctx).ok());
  ASSERT_TRUE(cl.value()->backward(n, gx.span, gy.span, gdy.span, gdx.span, cl_ctx).ok());
  expect_bits(unguard(gy), values_of(hy), "forward y");
  expect_bits(unguard(gdx), values_of(hdx), "backward dx");
  // no input gradient wanted: nothing written, no error
  Guarded untouched = guarded_f32(device, std::vector<float>(x.size(), 9.0f), "dx not wanted");
  ASSERT_TRUE(cl.value()->backward(n, gx.span, gy.span, gdy.span, DeviceSpan{}, cl_ctx).ok());
  expect_bits(unguard(untouched), std::vector<float>(x.size(), 9.0f), "backward without dx");
}

struct LayerCase {
  std::string cfg;
  Shape input;
  float scale = 1;  // of x
};

void expect_cases_match(const std::vector<LayerCase>& cases, const std::vector<LayerContext>& contexts) {
  for (const std::string& failure : open_devices().failures) ADD_FAILURE() << "a device did not open: " << failure;
  uint64_t seed = 100;
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    for (const LayerCase& c : cases) {
      for (int64_t n : {1, 3, 8}) {
        for (const LayerContext& ctx : contexts) {
          expect_layer_matches(*device, c.cfg, c.input, n, ctx, ++seed, c.scale);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

LayerContext context(bool training, uint64_t noise_stream = 0, int64_t row_offset = 0) {
  LayerContext ctx;
  ctx.training = training;
  ctx.noise_stream = noise_stream;
  ctx.row_offset = row_offset;
  return ctx;
}

const std::vector<LayerContext> kTrainAndInfer = {context(true), context(false)};

// ---------------------------------------------------------------- single layers

TEST(OpenclLayers, MaxPoolMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  expect_cases_match({{"[maxpool]\nsize = 2\n", Shape{4, 6, 3}},
                      {"[maxpool]\nsize = 3\nstride = 2\npad = 1\n", Shape{7, 5, 2}},
                      {"[maxpool]\nsize = 2\nstride = 1\n", Shape{5, 5, 1}},
                      {"[maxpool]\nsize = 3\nstride = 3\npad = 2\n", Shape{9, 8, 4}}},
                     kTrainAndInfer);
}

TEST(OpenclLayers, AvgPoolMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  expect_cases_match({{"[avgpool]\nsize = 2\n", Shape{4, 6, 3}},
                      {"[avgpool]\nsize = 3\nstride = 2\npad = 1\n", Shape{7, 5, 2}},
                      {"[avgpool]\nsize = 2\nstride = 1\n", Shape{5, 5, 1}},
                      {"[avgpool]\nsize = 3\nstride = 3\npad = 2\n", Shape{9, 8, 4}}},
                     kTrainAndInfer);
}

TEST(OpenclLayers, GlobalAvgPoolMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  expect_cases_match({{"[global_avgpool]\n", Shape{4, 6, 3}},
                      {"[global_avgpool]\n", Shape{1, 1, 5}},
                      {"[global_avgpool]\n", Shape{7, 9, 16}}},
                     kTrainAndInfer);
}

// Every activation kind; x in [-8, 8] on a grid of 1s, so relu6 meets 0 and 6 themselves.
TEST(OpenclLayers, ActivationsMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  std::vector<LayerCase> cases;
  for (int k = 0; k < kActivationKinds; ++k) {
    const auto kind = static_cast<ActivationKind>(k);
    if (kind == ActivationKind::sigmoid || kind == ActivationKind::tanh || kind == ActivationKind::softmax) {
      continue;  // the device's exp and tanh are within a few ulp (test_opencl_ops), not bit-exact
    }
    cases.push_back({"[" + std::string(activation_name(kind)) + "]\n", Shape{3, 5, 2}, 4.0f});
  }
  expect_cases_match(cases, kTrainAndInfer);
}

TEST(OpenclLayers, UpsampleMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  expect_cases_match({{"[upsample]\n", Shape{4, 6, 3}},
                      {"[upsample]\nscale = 3\n", Shape{5, 2, 1}},
                      {"[upsample]\nscale = 1\n", Shape{3, 3, 2}}},
                     kTrainAndInfer);
}

// The masks: each row is sample row_offset + r of the step's stream, the layer's seed from init.
TEST(OpenclLayers, DropoutMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  const std::vector<LayerContext> contexts = {context(true, 7, 5), context(true, 0, 0), context(true, 12345, 64),
                                              context(false, 7, 5)};
  expect_cases_match({{"[dropout]\nrate = 0.5\n", Shape{37}},
                      {"[dropout]\nrate = 0.25\n", Shape{4, 6, 3}},
                      {"[dropout]\nrate = 0.0\n", Shape{10}},  // rate 0 in training: a copy
                      {"[dropout]\nrate = 0.99\n", Shape{300}}},
                     contexts);
}

// ---------------------------------------------------------------- whole models

// max |a - b| / (1e-3 + max |b|): the device's GEMMs sum in another order than the CPU's.
double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  }
  return diff / (1e-3 + scale);
}

constexpr double kModelTolerance = 1e-4;

class OpenclPresetStep : public ::testing::TestWithParam<const char*> {};

// One training step of a preset through ClModel (device loss, backward) and through the CPU
// Model: outputs, loss and every param's gradient agree.
TEST_P(OpenclPresetStep, MatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  const std::string name = GetParam();
  auto doc = parse_cfg(preset_cfg(name), name + ".cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto made = Model::from_cfg(doc.value());
  ASSERT_TRUE(made.ok()) << made.status().message();
  std::unique_ptr<Model> model = made.take();
  constexpr int64_t n = 5;
  ASSERT_TRUE(model->init(42).ok());
  ASSERT_TRUE(model->reserve(n).ok());

  Rng rng(7);
  const Shape in_shape = model->input_shape().batched(n), out_shape = model->output_shape().batched(n);
  const Tensor x = host_tensor(in_shape, random_floats(rng, static_cast<size_t>(in_shape.numel()), 0.0f, 1.0f));
  const bool classifies = model->target() == TargetKind::labels;
  ASSERT_TRUE(classifies || model->target() == TargetKind::input) << "a target this test does not build";
  Tensor target;
  if (classifies) {  // int32 labels [n], as Trainer::next_batch
    target = Tensor::zeros(Shape{n}, DType::i32, "labels").take();
    for (int64_t i = 0; i < n; ++i) target.data<int32_t>()[i] = static_cast<int32_t>(rng.below(10));
  } else {  // target = input
    target = x.reshaped(out_shape);
  }
  for (const std::string& failure : open_devices().failures) ADD_FAILURE() << "a device did not open: " << failure;
  const double grad_scale = 1.0 / n;
  LayerContext ctx = context(true, 3, 0);
  ctx.accumulate_grads = false;

  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label() + " " + name);
    auto created = ClModel::create(*model, *device);
    ASSERT_TRUE(created.ok()) << created.status().message();
    ClModel& cl = *created.value();
    ASSERT_TRUE(cl.reserve(n).ok());
    auto uploaded = cl.upload(x, target);
    ASSERT_TRUE(uploaded.ok()) << uploaded.status().message();
    Status s = cl.forward(ctx);
    ASSERT_TRUE(s.ok()) << s.message();
    const Tensor cl_out = host_tensor(out_shape, {});
    ASSERT_TRUE((s = cl.read_output(cl_out)).ok()) << s.message();
    ASSERT_TRUE((s = cl.device_loss(grad_scale, classifies)).ok()) << s.message();
    ASSERT_TRUE((s = cl.backward(ctx)).ok()) << s.message();
    auto sums = cl.loss_sums();
    ASSERT_TRUE(sums.ok()) << sums.status().message();
    ASSERT_TRUE(uploaded.value().wait().ok());

    const Tensor out = model->forward(x, ctx);
    const double loss = compute_loss(model->loss(), out, target, grad_scale, model->output_grad());
    model->backward(ctx);

    EXPECT_LE(relative_error(values_of(cl_out), values_of(out)), kModelTolerance) << "output";
    EXPECT_LE(std::fabs(sums.value().loss - loss) / (1e-3 + std::fabs(loss)), kModelTolerance) << "loss";
    const std::vector<Param*> host_params = model->params();
    const std::vector<ClParam*> cl_params = cl.params();
    ASSERT_EQ(cl_params.size(), host_params.size());
    for (size_t i = 0; i < cl_params.size(); ++i) {
      auto grad = download<float>(cl_params[i]->grad, cl_params[i]->numel());
      ASSERT_TRUE(grad.ok()) << grad.status().message();
      EXPECT_LE(relative_error(grad.value(), values_of(host_params[i]->grad)), kModelTolerance)
          << host_params[i]->name << " grad";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, OpenclPresetStep,
                         ::testing::Values("mlp", "lenet", "autoencoder", "conv-autoencoder"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string s = info.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace rg::ocl
