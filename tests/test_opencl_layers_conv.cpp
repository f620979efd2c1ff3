// The device conv, conv_transpose, depthwise_conv, batchnorm and rcl layers against their CPU
// layers: the same x and dy through forward and backward (training with grads written, then
// accumulated; then inference), on every OpenCL device found. y, dx, every param grad and the
// running statistics within a tolerance for a different GEMM summation order (max |a - b| <=
// tol * max(1, max |b|)); shapes with stride 2, padding, output_pad, a batch of 1, pointwise
// kernels and batches split into several workspace chunks. Then the cnn and rcnn presets, graph
// models (add and concat, outputs read by several layers), a mobile-style depthwise model and
// the resnet20 preset through a whole ClModel against the CPU Model.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "layer_check.h"
#include "nn/cfg.h"
#include "nn/recurrent_conv.h"
#include "opencl/gemm_tuning.h"
#include "opencl/model/cl_batch_norm.h"
#include "opencl/model/cl_conv_layers.h"
#include "opencl/model/cl_model.h"
#include "opencl/winograd.h"
#include "opencl_test_util.h"
#include "test_paths.h"

namespace rg::ocl {
namespace {

// The devices to test; one that exists but did not open is a failure, not a silent pass.
const std::vector<Device*>& devices() {
  for (const std::string& failure : open_devices().failures) ADD_FAILURE() << failure;
  return open_devices().devices;
}

std::vector<float> floats(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }

std::vector<float> download_or_die(const Buffer& buffer, int64_t count) {
  auto values = download<float>(buffer, count);
  RG_CHECK(values.ok(), "" << values.status().message());
  return values.take();
}

// max |got - want| <= tol * max(1, max |want|)
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1, worst = 0;
  size_t at = 0;
  for (float w : want) scale = std::max(scale, std::fabs(double(w)));
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(want[i]));
    if (!(d <= worst)) worst = d, at = i;  // NaN counts as worst
  }
  EXPECT_LE(worst, tol * scale) << what << ": element " << at << " is " << got[at] << ", the CPU's " << want[at]
                                << " (scale " << scale << ")";
}

// `cpu` named, configured for `input` and initialised from `seed`, and its device layer.
Result<std::unique_ptr<ClLayer>> device_twin(Layer& cpu, const std::string& name, const Shape& input, uint64_t seed,
                                             Device& device) {
  cpu.set_name(name);
  RG_ASSIGN(const Shape output, cpu.configure(input));
  Rng rng(seed);
  RG_TRY(cpu.init(rng, DType::f32));
  return make_cl_layer(cpu, input, output, device);
}

// `cpu` configured for `input` and initialised; `cl` its device layer. Three rounds of forward
// and backward: training with grads overwritten, then accumulated; then inference (running
// statistics) accumulating.
void compare_layer(Layer& cpu, ClLayer& cl, Device& device, const Shape& input, int64_t n, double tol) {
  auto out_shape = cpu.configure(input);  // the same shapes again: no state changes
  ASSERT_TRUE(out_shape.ok()) << out_shape.status().message();
  const Shape out = out_shape.value();
  Rng rng(static_cast<uint64_t>(n * 1000 + input.numel()));
  ThreadPool pool(2);
  ASSERT_TRUE(cpu.reserve(n, DType::f32).ok());
  ASSERT_TRUE(cl.reserve(n).ok());
  const int64_t ws_elements = std::max<int64_t>(1, cl.workspace_elements(n));
  Buffer ws = upload_or_die(device, std::vector<float>(static_cast<size_t>(ws_elements), 0.0f), "workspace");
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const Tensor x = make(input.batched(n), DType::f32), dy = make(out.batched(n), DType::f32);
    const Tensor y = make(out.batched(n), DType::f32), dx = make(input.batched(n), DType::f32);
    fill_random(x, rng, -1, 1);
    fill_random(dy, rng, -1, 1);
    LayerContext ctx;
    ctx.pool = &pool;
    ctx.training = round < 2;
    ctx.accumulate_grads = round > 0;
    cpu.forward(x, y, ctx);
    cpu.backward(x, y, dy, dx, ctx);

    Buffer bx = upload_or_die(device, floats(x), "x"), bdy = upload_or_die(device, floats(dy), "dy");
    Buffer by = upload_or_die(device, std::vector<float>(static_cast<size_t>(y.numel()), 7.0f), "y");
    Buffer bdx = upload_or_die(device, std::vector<float>(static_cast<size_t>(dx.numel()), 7.0f), "dx");
    const ClContext cl_ctx{ctx, ws.f32()};
    Status s = cl.forward(n, bx.f32(), by.f32(), cl_ctx);
    ASSERT_TRUE(s.ok()) << s.message();
    s = cl.backward(n, bx.f32(), by.f32(), bdy.f32(), bdx.f32(), cl_ctx);
    ASSERT_TRUE(s.ok()) << s.message();

    expect_close(download_all<float>(by), floats(y), tol, "y");
    expect_close(download_all<float>(bdx), floats(dx), tol, "dx");
    const std::vector<Param*> params = cpu.params(), buffers = cpu.buffers();
    const std::vector<ClParam*> cl_params = cl.params(), cl_buffers = cl.buffers();
    ASSERT_EQ(params.size(), cl_params.size());
    ASSERT_EQ(buffers.size(), cl_buffers.size());
    for (size_t i = 0; i < params.size(); ++i) {
      ASSERT_EQ(cl_params[i]->host, params[i]);
      expect_close(download_or_die(cl_params[i]->grad, cl_params[i]->numel()), floats(params[i]->grad), tol,
                   params[i]->name + " grad");
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      ASSERT_EQ(cl_buffers[i]->host, buffers[i]);
      expect_close(download_or_die(cl_buffers[i]->value, cl_buffers[i]->numel()), floats(buffers[i]->value), tol,
                   buffers[i]->name);
    }
  }
  // Without dx (a model's first layer) backward still writes the grads.
  LayerContext ctx;
  ctx.pool = &pool;
  ctx.training = true;
  Buffer bx = upload_or_die(device, std::vector<float>(static_cast<size_t>(input.numel() * n), 0.5f), "x");
  Buffer by = upload_or_die(device, std::vector<float>(static_cast<size_t>(out.numel() * n), 0.0f), "y");
  Buffer bdy = upload_or_die(device, std::vector<float>(static_cast<size_t>(out.numel() * n), 0.25f), "dy");
  const ClContext cl_ctx{ctx, ws.f32()};
  ASSERT_TRUE(cl.forward(n, bx.f32(), by.f32(), cl_ctx).ok());
  EXPECT_TRUE(cl.backward(n, bx.f32(), by.f32(), bdy.f32(), DeviceSpan{}, cl_ctx).ok());
}

