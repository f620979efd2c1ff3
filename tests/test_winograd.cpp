// The f32 Winograd F(4x4, 3x3) convolution (ops/winograd_conv.h) on every ISA level this CPU
// has: the transforms against the reference level's matrix products; WinogradConv's forward and
// weight gradient against the direct sums in double (odd sizes, pads 0 to 2, channel and filter counts around the
// vector widths, several samples and blocks); the same bits whatever the thread count; a
// Conv2D under `algorithm = winograd` against the f64 layer (forward, dx, dW), and the cfg's
// errors; the measured choice of auto convs (nn/conv_tuning.h): its cache file, checkpoint
// text and their errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "cpu/kernel_tables.h"
#include "isa_param.h"
#include "layer_check.h"
#include "model_util.h"
#include "portable.h"
#include "nn/cfg.h"
#include "nn/conv.h"
#include "nn/conv_tuning.h"
#include "nn/layer_profile.h"
#include "nn/recurrent_conv.h"
#include "report/layer_profile_table.h"
#include "ops/winograd_conv.h"

namespace rg {
namespace {

std::vector<float> random_floats(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(rng.uniform(-1, 1));
  return v;
}

class WinogradOnIsa : public OnEveryIsa {
 protected:
  void SetUp() override {
    OnEveryIsa::SetUp();
    if (IsSkipped()) return;
    previous_ = active_isa();
    set_active_isa(GetParam());
  }
  void TearDown() override { set_active_isa(previous_); }
  Isa previous_ = Isa::reference;
};

INSTANTIATE_TEST_SUITE_P(AllIsas, WinogradOnIsa, ::testing::ValuesIn(all_isas()), isa_label);

// |sum over a, b of m[i][a] x[a][b] m[j][b]| as the transforms compute it, the terms' absolute
// values summed instead: the scale a float rounding error is relative to.
template <int R, int C>
double magnitude(const float (&m)[R][C], const double (&x)[C][C], int i, int j) {
  double sum = 0;
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) sum += std::fabs(m[i][a] * x[a][b] * m[j][b]);
  return sum;
}

// Both transforms, channel counts below, at and past each vector width; the values past c and
// the outputs whose pointer is null are left alone.
TEST_P(WinogradOnIsa, TransformsMatchTheReference) {
  const F32WinogradKernels &fast = f32_winograd_kernels(GetParam()), &ref = f32_winograd_kernels(Isa::reference);
  Rng rng(5);
  for (int64_t c : {1, 3, 4, 7, 8, 9, 15, 16, 17, 33, 64}) {
    SCOPED_TRACE("c = " + std::to_string(c));
    std::vector<float> pixels = random_floats(36 * c, rng);
    const float* d[36];
    for (int k = 0; k < 36; ++k) d[k] = pixels.data() + k * c;
    const int64_t stride = c + 3;  // guard values between positions
    std::vector<float> got(36 * stride, 7.0f), want(36 * stride, 7.0f);
    fast.input(c, d, got.data(), stride);
    ref.input(c, d, want.data(), stride);
    for (int64_t ch = 0; ch < c; ++ch) {
      double x[6][6];
      for (int k = 0; k < 36; ++k) x[k / 6][k % 6] = pixels[k * c + ch];
      for (int xi = 0; xi < 36; ++xi) {
        const double scale = magnitude(kWinogradBT, x, xi / 6, xi % 6);
        ASSERT_NEAR(got[xi * stride + ch], want[xi * stride + ch], 1e-6 * scale + 1e-30) << "input, xi " << xi;
      }
    }
    for (int xi = 0; xi < 36; ++xi)
      for (int64_t ch = c; ch < stride; ++ch) ASSERT_EQ(got[xi * stride + ch], 7.0f) << "input wrote past c";

    std::vector<float> m = random_floats(36 * stride, rng), out_got(16 * c, 7.0f), out_want(16 * c, 7.0f);
    float *o_got[16], *o_want[16];
    for (int k = 0; k < 16; ++k) {
      const bool skipped = k == 3 || k == 12 || k == 15;  // pixels past the image
      o_got[k] = skipped ? nullptr : out_got.data() + k * c;
      o_want[k] = skipped ? nullptr : out_want.data() + k * c;
    }
    fast.output(c, m.data(), stride, o_got);
    ref.output(c, m.data(), stride, o_want);
    for (int64_t ch = 0; ch < c; ++ch) {
      double x[6][6];
      for (int k = 0; k < 36; ++k) x[k / 6][k % 6] = m[k * stride + ch];
      for (int k = 0; k < 16; ++k) {
        const float expected = o_want[k] == nullptr ? 7.0f : out_want[k * c + ch];
        const double scale = magnitude(kWinogradAT, x, k / 4, k % 4);
        ASSERT_NEAR(out_got[k * c + ch], expected, 1e-6 * scale + 1e-30) << "output, pixel " << k;
      }
    }
  }
}

// dy's transform (the weight gradient's): every 4x4 tile with some pixels past the output.
TEST_P(WinogradOnIsa, GradientTransformMatchesTheReference) {
  const F32WinogradKernels &fast = f32_winograd_kernels(GetParam()), &ref = f32_winograd_kernels(Isa::reference);
  Rng rng(6);
  for (int64_t f : {1, 3, 8, 9, 16, 17, 33, 64}) {
    SCOPED_TRACE("f = " + std::to_string(f));
    std::vector<float> pixels = random_floats(16 * f, rng);
    const float* dy[16];
    for (int k = 0; k < 16; ++k) dy[k] = k % 4 == 3 || k >= 13 ? nullptr : pixels.data() + k * f;
    const int64_t stride = f + 3;
    std::vector<float> got(36 * stride, 7.0f), want(36 * stride, 7.0f);
    fast.grad(f, dy, got.data(), stride);
    ref.grad(f, dy, want.data(), stride);
    float transposed[6][4];  // A = AT^T, for magnitude()'s m[i][a] x[a][b] m[j][b]
    for (int i = 0; i < 6; ++i)
      for (int a = 0; a < 4; ++a) transposed[i][a] = kWinogradAT[a][i];
    for (int64_t ch = 0; ch < f; ++ch) {
      double x[4][4];
      for (int k = 0; k < 16; ++k) x[k / 4][k % 4] = dy[k] != nullptr ? dy[k][ch] : 0.0;
      for (int xi = 0; xi < 36; ++xi) {
        const double scale = magnitude(transposed, x, xi / 6, xi % 6);
        ASSERT_NEAR(got[xi * stride + ch], want[xi * stride + ch], 1e-6 * scale + 1e-30) << "xi " << xi;
      }
    }
    for (int xi = 0; xi < 36; ++xi)
      for (int64_t ch = f; ch < stride; ++ch) ASSERT_EQ(got[xi * stride + ch], 7.0f) << "wrote past f";
  }
}

struct Case {
  int64_t h, w, c, filters, pad, count;
};

// Random images of case k as Winograd reads them, and their zero-padded copy (the direct sums').
struct Images {
  std::vector<float> plain, padded;
};
Images random_images(const Case& k, const ConvGeometry& g, Rng& rng) {
  Images images{random_floats(k.count * k.h * k.w * k.c, rng),
                std::vector<float>(static_cast<size_t>(k.count * g.padded_size()))};
  pad_images(g, images.plain.data(), k.count, images.padded.data());
  return images;
}

std::string case_name(const Case& k) {
  return std::to_string(k.h) + "x" + std::to_string(k.w) + "x" + std::to_string(k.c) + " -> " +
         std::to_string(k.filters) + " pad " + std::to_string(k.pad) + ", " + std::to_string(k.count) + " samples";
}

// y of the direct convolution in double, and the scale of each output's sum (its terms' absolute
// values summed) that the rounding error of Winograd's transforms is relative to.
void direct_conv(const ConvGeometry& g, int64_t filters, int64_t count, const std::vector<float>& padded,
                 const std::vector<float>& w, std::vector<double>* y, std::vector<double>* scale) {
  const int64_t pw = g.padded_width();
  for (int64_t s = 0; s < count; ++s)
    for (int64_t i = 0; i < g.out_h; ++i)
      for (int64_t j = 0; j < g.out_w; ++j)
        for (int64_t f = 0; f < filters; ++f) {
          double sum = 0, mag = 0;
          for (int64_t tap = 0; tap < 9; ++tap)
            for (int64_t ch = 0; ch < g.channels; ++ch) {
              const double term = double{padded[static_cast<size_t>(
                                      s * g.padded_size() + ((i + tap / 3) * pw + j + tap % 3) * g.channels + ch)]} *
                                  w[static_cast<size_t>((tap * g.channels + ch) * filters + f)];
              sum += term;
              mag += std::fabs(term);
            }
          y->push_back(sum);
          scale->push_back(mag);
        }
}

std::vector<float> winograd_conv(const Case& k, const std::vector<float>& images, const std::vector<float>& w,
                                 ThreadPool* pool) {
  const ConvGeometry g = conv_geometry(k.h, k.w, k.c, 3, 1, k.pad).value();
  const WinogradConv conv(g, k.filters);
  std::vector<float> u(static_cast<size_t>(conv.weight_elements()), NAN);
  std::vector<float> scratch(static_cast<size_t>(conv.scratch_elements(k.count)), NAN);
  std::vector<float> y(static_cast<size_t>(k.count * g.patches() * k.filters), NAN);
  conv.transform_weight(pool, w.data(), u.data());
  conv.run(pool, k.count, images.data(), u.data(), y.data(), scratch.data());
  return y;
}

// Sides that are and are not multiples of 4 (edge tiles), pads 0 to 2, channels and filters
// around the vector widths, batches of several blocks (16x16, 32 + 24 channels: 24 tiles a
// block), a weight gradient of three rounds (8 + 144 channels: blocks of 12 tiles, rounds of 96,
// 200 tiles). Small enough for the emulated old CPUs (tools/qemu_old_cpus.sh runs this program whole).
const Case kCases[] = {{4, 4, 1, 1, 1, 1},     {6, 6, 3, 5, 1, 2},    {9, 7, 17, 33, 0, 3},
                       {5, 11, 8, 16, 2, 2},   {14, 14, 32, 64, 1, 2}, {7, 7, 64, 10, 1, 4},
                       {16, 16, 32, 24, 1, 2}, {8, 8, 8, 144, 1, 50}};

TEST_P(WinogradOnIsa, ConvolutionMatchesTheDirectSums) {
  Rng rng(9);
  ThreadPool pool(3);
  for (const Case& k : kCases) {
    SCOPED_TRACE(case_name(k));
    const ConvGeometry g = conv_geometry(k.h, k.w, k.c, 3, 1, k.pad).value();
    const Images images = random_images(k, g, rng);
    const std::vector<float> w = random_floats(9 * k.c * k.filters, rng);
    std::vector<double> want, scale;
    direct_conv(g, k.filters, k.count, images.padded, w, &want, &scale);
    const std::vector<float> got = winograd_conv(k, images.plain, w, &pool);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // F(4x4, 3x3)'s transforms scale values by up to ~100 before the sums cancel (Lavin and
      // Gray's error analysis): 2e-5 of the terms' magnitude; a misplaced term is off by ~1 of it.
      ASSERT_NEAR(got[i], want[i], 2e-5 * scale[i]) << "y[" << i << "]";
    }
  }
}

