// Convolution, pooling, normalisation, dropout and reshaping layers: forward against loops
// written from the definitions, backward against central differences in double (stride,
// padding and output-padding corners included), f32 against f64 with and without a pool,
// chunked batches, thread-count independence, and cfg errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "layer_check.h"
#include "nn/batch_norm.h"
#include "nn/cfg.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/layer_registry.h"
#include "nn/loss.h"
#include "nn/model.h"
#include "nn/pooling.h"
#include "nn/shape_layers.h"
#include "nn/workspace.h"
#include "ops/gemm.h"

namespace rg {
namespace {

// x [n, h, w, c] in NHWC, read as double.
struct Image {
  const Tensor& t;
  int64_t h, w, c;
  double at(int64_t n, int64_t i, int64_t j, int64_t ch) const { return get(t, ((n * h + i) * w + j) * c + ch); }
};

// The sliding-window layers' reference, in double: y[n, oh, ow, o] = b[o] + the sum over the
// window's taps (kh, kw) inside the image and the input channels `inputs(o)` of
// x[n, oh*s - p + kh, ow*s - p + kw, c] * weight(kh*k + kw, c, o).
template <class Inputs, class Weight>
std::function<std::vector<double>(Layer&, const Tensor&, int64_t)> window_reference(Shape input, ConvOptions o,
                                                                                  int64_t outputs, Inputs inputs,
                                                                                  Weight weight) {
  return [=](Layer& layer, const Tensor& x, int64_t n) {
    const Image img{x, input[0], input[1], input[2]};
    const int64_t oh_n = (img.h + 2 * o.pad - o.kernel) / o.stride + 1, ow_n = (img.w + 2 * o.pad - o.kernel) / o.stride + 1;
    std::vector<Param*> p = layer.params();
    std::vector<double> y;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow)
          for (int64_t f = 0; f < outputs; ++f) {
            double sum = o.bias ? get(p[1]->value, f) : 0.0;
            const auto [c0, c1] = inputs(f);
            for (int64_t kh = 0; kh < o.kernel; ++kh)
              for (int64_t kw = 0; kw < o.kernel; ++kw)
                for (int64_t c = c0; c < c1; ++c) {
                  const int64_t i = oh * o.stride - o.pad + kh, j = ow * o.stride - o.pad + kw;
                  if (i < 0 || i >= img.h || j < 0 || j >= img.w) continue;
                  sum += img.at(s, i, j, c) * get(p[0]->value, weight(kh * o.kernel + kw, c, f));
                }
            y.push_back(sum);
          }
    return y;
  };
}

// conv: every input channel, W[(kh*k + kw)*C + c, f].
LayerSpec conv_spec(const std::string& name, Shape input, ConvOptions o) {
  LayerSpec spec{name, [o] { return std::unique_ptr<Layer>(new Conv2D(o)); }, input, nullptr};
  const int64_t channels = input[2];
  spec.reference = window_reference(
      input, o, o.filters, [channels](int64_t) { return std::pair<int64_t, int64_t>{0, channels}; },
      [channels, o](int64_t tap, int64_t c, int64_t f) { return (tap * channels + c) * o.filters + f; });
  return spec;
}

// Each input pixel scatters x[n, i, j, c] * W[c, (kh*k + kw)*F + f] to y[n, i*s - p + kh, j*s - p + kw, f].
LayerSpec conv_transpose_spec(const std::string& name, Shape input, ConvOptions o) {
  LayerSpec spec{name, [o] { return std::unique_ptr<Layer>(new ConvTranspose2D(o)); }, input, nullptr};
  spec.reference = [input, o](Layer& layer, const Tensor& x, int64_t n) {
    const Image img{x, input[0], input[1], input[2]};
    const int64_t oh_n = (img.h - 1) * o.stride - 2 * o.pad + o.kernel + o.output_pad;
    const int64_t ow_n = (img.w - 1) * o.stride - 2 * o.pad + o.kernel + o.output_pad;
    std::vector<Param*> p = layer.params();
    std::vector<double> y(static_cast<size_t>(n * oh_n * ow_n * o.filters), 0.0);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < img.h; ++i)
        for (int64_t j = 0; j < img.w; ++j)
          for (int64_t c = 0; c < img.c; ++c)
            for (int64_t kh = 0; kh < o.kernel; ++kh)
              for (int64_t kw = 0; kw < o.kernel; ++kw)
                for (int64_t f = 0; f < o.filters; ++f) {
                  const int64_t oh = i * o.stride - o.pad + kh, ow = j * o.stride - o.pad + kw;
                  if (oh < 0 || oh >= oh_n || ow < 0 || ow >= ow_n) continue;
                  y[static_cast<size_t>(((s * oh_n + oh) * ow_n + ow) * o.filters + f)] +=
                      img.at(s, i, j, c) * get(p[0]->value, c * o.kernel * o.kernel * o.filters + (kh * o.kernel + kw) * o.filters + f);
                }
    if (o.bias) {
      for (size_t i = 0; i < y.size(); ++i) y[i] += get(p[1]->value, static_cast<int64_t>(i) % o.filters);
    }
    return y;
  };
  return spec;
}

