// Fusion (issue 9, opencl/model/cl_fusion.h): a kernel that applies the next layers' elementwise
// work to its result gives the bits of the launches it replaces (the GEMM's epilogue in every
// configuration, split over K or not, the implicit conv GEMM, batch norm's apply with an
// activation), and ClModel's fused forward gives the bits of its unfused one (RETROGRAD_CL_FUSE=0)
// with fewer launches, through training steps and in inference. Without a device each test is skipped.
#include <algorithm>
#include <initializer_list>
#include <limits>

#include "nn/model.h"
#include "nn/optimizer.h"
#include "opencl/gemm_config.h"
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "opencl_test_util.h"

namespace rg::ocl {
namespace {

// ---------------------------------------------------------------- kernels

// What follows a product of n columns: a bias, a batch norm's params and running statistics, the
// doubles its unfused inference forward keeps, and the affine [2 n] its fused form reads.
struct EpilogueOperands {
  int64_t rows = 0, n = 0;
  Buffer bias, gamma, beta, mean, var, saved, affine;
};

EpilogueOperands make_operands(Device& device, Rng& rng, int64_t rows, int64_t n) {
  EpilogueOperands ops;
  ops.rows = rows;
  ops.n = n;
  ops.bias = upload_or_die(device, random_floats(rng, n), "bias");
  ops.gamma = upload_or_die(device, random_floats(rng, n, 0.5f, 2.0f), "gamma");
  ops.beta = upload_or_die(device, random_floats(rng, n), "beta");
  ops.mean = upload_or_die(device, random_floats(rng, n), "running mean");
  ops.var = upload_or_die(device, random_floats(rng, n, 0.25f, 3.0f), "running var");
  ops.saved = upload_or_die(device, std::vector<double>(batch_norm_saved_count(n, rows), 0.0), "saved");
  ops.affine = upload_or_die(device, std::vector<float>(2 * n, 0.0f), "affine");
  return ops;
}

struct EpilogueCase {
  const char* name;
  bool bias, affine;
  FusedActivation activation;
};

const EpilogueCase kEpilogueCases[] = {
    {"bias", true, false, {}},
    {"relu", false, false, {FusedActivation::relu, 0.0f}},
    {"bias, leaky relu", true, false, {FusedActivation::leaky_relu, 0.2f}},
    {"batch norm", false, true, {}},
    {"bias, batch norm, relu", true, true, {FusedActivation::relu, 0.0f}},
    {"batch norm, leaky relu", false, true, {FusedActivation::leaky_relu, 0.01f}},
};

// The fused form: the batch norm's inference affine written first (as ClBatchNorm does).
GemmEpilogue fused_epilogue(Device& device, const EpilogueCase& e, const EpilogueOperands& ops) {
  GemmEpilogue out;
  if (e.bias) out.bias = ops.bias.f32();
  if (e.affine) {
    auto written = f32_batch_norm_inference_affine(device, ops.n, 1e-5, ops.gamma.f32(), ops.beta.f32(), ops.mean.f32(),
                                                   ops.var.f32(), ops.affine.f32());
    EXPECT_TRUE(written.ok()) << written.status().message();
    out.affine = ops.affine.f32();
  }
  out.activation = e.activation;
  return out;
}

// The unfused form over c [rows, n], in place: each layer's own kernels after the product.
void unfused_epilogue(Device& device, const EpilogueCase& e, const EpilogueOperands& ops, DeviceSpan c) {
  const int64_t count = ops.rows * ops.n;
  if (e.bias) {
    ASSERT_TRUE(f32_add_bias(device, ops.rows, ops.n, ops.bias.f32(), c).ok());
  }
  if (e.affine) {
    auto bn = f32_batch_norm_forward(device, ops.rows, ops.n, false, 0.1, 1e-5, c, ops.gamma.f32(), ops.beta.f32(),
                                     ops.mean.f32(), ops.var.f32(), element_span(ops.saved, 8), c);
    ASSERT_TRUE(bn.ok()) << bn.status().message();
  }
  if (e.activation.kind == FusedActivation::relu) {
    ASSERT_TRUE(f32_unary_forward(device, UnaryOp::relu, count, 0.0f, c, c).ok());
  }
  if (e.activation.kind == FusedActivation::leaky_relu) {
    ASSERT_TRUE(f32_unary_forward(device, UnaryOp::leaky_relu, count, e.activation.slope, c, c).ok());
  }
}

std::vector<const GemmConfig*> configs_and_automatic() {
  std::vector<const GemmConfig*> out;
  for (const GemmConfig& c : gemm_candidates()) out.push_back(&c);
  out.push_back(nullptr);  // the tuning's choice
  return out;
}

// For each configuration, split over K and epilogue: `fused_product(launch, c)` with the epilogue
// against `plain_product(launch, c)` without it followed by the unfused launches, bit for bit.
// `fused` and `apart` hold c [ops.rows, ops.n].
template <class FusedProduct, class PlainProduct>
void expect_unfused_bits(Device& device, const std::vector<const GemmConfig*>& configs, std::initializer_list<int> splits,
                         const EpilogueOperands& ops, Buffer& fused, Buffer& apart, FusedProduct fused_product,
                         PlainProduct plain_product) {
  for (const GemmConfig* config : configs) {
    for (int k_slices : splits) {
      for (const EpilogueCase& e : kEpilogueCases) {
        SCOPED_TRACE((config ? config->name() : "automatic") + " slices " + std::to_string(k_slices) + ": " + e.name);
        const GemmLaunch with{config, k_slices, fused_epilogue(device, e, ops)}, without{config, k_slices, {}};
        ASSERT_TRUE(fused_product(with, fused.f32()).ok());
        ASSERT_TRUE(plain_product(without, apart.f32()).ok());
        unfused_epilogue(device, e, ops, apart.f32());
        expect_bits(download_all<float>(fused), download_all<float>(apart), e.name);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// Every configuration, in one slice and split over K, each epilogue: the bits of the plain
// product (the same configuration and split) followed by the unfused launches.
TEST(OpenclFusedKernels, EveryGemmConfigurationWithEachEpilogueGivesTheUnfusedBits) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  ASSERT_TRUE(reserve_gemm_scratch(device).ok());
  Rng rng(31);
  const int64_t m = 37, n = 21, k = 300;
  const GemmShape s{Trans::no, Trans::no, m, n, k, k, n, n};
  Buffer a = upload_or_die(device, random_floats(rng, m * k), "A");
  Buffer b = upload_or_die(device, random_floats(rng, k * n), "B");
  const EpilogueOperands ops = make_operands(device, rng, m, n);
  Buffer fused = upload_or_die(device, std::vector<float>(m * n, 9.0f), "fused");
  Buffer apart = upload_or_die(device, std::vector<float>(m * n, 9.0f), "apart");
  auto product = [&](const GemmLaunch& launch, DeviceSpan c) {
    return f32_gemm(device, s, 1.0f, a.f32(), b.f32(), 0.0f, c, launch);
  };
  expect_unfused_bits(device, configs_and_automatic(), {1, 3}, ops, fused, apart, product, product);
  release_gemm_scratch(device);
}

// The implicit conv GEMM (patches read from the images) with each epilogue: the bits of im2col,
// the plain product and the unfused launches, in one slice and split.
TEST(OpenclFusedKernels, TheImplicitConvGemmWithEachEpilogueGivesTheUnfusedBits) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  ASSERT_TRUE(reserve_gemm_scratch(device).ok());
  Rng rng(32);
  auto geometry = conv_geometry(9, 7, 3, 3, 1, 1);
  ASSERT_TRUE(geometry.ok());
  const ConvGeometry g = geometry.value();
  const int64_t batch = 3, filters = 6, rows = batch * g.patches(), k = g.patch_size();
  Buffer images = upload_or_die(device, random_floats(rng, batch * g.height * g.width * g.channels), "images");
  Buffer weight = upload_or_die(device, random_floats(rng, k * filters), "weight");
  Buffer cols = upload_or_die(device, std::vector<float>(rows * k, 0.0f), "cols");
  const EpilogueOperands ops = make_operands(device, rng, rows, filters);
  Buffer fused = upload_or_die(device, std::vector<float>(rows * filters, 9.0f), "fused");
  Buffer apart = upload_or_die(device, std::vector<float>(rows * filters, 9.0f), "apart");
  ASSERT_TRUE(f32_im2col(device, g, batch, images.f32(), cols.f32()).ok());
  expect_unfused_bits(
      device, {&gemm_candidates()[2], &gemm_candidates()[9], nullptr}, {1, 2}, ops, fused, apart,
      [&](const GemmLaunch& launch, DeviceSpan c) {
        return f32_conv_gemm(device, g, batch, images.f32(), weight.f32(), filters, c, launch);
      },
      [&](const GemmLaunch& launch, DeviceSpan c) {
        return f32_gemm(device, GemmShape{Trans::no, Trans::no, rows, filters, k, k, filters, filters}, 1.0f,
                        cols.f32(), weight.f32(), 0.0f, c, launch);
      });
  release_gemm_scratch(device);
}

// Batch norm's apply with an activation (training: the batch's statistics; inference: the running
// ones): y, the running statistics and the saved doubles are the bits of the forward then the
// activation's own kernel.
TEST(OpenclFusedKernels, BatchNormWithAnActivationGivesTheBitsOfBothLaunches) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  if (!device.info().has_extension("cl_khr_fp64")) GTEST_SKIP() << "batch norm needs cl_khr_fp64";
  Rng rng(33);
  const int64_t rows = 150, channels = 7, count = rows * channels;
  std::vector<float> x = random_floats(rng, count, -3.0f, 5.0f);
  for (int64_t i = 0; i < count; i += 5) x[i] = 0.0f;  // zeros on both sides of relu
  Buffer bx = upload_or_die(device, x, "x");
  const EpilogueOperands start = make_operands(device, rng, rows, channels);
  const std::vector<float> mean0 = download_all<float>(start.mean), var0 = download_all<float>(start.var);
  for (bool training : {true, false}) {
    for (const FusedActivation act :
         {FusedActivation{FusedActivation::relu, 0.0f}, FusedActivation{FusedActivation::leaky_relu, 0.2f}}) {
      SCOPED_TRACE(std::string(training ? "training " : "inference ") + (act.kind == FusedActivation::relu ? "relu" : "leaky"));
      Buffer y[2], mean[2], var[2], saved[2];  // [0] fused, [1] apart
      for (int w = 0; w < 2; ++w) {
        y[w] = upload_or_die(device, std::vector<float>(count, 9.0f), "y");
        mean[w] = upload_or_die(device, mean0, "running mean");
        var[w] = upload_or_die(device, var0, "running var");
        saved[w] = upload_or_die(device, std::vector<double>(batch_norm_saved_count(channels, rows), 0.0), "saved");
        auto bn = f32_batch_norm_forward(device, rows, channels, training, 0.1, 1e-5, bx.f32(), start.gamma.f32(),
                                         start.beta.f32(), mean[w].f32(), var[w].f32(), element_span(saved[w], 8),
                                         y[w].f32(), w == 0 ? act : FusedActivation{});
        ASSERT_TRUE(bn.ok()) << bn.status().message();
      }
      if (act.kind == FusedActivation::relu) {
        ASSERT_TRUE(f32_unary_forward(device, UnaryOp::relu, count, 0.0f, y[1].f32(), y[1].f32()).ok());
      }
      if (act.kind == FusedActivation::leaky_relu) {
        ASSERT_TRUE(f32_unary_forward(device, UnaryOp::leaky_relu, count, act.slope, y[1].f32(), y[1].f32()).ok());
      }
      expect_bits(download_all<float>(y[0]), download_all<float>(y[1]), "y");
      expect_bits(download_all<float>(mean[0]), download_all<float>(mean[1]), "running mean");
      expect_bits(download_all<float>(var[0]), download_all<float>(var[1]), "running var");
      EXPECT_EQ(download_all<double>(saved[0]), download_all<double>(saved[1])) << "saved statistics";
    }
  }
}

// Backward from an activation's output: the fused kernels against the activation's own backward
// launch (fed the same output as its x: the values it reads) then the plain kernels, bit for bit,
// on outputs with zeros of both signs and NaNs, for relu and leaky relu of slopes 0.2, 0 and NaN: a
// batch norm's backward in training taking the activation (its block sums, gradient sums and dx),
// and f32_fused_activation_backward written, and added onto a gradient already there.
TEST(OpenclFusedKernels, ActivationBackwardsFromTheOutputGiveTheBitsOfTheirLaunches) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  if (!device.info().has_extension("cl_khr_fp64")) GTEST_SKIP() << "batch norm needs cl_khr_fp64";
  Rng rng(35);
  const int64_t rows = 150, channels = 7, count = rows * channels;
  std::vector<float> out = random_floats(rng, count, -3.0f, 5.0f);
  for (int64_t i = 0; i < count; i += 5) out[static_cast<size_t>(i)] = 0.0f;
  for (int64_t i = 3; i < count; i += 7) out[static_cast<size_t>(i)] = -0.0f;
  for (int64_t i = 1; i < count; i += 11) out[static_cast<size_t>(i)] = std::numeric_limits<float>::quiet_NaN();
  Buffer bx = upload_or_die(device, random_floats(rng, count, -3.0f, 5.0f), "x");
  Buffer bout = upload_or_die(device, out, "the activation's output");
  Buffer dy = upload_or_die(device, random_floats(rng, count), "dy");
  const std::vector<float> held = random_floats(rng, count);
  const EpilogueOperands ops = make_operands(device, rng, rows, channels);
  ASSERT_TRUE(f32_batch_norm_forward(device, rows, channels, true, 0.1, 1e-5, bx.f32(), ops.gamma.f32(),
                                     ops.beta.f32(), ops.mean.f32(), ops.var.f32(), element_span(ops.saved, 8),
                                     upload_or_die(device, std::vector<float>(count, 0.0f), "y").f32())
                  .ok());
  const std::vector<double> saved0 = download_all<double>(ops.saved);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const FusedActivation act : {FusedActivation{FusedActivation::relu, 0.0f}, FusedActivation{FusedActivation::leaky_relu, 0.2f},
                                    FusedActivation{FusedActivation::leaky_relu, 0.0f}, FusedActivation{FusedActivation::leaky_relu, nan}}) {
    SCOPED_TRACE(act.kind == FusedActivation::relu ? "relu" : "leaky relu, slope " + std::to_string(act.slope));
    const UnaryOp op = act.kind == FusedActivation::relu ? UnaryOp::relu : UnaryOp::leaky_relu;
    Buffer g = upload_or_die(device, std::vector<float>(count, 9.0f), "g");
    ASSERT_TRUE(f32_unary_backward(device, op, count, act.slope, bout.f32(), dy.f32(), g.f32()).ok());
    Buffer written = upload_or_die(device, std::vector<float>(count, 9.0f), "written");
    ASSERT_TRUE(f32_fused_activation_backward(device, count, act, bout.f32(), dy.f32(), written.f32(), false).ok());
    expect_bits(download_all<float>(written), download_all<float>(g), "written");
    Buffer added = upload_or_die(device, held, "added"), want = upload_or_die(device, held, "held + g");
    ASSERT_TRUE(f32_fused_activation_backward(device, count, act, bout.f32(), dy.f32(), added.f32(), true).ok());
    ASSERT_TRUE(f32_add(device, count, want.f32(), g.f32(), want.f32()).ok());
    expect_bits(download_all<float>(added), download_all<float>(want), "added");
    Buffer dgamma[2], dbeta[2], dx[2], saved[2];  // [0] fused, [1] apart
    for (int w = 0; w < 2; ++w) {
      dgamma[w] = upload_or_die(device, std::vector<float>(channels, 0.0f), "dgamma");
      dbeta[w] = upload_or_die(device, std::vector<float>(channels, 0.0f), "dbeta");
      dx[w] = upload_or_die(device, std::vector<float>(count, 9.0f), "dx");
      saved[w] = upload_or_die(device, saved0, "saved");
      const BatchNormBackwardFusion fused{act, bout.f32(), {}};
      auto bn = f32_batch_norm_backward(device, rows, channels, true, false, bx.f32(), w == 0 ? dy.f32() : g.f32(),
                                        ops.gamma.f32(), element_span(saved[w], 8), dgamma[w].f32(), dbeta[w].f32(),
                                        dx[w].f32(), w == 0 ? fused : BatchNormBackwardFusion{});
      ASSERT_TRUE(bn.ok()) << bn.status().message();
    }
    expect_bits(download_all<float>(dgamma[0]), download_all<float>(dgamma[1]), "dgamma");
    expect_bits(download_all<float>(dbeta[0]), download_all<float>(dbeta[1]), "dbeta");
    expect_bits(download_all<float>(dx[0]), download_all<float>(dx[1]), "dx");
  }
}

// ---------------------------------------------------------------- models

std::vector<float> values_of(const Buffer& buffer, int64_t count) {
  auto values = download<float>(buffer, count);
  RG_CHECK(values.ok(), "" << values.status().message());
  return values.take();
}

Tensor random_tensor(const Shape& shape, Rng& rng) {
  Tensor t = Tensor::zeros(shape, DType::f32, "test tensor").take();
  const std::vector<float> v = random_floats(rng, static_cast<size_t>(t.numel()));
  std::copy(v.begin(), v.end(), t.f32());
  return t;
}

// One host model on the device twice, fused (the default) and not, each with its own SGD.
struct Side {
  std::unique_ptr<ClModel> model;
  std::unique_ptr<Optimizer> host_optimizer;
  std::unique_ptr<ClOptimizer> optimizer;
};

Side make_side(Model& host, Device& device, bool fuse, int64_t n) {
  ScopedEnv env("RETROGRAD_CL_FUSE", fuse ? "1" : "0");
  Side side;
  auto made = ClModel::create(host, device);
  RG_CHECK(made.ok(), "" << made.status().message());
  side.model = made.take();
  RG_CHECK(side.model->reserve(n).ok(), "reserve");
  side.host_optimizer = std::make_unique<Optimizer>(OptimizerConfig{}, host.params());
  RG_CHECK(side.host_optimizer->init().ok(), "optimizer init");
  auto optimizer = ClOptimizer::create(device, *side.host_optimizer, side.model->params());
  RG_CHECK(optimizer.ok(), "" << optimizer.status().message());
  side.optimizer = std::make_unique<ClOptimizer>(optimizer.take());
  return side;
}

// The forward of x on one side; its launches.
int64_t forward_launches(Side& side, const Tensor& x, const LayerContext& ctx) {
  Device& device = side.model->device();
  EXPECT_TRUE(side.model->upload(x, Tensor()).ok());
  const int64_t before = device.launches();
  const Status s = side.model->forward(ctx);
  EXPECT_TRUE(s.ok()) << s.message();
  return device.launches() - before;
}

void expect_same_output(Side& fused, Side& apart, const char* what) {
  std::vector<float> out[2];
  for (int w = 0; w < 2; ++w) {
    ClModel& model = *(w == 0 ? fused : apart).model;
    const Tensor t = Tensor::zeros(model.host().output_shape().batched(model.batch()), DType::f32, "output").take();
    ASSERT_TRUE(model.read_output(t).ok());
    out[w].assign(t.f32(), t.f32() + t.numel());
  }
  expect_bits(out[0], out[1], what);
}

struct FusionCase {
  const char* preset;                           // a preset's name, or the name of `cfg`
  const char* conv_path;                        // RETROGRAD_CL_CONV: both sides take the same path
  int64_t saved_training, saved_inference;      // launches one forward saves
  int64_t saved_backward;                       // launches a backward saves from the second step on
  const char* cfg = nullptr;                    // cfg text, in place of the preset's
};

// `steps` training steps (forward, a random output gradient, backward, an SGD step) then a forward
// in inference, fused and not: every output, gradient, param and running statistic the same bits,
// each forward `saved_*` launches fewer fused, and each backward but the first (where a conv
// chooses its backward path: a dx added onto in its own product waits for it) `saved_backward`.
void expect_fusion_changes_no_bit(const FusionCase& c, int64_t n, int steps) {
  SCOPED_TRACE(c.preset);
  ScopedEnv path("RETROGRAD_CL_CONV", c.conv_path);
  auto doc = parse_cfg(c.cfg != nullptr ? c.cfg : preset_cfg(c.preset), std::string(c.preset) + ".cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& host = *built.value();
  ASSERT_TRUE(host.init(42).ok());
  Device& device = *open_devices().devices.at(0);
  Side fused = make_side(host, device, true, n), apart = make_side(host, device, false, n);
  Rng rng(43);
  LayerContext ctx;
  ctx.training = true;
  ctx.accumulate_grads = false;
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    ctx.noise_stream = static_cast<uint64_t>(step);  // dropout's masks: the same on both sides
    const Tensor x = random_tensor(host.input_shape().batched(n), rng);
    const Tensor dy = random_tensor(host.output_shape().batched(n), rng);
    const int64_t fused_launches = forward_launches(fused, x, ctx), apart_launches = forward_launches(apart, x, ctx);
    EXPECT_EQ(apart_launches - fused_launches, c.saved_training) << "launches saved in a training forward";
    expect_same_output(fused, apart, "training output");
    int64_t backward_launches[2] = {0, 0};
    for (Side* side : {&fused, &apart}) {
      ASSERT_TRUE(side->model->write_output_grad(dy).ok());
      const int64_t before = device.launches();
      const Status s = side->model->backward(ctx);
      ASSERT_TRUE(s.ok()) << s.message();
      backward_launches[side == &fused ? 0 : 1] = device.launches() - before;
    }
    if (step > 0) {
      EXPECT_EQ(backward_launches[1] - backward_launches[0], c.saved_backward) << "launches saved in a backward";
    }
    const std::vector<ClParam*> a = fused.model->params(), b = apart.model->params();
    for (size_t i = 0; i < a.size(); ++i) {
      expect_bits(values_of(a[i]->grad, a[i]->numel()), values_of(b[i]->grad, b[i]->numel()), a[i]->host->name.c_str());
    }
    for (Side* side : {&fused, &apart}) ASSERT_TRUE(side->optimizer->step(0.05).ok());
    if (::testing::Test::HasFailure()) return;
  }
  for (auto pair : {std::make_pair(fused.model->params(), apart.model->params()),
                    std::make_pair(fused.model->buffers(), apart.model->buffers())}) {
    for (size_t i = 0; i < pair.first.size(); ++i) {
      ClParam& p = *pair.first[i];
      expect_bits(values_of(p.value, p.numel()), values_of(pair.second[i]->value, p.numel()), p.host->name.c_str());
    }
  }
  ctx.training = false;
  const Tensor x = random_tensor(host.input_shape().batched(n), rng);
  const int64_t fused_launches = forward_launches(fused, x, ctx), apart_launches = forward_launches(apart, x, ctx);
  EXPECT_EQ(apart_launches - fused_launches, c.saved_inference) << "launches saved in an inference forward";
  expect_same_output(fused, apart, "inference output");
  // A backward after an inference forward that folded a batch norm has no input to read: refused.
  if (c.saved_inference > c.saved_training) {
    ASSERT_TRUE(fused.model->write_output_grad(random_tensor(host.output_shape().batched(n), rng)).ok());
    const Status s = fused.model->backward(ctx);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(contains(s.message(), "folded")) << s.message();
  }
}

// lenet: conv/dense + relu four times. cnn: conv/dense + batch norm + relu five times (in
// training the batch norm's apply takes the relu; in inference the GEMM takes both, saving the
// variance and apply launches too), with dropout. dcgan: batch norm + relu after a reshape and a
// transposed conv (no GEMM epilogue there), conv + leaky relu, conv + batch norm + leaky relu.
TEST(OpenclFusedModels, PresetsGiveTheUnfusedBitsWithFewerLaunches) {
  SKIP_WITHOUT_OPENCL();
  // A recurrent conv of 2 steps: each of its 3 batch norms takes its relu forward, and backward its
  // relu's backward and the add into the feed-forward gradient (cl_rcl.cpp). Each case names a conv
  // path: "auto" times both on the first call, and the two sides may keep different ones (an
  // im2col forward is one launch more), which made the launch count follow the timing.
  const char* rcl_cfg =
      "[net]\ninput = 8x8x2\nloss = softmax_cross_entropy\n\n[rcl]\nfilters = 4\nsize = 3\nsteps = 2\n"
      "\n[global_avgpool]\n\n[dense]\nunits = 3\n";
  // A chain that starts with a batch norm taking a leaky relu (its dx the model's input gradient:
  // none) and ends with one taking a relu (the skipped activation the last layer, its dy the loss's).
  // Inference: the first batch norm takes its activation (1), the dense layer the last one and its relu (2).
  const char* ends_cfg =
      "[net]\ninput = 6x6x2\nloss = softmax_cross_entropy\n[batchnorm]\n[leaky_relu]\nslope = 0.1\n"
      "[conv]\nfilters = 3\nsize = 3\npad = 1\n[global_avgpool]\n[dense]\nunits = 4\n[batchnorm]\n[relu]\n";
  for (const FusionCase& c : {FusionCase{"lenet", "im2col", 4, 4, 0}, FusionCase{"cnn", "implicit", 5, 10, 5},
                              FusionCase{"dcgan-generator", "auto", 2, 2, 2},
                              FusionCase{"dcgan-discriminator", "implicit", 2, 3, 1},
                              FusionCase{"rcl", "im2col", 3, 3, 5, rcl_cfg},
                              FusionCase{"rcl", "implicit", 3, 3, 5, rcl_cfg},
                              FusionCase{"ends", "implicit", 2, 3, 2, ends_cfg}}) {
    expect_fusion_changes_no_bit(c, 6, 3);
    if (HasFatalFailure()) return;
  }
}

// Hybrid: a relu run on the CPU is no fused tail, and f16 storage fuses nothing.
TEST(OpenclFusedModels, HostLayersAndF16StorageAreNotFused) {
  SKIP_WITHOUT_OPENCL();
  auto doc = parse_cfg(preset_cfg("lenet"), "lenet.cfg");
  ASSERT_TRUE(doc.ok());
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok());
  Model& host = *built.value();
  ASSERT_TRUE(host.init(42).ok());
  Device& device = *open_devices().devices.at(0);
  LayerContext ctx;
  ctx.training = true;
  Rng rng(44);
  const Tensor x = random_tensor(host.input_shape().batched(2), rng);
  auto hybrid = ClModel::create(host, device, {"relu1"});
  ASSERT_TRUE(hybrid.ok()) << hybrid.status().message();
  ASSERT_TRUE(hybrid.value()->reserve(2).ok());
  ASSERT_TRUE(hybrid.value()->upload(x, Tensor()).ok());
  ASSERT_TRUE(hybrid.value()->forward(ctx).ok());
  int64_t fused_groups = 0;
  for (const FusedGroup& g : hybrid.value()->fused_groups()) fused_groups += g.fused();
  EXPECT_EQ(fused_groups, 3) << "conv2, dense1 and dense2 take their relu; conv1's runs on the CPU";
  EXPECT_FALSE(hybrid.value()->fused_groups()[0].fused());