// dW [9 c, filters] of the direct convolution in double, and each sum's terms' magnitude.
void direct_weight_grad(const ConvGeometry& g, int64_t filters, int64_t count, const std::vector<float>& padded,
                        const std::vector<float>& dy, std::vector<double>* dw, std::vector<double>* scale) {
  const int64_t pw = g.padded_width();
  dw->assign(static_cast<size_t>(9 * g.channels * filters), 0.0);
  scale->assign(dw->size(), 0.0);
  for (int64_t s = 0; s < count; ++s)
    for (int64_t i = 0; i < g.out_h; ++i)
      for (int64_t j = 0; j < g.out_w; ++j)
        for (int64_t tap = 0; tap < 9; ++tap)
          for (int64_t ch = 0; ch < g.channels; ++ch) {
            const double x = padded[static_cast<size_t>(s * g.padded_size() + ((i + tap / 3) * pw + j + tap % 3) * g.channels + ch)];
            for (int64_t f = 0; f < filters; ++f) {
              const double term = x * dy[static_cast<size_t>(((s * g.out_h + i) * g.out_w + j) * filters + f)];
              (*dw)[static_cast<size_t>((tap * g.channels + ch) * filters + f)] += term;
              (*scale)[static_cast<size_t>((tap * g.channels + ch) * filters + f)] += std::fabs(term);
            }
          }
}