// Max over the window's pixels inside the image; average over the whole window (padding as 0).
LayerSpec pool_spec(const std::string& name, Shape input, PoolKind kind, int64_t size, int64_t stride, int64_t pad) {
  LayerSpec spec{name, [=] { return std::unique_ptr<Layer>(new Pool2D(kind, size, stride, pad)); }, input, nullptr};
  spec.reference = [=](Layer&, const Tensor& x, int64_t n) {
    const Image img{x, input[0], input[1], input[2]};
    const int64_t oh_n = (img.h + 2 * pad - size) / stride + 1, ow_n = (img.w + 2 * pad - size) / stride + 1;
    std::vector<double> y;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow)
          for (int64_t c = 0; c < img.c; ++c) {
            double best = -INFINITY, sum = 0;
            for (int64_t kh = 0; kh < size; ++kh)
              for (int64_t kw = 0; kw < size; ++kw) {
                const int64_t i = oh * stride - pad + kh, j = ow * stride - pad + kw;
                if (i < 0 || i >= img.h || j < 0 || j >= img.w) continue;
                best = std::max(best, img.at(s, i, j, c));
                sum += img.at(s, i, j, c);
              }
            y.push_back(kind == PoolKind::max ? best : sum / double(size * size));
          }
    return y;
  };
  return spec;
}

// Normalised with batch statistics (training) or the running ones (inference), per channel.
LayerSpec batch_norm_spec(const std::string& name, Shape input, bool training) {
  LayerSpec spec{name, [] { return std::unique_ptr<Layer>(new BatchNorm(0.1, 1e-5)); }, input, nullptr, training};
  spec.reference = [input, training](Layer& layer, const Tensor& x, int64_t n) {
    const int64_t c = input[input.rank() - 1], rows = n * input.numel() / c;
    std::vector<Param*> p = layer.params(), b = layer.buffers();
    std::vector<double> y(static_cast<size_t>(x.numel()));
    for (int64_t ch = 0; ch < c; ++ch) {
      double mean = 0, var = 0;
      for (int64_t r = 0; r < rows; ++r) mean += get(x, r * c + ch) / double(rows);
      for (int64_t r = 0; r < rows; ++r) var += std::pow(get(x, r * c + ch) - mean, 2) / double(rows);
      if (!training) {
        mean = get(b[0]->value, ch);
        var = get(b[1]->value, ch);
      }
      for (int64_t r = 0; r < rows; ++r) {
        y[static_cast<size_t>(r * c + ch)] =
            (get(x, r * c + ch) - mean) / std::sqrt(var + 1e-5) * get(p[0]->value, ch) + get(p[1]->value, ch);
      }
    }
    return y;
  };
  return spec;
}

// depthwise_conv: output channel c reads input channel c alone, W[kh*k + kw, c].
LayerSpec depthwise_spec(const std::string& name, Shape input, ConvOptions o) {
  LayerSpec spec{name, [o] { return std::unique_ptr<Layer>(new DepthwiseConv2D(o)); }, input, nullptr};
  const int64_t channels = input[2];
  spec.reference = window_reference(
      input, o, channels, [](int64_t c) { return std::pair<int64_t, int64_t>{c, c + 1}; },
      [channels](int64_t tap, int64_t c, int64_t) { return tap * channels + c; });
  return spec;
}