  auto half = ClModel::create(host, device);
  ASSERT_TRUE(half.ok());
  ASSERT_TRUE(half.value()->set_storage(DType::f16).ok());
  ASSERT_TRUE(half.value()->reserve(2).ok());
  ASSERT_TRUE(half.value()->upload(x, Tensor()).ok());
  ASSERT_TRUE(half.value()->forward(ctx).ok());
  for (const FusedGroup& g : half.value()->fused_groups()) EXPECT_FALSE(g.fused()) << "layer " << g.head;

  ScopedEnv bad("RETROGRAD_CL_FUSE", "yes");
  auto refused = ClModel::create(host, device);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.status().message(), "RETROGRAD_CL_FUSE='yes'")) << refused.status().message();
}

// A graph model (graph_branches_cfg) fuses a layer into the one before only where it alone reads
// that one's output: c1 takes b1 and r1 (inference) and b1 takes r1 (training), but c2 does not
// take r2 (the add reads c2's output too), nor c4 r4 (r4 reads b3). Fused and not, the same bits through training
// steps, the backward summing the gradients of outputs read twice. Backward: b1 takes r1's backward,
// and c2 (stride 1, implicit) adds its dx onto r1's gradient (c4 wrote it) in its own product.
TEST(ClModelGraph, FusionLeavesAnOutputReadByAnotherLayerAlone) {
  SKIP_WITHOUT_OPENCL();
  expect_fusion_changes_no_bit(FusionCase{"branches", "implicit", 1, 2, 2, graph_branches_cfg()}, 4, 2);
}