struct ConvCase {
  const char* name;
  bool transposed;
  Shape input;
  ConvOptions options;
  int64_t n;
  int64_t chunk_samples;  // > 0: a workspace cap of that many samples, so the batch runs in chunks
};

std::vector<ConvCase> conv_cases() {
  return {
      {"3x3 pad 1", false, Shape{5, 5, 3}, conv_options(4, 3, 1, 1), 2, 0},
      {"3x3 stride 2 pad 1", false, Shape{7, 6, 2}, conv_options(3, 3, 2, 1), 3, 0},
      {"2x2 stride 2, batch 1, no bias", false, Shape{6, 6, 2}, conv_options(5, 2, 2, 0, 0, false), 1, 0},
      {"pointwise", false, Shape{4, 4, 5}, conv_options(3, 1, 1, 0), 2, 0},
      {"5x5 pad 2 in chunks", false, Shape{8, 8, 3}, conv_options(5, 5, 1, 2), 5, 2},
      {"stride 2 in chunks of 1", false, Shape{9, 9, 2}, conv_options(4, 3, 2, 0), 3, 1},
      {"t 3x3 stride 2 pad 1 output_pad 1", true, Shape{3, 3, 4}, conv_options(3, 3, 2, 1, 1), 2, 0},
      {"t 2x2 stride 2, batch 1", true, Shape{4, 5, 2}, conv_options(2, 2, 2, 0), 1, 0},
      {"t 3x3 stride 1", true, Shape{3, 3, 2}, conv_options(3, 3, 1, 0), 3, 0},
      {"t stride 3 output_pad 2, no bias", true, Shape{3, 2, 3}, conv_options(2, 3, 3, 0, 2, false), 2, 0},
      {"t pointwise", true, Shape{4, 4, 3}, conv_options(5, 1, 1, 0), 2, 0},
      {"t 4x4 stride 2 pad 1 in chunks", true, Shape{4, 4, 3}, conv_options(2, 4, 2, 1), 5, 2},
      // the direct dx's geometry: no pad, even kernels, pad = kernel - 1, more filters than the
      // patch matrix has floats (the workspace holds the flipped weight)
      {"3x3 pad 0", false, Shape{6, 5, 3}, conv_options(4, 3, 1, 0), 2, 0},
      {"2x2 pad 1", false, Shape{5, 6, 2}, conv_options(3, 2, 1, 1), 2, 0},
      {"4x4 pad 3 on 3x2", false, Shape{3, 2, 2}, conv_options(3, 4, 1, 3), 2, 0},
      {"130 filters on 3x3x1", false, Shape{3, 3, 1}, conv_options(130, 3, 1, 1), 1, 0},
      {"t 2x2 stride 1 pad 1", true, Shape{4, 3, 2}, conv_options(3, 2, 1, 1), 2, 0},
  };
}

TEST(OpenclConvLayers, ConvAndTransposedConvMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  for (Device* device : devices()) {
    for (const ConvCase& c : conv_cases()) {
      SCOPED_TRACE(device->label() + ": " + c.name);
      std::unique_ptr<ConvLayer> cpu;
      if (c.transposed) {
        cpu.reset(new ConvTranspose2D(c.options));
      } else {
        cpu.reset(new Conv2D(c.options));
      }
      cpu->set_name("conv");
      const auto output = cpu->configure(c.input);
      ASSERT_TRUE(output.ok());
      Rng rng(5);
      ASSERT_TRUE(cpu->init(rng, DType::f32).ok());
      const int64_t per_sample = cpu->geometry().patches() * cpu->geometry().patch_size();
      const int64_t cap = c.chunk_samples > 0 ? c.chunk_samples * per_sample + per_sample / 2 : ClConv::kChunkElements;
      // Both backward paths (implicit: dW over the batch; a Conv2D's dx by the flipped weight at
      // stride 1, by col2im in chunks at stride 2; a transposed conv's dx from dy's patches)
      for (const char* policy : {"im2col", "implicit"}) {
        SCOPED_TRACE(policy);
        ScopedEnv path("RETROGRAD_CL_CONV", policy);
        auto cl = ClConv::create(*cpu, *device, cap);
        ASSERT_TRUE(cl.ok()) << cl.status().message();
        if (c.chunk_samples > 0) {
          EXPECT_EQ(cl.value()->chunk_samples(c.n), c.chunk_samples);
          EXPECT_EQ(cl.value()->workspace_elements(c.n), c.chunk_samples * per_sample);
        }
        compare_layer(*cpu, *cl.value(), *device, c.input, c.n, 1e-4);
        if (!cpu->geometry().pointwise()) {
          EXPECT_EQ(cl.value()->backward_path(), std::string(policy) == "im2col" ? ClConv::Path::im2col
                                                                                 : ClConv::Path::implicit);
        }
      }
      // make_cl_layer finds the same kind, with the default cap: one chunk for these batches
      auto made = make_cl_layer(*cpu, c.input, output.value(), *device);
      ASSERT_TRUE(made.ok()) << made.status().message();
      // the patch matrix of one chunk (a stride-1 dx reads the weight flipped in place: no copy)
      EXPECT_EQ(made.value()->workspace_elements(c.n), cpu->geometry().pointwise() ? 0 : c.n * per_sample);
    }
  }
}