std::vector<float> winograd_weight_grad(const Case& k, const std::vector<float>& images, const std::vector<float>& dy,
                                        float beta, std::vector<float> dw, ThreadPool* pool) {
  const ConvGeometry g = conv_geometry(k.h, k.w, k.c, 3, 1, k.pad).value();
  const WinogradConv conv(g, k.filters);
  std::vector<float> scratch(static_cast<size_t>(conv.weight_grad_scratch_elements(k.count)), NAN);
  conv.weight_grad(pool, k.count, images.data(), dy.data(), beta, dw.data(), scratch.data());
  return dw;
}

// The weight gradient against the direct sums, overwriting (beta 0, over NaN) and adding (beta 1).
TEST_P(WinogradOnIsa, WeightGradientMatchesTheDirectSums) {
  Rng rng(10);
  ThreadPool pool(3);
  for (const Case& k : kCases) {
    SCOPED_TRACE(case_name(k));
    const ConvGeometry g = conv_geometry(k.h, k.w, k.c, 3, 1, k.pad).value();
    const Images images = random_images(k, g, rng);
    const std::vector<float> dy = random_floats(k.count * g.patches() * k.filters, rng);
    std::vector<double> want, scale;
    direct_weight_grad(g, k.filters, k.count, images.padded, dy, &want, &scale);
    const std::vector<float> got = winograd_weight_grad(k, images.plain, dy, 0.0f, std::vector<float>(want.size(), NAN), &pool);
    const std::vector<float> added = winograd_weight_grad(k, images.plain, dy, 1.0f, std::vector<float>(want.size(), 0.5f), &pool);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], 2e-5 * scale[i] + 1e-6) << "dw[" << i << "]";  // the forward's bound
      ASSERT_NEAR(added[i], want[i] + 0.5, 2e-5 * scale[i] + 1e-6) << "dw[" << i << "] + 0.5";
    }
  }
}