std::vector<LayerSpec> conv_layer_specs() {
  std::vector<LayerSpec> specs = {
      conv_spec("conv3x3_s1_p1", Shape{5, 5, 2}, conv_options(3, 3, 1, 1)),
      conv_spec("conv3x3_s2_p0_rect", Shape{6, 7, 2}, conv_options(2, 3, 2, 0)),
      conv_spec("conv1x1_pointwise", Shape{3, 4, 3}, conv_options(4, 1, 1, 0)),
      conv_spec("conv1x1_s2", Shape{5, 5, 2}, conv_options(2, 1, 2, 0)),
      conv_spec("conv2x2_s2_p1", Shape{5, 4, 2}, conv_options(3, 2, 2, 1)),
      conv_spec("conv5x5_p2_grey_nobias", Shape{6, 6, 1}, conv_options(2, 5, 1, 2, 0, false)),
      conv_spec("conv_kernel_is_input", Shape{3, 3, 2}, conv_options(2, 3, 1, 0)),
      // Many channels: dx as a direct convolution of the padded dy with the flipped weight.
      conv_spec("conv3x3_p1_wide_direct_dx", Shape{4, 5, 16}, conv_options(17, 3, 1, 1)),
      conv_spec("conv2x2_p1_wide_direct_dx", Shape{3, 4, 16}, conv_options(16, 2, 1, 1)),
      // 16 channels or more, the kernel a multiple of the stride: dx by phases (ops/conv_phases.h),
      // phases of unequal sizes (odd and rectangular images), pads 0 to kernel - 1 (below, at and
      // above the stride), phases without a pixel (an image narrower than the stride).
      conv_spec("conv4x4_s2_p1_phases", Shape{6, 5, 16}, conv_options(5, 4, 2, 1)),
      conv_spec("conv2x2_s2_p0_phases_rect", Shape{5, 7, 17}, conv_options(3, 2, 2, 0)),
      conv_spec("conv6x6_s3_p2_phases_nobias", Shape{8, 7, 16}, conv_options(4, 6, 3, 2, 0, false)),
      conv_spec("conv4x4_s2_p3_phases_tiny", Shape{1, 2, 16}, conv_options(3, 4, 2, 3)),
      // Depthwise: channels below and above the vector widths (tails), stride 3 leaving dx gaps.
      depthwise_spec("depthwise3x3_s1_p1", Shape{5, 5, 3}, conv_options(1, 3, 1, 1)),
      depthwise_spec("depthwise3x3_s2_p1_rect", Shape{6, 7, 2}, conv_options(1, 3, 2, 1)),
      depthwise_spec("depthwise5x5_s2_p2_wide_nobias", Shape{5, 6, 17}, conv_options(1, 5, 2, 2, 0, false)),
      depthwise_spec("depthwise2x2_s3_gaps", Shape{7, 7, 9}, conv_options(1, 2, 3, 0)),
      depthwise_spec("depthwise1x1", Shape{3, 4, 5}, conv_options(1, 1, 1, 0)),
      conv_transpose_spec("convT3x3_s2_p1_op1", Shape{3, 3, 2}, conv_options(2, 3, 2, 1, 1)),
      conv_transpose_spec("convT4x4_s2_p1", Shape{2, 3, 3}, conv_options(2, 4, 2, 1)),
      conv_transpose_spec("convT2x2_s1", Shape{3, 2, 2}, conv_options(3, 2, 1, 0)),
      conv_transpose_spec("convT1x1_pointwise", Shape{2, 3, 2}, conv_options(3, 1, 1, 0, 0, false)),
      conv_transpose_spec("convT3x3_s3_op2", Shape{2, 2, 1}, conv_options(2, 3, 3, 0, 2)),
      // 16 filters or more, the kernel a multiple of the stride: the forward by phases.
      conv_transpose_spec("convT4x4_s2_p1_phases", Shape{3, 2, 5}, conv_options(16, 4, 2, 1)),
      conv_transpose_spec("convT4x4_s2_p2_op1_phases", Shape{3, 4, 3}, conv_options(17, 4, 2, 2, 1)),
      conv_transpose_spec("convT3x3_s1_p1_phases", Shape{3, 3, 4}, conv_options(16, 3, 1, 1)),
      conv_transpose_spec("convT6x6_s3_op2_phases_nobias", Shape{2, 3, 2}, conv_options(16, 6, 3, 0, 2, false)),
      conv_transpose_spec("convT3x3_s3_p1_phases_tiny", Shape{1, 2, 2}, conv_options(16, 3, 3, 1)),
      pool_spec("maxpool2", Shape{4, 5, 3}, PoolKind::max, 2, 2, 0),
      pool_spec("maxpool3_s2_p1", Shape{5, 5, 2}, PoolKind::max, 3, 2, 1),
      pool_spec("maxpool3_s1_overlap", Shape{4, 4, 1}, PoolKind::max, 3, 1, 0),
      pool_spec("avgpool2", Shape{4, 4, 2}, PoolKind::average, 2, 2, 0),
      pool_spec("avgpool3_s1_p1", Shape{3, 4, 2}, PoolKind::average, 3, 1, 1),
      batch_norm_spec("batchnorm_image_training", Shape{3, 2, 4}, true),
      batch_norm_spec("batchnorm_features_training", Shape{5}, true),
      batch_norm_spec("batchnorm_image_inference", Shape{2, 2, 3}, false),
  };
  LayerSpec global{"global_avgpool", [] { return std::unique_ptr<Layer>(new GlobalAvgPool()); }, Shape{3, 2, 4}, nullptr};
  global.reference = [](Layer&, const Tensor& x, int64_t n) {
    std::vector<double> y;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t c = 0; c < 4; ++c) {
        double sum = 0;
        for (int64_t p = 0; p < 6; ++p) sum += get(x, (s * 6 + p) * 4 + c);
        y.push_back(sum / 6);
      }
    return y;
  };
  specs.push_back(global);
  for (const auto& [name, target] : std::vector<std::pair<std::string, Shape>>{{"flatten", Shape{}}, {"reshape", Shape{6, 2}}}) {
    LayerSpec spec{name, [target = target] { return std::unique_ptr<Layer>(new Reshape(target)); }, Shape{2, 3, 2}, nullptr};
    spec.reference = [](Layer&, const Tensor& x, int64_t) { return values(x); };
    specs.push_back(spec);
  }
  LayerSpec up{"upsample3", [] { return std::unique_ptr<Layer>(new Upsample(3)); }, Shape{2, 3, 2}, nullptr};
  up.reference = [](Layer&, const Tensor& x, int64_t n) {
    std::vector<double> y;
    for (int64_t s = 0; s < n; ++s)
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t j = 0; j < 9; ++j)
          for (int64_t c = 0; c < 2; ++c) y.push_back(get(x, ((s * 2 + i / 3) * 3 + j / 3) * 2 + c));
    return y;
  };
  specs.push_back(up);
  return specs;
}