// Conv2D's forward by im2col + GEMM and by the implicit GEMM give the same bits (bias, stride,
// padding, chunks); auto times both and keeps one; a bad RETROGRAD_CL_CONV is refused by name
// when the layer is made.
TEST(OpenclConvLayers, ForwardPathsGiveTheSameBits) {
  SKIP_WITHOUT_OPENCL();
  for (Device* device : devices()) {
    for (const ConvCase& c : conv_cases()) {
      if (c.transposed) continue;
      SCOPED_TRACE(device->label() + ": " + c.name);
      Conv2D cpu(c.options);
      cpu.set_name("conv");
      auto out_shape = cpu.configure(c.input);
      ASSERT_TRUE(out_shape.ok()) << out_shape.status().message();
      Rng rng(6);
      ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
      const int64_t per_sample = cpu.geometry().patches() * cpu.geometry().patch_size();
      const int64_t cap = c.chunk_samples > 0 ? c.chunk_samples * per_sample + per_sample / 2 : ClConv::kChunkElements;
      const std::vector<float> x = random_floats(rng, static_cast<size_t>(c.input.numel() * c.n));
      const int64_t y_count = out_shape.value().numel() * c.n;
      std::vector<std::vector<float>> outputs;
      for (const char* policy : {"im2col", "implicit", "auto", "sideways"}) {
        SCOPED_TRACE(policy);
        ScopedEnv path("RETROGRAD_CL_CONV", policy);
        auto cl = ClConv::create(cpu, *device, cap);
        if (std::string(policy) == "sideways") {  // refused when the layer is made
          ASSERT_FALSE(cl.ok());
          EXPECT_NE(cl.status().message().find("RETROGRAD_CL_CONV='sideways'"), std::string::npos)
              << cl.status().message();
          continue;
        }
        ASSERT_TRUE(cl.ok()) << cl.status().message();
        ASSERT_TRUE(cl.value()->reserve(c.n).ok());
        const int64_t ws_count = std::max<int64_t>(1, cl.value()->workspace_elements(c.n));
        Buffer ws = upload_or_die(*device, std::vector<float>(static_cast<size_t>(ws_count), 0.0f), "ws");
        Buffer bx = upload_or_die(*device, x, "x");
        Buffer by = upload_or_die(*device, std::vector<float>(static_cast<size_t>(y_count), 7.0f), "y");
        LayerContext ctx;
        const Status s = cl.value()->forward(c.n, bx.f32(), by.f32(), ClContext{ctx, ws.f32()});
        ASSERT_TRUE(s.ok()) << s.message();
        if (!cpu.geometry().pointwise()) {
          EXPECT_NE(cl.value()->forward_path(), ClConv::Path::unmeasured);
        }
        outputs.push_back(download_all<float>(by));
      }
      ASSERT_EQ(outputs.size(), 3u);
      for (size_t i = 0; i < outputs[0].size(); ++i) {
        ASSERT_TRUE(same_bits(outputs[1][i], outputs[0][i])) << "implicit vs im2col, y word " << i;
        ASSERT_TRUE(same_bits(outputs[2][i], outputs[0][i])) << "auto vs im2col, y word " << i;
      }
    }
  }
}

// A RETROGRAD_CL_CONV of 5000 bytes is refused with its first 40 and its length, not echoed whole.
TEST(OpenclConvLayers, AHugeConvPathValueIsRefusedShort) {
  SKIP_WITHOUT_OPENCL();
  ScopedEnv path("RETROGRAD_CL_CONV", std::string(5000, 'w'));
  Conv2D cpu(conv_options(3, 3, 1, 1));
  cpu.set_name("conv");
  ASSERT_TRUE(cpu.configure(Shape{5, 5, 2}).ok());
  Rng rng(15);
  ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
  auto cl = ClConv::create(cpu, *devices().at(0));
  ASSERT_FALSE(cl.ok());
  EXPECT_NE(cl.status().message().find("RETROGRAD_CL_CONV='" + std::string(40, 'w') + "... (5000 bytes)'"),
            std::string::npos)
      << cl.status().message().substr(0, 200);
  EXPECT_LT(cl.status().message().size(), 200u);
}