// (G (x) G)[xi][tap] = G[xi / 6][tap / 3] G[xi % 6][tap % 3], the weight transforms' coefficients.
float kronecker_g(int xi, int tap) { return kWinogradG[xi / 6][tap / 3] * kWinogradG[xi % 6][tap % 3]; }

// Both weight transforms against their sums written plainly (each term a product, then a sum, in
// order from 0 or from beta dW): the same bits, on a pool or not; filters below, at and past the
// blocks of 16 and the padding to 32, and U's padded columns zero.
TEST(WinogradWeightTransforms, SumTheTermsInOrder) {
  Rng rng(6);
  ThreadPool pool(3);
  for (const auto& [c, f] : {std::pair<int64_t, int64_t>{1, 1}, {3, 5}, {17, 33}, {8, 16}, {5, 40}, {64, 64}, {2, 100}}) {
    SCOPED_TRACE(std::to_string(c) + " channels, " + std::to_string(f) + " filters");
    const WinogradConv conv(conv_geometry(6, 6, c, 3, 1, 1).value(), f);
    const int64_t fp = conv.weight_elements() / (36 * c);
    const std::vector<float> w = random_floats(9 * c * f, rng), m = random_floats(36 * c * fp, rng);
    std::vector<float> u_want(static_cast<size_t>(36 * c * fp), 0.0f);
    for (int xi = 0; xi < 36; ++xi)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t k = 0; k < f; ++k) {
          float sum = 0.0f;
          for (int tap = 0; tap < 9; ++tap) sum += kronecker_g(xi, tap) * w[static_cast<size_t>((tap * c + ch) * f + k)];
          u_want[static_cast<size_t>((xi * c + ch) * fp + k)] = sum;
        }
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
      std::vector<float> u(u_want.size(), NAN);
      conv.transform_weight(p, w.data(), u.data());
      EXPECT_EQ(std::memcmp(u.data(), u_want.data(), u.size() * sizeof(float)), 0) << (p ? "pool" : "no pool");
    }
    for (float beta : {0.0f, 1.0f, 0.5f}) {
      const std::vector<float> dw0 = random_floats(9 * c * f, rng);
      std::vector<float> want = dw0, got = dw0;
      for (int tap = 0; tap < 9; ++tap)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t k = 0; k < f; ++k) {
            float& out = want[static_cast<size_t>((tap * c + ch) * f + k)];
            float sum = beta == 0.0f ? 0.0f : beta == 1.0f ? out : beta * out;
            for (int xi = 0; xi < 36; ++xi) sum += kronecker_g(xi, tap) * m[static_cast<size_t>((xi * c + ch) * fp + k)];
            out = sum;
          }
      conv.transform_back(&pool, m.data(), beta, got.data());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << "beta " << beta;
    }
  }
}

TEST_P(WinogradOnIsa, SameBitsWhateverTheThreads) {
  Rng rng(4);
  // Weight gradients of 735 tiles (4 lanes of 183-184, each in rounds of 144 and 39-40: 1, 2 and
  // 4 threads run whole lanes, the others the lanes' rounds together) and of 160 (3 lanes of
  // 53-54, rounds of 48 and 5-6: whole lanes at 1 and 3 threads)
  for (const Case& k : {Case{28, 28, 16, 24, 1, 15}, Case{8, 8, 8, 144, 1, 40}}) {
    const ConvGeometry g = conv_geometry(k.h, k.w, k.c, 3, 1, k.pad).value();
    const std::vector<float> images = random_floats(k.count * k.h * k.w * k.c, rng);
    const std::vector<float> w = random_floats(9 * k.c * k.filters, rng);
    const std::vector<float> dy = random_floats(k.count * g.patches() * k.filters, rng);
    const std::vector<float> alone = winograd_conv(k, images, w, nullptr);
    const std::vector<float> dw = winograd_weight_grad(k, images, dy, 0.0f, std::vector<float>(w.size()), nullptr);
    for (int threads : {1, 2, 3, 4, 5, 8, 16}) {
      ThreadPool pool(threads);
      const std::vector<float> split = winograd_conv(k, images, w, &pool);
      ASSERT_EQ(std::memcmp(alone.data(), split.data(), alone.size() * sizeof(float)), 0) << threads << " threads";
      const std::vector<float> dw_split = winograd_weight_grad(k, images, dy, 0.0f, std::vector<float>(w.size()), &pool);
      ASSERT_EQ(std::memcmp(dw.data(), dw_split.data(), dw.size() * sizeof(float)), 0) << threads << " threads, dW";
    }
  }
}