// A residual block: the add takes the leaky relu after it (forward: the activation in its add;
// backward: taken back through into both inputs' gradients, written into b2's and added onto r0's,
// which c3 wrote first: two launches where the unfused side has the leaky relu's, a copy (no launch)
// and an f32_add), b0 and b1 take their relus' backward, and c1 adds its dx onto r0's gradient in its
// own product: backward, 1 + 1 + 0 + 1 launches saved. Inference: c0 and c1 take their batch norm
// and relu (2 each), c2 its batch norm (1), the add its leaky relu (1).
TEST(ClModelGraph, AResidualAddTakesItsActivation) {
  SKIP_WITHOUT_OPENCL();
  const char* cfg =
      "[net]\ninput = 6x6x3\nloss = softmax_cross_entropy\n"
      "[conv]\nname = c0\nfilters = 4\nsize = 3\npad = 1\nbias = false\n[batchnorm]\nname = b0\n[relu]\nname = r0\n"
      "[conv]\nname = c1\nfilters = 4\nsize = 3\npad = 1\nbias = false\n[batchnorm]\nname = b1\n[relu]\nname = r1\n"
      "[conv]\nname = c2\nfilters = 4\nsize = 3\npad = 1\nbias = false\n[batchnorm]\nname = b2\n"
      "[add]\nname = sum\ninputs = b2, r0\n[leaky_relu]\nname = out\nslope = 0.1\n"
      "[conv]\nname = c3\ninputs = r0\nfilters = 2\nsize = 1\n[concat]\ninputs = out, c3\n"
      "[global_avgpool]\n[dense]\nunits = 3\n";
  expect_fusion_changes_no_bit(FusionCase{"residual", "implicit", 3, 6, 3, cfg}, 4, 3);
  // the convs by Winograd: c1's dx added onto r0's gradient by its output transform (beta 1)
  expect_fusion_changes_no_bit(FusionCase{"residual-winograd", "winograd", 3, 6, 3, cfg}, 4, 3);
}