// A device that cannot build the implicit GEMM: auto falls back to im2col, forward and backward,
// and the device's plain GEMMs keep every configuration (a variant's failure is not the product's).
TEST(OpenclConvLayers, AnImplicitGemmThatDoesNotBuildFallsBackToIm2col) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *devices().at(0);
  const std::string dir = temp_dir() + "/no_implicit";
  std::filesystem::create_directories(dir);
  for (const auto& entry : std::filesystem::directory_iterator(std::string(retrograd_source_dir) + "/kernels")) {
    const std::string extension = entry.path().extension().string();
    if (extension == ".cl" || extension == ".h") {
      std::filesystem::copy_file(entry.path(), dir / entry.path().filename(),
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  const std::string gemm = read_file(dir + "/gemm.cl");
  write_file(dir + "/gemm.cl", "#if IMPLICIT_CONV\n#error no implicit GEMM on this device\n#endif\n" + gemm);
  ScopedEnv kernels("RETROGRAD_KERNELS_DIR", dir);
  ScopedEnv path("RETROGRAD_CL_CONV", "auto");
  // A geometry no other test builds, so its implicit program is built (and fails) now.
  Conv2D cpu(conv_options(3, 3, 1, 1));
  cpu.set_name("conv");
  auto out_shape = cpu.configure(Shape{11, 13, 2});
  ASSERT_TRUE(out_shape.ok());
  Rng rng(7);
  ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
  auto cl = ClConv::create(cpu, device);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  ASSERT_TRUE(cl.value()->reserve(2).ok());
  Buffer ws = upload_or_die(device, std::vector<float>(static_cast<size_t>(cl.value()->workspace_elements(2)), 0.0f), "ws");
  Buffer bx = upload_or_die(device, random_floats(rng, 2 * 11 * 13 * 2), "x");
  Buffer by = upload_or_die(device, std::vector<float>(static_cast<size_t>(2 * out_shape.value().numel()), 0.0f), "y");
  LayerContext ctx;
  const Status s = cl.value()->forward(2, bx.f32(), by.f32(), ClContext{ctx, ws.f32()});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(cl.value()->forward_path(), ClConv::Path::im2col);
  Buffer bdy = upload_or_die(device, random_floats(rng, 2 * out_shape.value().numel()), "dy");
  Buffer bdx = upload_or_die(device, std::vector<float>(static_cast<size_t>(2 * 11 * 13 * 2), 0.0f), "dx");
  const Status back = cl.value()->backward(2, bx.f32(), by.f32(), bdy.f32(), bdx.f32(), ClContext{ctx, ws.f32()});
  ASSERT_TRUE(back.ok()) << back.message();
  EXPECT_EQ(cl.value()->backward_path(), ClConv::Path::im2col);
  auto fresh = ClConv::create(cpu, device);  // what the fallback computes, against the CPU
  ASSERT_TRUE(fresh.ok()) << fresh.status().message();
  compare_layer(cpu, *fresh.value(), device, Shape{11, 13, 2}, 2, 1e-4);
  EXPECT_EQ(fresh.value()->backward_path(), ClConv::Path::im2col);
  EXPECT_EQ(gemm_tuning(device).rates.size(), gemm_candidates().size()) << "plain GEMMs keep their configurations";
}

// Winograd F(4x4, 3x3) on the device (RETROGRAD_CL_CONV=winograd, or the cfg's `algorithm =
// winograd` under auto): the forward and dx of 3x3 stride-1 convs against the CPU's GEMM
// convolution (its Winograd where the cfg asks) within Winograd's rounding (2e-5 of the scale,
// the CPU Winograd's forward bound; measured here up to 3e-6), pads 0-2, outputs not multiples
// of 4, a batch of 1, chunks of 1 and 2 images;
// a conv Winograd does not fit keeps the other paths.
TEST(OpenclConvLayers, WinogradMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  struct WinogradCase {
    const char* name;
    Shape input;
    ConvOptions options;
    int64_t n, chunk;  // chunk > 0: a workspace cap of that many images' V and M
    const char* policy;
  };
  ConvOptions asked = conv_options(6, 3, 1, 1);
  asked.algorithm = ConvAlgorithm::winograd;
  const WinogradCase cases[] = {
      {"3x3 pad 1", Shape{8, 8, 3}, conv_options(4, 3, 1, 1), 2, 0, "winograd"},
      {"pad 0, 6x5 to 4x3", Shape{6, 5, 3}, conv_options(5, 3, 1, 0), 2, 0, "winograd"},
      {"pad 2, 7x9, no bias", Shape{7, 9, 4}, conv_options(3, 3, 1, 2, 0, false), 1, 0, "winograd"},
      {"13x13x17 in chunks of 2", Shape{13, 13, 17}, conv_options(16, 3, 1, 1), 5, 2, "winograd"},
      {"in chunks of 1", Shape{9, 6, 2}, conv_options(3, 3, 1, 1), 3, 1, "winograd"},
      {"14x14x32", Shape{14, 14, 32}, conv_options(32, 3, 1, 1), 2, 0, "winograd"},
      {"7x7x64", Shape{7, 7, 64}, conv_options(64, 3, 1, 1), 2, 0, "winograd"},
      {"28x28x16", Shape{28, 28, 16}, conv_options(16, 3, 1, 1), 2, 0, "winograd"},
      {"28x28x1", Shape{28, 28, 1}, conv_options(16, 3, 1, 1, 0, false), 2, 0, "winograd"},
      {"the cfg's algorithm under auto", Shape{10, 11, 5}, asked, 2, 0, "auto"},
  };
  for (Device* device : devices()) {
    for (const WinogradCase& c : cases) {
      SCOPED_TRACE(device->label() + ": " + c.name);
      ScopedEnv path("RETROGRAD_CL_CONV", c.policy);
      Conv2D cpu(c.options);
      cpu.set_name("conv");
      ASSERT_TRUE(cpu.configure(c.input).ok());
      Rng rng(8);
      ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
      int64_t cap = ClConv::kChunkElements;
      if (c.chunk > 0) {
        const WinogradWorkspace parts = winograd_workspace(cpu.geometry(), c.options.filters);
        cap = (parts.weight + c.chunk * parts.per_image + parts.per_image / 2) / ClConv::kWinogradChunkFactor + 1;
      }
      auto cl = ClConv::create(cpu, *device, cap);
      ASSERT_TRUE(cl.ok()) << cl.status().message();
      EXPECT_EQ(cl.value()->forward_path(), ClConv::Path::winograd);
      if (c.chunk > 0) {
        const WinogradWorkspace parts = winograd_workspace(cpu.geometry(), c.options.filters);
        EXPECT_GE(cl.value()->workspace_elements(c.n), parts.floats(c.chunk));
        EXPECT_LT(cl.value()->workspace_elements(c.n), parts.floats(c.chunk + 1));
      }
      compare_layer(cpu, *cl.value(), *device, c.input, c.n, 2e-5);
      EXPECT_EQ(cl.value()->backward_path(), ClConv::Path::implicit);
    }
    // 5x5 and stride 2: Winograd does not fit; the layers take auto's paths
    for (const ConvOptions& o : {conv_options(3, 5, 1, 2), conv_options(3, 3, 2, 1)}) {
      ScopedEnv path("RETROGRAD_CL_CONV", "winograd");
      Conv2D cpu(o);
      cpu.set_name("conv");
      ASSERT_TRUE(cpu.configure(Shape{8, 8, 2}).ok());
      Rng rng(9);
      ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
      auto cl = ClConv::create(cpu, *device);
      ASSERT_TRUE(cl.ok()) << cl.status().message();
      compare_layer(cpu, *cl.value(), *device, Shape{8, 8, 2}, 2, 1e-4);
      EXPECT_NE(cl.value()->forward_path(), ClConv::Path::winograd);
    }
  }
}

// Under auto on a tuned device (a tuning file with rates, here on any device), a 3x3 stride-1
// conv of 8 or more input channels times Winograd against the GEMM at its first forward, its
// first dx and its first weight gradient that overwrites, each kept in the tuning's file by shape and batch (within Winograd's tolerance of the
// CPU either way); a later layer of that shape takes the kept choice without timing (a choice
// written into the file decides); fewer channels, or an untuned device, never time it.
TEST(OpenclConvLayers, WinogradIsTimedOnATunedDeviceAndTheChoiceKept) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *devices().at(0);
  ScopedEnv cache("RETROGRAD_CACHE", temp_dir() + "/winograd_choice");
  std::filesystem::create_directories(temp_dir() + "/winograd_choice");
  ScopedEnv never("RETROGRAD_CL_GEMM_TUNE", "0");
  ScopedEnv path("RETROGRAD_CL_CONV", "auto");
  GemmTuning tuned;
  tuned.size = 256;
  tuned.rates = {{gemm_candidates()[0], 90}};  // one trial a product (PoCL builds each slowly)
  std::ofstream(gemm_tuning_path(device)) << gemm_tuning_text(device, tuned);
  device.gemm_tuning_slot().reset();
  auto conv_of = [&](int64_t channels, Conv2D& cpu) {
    cpu.set_name("conv");
    EXPECT_TRUE(cpu.configure(Shape{9, 10, channels}).ok());
    Rng rng(11);
    EXPECT_TRUE(cpu.init(rng, DType::f32).ok());
    return ClConv::create(cpu, device);
  };
  Conv2D first(conv_options(8, 3, 1, 1));
  auto timed = conv_of(8, first);
  ASSERT_TRUE(timed.ok()) << timed.status().message();
  compare_layer(first, *timed.value(), device, Shape{9, 10, 8}, 2, 2e-5);
  const std::map<std::string, bool> kept = gemm_tuning(device).conv_winograd;
  ASSERT_EQ(kept.size(), 3u);
  ASSERT_EQ(kept.count("forward/9x10x8/p1/o8/n2"), 1u);
  ASSERT_EQ(kept.count("dx/9x10x8/p1/o8/n2"), 1u);
  ASSERT_EQ(kept.count("wgrad/9x10x8/p1/o8/n2"), 1u);
  EXPECT_EQ(timed.value()->forward_path() == ClConv::Path::winograd, kept.at("forward/9x10x8/p1/o8/n2"));
  // The file decides for a later run: the other choice, written into it, is taken untimed.
  const bool winograd = !kept.at("forward/9x10x8/p1/o8/n2");
  tuned.conv_winograd = {{"forward/9x10x8/p1/o8/n2", winograd}, {"dx/9x10x8/p1/o8/n2", winograd},
                         {"wgrad/9x10x8/p1/o8/n2", winograd}};
  std::ofstream(gemm_tuning_path(device)) << gemm_tuning_text(device, tuned);
  device.gemm_tuning_slot().reset();
  Conv2D again(conv_options(8, 3, 1, 1));
  auto kept_choice = conv_of(8, again);
  ASSERT_TRUE(kept_choice.ok()) << kept_choice.status().message();
  compare_layer(again, *kept_choice.value(), device, Shape{9, 10, 8}, 2, 2e-5);
  EXPECT_EQ(kept_choice.value()->forward_path() == ClConv::Path::winograd, winograd);
  EXPECT_EQ(gemm_tuning(device).conv_winograd, tuned.conv_winograd) << "nothing timed: the file's choices kept";
  Conv2D narrow(conv_options(7, 3, 1, 1));  // 7 input channels and 7 filters (dx's): never timed
  auto few = conv_of(7, narrow);
  ASSERT_TRUE(few.ok()) << few.status().message();
  compare_layer(narrow, *few.value(), device, Shape{9, 10, 7}, 2, 1e-4);
  EXPECT_NE(few.value()->forward_path(), ClConv::Path::winograd);
  EXPECT_EQ(gemm_tuning(device).conv_winograd, tuned.conv_winograd);
  std::filesystem::remove(gemm_tuning_path(device));  // an untuned device: nothing timed
  device.gemm_tuning_slot().reset();
  Conv2D untuned(conv_options(8, 3, 1, 1));
  auto plain = conv_of(8, untuned);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  compare_layer(untuned, *plain.value(), device, Shape{9, 10, 8}, 2, 1e-4);
  EXPECT_NE(plain.value()->forward_path(), ClConv::Path::winograd);
  EXPECT_TRUE(gemm_tuning(device).conv_winograd.empty());
  device.gemm_tuning_slot().reset();  // later tests derive it again under their own environment
}

// A device whose Winograd programs do not build (winograd.cl with an #error, on a device opened
// afresh: its own program cache): under auto the timed choice leaves the GEMM without remembering
// it, forward and backward within the GEMM's tolerance; a cfg that asks for Winograd fails naming
// the program.
TEST(OpenclConvLayers, AWinogradThatDoesNotBuildLeavesTheGemm) {
  SKIP_WITHOUT_OPENCL();
  const std::string dir = temp_dir() + "/no_winograd";
  std::filesystem::create_directories(dir + "/cache");
  for (const auto& entry : std::filesystem::directory_iterator(std::string(retrograd_source_dir) + "/kernels")) {
    const std::string extension = entry.path().extension().string();
    if (extension == ".cl" || extension == ".h") {
      std::filesystem::copy_file(entry.path(), dir / entry.path().filename(),
                                 std::filesystem::copy_options::overwrite_existing);
    }
  }
  write_file(dir + "/winograd.cl", "#error no Winograd on this device\n" + read_file(dir + "/winograd.cl"));
  ScopedEnv kernels("RETROGRAD_KERNELS_DIR", dir);
  ScopedEnv cache("RETROGRAD_CACHE", dir + "/cache");
  ScopedEnv never("RETROGRAD_CL_GEMM_TUNE", "0");
  ScopedEnv path("RETROGRAD_CL_CONV", "auto");
  DeviceOptions options;
  options.test_capabilities = false;
  auto opened = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  Device& device = *opened.value();
  GemmTuning tuned;  // a tuned device: its convs time Winograd
  tuned.size = 256;
  tuned.rates = {{gemm_candidates()[0], 90}};
  std::ofstream(gemm_tuning_path(device)) << gemm_tuning_text(device, tuned);
  {
    Conv2D cpu(conv_options(8, 3, 1, 1));
    cpu.set_name("conv");
    ASSERT_TRUE(cpu.configure(Shape{6, 7, 8}).ok());
    Rng rng(12);
    ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
    auto cl = ClConv::create(cpu, device);
    ASSERT_TRUE(cl.ok()) << cl.status().message();
    compare_layer(cpu, *cl.value(), device, Shape{6, 7, 8}, 2, 1e-4);
    EXPECT_NE(cl.value()->forward_path(), ClConv::Path::winograd);
    EXPECT_TRUE(gemm_tuning(device).conv_winograd.empty()) << "a failure is not a choice";
    ConvOptions asked = conv_options(8, 3, 1, 1);
    asked.algorithm = ConvAlgorithm::winograd;
    Conv2D wants(asked);
    wants.set_name("conv");
    ASSERT_TRUE(wants.configure(Shape{6, 7, 8}).ok());
    ASSERT_TRUE(wants.init(rng, DType::f32).ok());
    auto forced = ClConv::create(wants, device);
    ASSERT_TRUE(forced.ok()) << forced.status().message();
    ASSERT_TRUE(forced.value()->reserve(2).ok());
    Buffer ws = upload_or_die(device, std::vector<float>(forced.value()->workspace_elements(2), 0.0f), "ws");
    Buffer x = upload_or_die(device, random_floats(rng, 2 * 6 * 7 * 8), "x");
    Buffer y = upload_or_die(device, std::vector<float>(2 * 6 * 7 * 8, 0.0f), "y");
    LayerContext ctx;
    const Status s = forced.value()->forward(2, x.f32(), y.f32(), ClContext{ctx, ws.f32()});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("winograd.cl"), std::string::npos) << s.message();
  }
  release_gemm_scratch(device);
}