// The weight gradient's lanes follow the shape: 64 samples of cnn's conv4 (14x14, 64 -> 64: an M
// of 590 KB) take 4 lanes, each its own M; 128 -> 128 (2.4 MB) one, its scratch one M and a round
// (less than M here); 2 samples (32 tiles, under a round of 48) one.
TEST(WinogradConv, WeightGradLanesKeepTheirMsWithin4MB) {
  const WinogradConv narrow(conv_geometry(14, 14, 64, 3, 1, 1).value(), 64);
  EXPECT_GT(narrow.weight_grad_scratch_elements(64), 4 * narrow.weight_elements());
  const WinogradConv wide(conv_geometry(14, 14, 128, 3, 1, 1).value(), 128);
  EXPECT_LT(wide.weight_grad_scratch_elements(64), 2 * wide.weight_elements());
  EXPECT_LT(narrow.weight_grad_scratch_elements(2), 3 * narrow.weight_elements());
}

ConvOptions winograd_options(int64_t filters, int64_t pad, bool bias) {
  ConvOptions o;
  o.filters = filters;
  o.kernel = 3;
  o.pad = pad;
  o.bias = bias;
  o.algorithm = ConvAlgorithm::winograd;
  return o;
}

// The layer under Winograd (forward, dx and dW) against the f64 layer (on the direct sums); 40
// samples of 28x28x8 run in chunks. Tolerance as for the chunked GEMM conv.
TEST(WinogradConv2D, ForwardAndBothGradientsMatchF64) {
  ThreadPool pool(2);
  for (int64_t pad : {0, 1, 2}) {
    SCOPED_TRACE("pad " + std::to_string(pad));
    const ConvOptions o = winograd_options(17, pad, pad != 1);
    LayerSpec spec{"conv_winograd", [o] { return std::unique_ptr<Layer>(new Conv2D(o)); }, Shape{9, 10, 16}};
    compare_f32_f64(spec, 3, &pool, 1e-4);
  }
  const ConvOptions o = winograd_options(6, 1, true);
  compare_f32_f64(LayerSpec{"conv_winograd_chunked", [o] { return std::unique_ptr<Layer>(new Conv2D(o)); },
                            Shape{28, 28, 8}},
                  40, &pool, 1e-3);
  Conv2D layer(o);
  ASSERT_TRUE(layer.configure(Shape{28, 28, 8}).ok());
  EXPECT_EQ(layer.algorithm(), ConvAlgorithm::winograd);
  EXPECT_TRUE(layer.direct_input_grad());
  EXPECT_NE(layer.describe().find(", winograd"), std::string::npos) << layer.describe();
}

TEST(WinogradConv2D, LayerResultsDoNotDependOnThreads) {
  const ConvOptions o = winograd_options(20, 1, true);
  LayerSpec spec{"conv_winograd", [o] { return std::unique_ptr<Layer>(new Conv2D(o)); }, Shape{13, 14, 12}};
  const std::vector<double> one = results_with_threads(spec, 1, 6);
  for (int threads : {2, 3, 4}) EXPECT_EQ(one, results_with_threads(spec, threads, 6)) << threads << " threads";
}