class ConvLayerTest : public ::testing::TestWithParam<LayerSpec> {};
INSTANTIATE_TEST_SUITE_P(Layers, ConvLayerTest, ::testing::ValuesIn(conv_layer_specs()), spec_name);

TEST_P(ConvLayerTest, GradientCheckF64) { check_layer_gradients(GetParam(), 3); }
TEST_P(ConvLayerTest, F32MatchesF64) { compare_f32_f64(GetParam(), 4, nullptr); }
TEST_P(ConvLayerTest, F32MatchesF64Threaded) {
  ThreadPool pool(3);
  compare_f32_f64(GetParam(), 5, &pool);
}

// The direct convolution's patch reading (pad_images + patch_offsets) gives exactly im2col's
// patch matrix, im2col being the plain reference of what a patch is.
TEST(Conv, GatheredPatchesEqualIm2col) {
  struct Case {
    int64_t h, w, c, kernel, stride, pad;
  };
  for (const Case& k : {Case{5, 5, 2, 3, 1, 1}, Case{6, 7, 3, 3, 2, 0}, Case{5, 4, 2, 2, 2, 1}, Case{7, 6, 1, 5, 1, 2},
                        Case{4, 4, 3, 1, 1, 0}, Case{8, 9, 2, 4, 3, 3}}) {
    const ConvGeometry g = conv_geometry(k.h, k.w, k.c, k.kernel, k.stride, k.pad).value();
    const int64_t count = 3, image = k.h * k.w * k.c;
    Rng rng(9);
    std::vector<double> images(static_cast<size_t>(count * image)), padded(static_cast<size_t>(count * g.padded_size()));
    for (double& v : images) v = rng.uniform(-1.0, 1.0);
    pad_images(g, images.data(), count, padded.data());
    const PatchOffsets at = patch_offsets(g, count);
    ASSERT_EQ(static_cast<int64_t>(at.pixels.size()), count * g.patches());
    ASSERT_EQ(static_cast<int64_t>(at.taps.size()), g.patch_size());
    std::vector<double> cols(static_cast<size_t>(g.patches() * g.patch_size()));
    for (int64_t i = 0; i < count; ++i) {
      im2col(g, images.data() + i * image, cols.data());
      for (int64_t r = 0; r < g.patches(); ++r)
        for (int64_t t = 0; t < g.patch_size(); ++t)
          ASSERT_EQ(padded[static_cast<size_t>(at.pixels[static_cast<size_t>(i * g.patches() + r)] + at.taps[static_cast<size_t>(t)])],
                    cols[static_cast<size_t>(r * g.patch_size() + t)])
              << "image " << i << " patch " << r << " tap " << t << " of " << k.h << "x" << k.w << "x" << k.c << " k"
              << k.kernel << " s" << k.stride << " p" << k.pad;
    }
  }
}

// dx's route by the shape: lenet's conv2 (14x14x6, 16 filters 5x5: a patch matrix of 15000 floats
// a sample, 6 channels for the planar form) goes direct; the same with 24 channels (no planar
// form: 16-column tiles) and a small layer (its matrix under 8192 floats) keep im2col's route.
TEST(Conv, InputGradientRouteByShape) {
  auto direct = [](const Shape& input, int64_t filters, int64_t kernel, int64_t pad) {
    Conv2D conv(conv_options(filters, kernel, 1, pad));
    EXPECT_TRUE(conv.configure(input).ok());
    return conv.direct_input_grad();
  };
  EXPECT_TRUE(direct(Shape{14, 14, 6}, 16, 5, 0));
  EXPECT_FALSE(direct(Shape{14, 14, 24}, 16, 5, 0));
  EXPECT_FALSE(direct(Shape{10, 9, 3}, 8, 3, 1));
}

// The specs above reach both routes to dx: im2col's (dy * W^T, then col2im) and the direct one.
TEST(Conv, SpecsCoverBothInputGradientRoutes) {
  int direct = 0, via_cols = 0;
  for (const LayerSpec& spec : conv_layer_specs()) {
    std::unique_ptr<Layer> layer = spec.make();
    auto* conv = dynamic_cast<Conv2D*>(layer.get());
    if (conv == nullptr) continue;
    ASSERT_TRUE(conv->configure(spec.input).ok()) << spec.name;
    (conv->direct_input_grad() ? direct : via_cols) += 1;
  }
  EXPECT_GE(direct, 2);
  EXPECT_GE(via_cols, 2);
}