// Winograd's chunks take a 32nd of the device's memory, between one patch-matrix chunk and four:
// under a 512 MiB budget a batch of 256 28x28x32 images asks no more workspace than the GEMM's
// chunk; without one (PoCL's gigabytes) the batch runs in one chunk, its weight gradient's too.
TEST(OpenclConvLayers, WinogradChunksTakeAShareOfTheDevicesMemory) {
  SKIP_WITHOUT_OPENCL();
  ConvOptions asked = conv_options(32, 3, 1, 1);
  asked.algorithm = ConvAlgorithm::winograd;
  Conv2D cpu(asked);
  cpu.set_name("conv");
  ASSERT_TRUE(cpu.configure(Shape{28, 28, 32}).ok());
  Rng rng(13);
  ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
  const WinogradWorkspace parts = winograd_workspace(cpu.geometry(), 32);
  DeviceOptions options;
  options.test_capabilities = false;
  options.memory_budget_bytes = int64_t{512} << 20;
  auto small = Device::open(DeviceChoice{true, 0, 0}, options);
  ASSERT_TRUE(small.ok()) << small.status().message();
  {
    auto cl = ClConv::create(cpu, *small.value());
    ASSERT_TRUE(cl.ok()) << cl.status().message();
    EXPECT_LE(cl.value()->workspace_elements(256), ClConv::kChunkElements);
  }
  Device& large = *devices().at(0);
  // The weight gradient's slices (as many as the device's units ask) may take more than the forward.
  const int units = static_cast<int>(large.info().compute_units);
  const int slices = winograd_grad_slices(cpu.geometry(), 32, 256, units);
  const int64_t grad = winograd_grad_workspace(cpu.geometry(), 32, slices).floats(256);
  const int64_t whole = std::max(parts.floats(256), grad);
  const int64_t room = ClConv::kWinogradChunkFactor * ClConv::kChunkElements;
  if (std::min<int64_t>(large.info().global_mem_bytes / 4 / 32, room) < whole) GTEST_SKIP() << "too little memory";
  auto cl = ClConv::create(cpu, large);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl.value()->workspace_elements(256), whole);
}

