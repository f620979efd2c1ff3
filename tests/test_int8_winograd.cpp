// The int8 Winograd F(2x2, 3x3) conv: every ISA's input transform and tile kernel bit-exact
// against the reference (the extremes included), the weight transform against its formula, and
// the whole stage against the im2col + GEMM stage on random convs: the same bits, on every ISA
// and thread count, up to the largest channel count it takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "isa_param.h"
#include "ops/fixed_point.h"
#include "quant/int8_stages.h"
#include "quant/int8_winograd.h"

namespace rg {
namespace {

constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

int32_t uniform_int(Rng& rng, int32_t lo, int32_t hi) {  // in [lo, hi]
  return std::min(hi, lo + static_cast<int32_t>(std::floor(rng.uniform(0, 1) * (static_cast<double>(hi) - lo + 1))));
}

// A value of [-bound, bound] (weights: [-127, 127] at bound 127) or, by regime, only the ends:
// 0 uniform, 1 both ends, 2 the low end (activations: -128, for which bound is 128), 3 the high end.
int32_t draw(Rng& rng, int regime, int32_t lo, int32_t hi) {
  if (regime == 1) return rng.uniform(0, 1) < 0.5 ? lo : hi;
  if (regime == 2) return lo;
  if (regime == 3) return hi;
  return uniform_int(rng, lo, hi);
}

class WinogradOnIsa : public OnEveryIsa {
 protected:
  const Qs8WinogradKernel& fast() const { return qs8_winograd_kernel(GetParam()); }  // VNNI's where the CPU has it
  const Qs8WinogradKernel& without_vnni() const { return qs8_winograd_kernel(GetParam(), false); }
  const Qs8WinogradKernel& ref() const { return qs8_winograd_kernel(Isa::reference); }
};

INSTANTIATE_TEST_SUITE_P(AllIsas, WinogradOnIsa, ::testing::ValuesIn(all_isas()), isa_label);

TEST_P(WinogradOnIsa, InputTransformIsBitExact) {
  Rng rng(21, 0);
  for (int regime = 0; regime < 4; ++regime)
    for (int64_t channels : {1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 64, 71}) {
      // Each pixel its own array of exactly `channels` bytes, as the contract reads them.
      std::vector<std::vector<int8_t>> pixels(16);
      const int8_t* px[16];
      for (int i = 0; i < 16; ++i) {
        for (int64_t c = 0; c < channels; ++c) pixels[i].push_back(static_cast<int8_t>(draw(rng, regime, -128, 127)));
        px[i] = pixels[i].data();
      }
      const int64_t cpad = winograd_padded_channels(channels), v_stride = cpad + 8;
      std::vector<int16_t> got(static_cast<size_t>(16 * v_stride), 777), want(got);
      fast().input(channels, cpad, px, got.data(), v_stride);
      ref().input(channels, cpad, px, want.data(), v_stride);
      ASSERT_EQ(got, want) << fast().name << ", " << channels << " channels, regime " << regime;
      for (int64_t c = 0; c < cpad; ++c) ASSERT_LE(std::abs(want[static_cast<size_t>(5 * v_stride + c)]), 512);
    }
}

// Requantization constants for NR columns: random, the multiplier's edges and zero, every
// shift; a bias that moves the result; with and without a fused ReLU.
Qs8OutputStage random_output_stage(int64_t n, Rng& rng, bool relu) {
  Qs8OutputStage out;
  for (int64_t j = 0; j < n; ++j) {
    const double which = rng.uniform(0, 1);
    out.multiplier.push_back(which < 0.1 ? 0 : which < 0.2 ? (1 << 30) : which < 0.3 ? kMax : uniform_int(rng, 1 << 30, kMax));
    out.shift.push_back(uniform_int(rng, 0, 31));
    out.bias.push_back(uniform_int(rng, -3000000, 3000000));
  }
  pad_columns(&out);
  out.zero_point = uniform_int(rng, -128, 127);
  out.lo = relu ? out.zero_point : -128;
  return out;
}

// The tile kernel of `kernel` against the reference on V and U drawn from their whole ranges
// (|V| <= 512, |U| <= 1143) by the regime, some output pixels absent; nothing may be written
// outside the live columns of the present pixels.
void expect_tile_matches_reference(const Qs8WinogradKernel& kernel, int64_t mr, int64_t nc, int64_t cpairs,
                                   int regime, bool pool, Rng& rng) {
  const Qs8WinogradKernel& ref = qs8_winograd_kernel(Isa::reference);
  const int64_t nr = kernel.nr, ldv = 2 * cpairs + 8, v_stride = kernel.mr * ldv + 16;
  std::vector<int16_t> v(static_cast<size_t>(16 * v_stride)), u(static_cast<size_t>(16 * cpairs * nr * 2) + 16);
  for (auto& x : v) x = static_cast<int16_t>(draw(rng, regime, -512, 512));
  for (auto& x : u) x = static_cast<int16_t>(draw(rng, regime, -1143, 1143));
  int16_t* u_aligned = u.data() + (32 - reinterpret_cast<uintptr_t>(u.data()) % 32) % 32 / 2;
  const Qs8OutputStage out = random_output_stage(nr, rng, rng.uniform(0, 1) < 0.5);
  const Qs8Requant rq{out.bias.data(), out.multiplier.data(), out.shift.data(), out.zero_point, out.lo, out.hi};
  const int64_t ldc = nr + 3;
  std::vector<int8_t> got(static_cast<size_t>(4 * mr * ldc), 77), want(got);
  constexpr int kMaxOutputs = 4 * 16;  // 4 pixels of up to 16 tiles
  ASSERT_LE(4 * mr, kMaxOutputs);
  int8_t *got_at[kMaxOutputs] = {}, *want_at[kMaxOutputs] = {};
  for (int64_t i = 0; i < 4 * mr; ++i)
    if (rng.uniform(0, 1) < 0.85) {
      got_at[i] = got.data() + i * ldc;
      want_at[i] = want.data() + i * ldc;
    }
  kernel.tile(mr, nc, cpairs, v.data(), v_stride, ldv, u_aligned, &rq, pool, got_at);
  // The reference in panels of its own nr: the same products, 8 columns at a time.
  for (int64_t j0 = 0; j0 < nc; j0 += ref.nr) {
    std::vector<int16_t> panel(static_cast<size_t>(16 * cpairs * ref.nr * 2));
    for (int64_t p = 0; p < 16 * cpairs; ++p)
      for (int64_t j = 0; j < ref.nr && j0 + j < nr; ++j)
        for (int e = 0; e < 2; ++e)
          panel[static_cast<size_t>((p * ref.nr + j) * 2 + e)] = u_aligned[(p * nr + j0 + j) * 2 + e];
    const Qs8Requant shifted{rq.bias + j0, rq.multiplier + j0, rq.shift + j0, rq.zero_point, rq.lo, rq.hi};
    int8_t* at[kMaxOutputs] = {};
    for (int64_t i = 0; i < 4 * mr; ++i) at[i] = want_at[i] ? want_at[i] + j0 : nullptr;
    for (int64_t r0 = 0; r0 < mr; r0 += ref.mr)
      ref.tile(std::min<int64_t>(ref.mr, mr - r0), std::min<int64_t>(ref.nr, nc - j0), cpairs, v.data() + r0 * ldv,
               v_stride, ldv, panel.data(), &shifted, pool, at + (pool ? 1 : 4) * r0);
  }
  ASSERT_EQ(got, want) << kernel.name << " mr " << mr << ", nc " << nc << ", cpairs " << cpairs << ", regime "
                       << regime << (pool ? ", pooled" : "");
}

// Every row and live column count, with and without the pooling.
TEST_P(WinogradOnIsa, TileIsBitExact) {
  Rng rng(23, 0);
  for (const Qs8WinogradKernel* kernel : {&fast(), &without_vnni()})
    for (int regime = 0; regime < 4; ++regime)
      for (bool pool : {false, true})
        for (int64_t cpairs : {4, 8, 16, 36})
          for (int64_t mr = 1; mr <= kernel->mr; ++mr)
            for (int64_t nc = 1; nc <= kernel->nr; nc += (nc < 3 || nc + 2 > kernel->nr) ? 1 : 3)
              expect_tile_matches_reference(*kernel, mr, nc, cpairs, regime, pool, rng);
}

// 4096 channels of 512 x 1143 (or -512 x -1143) sum to 2.4e9 per position: the int32 sums wrap,
// as the contract says, the same way in every kernel (the stage never takes so many channels).
TEST_P(WinogradOnIsa, TileSumsWrapLikeTheReference) {
  Rng rng(27, 0);
  for (const Qs8WinogradKernel* kernel : {&fast(), &without_vnni()})
    for (int regime : {1, 2, 3})
      for (bool pool : {false, true})
        expect_tile_matches_reference(*kernel, kernel->mr, kernel->nr, 2048, regime, pool, rng);
}

TEST(Winograd, WeightTransformIsGPrimeGGPrimeTransposed) {
  // One filter of one channel: U = G' g G'^T by hand for g = [[1, 2, 3], [4, 5, 6], [7, 8, 9]].
  const std::vector<int8_t> g = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<int16_t> want = {4,  12, 4,  12,   // row 0: 2 g[0] G'^T = 2 [2, 6, 2, 6]
                                     24, 45, 15, 36,   // row 1: sum of rows [12, 15, 18]
                                     8,  15, 5,  12,   // row 2: g0 - g1 + g2 = [4, 5, 6]
                                     28, 48, 16, 36};  // row 3: 2 g[2]
  EXPECT_EQ(winograd_weights(1, 1, g.data()), want);
}

// A conv's operands: int8 weights q [9 c x k] of the regime, an output stage as quantize_layer
// makes it (bias folded with the input's zero point), and inputs [n, h, w, c].
struct RandomConv {
  ConvGeometry g;
  std::vector<int8_t> q, x;
  Qs8OutputStage out;
  QuantParams in;
};

RandomConv random_conv(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int64_t pad, int regime, Rng& rng) {
  RandomConv conv;
  auto g = conv_geometry(h, w, c, 3, 1, pad);
  EXPECT_TRUE(g.ok());
  conv.g = g.value();
  conv.in.zero_point = regime == 2 ? -128 : regime == 3 ? 127 : uniform_int(rng, -128, 127);
  for (int64_t i = 0; i < 9 * c * k; ++i) conv.q.push_back(static_cast<int8_t>(draw(rng, regime, -127, 127)));
  for (int64_t i = 0; i < n * h * w * c; ++i) conv.x.push_back(static_cast<int8_t>(draw(rng, regime, -128, 127)));
  for (int64_t j = 0; j < k; ++j) {
    int64_t column_sum = 0;
    for (int64_t p = 0; p < 9 * c; ++p) column_sum += conv.q[static_cast<size_t>(p * k + j)];
    conv.out.bias.push_back(static_cast<int32_t>(uniform_int(rng, -20000, 20000) - conv.in.zero_point * column_sum));
    const QuantMultiplier m = quantize_multiplier(std::ldexp(rng.uniform(0.5, 1), -uniform_int(rng, 8, 16 + (c > 64 ? 8 : 0))));
    conv.out.multiplier.push_back(m.multiplier);
    conv.out.shift.push_back(m.shift);
  }
  pad_columns(&conv.out);
  conv.out.zero_point = uniform_int(rng, -128, 127);
  conv.out.lo = rng.uniform(0, 1) < 0.5 ? conv.out.zero_point : -128;
  return conv;
}

// The Winograd stage's and the GEMM stage's outputs of one conv on `isa` (with `pool`: the
// Winograd stage with the pooling fused, the GEMM stage then the int8 max pooling), each on 1
// and 2 threads.
void expect_same_bits_as_gemm(const RandomConv& conv, int64_t n, bool pool, Isa isa, const std::string& what) {
  ThreadPool two(2);
  const ConvGeometry& g = conv.g;
  auto gemm = make_gemm_stage(g, conv.q, conv.out, conv.in, isa, "gemm");
  auto winograd = make_winograd_stage(g, conv.q, conv.out, conv.in, pool, isa, "winograd");
  ASSERT_TRUE(gemm.ok() && winograd.ok());
  std::vector<Int8Stage*> gemm_path = {gemm.value().get()};
  std::unique_ptr<Int8Stage> max_pool;
  if (pool) {
    auto pooling = conv_geometry(g.out_h, g.out_w, static_cast<int64_t>(conv.q.size()) / g.patch_size(), 2, 2, 0);
    ASSERT_TRUE(pooling.ok() && fusable_max_pool_2x2(g, pooling.value()));
    max_pool = make_max_pool_stage(pooling.value());
    gemm_path.push_back(max_pool.get());
  }
  auto run = [&](const std::vector<Int8Stage*>& stages, ThreadPool* threads) {
    auto x = Tensor::zeros(Shape{n, g.height, g.width, g.channels}, DType::i8, "x");
    EXPECT_TRUE(x.ok());
    std::memcpy(x.value().data<int8_t>(), conv.x.data(), conv.x.size());
    Tensor in = x.take();
    for (Int8Stage* stage : stages) {
      EXPECT_TRUE(stage->reserve(n).ok());
      auto y = Tensor::zeros(stage->out_shape.batched(n), DType::i8, "y");
      EXPECT_TRUE(y.ok());
      std::memset(y.value().data<int8_t>(), 0x55, y.value().bytes());
      stage->run(in, y.value(), threads);
      in = y.take();
    }
    return std::vector<int8_t>(in.data<int8_t>(), in.data<int8_t>() + in.bytes());
  };
  const std::vector<int8_t> want = run(gemm_path, nullptr);
  ASSERT_EQ(run(gemm_path, &two), want) << what << " on " << isa_name(isa) << ": the GEMM stage on 2 threads";
  ASSERT_EQ(run({winograd.value().get()}, nullptr), want) << what << " on " << isa_name(isa);
  ASSERT_EQ(run({winograd.value().get()}, &two), want) << what << " on " << isa_name(isa) << ", 2 threads";
}

TEST_P(WinogradOnIsa, StageGivesTheGemmStagesBits) {
  Rng rng(29, 0);
  struct Case {
    int64_t n, h, w, c, k, pad;
  };
  // Odd and even sizes (partial tiles; pooled, an odd last row or column dropped), padding 0 to
  // 2, channels and filters below, at and above the vectors and panels; the 7 x 28 x 28 case
  // spans several passes of blocks.
  const Case cases[] = {{3, 5, 7, 8, 1, 1},  {2, 3, 3, 9, 5, 0},    {2, 4, 6, 13, 16, 1}, {3, 9, 8, 16, 17, 2},
                        {1, 14, 14, 32, 64, 1}, {2, 7, 11, 33, 40, 0}, {1, 6, 5, 64, 32, 1}, {7, 28, 28, 32, 32, 1}};
  for (int regime = 0; regime < 4; ++regime)
    for (const Case& t : cases)
      for (bool pool : {false, true}) {
        if (regime > 0 && t.n * t.h * t.w > 1000) continue;  // the large case once
        if (pool && (t.h + 2 * t.pad - 2 < 2 || t.w + 2 * t.pad - 2 < 2)) continue;
        const RandomConv conv = random_conv(t.n, t.h, t.w, t.c, t.k, t.pad, regime, rng);
        expect_same_bits_as_gemm(conv, t.n, pool, GetParam(),
                                 std::to_string(t.n) + " x " + std::to_string(t.h) + "x" + std::to_string(t.w) + "x" +
                                     std::to_string(t.c) + " -> " + std::to_string(t.k) + ", pad " +
                                     std::to_string(t.pad) + ", regime " + std::to_string(regime) +
                                     (pool ? ", pooled" : ""));
      }
}

TEST_P(WinogradOnIsa, LargestChannelCountAtTheExtremesIsExact) {
  // At the largest channel count the stage takes, every product at its most (regime 2: -128
  // times -127): the kernels' int32 holds 4 x sum = 4 * 9 * 3669 * 128 * 127 = 2,147,157,504, just
  // under 2^31 (the folded bias, -zero point x column sum, brings the result back to the
  // bias's small random part, which the requantization maps inside int8). Regime 3: 127 * 127.
  ASSERT_EQ(kWinogradMaxChannels, 3669);
  Rng rng(31, 0);
  for (int regime : {2, 3}) {
    const RandomConv conv = random_conv(1, 4, 5, kWinogradMaxChannels, 3, 0, regime, rng);
    expect_same_bits_as_gemm(conv, 1, regime == 3, GetParam(), "3669 channels, regime " + std::to_string(regime));
  }
}

TEST(Winograd, FitsOnly3x3Stride1WithinTheChannelBound) {
  auto fits = [](int64_t c, int64_t kernel, int64_t stride, int64_t pad) {
    return winograd_fits(conv_geometry(10, 10, c, kernel, stride, pad).value());
  };
  EXPECT_TRUE(fits(32, 3, 1, 1));
  EXPECT_TRUE(fits(8, 3, 1, 0));
  EXPECT_TRUE(fits(kWinogradMaxChannels, 3, 1, 2));
  EXPECT_FALSE(fits(kWinogradMaxChannels + 1, 3, 1, 1));
  EXPECT_FALSE(fits(kWinogradMinChannels - 1, 3, 1, 1));
  EXPECT_FALSE(fits(32, 5, 1, 2));
  EXPECT_FALSE(fits(32, 3, 2, 1));
  EXPECT_STREQ(qs8_winograd_kernel(Isa::sse3).name, "qs8_winograd_4x8__sse2");
  EXPECT_STREQ(qs8_winograd_kernel(Isa::avx).name, "qs8_winograd_4x8__sse2");
  EXPECT_STREQ(qs8_winograd_kernel(Isa::avx2_fma).name, "qs8_winograd_6x16__avx2");
  EXPECT_STREQ(qs8_winograd_kernel(Isa::avx512, false).name, "qs8_winograd_6x16__avx2");
  EXPECT_STREQ(qs8_winograd_kernel(Isa::avx512, true).name, "qs8_winograd_12x32__avx512_vnni");
  EXPECT_STREQ(qs8_winograd_kernel(Isa::avx2_fma, true).name, "qs8_winograd_6x16__avx2");
  EXPECT_STREQ(qs8_winograd_kernel(Isa::avx512).name,
               detect_cpu().features.avx512vnni ? "qs8_winograd_12x32__avx512_vnni" : "qs8_winograd_6x16__avx2");
}

}  // namespace
}  // namespace rg