// dcgan's discriminator conv2 and generator conv_transpose1 (dx and the forward by phases),
// 20 samples a chunk.
std::vector<LayerSpec> phases_chunked_specs() {
  return {conv_spec("conv_phases_chunked", Shape{14, 14, 64}, conv_options(16, 4, 2, 1)),
          conv_transpose_spec("convT_phases_chunked", Shape{7, 7, 16}, conv_options(64, 4, 2, 1))};
}

// The specs named "phases" take the phases' route, and only they (so their tests test it).
TEST(Conv, PhasesWhereTheyFit) {
  std::vector<LayerSpec> specs = conv_layer_specs();
  for (const LayerSpec& spec : phases_chunked_specs()) specs.push_back(spec);
  int with_phases = 0;
  for (const LayerSpec& spec : specs) {
    std::unique_ptr<Layer> layer = spec.make();
    auto* conv = dynamic_cast<ConvLayer*>(layer.get());
    if (conv == nullptr) continue;
    ASSERT_TRUE(layer->configure(spec.input).ok()) << spec.name;
    const bool named = spec.name.find("phases") != std::string::npos;
    EXPECT_EQ(conv->adjoint_by_phases(), named) << spec.name;
    with_phases += named;
  }
  EXPECT_EQ(with_phases, 11);
}

// Batches larger than one chunk (28x28x8 with a 3x3 kernel: 16 samples per 4 MiB chunk), so
// the chunk loop and the dW accumulation across chunks are exercised, in f32 against f64.
// dW and the bias grads sum 40 * 784 = 31,360 terms reaching |partial| ~ 100: float rounding
// of such a sum is ~1e-4, so the tolerance is 1e-3 (a wrong patch gives errors of O(1)).
TEST(Conv, ChunkedBatchesMatchF64) {
  ThreadPool pool(2);
  compare_f32_f64(conv_spec("conv_chunked", Shape{28, 28, 8}, conv_options(6, 3, 1, 1)), 40, &pool, 1e-3);
  compare_f32_f64(conv_transpose_spec("convT_chunked", Shape{14, 14, 8}, conv_options(6, 4, 2, 1)), 40, &pool, 1e-3);
  for (const LayerSpec& spec : phases_chunked_specs()) compare_f32_f64(spec, 40, &pool, 1e-3);
  compare_f32_f64(depthwise_spec("depthwise_big", Shape{28, 28, 8}, conv_options(1, 3, 1, 1)), 40, &pool, 1e-3);
}

// Every layer gives bit-identical f32 results with 1, 2, 3 and 4 threads. The chunked ones split
// their weight gradients over the depth (ops/gemm.h): conv_chunked's 72 x 6 over 16 samples of
// 784 pixels a chunk (its last chunk, 1 sample, unsplit), convT_chunked's 96 x 8 over 33 x 196.
TEST(Conv, ResultsDoNotDependOnThreads) {
  ASSERT_GT(gemm_depth_blocks(72, 6, 16 * 784), 1);
  ASSERT_EQ(gemm_depth_blocks(72, 6, 784), 1);
  ASSERT_GT(gemm_depth_blocks(96, 8, 33 * 196), 1);
  std::vector<LayerSpec> specs = conv_layer_specs();
  specs.push_back(conv_spec("conv_chunked", Shape{28, 28, 8}, conv_options(6, 3, 1, 1)));
  specs.push_back(conv_transpose_spec("convT_chunked", Shape{14, 14, 8}, conv_options(6, 4, 2, 1)));
  specs.push_back(depthwise_spec("depthwise_big", Shape{28, 28, 8}, conv_options(1, 3, 1, 1)));
  for (const LayerSpec& spec : phases_chunked_specs()) specs.push_back(spec);
  // 33 x 1024 rows of 64 channels: 528 blocks of 64 rows, their partial sums taken 512 at a time
  specs.push_back(batch_norm_spec("batchnorm_many_blocks", Shape{32, 32, 64}, true));
  for (const LayerSpec& spec : specs) {
    SCOPED_TRACE(spec.name);
    const std::vector<double> one = results_with_threads(spec, 1, 33);
    EXPECT_EQ(one, results_with_threads(spec, 2, 33));
    EXPECT_EQ(one, results_with_threads(spec, 3, 33));
    EXPECT_EQ(one, results_with_threads(spec, 4, 33));
  }
}