// One case of the test below: 4 images of 9x10x8 into 12 filters at `pad`.
void winograd_weight_gradient_case(Device& device, int64_t pad) {
  const int64_t images = 4, filters = 12;
  ConvOptions options = conv_options(filters, 3, 1, pad);
  options.algorithm = ConvAlgorithm::gemm;  // the reference: the CPU's GEMM, never its Winograd
  Conv2D cpu(options);
  cpu.set_name("conv");
  ASSERT_TRUE(cpu.configure(Shape{9, 10, 8}).ok());
  Rng rng(14);
  ASSERT_TRUE(cpu.init(rng, DType::f32).ok());
  ASSERT_TRUE(cpu.reserve(images, DType::f32).ok());
  const Shape out = cpu.configure(Shape{9, 10, 8}).value();
  const Tensor x = make(Shape{images, 9, 10, 8}, DType::f32), dy = make(out.batched(images), DType::f32);
  const Tensor y = make(out.batched(images), DType::f32), dx = make(Shape{images, 9, 10, 8}, DType::f32);
  fill_random(x, rng, -1, 1);
  fill_random(dy, rng, -1, 1);
  ThreadPool pool(2);
  LayerContext ctx;
  ctx.pool = &pool;
  ctx.training = true;
  cpu.forward(x, y, ctx);
  cpu.backward(x, y, dy, dx, ctx);
  const std::vector<float> want = floats(cpu.params()[0]->grad), old = random_floats(rng, want.size());
  Buffer bx = upload_or_die(device, floats(x), "x"), bdy = upload_or_die(device, floats(dy), "dy");
  for (const int asked : {1, 2, 5}) {
    for (const float beta : {0.0f, 0.5f}) {
      SCOPED_TRACE("slices " + std::to_string(asked) + ", beta " + std::to_string(beta));
      const WinogradWorkspace parts = winograd_grad_workspace(cpu.geometry(), filters, asked);
      Buffer scratch = upload_or_die(device, std::vector<float>(parts.floats(images), std::nanf("")), "scratch");
      Buffer dw = upload_or_die(device, old, "dw");
      ASSERT_TRUE(f32_winograd_weight_grad(device, cpu.geometry(), images, bx.f32(), bdy.f32(), filters, asked, beta,
                                           dw.f32(), scratch.f32())
                      .ok());
      std::vector<float> expected = want;
      for (size_t i = 0; i < expected.size(); ++i) expected[i] += beta * old[i];
      expect_close(download_all<float>(dw), expected, 2e-5, "dw");
    }
  }
}

// Winograd's weight gradient in 1, 2 and 5 asked slices over the tiles (1, 2 and 3 made: the
// partial sums added in the last kernel), at beta 0 and 0.5, 8 channels into 12 filters at pads 0
// and 2, against the CPU's GEMM weight gradient; the slices any batch takes bound every batch's.
TEST(OpenclConvLayers, WinogradWeightGradientInSlicesMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *devices().at(0);
  const auto g = conv_geometry(28, 28, 32, 3, 1, 1).value();
  for (int64_t images : {1, 8, 64, 256, 4096}) {
    EXPECT_LE(winograd_grad_slices(g, 32, images, 132), winograd_grad_most_slices(g, 32, 132));
    EXPECT_LE(winograd_grad_slices(g, 32, images, 132), winograd_grad_slices(g, 32, images * 2, 132));
  }
  EXPECT_EQ(winograd_grad_most_slices(g, 32, 132), 30);  // 8 x 132 groups over 36 positions' one tile
  for (const int64_t pad : {0, 2}) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    winograd_weight_gradient_case(device, pad);
  }
}