// The flops a Winograd layer executes (its products and transforms per tile: forward and dW
// over the output's tiles, dx over the input's, as the filters' and channels' roles swap), none
// under the GEMM; the profile's "executed" line counts them over the same time. Under the GEMM,
// a forward of at most 6 filters runs the planar form (ops/conv_planar.h): its lanes, 6 rows by
// the output's rows of the padded width, the patch deep.
TEST(WinogradConv2D, ExecutedFlopsCountTheProductsAndTransforms) {
  std::unique_ptr<Model> model = build_model(1,
      "[net]\ninput = 10x9x8\n[conv]\nfilters = 8\nsize = 3\npad = 1\n"
      "[conv]\nfilters = 5\nsize = 3\nalgorithm = winograd\n[conv]\nfilters = 8\nsize = 3\nalgorithm = gemm\n");
  const Layer& winograd = *model->layers()[1];
  // Its input 10x9x8 (3 x 3 tiles), its output 8x7x5 (2 x 2 tiles).
  EXPECT_EQ(winograd.executed_flops_per_sample(0), 4 * (72 * 8 * 5 + 228 * 8 + 130 * 5));
  EXPECT_EQ(winograd.executed_flops_per_sample(1), 4 * (72 * 8 * 5 + 228 * 8 + 110 * 5));
  EXPECT_EQ(winograd.executed_flops_per_sample(2), 9 * (72 * 5 * 8 + 228 * 5 + 130 * 8));
  for (int phase = 0; phase < kLayerPhases; ++phase) EXPECT_EQ(model->layers()[2]->executed_flops_per_sample(phase), 0);
  std::unique_ptr<Model> planar = build_model(1, "[net]\ninput = 10x9x8\n[conv]\nfilters = 4\nsize = 3\nalgorithm = gemm\n");
  EXPECT_EQ(planar->layers()[0]->executed_flops_per_sample(0), 2 * 6 * 8 * 9 * 72);  // output 8x7, padded width 9
  // dW: 72 taps by 4 filters over the padded-width grid (8 x 9) rounded up to 16 lanes
  EXPECT_EQ(planar->layers()[0]->executed_flops_per_sample(1), 2 * 72 * 4 * 80);
  EXPECT_EQ(planar->layers()[0]->executed_flops_per_sample(2), 0);
  // A recurrent conv layer counts its members' sum: the feed-forward conv under the GEMM (its
  // products), the recurrent one under Winograd, once a step.
  std::unique_ptr<Model> rcnn = build_model(1, "[net]\ninput = 8x8x8\n[rcl]\nfilters = 8\nsize = 3\nsteps = 2\n");
  auto& rcl = dynamic_cast<RecurrentConv2D&>(*rcnn->layers()[0]);
  for (int phase = 0; phase < kLayerPhases; ++phase) EXPECT_EQ(rcl.executed_flops_per_sample(phase), 0);
  ASSERT_TRUE(rcl.recurrent()->set_algorithm(ConvAlgorithm::winograd).ok());
  for (int phase = 0; phase < kLayerPhases; ++phase) {
    EXPECT_EQ(rcl.executed_flops_per_sample(phase),
              rcl.feed_forward().forward_flops_per_sample() + 2 * rcl.recurrent()->executed_flops_per_sample(phase));
  }

  ThreadPool pool(2);
  LayerContext ctx;
  ctx.pool = &pool;
  ctx.training = true;
  ASSERT_TRUE(model->reserve(3).ok());
  LayerProfile profile;
  ctx.profile = &profile;
  Tensor x = make(model->input_shape().batched(3), DType::f32);
  Rng rng(3);
  fill_random(x, rng, -1, 1);
  const Tensor out = model->forward(x, ctx);
  fill_random(model->output_grad(), rng, -1, 1);
  Tensor dx = make(x.shape(), DType::f32);
  model->backward(ctx, dx);
  profile.count_step();
  const LayerProfileReport report = summarize_layer_profile(*model, profile, 1.0, PeakFigure());
  for (int phase = 0; phase < kLayerPhases; ++phase) {
    const double ratio = static_cast<double>(winograd.executed_flops_per_sample(phase)) /
                         static_cast<double>(winograd.forward_flops_per_sample());
    EXPECT_NEAR(report.rows[1].executed_gflops[phase] / report.rows[1].gflops[phase], ratio, 1e-9 * ratio) << phase;
    EXPECT_TRUE(std::isnan(report.rows[2].executed_gflops[phase])) << phase;
  }
  std::vector<std::string> lines;
  std::istringstream text(layer_profile_text(report));
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  auto line_after = [&](const std::string& layer) {
    for (size_t i = 0; i + 1 < lines.size(); ++i)
      if (lines[i].rfind("  " + layer + " ", 0) == 0) return lines[i + 1];
    return std::string("(no line after " + layer + ")");
  };
  EXPECT_EQ(line_after("conv2").find_first_not_of(' '), line_after("conv2").find("executed")) << line_after("conv2");
  EXPECT_EQ(line_after("conv3").find("executed"), std::string::npos) << line_after("conv3");
}