// A first layer the planar form runs (lenet's conv1: 28x28x1, 6 filters 5x5, pad 2; no dx) with
// its relu fused takes a batch of 64 whole, past the 50 samples of its gathered chunks: the same
// bits on 1 to 4 threads, y and the gradients against the f64 layer (whose chunks stay) within
// the f32 tolerance (its weight gradient's partials lie in the scratch workspace_elements sizes:
// the sanitizer build's run checks that they stay inside).
TEST(Conv, PlanarFirstLayerTakesTheBatchWhole) {
  const int64_t n = 64;
  const auto run = [&](DType dtype, ThreadPool* pool) {
    Conv2D conv(conv_options(6, 5, 1, 2));
    conv.set_name("conv1");
    EXPECT_TRUE(conv.configure(Shape{28, 28, 1}).ok());
    Rng rng(9);
    EXPECT_TRUE(conv.init(rng, dtype).ok());
    for (Param* p : conv.params()) fill_random(p->value, rng, -0.5, 0.5);
    Tensor x = make(Shape{n, 28, 28, 1}, dtype), y = make(Shape{n, 28, 28, 6}, dtype), dy = make(y.shape(), dtype);
    Rng data(4);
    fill_random(x, data, -1, 1);
    fill_random(dy, data, -1, 1);
    LayerContext ctx;
    ctx.pool = pool;
    ctx.training = true;
    ctx.fused_relu = true;
    conv.forward(x, y, ctx);
    conv.backward(x, y, dy, Tensor(), ctx);
    std::vector<double> all = values(y);
    for (double v : values(dy)) all.push_back(v);  // the relu's gradient, taken in place
    for (Param* p : conv.params())
      for (double v : values(p->grad)) all.push_back(v);
    return all;
  };
  const std::vector<double> alone = run(DType::f32, nullptr), f64 = run(DType::f64, nullptr);
  ASSERT_EQ(alone.size(), f64.size());
  for (size_t i = 0; i < alone.size(); ++i) ASSERT_NEAR(alone[i], f64[i], 2e-4 * std::max(1.0, std::fabs(f64[i]))) << i;
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    EXPECT_EQ(run(DType::f32, &pool), alone) << threads << " threads";
  }
}

// accumulate_grads = false overwrites the param grads on the first chunk; true adds.
TEST(Conv, BackwardOverwritesOrAccumulates) {
  Conv2D conv(conv_options(3, 3, 1, 1));
  conv.set_name("c");
  ASSERT_TRUE(conv.configure(Shape{28, 28, 8}).ok());  // several chunks for n = 40
  Rng rng(4);
  ASSERT_TRUE(conv.init(rng, DType::f64).ok());
  Tensor x = make(Shape{40, 28, 28, 8}, DType::f64), y = make(Shape{40, 28, 28, 3}, DType::f64);
  Tensor dy = make(y.shape(), DType::f64);
  fill_random(x, rng, -1, 1);
  fill_random(dy, rng, -1, 1);
  LayerContext ctx;
  conv.forward(x, y, ctx);
  for (Param* p : conv.params()) fill_value(p->grad, 1e6);  // stale values must vanish
  ctx.accumulate_grads = false;
  conv.backward(x, y, dy, Tensor(), ctx);
  const std::vector<double> once = values(conv.params()[0]->grad), bias_once = values(conv.params()[1]->grad);
  ctx.accumulate_grads = true;
  conv.backward(x, y, dy, Tensor(), ctx);
  const std::vector<double> twice = values(conv.params()[0]->grad);
  for (size_t i = 0; i < once.size(); ++i) ASSERT_NEAR(twice[i], 2 * once[i], 1e-9 * std::max(1.0, std::fabs(once[i])));
  for (double b : bias_once) ASSERT_LT(std::fabs(b), 1e5);
}

// The masks: values are dropped at about the rate, kept ones scaled by 1/(1-rate), backward
// uses the same mask, another noise stream gives another mask, inference passes through.
TEST(Dropout, MaskScaleAndReuse) {
  Dropout drop(0.3);
  drop.set_name("d");
  ASSERT_TRUE(drop.configure(Shape{1000}).ok());
  Rng rng(5);
  ASSERT_TRUE(drop.init(rng, DType::f32).ok());
  Tensor x = make(Shape{20, 1000}, DType::f32), y = make(x.shape(), DType::f32), y2 = make(x.shape(), DType::f32);
  Tensor dy = make(x.shape(), DType::f32), dx = make(x.shape(), DType::f32);
  fill_random(x, rng, 0.5, 1.5);
  fill_random(dy, rng, 0.5, 1.5);
  LayerContext ctx;
  ctx.training = true;
  ctx.noise_stream = 9;
  drop.forward(x, y, ctx);
  drop.backward(x, y, dy, dx, ctx);
  int64_t dropped = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (y.f32()[i] == 0.0f) {
      ++dropped;
      ASSERT_EQ(dx.f32()[i], 0.0f) << i;
    } else {
      ASSERT_FLOAT_EQ(y.f32()[i], x.f32()[i] / 0.7f) << i;
      ASSERT_FLOAT_EQ(dx.f32()[i], dy.f32()[i] / 0.7f) << i;
    }
  }
  EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(x.numel()), 0.3, 0.015);  // 20000 draws: sd 0.0032
  ctx.noise_stream = 10;
  drop.forward(x, y2, ctx);
  EXPECT_NE(values(y), values(y2));
  ctx.training = false;
  drop.forward(x, y2, ctx);
  EXPECT_EQ(values(y2), values(x));
}