// The Winograd output's beta and epilogue: beta y_old added to the tile's value, then the bias,
// the affine and the activation, each the GEMM epilogue's float operation, so the fused output
// is bit for bit what the host computes from the plain output (beta 0, no epilogue).
TEST(OpenclConvLayers, WinogradOutputAddsBetaThenTheGemmEpilogue) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *devices().at(0);
  const auto g = conv_geometry(9, 7, 3, 3, 1, 1).value();
  const int64_t images = 2, filters = 5, out = images * g.patches() * filters;
  Rng rng(10);
  Buffer w = upload_or_die(device, random_floats(rng, 9 * 3 * filters), "w");
  Buffer x = upload_or_die(device, random_floats(rng, images * 9 * 7 * 3), "x");
  const std::vector<float> bias = random_floats(rng, filters), affine = random_floats(rng, 2 * filters);
  const std::vector<float> old = random_floats(rng, out);
  Buffer bbias = upload_or_die(device, bias, "bias"), baffine = upload_or_die(device, affine, "affine");
  const WinogradWorkspace parts = winograd_workspace(g, filters);
  Buffer u = upload_or_die(device, std::vector<float>(parts.weight, 0.0f), "u");
  Buffer scratch = upload_or_die(device, std::vector<float>(images * parts.per_image, 0.0f), "scratch");
  ASSERT_TRUE(f32_winograd_weight(device, g, filters, w.f32(), ConvWeight::plain, u.f32()).ok());
  Buffer plain = upload_or_die(device, std::vector<float>(out, std::nanf("")), "plain");
  ASSERT_TRUE(f32_winograd_conv(device, g, images, x.f32(), u.f32(), filters, plain.f32(), scratch.f32()).ok());
  const std::vector<float> y0 = download_all<float>(plain);
  for (const float slope : {0.0f, 0.2f}) {
    SCOPED_TRACE(slope);
    Buffer fused = upload_or_die(device, old, "fused");
    const GemmEpilogue epilogue{bbias.f32(), baffine.f32(),
                                FusedActivation{FusedActivation::leaky_relu, slope}};
    ASSERT_TRUE(
        f32_winograd_conv(device, g, images, x.f32(), u.f32(), filters, fused.f32(), scratch.f32(), epilogue, 0.5f)
            .ok());
    const std::vector<float> got = download_all<float>(fused);
    for (int64_t i = 0; i < out; ++i) {
      const int64_t f = i % filters;
      float v = y0[i] + 0.5f * old[i];
      v += bias[f];
      v = v * affine[f] + affine[filters + f];
      v = v > 0.0f ? v : slope * v;
      ASSERT_TRUE(same_bits(got[i], v)) << "y word " << i << ": " << got[i] << ", want " << v;
    }
  }
}

TEST(OpenclConvLayers, BatchNormMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  struct Case {
    Shape input;
    int64_t n;
  };
  for (Device* device : devices()) {
    for (const Case& c : {Case{Shape{4, 4, 6}, 3}, Case{Shape{3, 5, 2}, 1}, Case{Shape{7}, 5}, Case{Shape{130}, 2}}) {
      SCOPED_TRACE(device->label() + ": " + c.input.str() + " n=" + std::to_string(c.n));
      BatchNorm cpu(0.1, 1e-5);
      auto cl = device_twin(cpu, "bn", c.input, 7, *device);
      ASSERT_TRUE(cl.ok()) << cl.status().message();
      EXPECT_EQ(cl.value()->state_bytes(c.n),  // the statistics (double), the inference affine (float)
                8 * batch_norm_saved_count(cpu.channels(), c.n * c.input.numel() / cpu.channels()) + 8 * cpu.channels());
      compare_layer(cpu, *cl.value(), *device, c.input, c.n, 1e-4);
    }
  }
}

TEST(OpenclConvLayers, RecurrentConvMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  struct Case {
    Shape input;
    int64_t filters, kernel, steps, n;
  };
  for (Device* device : devices()) {
    for (const Case& c : {Case{Shape{5, 5, 2}, 3, 3, 2, 2}, Case{Shape{4, 4, 3}, 2, 3, 0, 1},
                          Case{Shape{6, 6, 2}, 4, 1, 3, 3}, Case{Shape{6, 5, 3}, 3, 5, 1, 2}}) {
      SCOPED_TRACE(device->label() + ": " + c.input.str() + " filters " + std::to_string(c.filters) + " size " +
                   std::to_string(c.kernel) + " steps " + std::to_string(c.steps) + " n=" + std::to_string(c.n));
      RecurrentConvOptions o;
      o.filters = c.filters;
      o.kernel = c.kernel;
      o.steps = c.steps;
      RecurrentConv2D cpu(o);
      auto cl = device_twin(cpu, "rcl", c.input, 9, *device);
      ASSERT_TRUE(cl.ok()) << cl.status().message();
      EXPECT_EQ(cl.value()->params().size(), cpu.params().size());
      EXPECT_EQ(cl.value()->buffers().size(), cpu.buffers().size());
      compare_layer(cpu, *cl.value(), *device, c.input, c.n, 5e-4);
    }
  }
}