TEST(WinogradConv2D, CfgForcesOrRefusesIt) {
  auto section_of = [](const std::string& keys) {
    return parse_cfg("[net]\ninput = 8x8x4\n[conv]\nfilters = 4\n" + keys, "t.cfg").value().sections[1];
  };
  auto options = [&](const std::string& keys) { return Conv2D::from_cfg(section_of(keys)); };
  ASSERT_TRUE(options("size = 3\npad = 1\nalgorithm = winograd\n").ok());
  ASSERT_TRUE(options("size = 5\nalgorithm = gemm\n").ok());
  ASSERT_TRUE(options("size = 5\nalgorithm = auto\n").ok());
  for (const char* keys : {"size = 5\nalgorithm = winograd\n", "size = 3\nstride = 2\nalgorithm = winograd\n",
                           "size = 3\npad = 3\nalgorithm = winograd\n"}) {
    auto made = options(keys);
    ASSERT_FALSE(made.ok()) << keys;
    EXPECT_NE(made.status().message().find("t.cfg"), std::string::npos) << made.status().message();
    EXPECT_NE(made.status().message().find("needs size = 3, stride = 1 and pad <= 2"), std::string::npos)
        << made.status().message();
  }
  auto unknown = options("size = 3\nalgorithm = fft\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("'fft' is not auto, gemm or winograd"), std::string::npos)
      << unknown.status().message();
}


// Three 3x3 stride-1 convs left to auto (the first has no dx to time; the third reads 4 channels,
// too few for Winograd to pay), one forced to the GEMM, one 5x5 that Winograd cannot run:
// auto_convs are the first two.
constexpr const char* kTunedCfg =
    "[net]\ninput = 10x10x8\nloss = softmax_cross_entropy\n"
    "[conv]\nfilters = 8\nsize = 3\npad = 1\n[relu]\n"
    "[conv]\nfilters = 4\nsize = 3\npad = 1\n[relu]\n"
    "[conv]\nfilters = 8\nsize = 3\npad = 1\n[relu]\n"
    "[conv]\nfilters = 8\nsize = 3\npad = 1\nalgorithm = gemm\n"
    "[conv]\nfilters = 4\nsize = 5\n[global_avgpool]\n[dense]\nunits = 3\n";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConvTuning, MeasuresOnceThenReadsTheCache) {
  const std::string dir = make_temp_folder("rg_conv_tuning_");
  const ScopedEnv cache("RETROGRAD_CACHE", dir);
  std::unique_ptr<Model> model = build_model(1, kTunedCfg);
  ASSERT_EQ(auto_convs(*model).size(), 2u);
  ThreadPool pool(2);
  LayerContext ctx;
  ctx.pool = &pool;
  auto first = choose_conv_algorithms(*model, 4, ctx);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_EQ(first.value().size(), 2u);
  for (const ConvChoice& c : first.value()) {
    EXPECT_EQ(c.source, "measured") << c.layer;
    EXPECT_GT(c.gemm_ms, 0);
    EXPECT_GT(c.winograd_ms, 0);
    EXPECT_EQ(c.algorithm, c.winograd_ms < 0.95 * c.gemm_ms ? ConvAlgorithm::winograd : ConvAlgorithm::gemm);
  }
  const std::string file = read_text(dir + "/conv-algorithms.txt");
  EXPECT_EQ(file.rfind("# retrograd conv algorithm timings v1\n", 0), 0u) << file;
  EXPECT_NE(file.find("10x10x8 -> 8 pad 1|batch 4|no dx\t"), std::string::npos) << file;  // the first layer
  EXPECT_NE(file.find("10x10x8 -> 4 pad 1|batch 4|with dx\t"), std::string::npos) << file;
  EXPECT_EQ(file.find("10x10x4 -> 8 pad 1"), std::string::npos) << file;

  std::unique_ptr<Model> again = build_model(2, kTunedCfg);
  auto second = choose_conv_algorithms(*again, 4, ctx);
  ASSERT_TRUE(second.ok()) << second.status().message();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(second.value()[i].source, "cached");
    EXPECT_EQ(second.value()[i].algorithm, first.value()[i].algorithm);
    EXPECT_EQ(auto_convs(*again)[i]->algorithm(), first.value()[i].algorithm);
  }
  EXPECT_EQ(conv_algorithms_text(*again), conv_algorithms_text(*model));
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