// The mask's definition (ops/dropout_mask.h), restated with SplitMix64 as a stream (Vigna's
// splitmix64.c: the state advanced by the golden gamma, then mixed): value i of the step's sample
// s draws output number s * row_size + i of the stream from dropout_state(step seed), dropped when
// its high 32 bits fall below the threshold. The layer gives it with and without a pool of
// threads, and for rows split in two forwards with their row_offset.
TEST(Dropout, MaskDrawnByEachValuesCounter) {
  const int64_t rows = 6, row_size = 700;
  Dropout drop(0.4);
  drop.set_name("d");
  ASSERT_TRUE(drop.configure(Shape{row_size}).ok());
  Rng rng(7);
  ASSERT_TRUE(drop.init(rng, DType::f32).ok());
  Tensor x = make(Shape{rows, row_size}, DType::f32);
  fill_random(x, rng, 0.5, 1.5);
  const uint64_t noise_stream = 11;
  const int64_t row_offset = 3;
  const uint64_t threshold = dropout_threshold(0.4);
  const float scale = dropout_scale(0.4);
  uint64_t state = splitmix64_mix(dropout_step_seed(drop.seed(), noise_stream));
  std::vector<uint32_t> stream;  // the draws of counters 0 .. (row_offset + rows) row_size - 1
  for (int64_t k = 0; k < (row_offset + rows) * row_size; ++k) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    stream.push_back(static_cast<uint32_t>((z ^ (z >> 31)) >> 32));
  }
  std::vector<double> want(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i)
    want[static_cast<size_t>(i)] =
        stream[static_cast<size_t>(row_offset * row_size + i)] < threshold ? 0.0f : x.f32()[i] * scale;
  ThreadPool pool(3);
  for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
    LayerContext ctx;
    ctx.pool = threads;
    ctx.training = true;
    ctx.noise_stream = noise_stream;
    ctx.row_offset = row_offset;
    Tensor y = make(x.shape(), DType::f32);
    drop.forward(x, y, ctx);
    EXPECT_EQ(values(y), want) << (threads ? "3 threads" : "no pool");
    Tensor split = make(x.shape(), DType::f32);
    drop.forward(x.rows(0, 2), split.rows(0, 2), ctx);
    ctx.row_offset = row_offset + 2;
    drop.forward(x.rows(2, rows), split.rows(2, rows), ctx);
    EXPECT_EQ(values(split), want) << "rows 0-1 and 2-5 apart";
  }
}

// The running statistics follow PyTorch's update (momentum 0.1, unbiased variance).
TEST(BatchNorm, RunningStatistics) {
  BatchNorm bn(0.1, 1e-5);
  bn.set_name("bn");
  ASSERT_TRUE(bn.configure(Shape{2}).ok());
  Rng rng(6);
  ASSERT_TRUE(bn.init(rng, DType::f64).ok());
  ASSERT_EQ(bn.buffers().size(), 2u);
  EXPECT_EQ(bn.buffers()[0]->name, "bn.running_mean");
  EXPECT_EQ(bn.buffers()[1]->name, "bn.running_var");
  Tensor x = make(Shape{4, 2}, DType::f64), y = make(Shape{4, 2}, DType::f64);
  const double data[] = {1, 10, 2, 20, 3, 30, 6, 40};
  for (int i = 0; i < 8; ++i) set(x, i, data[i]);
  LayerContext ctx;
  ctx.training = true;
  bn.forward(x, y, ctx);
  // channel 0: mean 3, unbiased var (4+1+0+9)/3; channel 1: mean 25, unbiased var (225+25+25+225)/3
  EXPECT_NEAR(get(bn.buffers()[0]->value, 0), 0.1 * 3, 1e-12);
  EXPECT_NEAR(get(bn.buffers()[0]->value, 1), 0.1 * 25, 1e-12);
  EXPECT_NEAR(get(bn.buffers()[1]->value, 0), 0.9 + 0.1 * 14.0 / 3, 1e-12);
  EXPECT_NEAR(get(bn.buffers()[1]->value, 1), 0.9 + 0.1 * 500.0 / 3, 1e-12);
}