// A whole model of cfg text `cfg`: the device's output and param grads (loss on the device)
// against the CPU Model's forward, compute_loss and backward.
void compare_model(const std::string& cfg, const std::string& name, int64_t n, double tol) {
  auto doc = parse_cfg(cfg, name);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto built = Model::from_cfg(doc.value());
  ASSERT_TRUE(built.ok()) << built.status().message();
  Model& model = *built.value();
  ASSERT_TRUE(model.init(21).ok());
  ASSERT_TRUE(model.reserve(n).ok());
  Rng rng(22);
  const Tensor x = make(model.input_shape().batched(n), DType::f32);
  fill_random(x, rng, 0, 1);
  auto labels_made = Tensor::zeros(Shape{n}, DType::i32, "labels");
  ASSERT_TRUE(labels_made.ok());
  const Tensor labels = labels_made.take();
  for (int64_t i = 0; i < n; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(i % 10);
  ThreadPool pool(2);
  LayerContext ctx;
  ctx.pool = &pool;
  ctx.training = true;
  ctx.accumulate_grads = false;
  ctx.noise_stream = 3;
  const double grad_scale = 1.0 / double(n);

  for (Device* device : devices()) {
    SCOPED_TRACE(device->label() + ": " + name);
    // Each device starts from the same running statistics: a fresh init of the same seed.
    ASSERT_TRUE(model.init(21).ok());
    ASSERT_TRUE(model.reserve(n).ok());
    auto created = ClModel::create(model, *device);
    ASSERT_TRUE(created.ok()) << created.status().message();
    ClModel& cl = *created.value();
    ASSERT_TRUE(cl.reserve(n).ok());
    auto uploaded = cl.upload(x, labels);
    ASSERT_TRUE(uploaded.ok()) << uploaded.status().message();
    ASSERT_TRUE(uploaded.value().wait().ok());
    Status s = cl.forward(ctx);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(cl.device_loss(grad_scale, true).ok());
    s = cl.backward(ctx);
    ASSERT_TRUE(s.ok()) << s.message();
    auto sums = cl.loss_sums();
    ASSERT_TRUE(sums.ok()) << sums.status().message();

    const Tensor out = model.forward(x, ctx);
    const double loss = compute_loss(model.loss(), out, labels, grad_scale, model.output_grad());
    model.backward(ctx);
    EXPECT_NEAR(sums.value().loss, loss, tol * std::max(1.0, std::fabs(loss)));
    const Tensor cl_out = make(out.shape(), DType::f32);
    ASSERT_TRUE(cl.read_output(cl_out).ok());
    expect_close(floats(cl_out), floats(out), tol, "output");
    const std::vector<Param*> params = model.params();
    const std::vector<ClParam*> cl_params = cl.params();
    ASSERT_EQ(params.size(), cl_params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      expect_close(download_or_die(cl_params[i]->grad, cl_params[i]->numel()), floats(params[i]->grad), tol,
                   params[i]->name + " grad");
    }
    const std::vector<Param*> buffers = model.buffers();
    const std::vector<ClParam*> cl_buffers = cl.buffers();
    ASSERT_EQ(buffers.size(), cl_buffers.size());
    for (size_t i = 0; i < buffers.size(); ++i) {
      expect_close(download_or_die(cl_buffers[i]->value, cl_buffers[i]->numel()), floats(buffers[i]->value), tol,
                   buffers[i]->name);
    }
  }
}

void compare_preset(const std::string& preset, int64_t n, double tol) {
  compare_model(preset_cfg(preset), "preset:" + preset, n, tol);
}

TEST(OpenclConvModel, CnnPresetMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  compare_preset("cnn", 4, 1e-3);
}

TEST(OpenclConvModel, RcnnPresetMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  compare_preset("rcnn", 3, 1e-3);
}

// A residual block of dense layers: relu1's output feeds dense2 and the add (its gradient the sum
// of both), the add also reads the model's input (no gradient asked for it).
TEST(OpenclGraphModel, AResidualDenseModelMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  compare_model("[net]\ninput = 12\n[dense]\nunits = 12\n[relu]\n[dense]\nunits = 12\n[tanh]\n"
                "[add]\ninputs = relu1, tanh1, input\n[dense]\nunits = 10\n",
                "residual.cfg", 3, 1e-3);
}

// graph_branches_cfg (opencl_test_util.h): outputs read twice, add and concat of uneven widths.
TEST(OpenclGraphModel, ConvBranchesJoinedByAddAndConcatMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  compare_model(graph_branches_cfg(), "branches.cfg", 3, 1e-3);
}

// The resnet20 preset on the device against the CPU, 2 samples: its 19 convs' kernels take PoCL
// minutes to compile on a cold cache (209 s for a command-line run of it), so this is the one
// resnet20 run on the device in the suite; the command line's graph path is OpenclTrain's.
TEST(OpenclGraphModel, Resnet20PresetMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  compare_preset("resnet20", 2, 1e-3);
}

// resnet20 with every 3x3 stride-1 conv's cfg saying `algorithm = winograd`: the device's Winograd
// (forward and dx) against the CPU's through the whole graph model. (Against the CPU's GEMM its
// rounding moves relu masks and the batch norms' statistics of 2 samples past this tolerance:
// bench/RESULTS.md, 2026-11-30 17:45 UTC.)
TEST(OpenclGraphModel, Resnet20WithWinogradMatchesTheCpusWinograd) {
  SKIP_WITHOUT_OPENCL();
  std::string cfg = preset_cfg("resnet20");
  for (const std::string stride_one : {"size = 3\nstride = 1\npad = 1\n", "size = 3\npad = 1\n"}) {
    for (size_t at = cfg.find(stride_one); at != std::string::npos; at = cfg.find(stride_one, at + 1)) {
      cfg.insert(at + stride_one.size(), "algorithm = winograd\n");
    }
  }
  size_t asked = 0;
  for (size_t at = cfg.find("algorithm = winograd"); at != std::string::npos; at = cfg.find("algorithm = winograd", at + 1))
    ++asked;
  EXPECT_EQ(asked, 17u);  // conv1 and 16 of the blocks' convs (the two stride-2 ones and the 1x1s not)
  compare_model(cfg, "resnet20 with Winograd", 2, 1e-3);
}

// The depthwise conv (its own kernels): padding, stride 2 and 3 (dx's gaps), channels not a
// multiple of 4, no bias, a batch of 1; and the mobile-style model conv -> depthwise -> 1x1 conv.
TEST(OpenclConvLayers, DepthwiseConvMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  struct Case {
    const char* name;
    Shape input;
    ConvOptions options;
    int64_t n;
  };
  const Case cases[] = {{"3x3 pad 1", Shape{5, 5, 3}, conv_options(1, 3, 1, 1), 2},
                        {"3x3 stride 2 pad 1, 17 channels", Shape{7, 6, 17}, conv_options(1, 3, 2, 1), 3},
                        {"2x2 stride 3, no bias, batch 1", Shape{8, 7, 5}, conv_options(1, 2, 3, 0, 0, false), 1},
                        {"5x5 pad 2", Shape{6, 6, 8}, conv_options(1, 5, 1, 2), 2}};
  for (Device* device : devices()) {
    for (const Case& c : cases) {
      SCOPED_TRACE(device->label() + ": depthwise " + c.name);
      DepthwiseConv2D cpu(c.options);
      auto cl = device_twin(cpu, "dw", c.input, 6, *device);
      ASSERT_TRUE(cl.ok()) << cl.status().message();
      compare_layer(cpu, *cl.value(), *device, c.input, c.n, 1e-5);
    }
  }
  compare_model("[net]\ninput = 10x10x2\n[conv]\nfilters = 6\nsize = 3\npad = 1\n[relu]\n"
                "[depthwise_conv]\nsize = 3\nstride = 2\npad = 1\n[batchnorm]\n[relu6]\n"
                "[conv]\nfilters = 8\nsize = 1\n[relu]\n[global_avgpool]\n[dense]\nunits = 10\n",
                "mobile.cfg", 3, 1e-3);
}

}  // namespace
}  // namespace rg::ocl