// Timings written by hand decide; a malformed cache (an unreadable line, a time that is no time)
// is measured around and named, and left as it is.
TEST(ConvTuning, TheCacheDecidesAndABadOneIsSaid) {
  const std::string dir = make_temp_folder("rg_conv_tuning_");
  const ScopedEnv cache("RETROGRAD_CACHE", dir);
  std::unique_ptr<Model> model = build_model(1, kTunedCfg);
  LayerContext ctx;
  ASSERT_TRUE(choose_conv_algorithms(*model, 4, ctx).ok());
  std::string file = read_text(dir + "/conv-algorithms.txt");
  std::string flipped;  // each line's gemm 1 ms, winograd 2 ms, then the second layer's reversed
  std::istringstream lines(file);
  for (std::string line; std::getline(lines, line);) {
    const bool second = line.find("10x10x8 -> 4") != std::string::npos;
    flipped += line[0] == '#' ? line + "\n" : line.substr(0, line.find('\t')) + (second ? "\t3\t2\n" : "\t1\t2\n");
  }
  std::ofstream(dir + "/conv-algorithms.txt", std::ios::binary) << flipped;
  ASSERT_TRUE(choose_conv_algorithms(*model, 4, ctx).ok());
  EXPECT_EQ(conv_algorithms_text(*model), "conv1=gemm,conv2=winograd");
  std::string crlf;  // the same file saved by a Windows editor: the same choice
  for (const char c : flipped) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  std::ofstream(dir + "/conv-algorithms.txt", std::ios::binary) << crlf;
  auto from_crlf = choose_conv_algorithms(*model, 4, ctx);
  ASSERT_TRUE(from_crlf.ok());
  EXPECT_EQ(from_crlf.value()[1].source, "cached");
  EXPECT_EQ(conv_algorithms_text(*model), "conv1=gemm,conv2=winograd");

  for (const char* times : {"fast\t1", "1e308\t1", "inf\t1", "1\tnan", "-1\t1"}) {
    const std::string bad = "# retrograd conv algorithm timings v1\nsome case\t" + std::string(times) + "\n";
    std::ofstream(dir + "/conv-algorithms.txt", std::ios::binary) << bad;
    auto redone = choose_conv_algorithms(*model, 4, ctx);
    ASSERT_TRUE(redone.ok());
    EXPECT_NE(redone.value()[0].source.find("measured; the cache was not used: " + dir +
                                            "/conv-algorithms.txt:2: not '<case> TAB <gemm ms> TAB <winograd ms>'"),
              std::string::npos)
        << times << ": " << redone.value()[0].source;
    EXPECT_NE(redone.value()[0].source.find("not cached: " + dir + "/conv-algorithms.txt is left as it is"),
              std::string::npos)
        << times << ": " << redone.value()[0].source;
    EXPECT_EQ(read_text(dir + "/conv-algorithms.txt"), bad) << times;
  }
  {  // 2 MiB (sparse): refused by its size, never read whole, left as it is
    std::filesystem::resize_file(dir + "/conv-algorithms.txt", uintmax_t{2} << 20);
    auto large = choose_conv_algorithms(*model, 4, ctx);
    ASSERT_TRUE(large.ok());
    EXPECT_NE(large.value()[0].source.find("the cache was not used: " + dir + "/conv-algorithms.txt: 2.0 MiB, more " +
                                           "than the 1.0 MiB the conv algorithm cache may hold"),
              std::string::npos)
        << large.value()[0].source;
    EXPECT_EQ(std::filesystem::file_size(dir + "/conv-algorithms.txt"), uintmax_t{2} << 20);
  }

  ctx.gemm = GemmPrecision::fixed_point;  // int8 training: the GEMM, nothing timed
  auto int8 = choose_conv_algorithms(*model, 4, ctx);
  ASSERT_TRUE(int8.ok());
  EXPECT_EQ(conv_algorithms_text(*model), "conv1=gemm,conv2=gemm");
  EXPECT_EQ(int8.value()[1].source, "fixed-point products run on the GEMM");
  // A layer's own precision decides, not the run's: conv2 in fp32 within the fixed-point run is
  // timed (from the cache), in the fp32 run a conv2 of its own fixed point is not.
  model->layers()[2]->set_own_precision(OwnPrecision{"fp32", GemmPrecision::f32, {}});
  auto own_f32 = choose_conv_algorithms(*model, 4, ctx);
  ASSERT_TRUE(own_f32.ok());
  ASSERT_EQ(own_f32.value().size(), 2u);
  EXPECT_EQ(own_f32.value()[0].layer, "conv1");
  EXPECT_EQ(own_f32.value()[1].layer, "conv2");
  EXPECT_EQ(own_f32.value()[1].source.rfind("measured", 0), 0u) << own_f32.value()[1].source;
  ctx.gemm = GemmPrecision::f32;
  model->layers()[2]->set_own_precision(OwnPrecision{"int8-train", GemmPrecision::fixed_point, int8_training_roles()});
  auto own_fixed = choose_conv_algorithms(*model, 4, ctx);
  ASSERT_TRUE(own_fixed.ok());
  EXPECT_EQ(own_fixed.value()[1].source, "fixed-point products run on the GEMM");
  EXPECT_EQ(own_fixed.value()[1].algorithm, ConvAlgorithm::gemm);  // conv1's depends on its timings
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TEST(ConvTuning, CheckpointTextRoundTripsAndItsErrorsChangeNothing) {
  std::unique_ptr<Model> model = build_model(1, kTunedCfg);
  ASSERT_TRUE(set_conv_algorithms(*model, "conv2=winograd,conv1=gemm", "ck: ").ok());
  EXPECT_EQ(conv_algorithms_text(*model), "conv1=gemm,conv2=winograd");
  const std::pair<const char*, const char*> bad[] = {
      {"conv1=gemm", "ck: no algorithm for layer 'conv2'"},
      {"conv1=gemm,conv1=winograd", "ck: layer 'conv1' is named twice"},
      {"conv1=fft,conv2=gemm", "ck: 'conv1=fft' is not <layer>=gemm or <layer>=winograd"},
      {"conv1=gemm,,conv2=gemm", "ck: '' is not <layer>=gemm or <layer>=winograd"},
      {"conv1=gemm,conv2=gemm,conv3=gemm", "ck: layer 'conv3' is not one of the convolutions whose algorithm is auto (conv1, conv2)"},
      {"conv1=gemm,conv2=gemm,conv4=gemm", "ck: layer 'conv4' is not one of the convolutions whose algorithm is auto"}};
  for (const auto& [text, message] : bad) {
    const Status s = set_conv_algorithms(*model, text, "ck: ");
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.message().rfind(message, 0), 0u) << s.message();
    EXPECT_EQ(conv_algorithms_text(*model), "conv1=gemm,conv2=winograd") << text;
  }
}

}  // namespace
}  // namespace rg