// Statistics over many groups of 64 row blocks (blocks merged within a group, then the groups in
// order): against a two-pass double reference on values far from 0 against their spread; and the
// output's bits with and without threads, over 700 channels (the merges split over threads by
// channel, the partials in rounds of 46 blocks that cut groups). momentum 1: the running
// statistics are the batch's (the variance unbiased).
TEST(BatchNorm, StatisticsOverManyBlockGroupsMatchTwoPassesInDouble) {
  const int64_t rows = 64 * 64 * 2 + 100, channels = 700;
  Tensor x = make(Shape{rows, channels}, DType::f32);
  Rng rng(11);
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = 100.0f * static_cast<float>(i % 3 + 1) + rng.uniform_f32();
  ThreadPool pool(3);
  std::vector<float> first_y;
  for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
    BatchNorm bn(1.0, 1e-5);
    bn.set_name("bn");
    ASSERT_TRUE(bn.configure(Shape{channels}).ok());
    ASSERT_TRUE(bn.init(rng, DType::f32).ok());
    Tensor y = make(x.shape(), DType::f32);
    LayerContext ctx;
    ctx.training = true;
    ctx.pool = threads;
    bn.forward(x, y, ctx);
    for (int64_t c = 0; c < channels; c += 97) {
      double mean = 0, m2 = 0;
      for (int64_t r = 0; r < rows; ++r) mean += x.f32()[r * channels + c];
      mean /= rows;
      for (int64_t r = 0; r < rows; ++r) m2 += (x.f32()[r * channels + c] - mean) * (x.f32()[r * channels + c] - mean);
      EXPECT_NEAR(bn.buffers()[0]->value.f32()[c], mean, 1e-7 * std::fabs(mean)) << "channel " << c;
      EXPECT_NEAR(bn.buffers()[1]->value.f32()[c], m2 / (rows - 1), 2e-5 * m2 / (rows - 1)) << "channel " << c;
    }
    const std::vector<float> got(y.f32(), y.f32() + y.numel());
    if (first_y.empty()) first_y = got;
    EXPECT_TRUE(got == first_y) << "threads change no bit";
  }
}

// Shapes and cfg rules: each bad layer is refused with the reason.
TEST(ConvCfg, ShapesAndErrors) {
  auto build = [](const std::string& layers) {
    auto doc = parse_cfg("[net]\ninput = 8x8x3\n" + layers + "[dense]\nunits = 2\n", "test.cfg");
    EXPECT_TRUE(doc.ok()) << doc.status().message();
    return Model::from_cfg(doc.value());
  };
  auto ok = build(
      "[conv]\nfilters = 4\nsize = 3\npad = 1\n[maxpool]\nsize = 2\n[conv_transpose]\nfilters = 2\nsize = 3\nstride = "
      "2\npad = 1\noutput_pad = 1\n[batchnorm]\n[upsample]\nscale = 2\n[avgpool]\nsize = 2\n[dropout]\nrate = 0.2\n"
      "[reshape]\nshape = 4x8x4\n[global_avgpool]\n[flatten]\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  const std::vector<Shape> want = {Shape{8, 8, 4}, Shape{4, 4, 4}, Shape{8, 8, 2}, Shape{8, 8, 2}, Shape{16, 16, 2},
                                   Shape{8, 8, 2}, Shape{8, 8, 2}, Shape{4, 8, 4}, Shape{4},        Shape{4}};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(ok.value()->layers()[i]->configure(i == 0 ? Shape{8, 8, 3} : want[i - 1]).value(), want[i]) << i;

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"[conv]\nfilters = 2\nsize = 9\n", "does not fit a 8x8 input"},
      {"[conv]\nfilters = 2\nsize = 3\npad = 3\n", "must be smaller than the kernel"},
      {"[conv]\nsize = 3\n", "filters"},
      {"[conv_transpose]\nfilters = 2\nsize = 3\nstride = 2\noutput_pad = 2\n", "smaller than the stride"},
      {"[flatten]\n[conv]\nfilters = 2\nsize = 1\n", "takes images"},
      {"[reshape]\nshape = 5x5x5\n", "cannot reshape"},
      {"[flatten]\n[maxpool]\nsize = 2\n", "takes images"},
      {"[conv]\nfilters = 2\nsize = 3\nstrde = 2\n", "strde"},
      {"[dropout]\nrate = 1\n", "rate"},
  };
  for (const auto& [layers, message] : bad) {
    auto model = build(layers);
    ASSERT_FALSE(model.ok()) << layers;
    EXPECT_NE(model.status().message().find(message), std::string::npos) << model.status().message();
    EXPECT_NE(model.status().message().find("test.cfg"), std::string::npos) << model.status().message();
  }
}

// A small CNN through Model (workspace, ping-pong gradients, flatten into dense), every
// parameter against central differences of the loss.
TEST(ConvModel, GradientsThroughModel) {
  check_classifier_gradients(
      "[net]\ninput = 6x6x2\nloss = softmax_cross_entropy\n"
      "[conv]\nfilters = 3\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n[tanh]\n[maxpool]\nsize = 2\n"
      "[conv]\nfilters = 4\nsize = 2\nstride = 1\n[avgpool]\nsize = 2\n[conv_transpose]\nfilters = 2\nsize = 2\nstride = 2\n"
      "[flatten]\n[dense]\nunits = 3\n");
}

}  // namespace
}  // namespace rg