// What the device does not run for a graph model is refused by name: f16 storage (issue 31) and
// an add or concat among the layers run on the CPU.
TEST(ClModelGraph, F16StorageAndAMergeLayerOnTheCpuAreRefused) {
  SKIP_WITHOUT_OPENCL();
  auto doc = parse_cfg("[net]\ninput = 4\n[dense]\nunits = 4\nname = a\n[relu]\n[add]\ninputs = a, relu1\n"
                       "[dense]\nunits = 2\n", "graph.cfg");
  ASSERT_TRUE(doc.ok());
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  ASSERT_TRUE(built.value()->init(1).ok());
  Device& device = *open_devices().devices.at(0);
  auto made = ClModel::create(*built.value(), device);
  ASSERT_TRUE(made.ok()) << made.status().message();
  const Status f16 = made.value()->set_storage(DType::f16);
  ASSERT_FALSE(f16.ok());
  EXPECT_EQ(f16.message(), "graph.cfg: graph models (layer add1 names its inputs) do not run on the OpenCL device "
                           "with f16 storage yet: issue 31");
  auto hybrid = ClModel::create(*built.value(), device, {"relu1"});
  EXPECT_TRUE(hybrid.ok()) << hybrid.status().message();
  auto refused = ClModel::create(*built.value(), device, {"add1"});
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.status().message(), "layer add1 (add) joins the outputs of several layers"))
      << refused.status().message();
}

}  // namespace
}  // namespace rg::ocl
