// Fixed-point formats (issue 34): the scale rules and roundings, the products of any width
// against their plain-loop references on every ISA level (2 to 8 bits on the int8 tiles, up to
// 16 on the int16 tiles, bit for bit; beside an f32 operand fake quantized: the f32 GEMM of the
// grid values), and the names' grammar.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "base/rng.h"
#include "cpu/kernel_tables.h"
#include "isa_param.h"
#include "ops/fixed_point_format.h"
#include "ops/fixed_point_gemm.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "nn/cfg.h"
#include "nn/layer_precision_option.h"
#include "nn/model.h"
#include "ops/fixed_point_precision.h"
#include "train/trainer.h"

namespace rg {
namespace {

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

std::vector<float> random_floats(int64_t count, Rng& rng, double scale) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = static_cast<float>(rng.uniform(-scale, scale));
  return v;
}

FixedPointFormat format(int bits, ScaleRule scale, Rounding rounding, int fraction_bits = 0) {
  FixedPointFormat f{bits, scale, rounding};
  f.fraction_bits = fraction_bits;
  return f;
}

FixedPointFormat with_zero_point(FixedPointFormat f) {
  f.affine = true;
  return f;
}
FixedPointFormat per_channel(FixedPointFormat f) {
  f.per_channel = true;
  return f;
}

// ---------------------------------------------------------------- formats

TEST(FixedPointFormat, GridBoundsAndScales) {
  for (int bits = kMinFixedPointBits; bits <= kMaxFixedPointBits; ++bits) {
    const FixedPointFormat f = format(bits, ScaleRule::real, Rounding::nearest);
    EXPECT_EQ(f.qmax(), (1 << (bits - 1)) - 1) << bits;
    EXPECT_EQ(product_route(f, f, ChannelAxis::columns, Isa::avx2_fma),
              bits <= 8 ? ProductRoute::int8_tiles : ProductRoute::int16_tiles) << bits;
    EXPECT_EQ(product_route(f, f, ChannelAxis::columns, Isa::sse2), ProductRoute::int16_tiles)
        << bits << ": at sse2 the int16 tile serves every width (Qs16GemmKernel::serves_int8)";
    EXPECT_EQ(product_route(f, FixedPointFormat{}), ProductRoute::fake_quantized) << bits;
    // The largest magnitude lands on qmax exactly; nothing passes it.
    const float mult = fixed_point_multiplier(f, 3.0f);
    EXPECT_EQ(fixed_point_quantize_nearest(3.0f, mult, f.qmax()), f.qmax()) << bits;
    EXPECT_EQ(fixed_point_quantize_nearest(-3.0f, mult, f.qmax()), -f.qmax()) << bits;
    EXPECT_EQ(fixed_point_quantize_nearest(1e30f, mult, f.qmax()), f.qmax()) << bits;
  }
  // 8 bits, real scale: int8 training's multiplier, bit for bit.
  for (float m : {0.5f, 3.0f, 1e-20f, 7e30f}) {
    EXPECT_EQ(bits_of(fixed_point_multiplier(int8_format(), m)), bits_of(127.0f / m)) << m;
  }
  EXPECT_EQ(fixed_point_multiplier(int8_format(), 0.0f), 0.0f);
  EXPECT_EQ(fixed_point_multiplier(int8_format(), std::nanf("")), 0.0f);
  // Power of two: the least 2^e with 2^e * qmax >= max|X|.
  const FixedPointFormat p2 = format(4, ScaleRule::power_of_two, Rounding::nearest);  // qmax 7
  EXPECT_EQ(fixed_point_step(p2, 7.0f), 1.0);
  EXPECT_EQ(fixed_point_step(p2, 7.5f), 2.0);
  EXPECT_EQ(fixed_point_step(p2, 3.5f), 0.5);
  EXPECT_EQ(fixed_point_step(p2, 3.6f), 1.0);
  EXPECT_EQ(fixed_point_multiplier(p2, 3.5f), 2.0f);
  EXPECT_EQ(fixed_point_step(p2, 1e38f), std::ldexp(1.0, 124));
  const FixedPointFormat p2_two_bits = format(2, ScaleRule::power_of_two, Rounding::nearest);  // qmax 1
  EXPECT_EQ(fixed_point_step(p2_two_bits, 3e38f), std::ldexp(1.0, 126));  // 2^128 held to a normal float's range
  EXPECT_EQ(fixed_point_multiplier(p2_two_bits, 3e38f), std::ldexp(1.0f, -126));
  // Fixed: 2^-fraction_bits whatever the values; past the range saturates.
  const FixedPointFormat fixed = format(8, ScaleRule::fixed, Rounding::nearest, 6);
  EXPECT_EQ(fixed_point_multiplier(fixed, 0.0f), 64.0f);
  EXPECT_EQ(fixed_point_step(fixed, 123.0f), 1.0 / 64);
  EXPECT_EQ(fixed_point_quantize_nearest(100.0f, 64.0f, 127), 127);
  EXPECT_EQ(fixed_point_quantize_nearest(-0.5f / 64, 64.0f, 127), 0);  // half to even
  EXPECT_EQ(fixed_point_quantize_nearest(1.5f / 64, 64.0f, 127), 2);
}

// A zero point spreads the grid over [min(0, min), max(0, max)]: 0 stays a grid point.
TEST(FixedPointFormat, ZeroPointGrids) {
  const FixedPointFormat a4 = with_zero_point(format(4, ScaleRule::real, Rounding::nearest));
  const FixedPointGrid relu = fixed_point_grid(a4, 0.5f, 2.0f);  // [0, 2]: R 1, step 1/7
  EXPECT_EQ(relu.zero, -7);
  EXPECT_FLOAT_EQ(relu.multiplier, 7.0f);
  EXPECT_EQ(fixed_point_quantize_nearest(0.0f, relu.multiplier, 7, relu.zero), -7);
  EXPECT_EQ(fixed_point_quantize_nearest(2.0f, relu.multiplier, 7, relu.zero), 7);
  EXPECT_EQ(fixed_point_quantize_nearest(1.0f, relu.multiplier, 7, relu.zero), 0);
  EXPECT_EQ(fixed_point_quantize_nearest(-5.0f, relu.multiplier, 7, relu.zero), -7) << "clamped at the bottom";
  EXPECT_EQ(fixed_point_quantize_nearest(std::nanf(""), relu.multiplier, 7, relu.zero), -7) << "NaN gives the zero";
  const FixedPointGrid skew = fixed_point_grid(a4, -1.0f, 3.0f);  // R 2, step 2/7, zero -7 + 3.5 -> -7 - round(-3.5)
  EXPECT_EQ(skew.zero, -3);
  EXPECT_EQ(fixed_point_quantize_nearest(0.0f, skew.multiplier, 7, skew.zero), skew.zero);
  EXPECT_EQ(fixed_point_quantize_stochastic(0.0f, skew.multiplier, 7, 0.99f, skew.zero), skew.zero);
  const FixedPointGrid symmetric = fixed_point_grid(format(4, ScaleRule::real, Rounding::nearest), -1.0f, 3.0f);
  EXPECT_EQ(symmetric.zero, 0);
  EXPECT_FLOAT_EQ(symmetric.half_range, 3.0f);
  // A static step (-fl) too short for the range centres the grid on it; one long enough starts
  // the grid at the range's bottom.
  FixedPointFormat fixed = with_zero_point(format(8, ScaleRule::fixed, Rounding::nearest, 6));  // step 1/64, 254 steps
  EXPECT_EQ(fixed_point_grid(fixed, -5.0f, 5.0f).zero, 0) << "[-5, 5] centred";
  EXPECT_EQ(fixed_point_grid(fixed, -1.0f, 3.0f).zero, -64) << "[-1, 3]: centred on 1 (64 steps)";
  EXPECT_EQ(fixed_point_grid(fixed, -1.0f, 5.0f).zero, -127) << "[-1, 5]: centred on 2 is zero -128, held to -127";
  EXPECT_EQ(fixed_point_grid(fixed, 0.0f, 3.0f).zero, -127) << "[0, 3] fits: starts at 0";
  const FixedPointGrid pinned = fixed_point_grid(fixed, -5.0f, 5.0f);
  EXPECT_GT(fixed_point_quantize_nearest(1.0f, pinned.multiplier, 127, pinned.zero), 0) << "positive values stay positive";
  const FixedPointGrid huge = fixed_point_grid(a4, -3e38f, 3e38f);
  EXPECT_TRUE(std::isfinite(huge.half_range));
  EXPECT_EQ(huge.zero, 0);
}

TEST(FixedPointFormat, StochasticRoundingIsUnbiasedAtEveryWidth) {
  const int64_t draws = 100000;
  for (int bits : {2, 4, 12, 16}) {
    const int32_t qmax = (1 << (bits - 1)) - 1;
    const float mult = static_cast<float>(qmax) / 1.0f;
    for (float x : {0.3f, -0.77f, 0.999f}) {
      double sum = 0;
      for (int64_t i = 0; i < draws; ++i) {
        const int32_t q = fixed_point_quantize_stochastic(x, mult, qmax, int8_rounding_uniform(5, static_cast<uint64_t>(i)));
        ASSERT_TRUE(q == static_cast<int32_t>(std::floor(x * mult)) || q == static_cast<int32_t>(std::floor(x * mult)) + 1);
        sum += q;
      }
      EXPECT_NEAR(sum / draws, static_cast<double>(x) * mult, 5 * 0.5 / std::sqrt(static_cast<double>(draws)))
          << bits << " bits, x " << x;
    }
  }
}

// ---------------------------------------------------------------- products on the integer tiles

struct FormatPair {
  FixedPointFormat a, b;
  const char* label;
  int64_t b_channels = 0;  // a per-channel B's channels (its columns j % b_channels)
};

// Zero points on either side and per-channel B (issue 34's -zp and -pc), narrow and wide.
std::vector<FormatPair> affine_and_channel_pairs() {
  return {
      {with_zero_point(format(4, ScaleRule::real, Rounding::nearest)), per_channel(format(4, ScaleRule::real, Rounding::nearest)),
       "a4 zp x w4 pc", 5},
      {with_zero_point(format(8, ScaleRule::real, Rounding::stochastic)), format(8, ScaleRule::power_of_two, Rounding::stochastic),
       "a8 zp sr x p2 8 sr"},
      {format(8, ScaleRule::real, Rounding::stochastic), with_zero_point(format(6, ScaleRule::real, Rounding::nearest)),
       "e8 sr x a6 zp (B affine)"},
      {with_zero_point(format(5, ScaleRule::real, Rounding::stochastic)),
       with_zero_point(format(7, ScaleRule::power_of_two, Rounding::nearest)), "e5 zp sr x p2 w7 zp (both)"},
      {with_zero_point(format(3, ScaleRule::power_of_two, Rounding::nearest)),
       per_channel(format(2, ScaleRule::power_of_two, Rounding::stochastic)), "p2 a3 zp x p2 w2 pc sr", 3},
      {with_zero_point(format(7, ScaleRule::fixed, Rounding::nearest, 5)), per_channel(format(8, ScaleRule::real, Rounding::nearest)),
       "fixed a7.5 zp (saturating) x w8 pc", 16},
  };
}
std::vector<FormatPair> wide_affine_and_channel_pairs() {
  return {
      {with_zero_point(format(16, ScaleRule::real, Rounding::nearest)), per_channel(format(16, ScaleRule::real, Rounding::stochastic)),
       "a16 zp x w16 pc sr (split)", 7},
      {format(12, ScaleRule::real, Rounding::stochastic), with_zero_point(format(12, ScaleRule::real, Rounding::stochastic)),
       "12 sr x a12 zp sr"},
  };
}

std::vector<FormatPair> narrow_pairs() {
  return {
      {format(4, ScaleRule::real, Rounding::nearest), format(8, ScaleRule::real, Rounding::stochastic), "w4 x e8 sr"},
      {format(2, ScaleRule::real, Rounding::stochastic), format(3, ScaleRule::real, Rounding::stochastic), "2 sr x 3 sr"},
      {format(6, ScaleRule::power_of_two, Rounding::nearest), format(5, ScaleRule::power_of_two, Rounding::stochastic),
       "p2 6 x p2 5 sr"},
      {format(8, ScaleRule::fixed, Rounding::nearest, 5), format(7, ScaleRule::fixed, Rounding::stochastic, 9),
       "fixed 8.5 x fixed 7.9 sr (saturating)"},
  };
}

// 9 to 16 bits: direct int32 blocks (12 x 12: 256 pairs; 16 x 8: 258) and B split into its
// bytes (16 x 16, 15 x 15, 13 x 13: under 128 pairs a block).
std::vector<FormatPair> wide_pairs() {
  return {
      {format(16, ScaleRule::real, Rounding::nearest), format(16, ScaleRule::real, Rounding::stochastic), "16 x 16 sr (split)"},
      {format(15, ScaleRule::power_of_two, Rounding::stochastic), format(15, ScaleRule::real, Rounding::nearest),
       "p2 15 sr x 15 (split)"},
      {format(13, ScaleRule::real, Rounding::nearest), format(13, ScaleRule::real, Rounding::nearest), "13 x 13 (split)"},
      {format(12, ScaleRule::real, Rounding::stochastic), format(12, ScaleRule::real, Rounding::stochastic), "12 x 12"},
      {format(16, ScaleRule::fixed, Rounding::nearest, 12), format(8, ScaleRule::real, Rounding::nearest),
       "fixed 16.12 x 8 (saturating)"},
      {format(4, ScaleRule::real, Rounding::nearest), format(16, ScaleRule::real, Rounding::stochastic), "4 x 16"},
  };
}

class FixedPointGemm : public OnEveryIsa {};
INSTANTIATE_TEST_SUITE_P(AllIsas, FixedPointGemm, ::testing::ValuesIn(all_isas()), isa_label);

using DynamicGemm = void (*)(const GemmShape&, float, const float*, const float*, float, float*, ThreadPool*,
                             const Int8GemmOptions&);

// Every pair of formats, shapes around the tiles, depths past the int16 blocks (600).
void expect_products_match_the_reference(Isa isa, const std::vector<FormatPair>& pairs, DynamicGemm product) {
  uint64_t seed = 1;
  for (const FormatPair& pair : pairs)
    for (Trans ta : {Trans::no, Trans::yes})
      for (Trans tb : {Trans::no, Trans::yes})
        for (int64_t m : {1, 5, 33})
          for (int64_t n : {3, 16, 17})
            for (int64_t k : {1, 7, 130, 600}) {
              Rng rng(seed, 3);
              const int64_t lda = (ta == Trans::yes ? m : k) + 1, ldc = n + 3;
              const int64_t ldb = (tb == Trans::yes ? k : n) + (seed % 3 == 0 ? 0 : 2);  // contiguous B too
              const std::vector<float> a = random_floats((ta == Trans::yes ? k : m) * lda, rng, 3.0);
              const std::vector<float> b = random_floats((tb == Trans::yes ? n : k) * ldb, rng, 0.25);
              std::vector<float> c = random_floats(m * ldc, rng, 1.0), c_ref = c;
              Int8GemmOptions o;
              o.a = pair.a;
              o.b = pair.b;
              o.seed = seed++;
              o.b_channels = pair.b_channels;
              o.isa = isa;
              o.depth_block = seed % 4 == 1 ? 64 : 1024;  // zero points' row sums over several blocks too
              Int8GemmTrace trace, trace_ref;
              trace.want_sums = trace_ref.want_sums = true;
              o.trace = &trace;
              const GemmShape s{ta, tb, m, n, k, lda, ldb, ldc};
              ThreadPool pool(2);
              const float beta = seed % 2 == 0 ? 0.0f : -0.5f;  // both output loops
              product(s, 0.75f, a.data(), b.data(), beta, c.data(), &pool, o);
              o.trace = &trace_ref;
              int8_dynamic_gemm_ref(s, 0.75f, a.data(), b.data(), beta, c_ref.data(), o);
              const std::string what = std::string(pair.label) + " " + std::to_string(m) + "x" + std::to_string(n) +
                                       "x" + std::to_string(k) + (ta == Trans::yes ? " A^T" : "") +
                                       (tb == Trans::yes ? " B^T" : "");
              ASSERT_EQ(trace.sums, trace_ref.sums) << what;
              EXPECT_EQ(trace.key_a, trace_ref.key_a) << what;
              EXPECT_EQ(trace.key_b, trace_ref.key_b) << what;
              EXPECT_EQ(trace.key_a != 0, pair.a.rounding == Rounding::stochastic) << what;
              EXPECT_EQ(trace.key_b != 0, pair.b.rounding == Rounding::stochastic) << what;
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                  const size_t at = static_cast<size_t>(i * ldc + j);
                  ASSERT_EQ(bits_of(c[at]), bits_of(c_ref[at])) << what << " C[" << i << "][" << j << "]";
                }
              // Every sum is within the grids: |q - zero| <= 2 qmax (qmax without a zero point).
              const int64_t span = int64_t{pair.a.qmax()} * (pair.a.affine ? 2 : 1) * pair.b.qmax() * (pair.b.affine ? 2 : 1);
              for (int64_t sum : trace.sums) ASSERT_LE(std::llabs(sum), span * k) << what;
            }
}

TEST_P(FixedPointGemm, NarrowFormatsBitExactAgainstTheReference) {
  expect_products_match_the_reference(GetParam(), narrow_pairs(), int8_dynamic_gemm);
}

TEST_P(FixedPointGemm, ZeroPointsAndPerChannelScalesBitExactAgainstTheReference) {
  expect_products_match_the_reference(GetParam(), affine_and_channel_pairs(), int8_dynamic_gemm);
  expect_products_match_the_reference(GetParam(), affine_and_channel_pairs(), int16_dynamic_gemm);
  expect_products_match_the_reference(GetParam(), wide_affine_and_channel_pairs(), int16_dynamic_gemm);
}

TEST_P(FixedPointGemm, WideFormatsOnTheInt16TilesBitExactAgainstTheReference) {
  expect_products_match_the_reference(GetParam(), wide_pairs(), int16_dynamic_gemm);
  // Narrow formats on the int16 tiles too (the tiles take any width up to 16).
  expect_products_match_the_reference(GetParam(), narrow_pairs(), int16_dynamic_gemm);
}

// A level's fused split tile (Qs16GemmKernel::split) gives what its tile gives run on the high
// and the low bytes' panels apart, bit for bit: values at the extremes, 1 and 2 live rows.
TEST_P(FixedPointGemm, SplitTileIsTheTileTwice) {
  const Qs16GemmKernel& kernel = qs16_gemm_kernel(GetParam());
  if (kernel.split == nullptr) GTEST_SKIP() << kernel.name << " has no split tile";
  Rng rng(31, 0);
  const int64_t kpairs = 128, lda = 2 * kpairs + 6, nr = kernel.nr;  // 128 pairs: the split's bound
  std::vector<int16_t> a(static_cast<size_t>(kernel.split_mr * lda)), hi(static_cast<size_t>(2 * kpairs * nr)), lo(hi.size());
  for (int16_t& v : a) v = static_cast<int16_t>(rng.below(2) == 0 ? 32767 - 65534 * static_cast<int>(rng.below(2)) : static_cast<int>(rng.below(65535)) - 32767);
  for (size_t t = 0; t < hi.size(); ++t) {
    hi[t] = static_cast<int16_t>(static_cast<int>(rng.below(256)) - 128);
    lo[t] = static_cast<int16_t>(rng.below(2) == 0 ? 255 : rng.below(256));
  }
  for (int64_t rows = 1; rows <= kernel.split_mr; ++rows) {
    std::vector<int32_t> acc_hi(static_cast<size_t>(kQs8MaxMr * 16)), acc_lo(acc_hi.size()), ref_hi(acc_hi.size()), ref_lo(acc_hi.size());
    kernel.split(rows, kpairs, a.data(), lda, hi.data(), lo.data(), acc_hi.data(), acc_lo.data());
    kernel.tile(rows, kpairs, a.data(), lda, hi.data(), ref_hi.data());
    kernel.tile(rows, kpairs, a.data(), lda, lo.data(), ref_lo.data());
    for (int64_t t = 0; t < rows * nr; ++t) {
      ASSERT_EQ(acc_hi[static_cast<size_t>(t)], ref_hi[static_cast<size_t>(t)]) << kernel.name << " rows " << rows << " at " << t;
      ASSERT_EQ(acc_lo[static_cast<size_t>(t)], ref_lo[static_cast<size_t>(t)]) << kernel.name << " rows " << rows << " at " << t;
    }
  }
}

// Products of few row blocks are cut over their depth, a slice a thread, the slices' sums added
// up after: a deep 25 x 6 (lenet's conv1 weight gradient, plain and gathered from the patches of
// 16 images) and 5 row blocks, on 2 and 3 threads, zero points on both sides (their row sums
// added up too), int8 and split int16 tiles; each was cut (the trace's depth_slices). The
// reference's bits.
TEST_P(FixedPointGemm, DepthSlicesAreTheReference) {
  ThreadPool two(2), three(3);
  const FormatPair pairs[] = {wide_affine_and_channel_pairs()[0], affine_and_channel_pairs()[3]};
  const ConvGeometry g = conv_geometry(28, 28, 1, 5, 1, 2).value();
  constexpr int64_t kImages = 16;  // 2 x 25 x 6 x 16 x 784 flops: over the threading threshold in int8 too
  const PatchOffsets at = patch_offsets(g, kImages);
  uint64_t seed = 40;
  for (const FormatPair& pair : pairs)
    for (int64_t m : {0, 25, 150})  // 0: the gathered conv1 weight gradient
      for (ThreadPool* pool : {&two, &three}) {
        Rng rng(seed, 3);
        const bool gathered = m == 0;
        const int64_t rows = gathered ? g.patch_size() : m, n = m == 150 ? 16 : 6;
        const int64_t k = gathered ? kImages * g.patches() : m == 25 ? 9001 : 1500;
        const std::vector<float> a = random_floats(gathered ? kImages * g.padded_size() : rows * k, rng, 2.0);
        const std::vector<float> b = random_floats(k * n, rng, 0.5);
        std::vector<float> c(static_cast<size_t>(rows * n)), c_ref(c.size());
        Int8GemmOptions o;
        o.a = pair.a;
        o.b = pair.b;
        o.b_channels = pair.b_channels;
        o.seed = seed++;
        o.isa = GetParam();
        Int8GemmTrace trace, trace_ref;
        trace.want_sums = trace_ref.want_sums = true;
        o.trace = &trace;
        const bool narrow = pair.a.bits <= 8 && pair.b.bits <= 8;
        const GatheredA<float> patches{a.data(), at.taps.data(), at.pixels.data()};
        const GemmShape s{Trans::no, Trans::no, rows, n, k, k, n, n};
        if (gathered) {
          (narrow ? int8_dynamic_gemm_gathered : int16_dynamic_gemm_gathered)(rows, n, k, 1.0f, patches, b.data(), n,
                                                                             0.0f, c.data(), n, pool, o);
        } else {
          (narrow ? int8_dynamic_gemm : int16_dynamic_gemm)(s, 1.0f, a.data(), b.data(), 0.0f, c.data(), pool, o);
        }
        o.trace = &trace_ref;
        if (gathered) {
          int8_dynamic_gemm_gathered_ref(rows, n, k, 1.0f, patches, b.data(), n, 0.0f, c_ref.data(), n, o);
        } else {
          int8_dynamic_gemm_ref(s, 1.0f, a.data(), b.data(), 0.0f, c_ref.data(), o);
        }
        const std::string what = std::string(pair.label) + " " + std::to_string(rows) + "x" + std::to_string(n) + "x" +
                                 std::to_string(k) + " on " + std::to_string(pool->threads()) + " threads";
        EXPECT_GT(trace.depth_slices, 1) << what << ": not cut";
        ASSERT_EQ(trace.sums, trace_ref.sums) << what;
        for (size_t t = 0; t < c.size(); ++t) ASSERT_EQ(bits_of(c[t]), bits_of(c_ref[t])) << what << ", " << t;
      }
}

// The worst case of each int16 route: every value at +-qmax, signs alike, so every product is
// qmax_a qmax_b and the sums reach depth x that; exact in int64 (and C = alpha step_a step_b sum).
TEST_P(FixedPointGemm, Int16ExtremesAreExact) {
  for (int bits : {16, 15, 12, 9}) {
    const int64_t m = 9, n = 17, k = 3001;
    std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
    for (size_t t = 0; t < a.size(); ++t) a[t] = ((t % k) % 3 == 0) ? -2.0f : 2.0f;  // by column p
    for (size_t t = 0; t < b.size(); ++t) b[t] = ((t / n) % 3 == 0) ? -0.5f : 0.5f;  // the same sign as A's column
    Int8GemmOptions o;
    o.a = o.b = format(bits, ScaleRule::real, Rounding::nearest);
    o.isa = GetParam();
    Int8GemmTrace trace;
    trace.want_sums = true;
    o.trace = &trace;
    std::vector<float> c(static_cast<size_t>(m * n));
    int16_dynamic_gemm(GemmShape{Trans::no, Trans::no, m, n, k, k, n, n}, 1.0f, a.data(), b.data(), 0.0f, c.data(),
                       nullptr, o);
    const int64_t q = o.a.qmax();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t want = 0;
        for (int64_t p = 0; p < k; ++p) want += (a[static_cast<size_t>(i * k + p)] < 0 ? -q : q) * (b[static_cast<size_t>(p * n + j)] < 0 ? -q : q);
        ASSERT_EQ(trace.sums[static_cast<size_t>(i * n + j)], want) << bits << " bits " << i << "," << j;
      }
  }
}

// A format beside an f32 operand runs fake quantized: C is exactly the f32 GEMM of the operands'
// grid values, each value q * step with q from the scalar definitions and the product's keys
// (those the integer route would use), the f32 operand as is.
TEST(FixedPointGemm, AnF32OperandIsTheF32GemmOfTheGridValues) {
  Rng rng(2, 2);
  const int64_t m = 7, n = 9, k = 40;
  const std::vector<float> a = random_floats(m * k, rng, 1.5), b = random_floats(k * n, rng, 0.2);
  for (Rounding rounding : {Rounding::nearest, Rounding::stochastic})
    for (ScaleRule rule : {ScaleRule::real, ScaleRule::power_of_two, ScaleRule::fixed})
      for (int bits_b : {12, 0, 4}) {
      Int8GemmOptions o;
      o.a = format(bits_b == 0 ? 16 : 0, rule, rounding, 12);  // one operand f32: the fake route
      o.b = format(bits_b, rule, Rounding::nearest, 14);
      o.seed = 11;
      std::vector<float> c(static_cast<size_t>(m * n));
      const GemmShape s{Trans::no, Trans::no, m, n, k, k, n, n};
      fixed_point_gemm(s, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr, o);
      // The grids by hand.
      const auto grid = [&](const std::vector<float>& v, const FixedPointFormat& f, int operand, size_t middle) {
        if (!f.quantized()) return v;
        float max_abs = 0;
        for (float x : v) max_abs = std::max(max_abs, std::fabs(x));
        const uint64_t key = f.rounding == Rounding::stochastic ? int8_rounding_key(o, operand, m, n, k, max_abs, v[middle]) : 0;
        const float mult = fixed_point_multiplier(f, max_abs);
        const double step = fixed_point_step(f, max_abs);
        std::vector<float> g(v.size());
        for (size_t t = 0; t < v.size(); ++t) {
          const int32_t q = f.rounding == Rounding::stochastic
                                ? fixed_point_quantize_stochastic(v[t], mult, f.qmax(), int8_rounding_uniform(key, t))
                                : fixed_point_quantize_nearest(v[t], mult, f.qmax());
          g[t] = static_cast<float>(q * step);
        }
        return g;
      };
      const std::vector<float> ga = grid(a, o.a, 1, static_cast<size_t>((m / 2) * k + k / 2));
      const std::vector<float> gb = grid(b, o.b, 2, static_cast<size_t>((k / 2) * n + n / 2));
      std::vector<float> want(c.size());
      f32_gemm(s, 1.0f, ga.data(), gb.data(), 0.0f, want.data(), nullptr);
      for (size_t t = 0; t < c.size(); ++t) ASSERT_EQ(bits_of(c[t]), bits_of(want[t])) << t << " B bits " << bits_b;
      }
}

TEST(FixedPointGemm, NonFiniteOperandsGiveNaNOnBothRoutes) {
  std::vector<float> a(12, 1.0f), b(12, 1.0f), c(9, 5.0f);
  a[4] = std::numeric_limits<float>::infinity();
  for (int bits : {8, 16}) {
    Int8GemmOptions o;
    o.a = o.b = format(bits, ScaleRule::real, Rounding::nearest);
    fixed_point_gemm(GemmShape{Trans::no, Trans::no, 3, 3, 4, 4, 3, 3}, 1.0f, a.data(), b.data(), 0.0f, c.data(),
                     nullptr, o);
    for (float v : c) EXPECT_TRUE(std::isnan(v)) << bits;
  }
}

// A convolution's patches over a ReLU's output (values >= 0) or signed values, with a zero
// point, times per-channel weights: bit for bit the reference on every level, both tiles.
// Patch rows of 15 values, and of 5 (one channel: lenet's conv1).
TEST_P(FixedPointGemm, ConvPatchesWithZeroPointsAndPerChannelWeights) {
  Rng rng(23, 0);
  for (const ConvGeometry& g : {conv_geometry(9, 7, 5, 3, 1, 1).value(), conv_geometry(9, 7, 1, 5, 1, 2).value()}) {
    const int64_t count = 2, filters = 11, m = count * g.patches(), k = g.patch_size();
    const PatchOffsets at = patch_offsets(g, count);
    const std::vector<float> signed_image = random_floats(count * g.padded_size(), rng, 2.0);
    std::vector<float> relu_image = signed_image;
    for (float& v : relu_image) v = std::max(0.0f, v);  // a ReLU's output (the padding words too)
    const std::vector<float> w = random_floats(k * filters, rng, 0.3);
    for (int bits : {4, 8, 12}) {
      const std::vector<float>& image = bits == 8 ? signed_image : relu_image;  // zero -qmax, or inside
      const GatheredA<float> a{image.data(), at.pixels.data(), at.taps.data()};
      Int8GemmOptions o;
      o.a = with_zero_point(format(bits, ScaleRule::real, Rounding::stochastic));
      o.b = per_channel(format(bits, ScaleRule::real, Rounding::nearest));
      o.b_channels = bits == 4 ? 4 : filters;  // 4: channels that do not divide the 11 columns
      o.isa = GetParam();
      o.seed = 5;
      std::vector<float> c(static_cast<size_t>(m * filters)), c_ref(c.size());
      const auto product = bits <= 8 ? int8_dynamic_gemm_gathered : int16_dynamic_gemm_gathered;
      product(m, filters, k, 1.0f, a, w.data(), filters, 0.0f, c.data(), filters, nullptr, o);
      int8_dynamic_gemm_gathered_ref(m, filters, k, 1.0f, a, w.data(), filters, 0.0f, c_ref.data(), filters, o);
      for (size_t t = 0; t < c.size(); ++t) ASSERT_EQ(bits_of(c[t]), bits_of(c_ref[t])) << bits << " bits, " << t;
    }
  }
}

// What the two options buy: on a ReLU's output a zero point halves the step (the grid no longer
// spends half its points below 0), and a column of small weights keeps its own step. Each
// product's error against the f32 one falls; a row of zeros stays exactly zero.
TEST(FixedPointGemm, ZeroPointsAndPerChannelScalesCutTheError) {
  Rng rng(29, 0);
  const int64_t m = 40, n = 12, k = 64;
  std::vector<float> a = random_floats(m * k, rng, 1.0), b = random_floats(k * n, rng, 1.0);
  for (float& v : a) v = std::fabs(v);
  for (int64_t p = 0; p < k; ++p) {
    a[static_cast<size_t>(p)] = 0.0f;                                            // row 0: zeros
    for (int64_t j = 0; j < n / 2; ++j) b[static_cast<size_t>(p * n + j)] *= 0.01f;  // small columns
  }
  const GemmShape s{Trans::no, Trans::no, m, n, k, k, n, n};
  std::vector<float> exact(static_cast<size_t>(m * n));
  f32_gemm(s, 1.0f, a.data(), b.data(), 0.0f, exact.data(), nullptr);
  const auto error = [&](bool zero_point, bool channels, bool small_columns) {
    Int8GemmOptions o;
    o.a = format(4, ScaleRule::real, Rounding::nearest);
    o.b = format(8, ScaleRule::real, Rounding::nearest);
    if (zero_point) o.a = with_zero_point(o.a);
    if (channels) o.b = per_channel(o.b);
    o.b_channels = n;
    std::vector<float> c(exact.size());
    fixed_point_gemm(s, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr, o);
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(c[static_cast<size_t>(j)], 0.0f) << "row of zeros, column " << j;
    double sum = 0, norm = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = small_columns ? 0 : n / 2; j < (small_columns ? n / 2 : n); ++j) {
        const size_t t = static_cast<size_t>(i * n + j);
        sum += (c[t] - exact[t]) * (c[t] - exact[t]);
        norm += exact[t] * exact[t];
      }
    return std::sqrt(sum / norm);
  };
  EXPECT_LT(error(true, false, false), 0.7 * error(false, false, false)) << "the zero point: a step half as large";
  EXPECT_LT(error(false, true, true), 0.2 * error(false, false, true)) << "per channel: the small columns' own steps";
}

// Per-channel weights in an input gradient (channels along the summed axis) run fake quantized:
// the f32 GEMM of the same grid values the forward product's columns use.
// A per-channel B on its columns beside an f32 A (the fake route) takes each column's channel as
// the integer route does (j % channels), also where the columns are not a multiple of them.
TEST(FixedPointGemm, PerChannelColumnsOnTheFakeRouteAreTheIntegerRoutes) {
  Rng rng(41, 0);
  const int64_t m = 5, k = 7, n = 3, channels = 2;
  const std::vector<float> a = random_floats(m * k, rng, 1.0);
  std::vector<float> b = random_floats(k * n, rng, 1.0);
  for (int64_t p = 0; p < k; ++p) b[static_cast<size_t>(p * n + 1)] *= 0.01f;  // column 1: channel 1 alone
  Int8GemmOptions o;
  o.a = FixedPointFormat{};  // f32: the fake route
  o.b = per_channel(format(4, ScaleRule::real, Rounding::nearest));
  o.b_channels = channels;
  std::vector<float> c(static_cast<size_t>(m * n));
  const GemmShape s{Trans::no, Trans::no, m, n, k, k, n, n};
  fixed_point_gemm(s, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr, o);
  std::vector<float> grid_b(b.size());
  for (int64_t ch = 0; ch < channels; ++ch) {
    float max_abs = 0;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = ch; j < n; j += channels) max_abs = std::max(max_abs, std::fabs(b[static_cast<size_t>(p * n + j)]));
    const FixedPointGrid g = fixed_point_grid(o.b, -max_abs, max_abs);
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = ch; j < n; j += channels) {
        const size_t t = static_cast<size_t>(p * n + j);
        grid_b[t] = static_cast<float>(fixed_point_quantize_nearest(b[t], g.multiplier, 7) * g.step);
      }
  }
  std::vector<float> want(c.size());
  f32_gemm(s, 1.0f, a.data(), grid_b.data(), 0.0f, want.data(), nullptr);
  for (size_t t = 0; t < c.size(); ++t) ASSERT_EQ(bits_of(c[t]), bits_of(want[t])) << t;
}

TEST(FixedPointGemm, PerChannelWeightsOnTheSummedAxisAreFakeQuantized) {
  Rng rng(31, 0);
  const int64_t m = 6, in = 10, out = 4;  // dx[m x in] = dy[m x out] W[in x out]^T
  const std::vector<float> dy = random_floats(m * out, rng, 1.0), w = random_floats(in * out, rng, 0.5);
  Int8GemmOptions o;
  o.a = format(8, ScaleRule::real, Rounding::nearest);
  o.b = per_channel(format(4, ScaleRule::real, Rounding::nearest));
  o.b_channels = out;
  o.b_channel_axis = ChannelAxis::rows;
  EXPECT_EQ(product_route(o.a, o.b, ChannelAxis::rows), ProductRoute::fake_quantized);
  EXPECT_EQ(product_route(o.a, o.b, ChannelAxis::columns, Isa::ssse3), ProductRoute::int8_tiles);
  std::vector<float> dx(static_cast<size_t>(m * in));
  const GemmShape s{Trans::no, Trans::yes, m, in, out, out, out, in};
  fixed_point_gemm(s, 1.0f, dy.data(), w.data(), 0.0f, dx.data(), nullptr, o);
  // The grids by hand: W's channel c = its column (flat index mod out), dy per tensor.
  std::vector<float> grid_w(w.size()), grid_dy(dy.size());
  for (int64_t c = 0; c < out; ++c) {
    float max_abs = 0;
    for (int64_t i = 0; i < in; ++i) max_abs = std::max(max_abs, std::fabs(w[static_cast<size_t>(i * out + c)]));
    const FixedPointGrid g = fixed_point_grid(o.b, -max_abs, max_abs);
    for (int64_t i = 0; i < in; ++i) {
      const size_t t = static_cast<size_t>(i * out + c);
      grid_w[t] = static_cast<float>(fixed_point_quantize_nearest(w[t], g.multiplier, 7) * g.step);
    }
  }
  float max_dy = 0;
  for (float v : dy) max_dy = std::max(max_dy, std::fabs(v));
  const FixedPointGrid g = fixed_point_grid(o.a, -max_dy, max_dy);
  for (size_t t = 0; t < dy.size(); ++t) grid_dy[t] = static_cast<float>(fixed_point_quantize_nearest(dy[t], g.multiplier, 127) * g.step);
  std::vector<float> want(dx.size());
  f32_gemm(s, 1.0f, grid_dy.data(), grid_w.data(), 0.0f, want.data(), nullptr);
  for (size_t t = 0; t < dx.size(); ++t) ASSERT_EQ(bits_of(dx[t]), bits_of(want[t])) << t;
}

// The in-place rounding (a weight gradient's, on the vectorized loops where the grid is one
// symmetric non-saturating grid) is the scalar definitions', value for value.
TEST(FixedPointGemm, RoundInPlaceIsTheScalarDefinition) {
  Rng rng(37, 0);
  const std::vector<float> x = random_floats(5000, rng, 0.02);
  for (const FixedPointFormat& f : {format(16, ScaleRule::real, Rounding::stochastic), format(8, ScaleRule::real, Rounding::nearest),
                                    format(12, ScaleRule::power_of_two, Rounding::stochastic),
                                    format(6, ScaleRule::fixed, Rounding::stochastic, 9), with_zero_point(format(5, ScaleRule::real, Rounding::nearest))}) {
    std::vector<float> got = x;
    ThreadPool pool(2);
    fixed_point_round_in_place(got.data(), static_cast<int64_t>(got.size()), f, 77, &pool);
    float lo = 0, hi = 0, max_abs = 0;
    for (float v : x) lo = std::min(lo, v), hi = std::max(hi, v), max_abs = std::max(max_abs, std::fabs(v));
    const FixedPointGrid g = f.affine ? fixed_point_grid(f, lo, hi) : fixed_point_grid(f, -max_abs, max_abs);
    for (size_t t = 0; t < x.size(); ++t) {
      const int32_t q = f.rounding == Rounding::stochastic
                            ? fixed_point_quantize_stochastic(x[t], g.multiplier, f.qmax(), int8_rounding_uniform(77, t), g.zero)
                            : fixed_point_quantize_nearest(x[t], g.multiplier, f.qmax(), g.zero);
      ASSERT_EQ(bits_of(got[t]), bits_of(static_cast<float>((q - g.zero) * g.step))) << describe(f) << " at " << t;
    }
  }
}

TEST(FixedPointGemm, RoundInPlacePerChannel) {
  // [2 x 3] weights of 3 channels (flat index mod 3), 4 bits: each channel's largest kept, its
  // own step max_c / 7.
  std::vector<float> w = {0.7f, -0.07f, 0.007f, 0.2f, 0.03f, -0.005f};
  fixed_point_round_in_place(w.data(), 6, per_channel(format(4, ScaleRule::real, Rounding::nearest)), 0, nullptr, 3);
  EXPECT_FLOAT_EQ(w[0], 0.7f);
  EXPECT_FLOAT_EQ(w[1], -0.07f);
  EXPECT_FLOAT_EQ(w[2], 0.007f);
  EXPECT_NEAR(w[3], 2 * 0.1, 1e-6);       // 0.2 on the step 0.1
  EXPECT_NEAR(w[4], 3 * 0.01, 1e-7);      // 0.03 on the step 0.01
  EXPECT_NEAR(w[5], -5 * 0.001, 1e-8);    // -0.005 on the step 0.001
  std::vector<float> bias = {0.7f, 0.001f};
  fixed_point_round_in_place(bias.data(), 2, per_channel(format(4, ScaleRule::real, Rounding::nearest)), 0, nullptr, 0);
  EXPECT_EQ(bias[1], 0.0f) << "no channels given: one scale (0.001 under half of 0.1)";
}

TEST(FixedPointGemm, RoundInPlaceKeepsTheGridAndLeavesNonFiniteTensors) {
  std::vector<float> x = {0.1f, -0.37f, 0.5f, 0.02f};
  fixed_point_round_in_place(x.data(), 4, format(4, ScaleRule::real, Rounding::nearest), 0, nullptr);
  // step 0.5 / 7: every value a multiple of it, the largest kept.
  for (float v : x) EXPECT_NEAR(v / (0.5 / 7), std::round(v / (0.5 / 7)), 1e-5) << v;
  EXPECT_FLOAT_EQ(x[2], 0.5f);
  std::vector<float> bad = {1.0f, std::nanf(""), 0.3f};
  fixed_point_round_in_place(bad.data(), 3, format(4, ScaleRule::real, Rounding::nearest), 0, nullptr);
  EXPECT_EQ(bad[2], 0.3f) << "a tensor holding a NaN is left as it is";
}

// ---------------------------------------------------------------- names

TEST(FixedPointPrecision, ShorthandsMapOntoFormats) {
  const FixedPointPrecision int8 = parse_fixed_point_precision("int8-train").take();
  EXPECT_EQ(int8.name, "int8-train");
  EXPECT_TRUE(int8.roles == int8_training_roles());
  // w8a8e8 is int8 training, exactly.
  const FixedPointPrecision same = parse_fixed_point_precision("w8a8e8").take();
  EXPECT_TRUE(same.roles == int8_training_roles());
  EXPECT_EQ(same.name, "int8-train");

  const FixedPointRoles g16 = parse_fixed_point_precision("w16a16g16").take().roles;
  EXPECT_EQ(g16.weights.bits, 16);
  EXPECT_EQ(g16.errors.bits, 16) << "g sets the errors too";
  EXPECT_EQ(g16.gradients.rounding, Rounding::stochastic);
  EXPECT_EQ(g16.weights.rounding, Rounding::nearest);
  EXPECT_FALSE(g16.stored_weights);

  const FixedPointRoles w4 = parse_fixed_point_precision("w4a8").take().roles;
  EXPECT_EQ(w4.weights.bits, 4);
  EXPECT_FALSE(w4.errors.quantized());
  EXPECT_FALSE(w4.gradients.quantized());

  const FixedPointRoles g = parse_fixed_point_precision("w16a16g16-fl14-sw-rn").take().roles;
  EXPECT_EQ(g.errors.rounding, Rounding::nearest);
  EXPECT_EQ(g.activations.scale, ScaleRule::fixed);
  EXPECT_EQ(g.gradients.fraction_bits, 14);
  EXPECT_TRUE(g.stored_weights);
  EXPECT_EQ(parse_fixed_point_precision("a8e6-p2").take().roles.errors.scale, ScaleRule::power_of_two);

  const FixedPointPrecision pc = parse_fixed_point_precision("w4a4g8-zp-pc").take();
  EXPECT_EQ(pc.name, "w4a4g8-pc-zp");
  EXPECT_TRUE(pc.roles.weights.per_channel && pc.roles.gradients.per_channel);
  EXPECT_FALSE(pc.roles.activations.per_channel || pc.roles.errors.per_channel) << "-pc is the weights' and gradients'";
  EXPECT_TRUE(pc.roles.activations.affine);
  EXPECT_FALSE(pc.roles.weights.affine || pc.roles.errors.affine) << "-zp is the activations'";
  EXPECT_FALSE(parse_fixed_point_precision("w4a4").take().roles == pc.roles);
  EXPECT_NE(describe_fixed_point(pc.roles).find("per output channel"), std::string::npos) << describe_fixed_point(pc.roles);
  EXPECT_NE(describe_fixed_point(pc.roles).find("zero points (a)"), std::string::npos);
  const FixedPointRoles ae = parse_fixed_point_precision("w8a8e8-zpae").take().roles;
  EXPECT_TRUE(ae.activations.affine && ae.errors.affine && !ae.weights.affine);
  EXPECT_EQ(parse_fixed_point_precision("w8a8e8-zpa").take().name, "w8a8e8-zp");
  EXPECT_NE(describe_fixed_point(pc.roles).find("dx fake quantized"), std::string::npos) << describe_fixed_point(pc.roles);

  // Canonical names parse back to the same formats.
  for (const char* text : {"w16a16g16", "w4a8", "w8a8g8e4-sr", "w16a16g16-fl14-sw-rn", "e8", "w2a2-p2", "w6a8e8-fl0",
                           "w12a12g16e16-rn", "w8a8g8", "w4a8-pc", "a8e8-zp", "w16a16g16-sw-pc-zp-sr", "w8a8g8-zpwage",
                           "w6a4e8-zpe"}) {
    const FixedPointPrecision p = parse_fixed_point_precision(text).take();
    const auto again = parse_fixed_point_precision(p.name);
    ASSERT_TRUE(again.ok()) << text << " -> " << p.name << ": " << again.status().message();
    EXPECT_TRUE(again.value().roles == p.roles) << text << " -> " << p.name;
    EXPECT_EQ(again.value().name, p.name) << text;
  }
}

TEST(FixedPointPrecision, BadNamesAreRefusedWithTheRule) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "names no role"},
      {"-sr", "names no role"},
      {"w", "needs its bits"},
      {"w1a8", "1 bits; 2 to 16"},
      {"w17a8", "17 bits"},
      {"w99a8", "99 bits"},
      {"w123a8", "needs its bits"},
      {"w08a8", "needs its bits"},
      {"a8w8", "out of the order"},
      {"w8w8", "twice"},
      {"x8", "'x' is not a role"},
      {"w8a8-sr-rn", "-sr and -rn together"},
      {"w8a8-sr-sr", "twice"},
      {"w8a8-p2-fl4", "one scale rule"},
      {"w8a8-fl25", "0 to 24"},
      {"w8a8-fl", "fraction bits"},
      {"w8a8-fl4-fl5", "two -fl"},
      {"a8-sw", "name w"},
      {"a8-pc", "name w or g"},
      {"w8-zp", "gives role 'a' a zero point"},
      {"w8a8-zpx", "'x' is not a role"},
      {"w8a8-zpaw", "out of the order"},
      {"w8a8-zp-zpw", "two -zp"},
      {"w8a8-pc-zpw", "per-channel scales are symmetric"},
      {"w8a8-pc-fl4", "-pc with -fl"},
      {"w8a8-pc-pc", "twice"},
      {"w4a8-qat", "the int8 engine's forms alone"},
      {"w8a8-zz", "unknown suffix"},
      {"w8a8--", "unknown suffix"},
  };
  for (const auto& [text, rule] : cases) {
    const auto p = parse_fixed_point_precision(text);
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find(rule), std::string::npos) << text << ": " << p.status().message();
    EXPECT_NE(p.status().message().find("[w<bits>][a<bits>][g<bits>][e<bits>]"), std::string::npos) << "the grammar is shown";
  }
  const auto long_name = parse_fixed_point_precision(std::string(100000, 'w'));
  ASSERT_FALSE(long_name.ok());
  EXPECT_LT(long_name.status().message().size(), 400u) << "a long name is not echoed whole";
}

// The int8 engine's forms: canonical names, w8 as int8 and int8-qat, and what each refuses.
TEST(Int8ExportPrecision, NamesAndRefusals) {
  const std::tuple<const char*, const char*, int, bool> good[] = {
      {"int8", "int8", 8, false},         {"int8-qat", "int8-qat", 8, true}, {"w8a8-ptq", "int8", 8, false},
      {"w8a8-qat", "int8-qat", 8, true}, {"w4a8-qat", "w4a8-qat", 4, true}, {"w2a8-ptq", "w2a8-ptq", 2, false},
      {"w6a8-qat", "w6a8-qat", 6, true},  {"w4a4-qat", "w4a4-qat", 4, true}, {"w8a6-ptq", "w8a6-ptq", 8, false}};
  for (const auto& [text, name, bits, qat] : good) {
    EXPECT_TRUE(names_int8_export(text)) << text;
    const auto form = parse_int8_export_precision(text);
    ASSERT_TRUE(form.ok()) << text << ": " << form.status().message();
    EXPECT_EQ(form.value().name, name);
    EXPECT_EQ(form.value().weight_bits, bits) << text;
    EXPECT_EQ(form.value().qat, qat) << text;
  }
  for (const char* text : {"w4a8", "int8-train", "fp32", "w4a8-sr", "-qat"}) EXPECT_FALSE(names_int8_export(text)) << text;
  const std::pair<const char*, const char*> bad[] = {
      {"w4a9-qat", "name the activations' bits, 2 to 8"},      {"a8-qat", "name the weights' bits"},
      {"w9a8-ptq", "name the weights' bits, 2 to 8"},           {"w16a8-qat", "2 to 8"},
      {"w4a8g8-qat", "gradients and errors are training's"},    {"w4a8-sr-qat", "no other suffix"},
      {"w1a8-qat", "1 bits"},                                   {"w4-qat", "name the activations' bits"}};
  for (const auto& [text, rule] : bad) {
    ASSERT_TRUE(names_int8_export(text)) << text;
    const auto form = parse_int8_export_precision(text);
    ASSERT_FALSE(form.ok()) << text;
    EXPECT_NE(form.status().message().find(rule), std::string::npos) << text << ": " << form.status().message();
  }
  // Training takes the QAT forms and refuses the PTQ ones by what they are.
  TrainOptions options;
  ASSERT_TRUE(set_precision("w4a8-qat", &options).ok());
  EXPECT_EQ(options.precision, TrainPrecision::int8_qat);
  EXPECT_EQ(options.qat_weight_bits, 4);
  EXPECT_EQ(precision_name(options), "w4a8-qat");
  ASSERT_TRUE(set_precision("w4a4-qat", &options).ok());
  EXPECT_EQ(options.qat_activation_bits, 4);
  EXPECT_EQ(precision_name(options), "w4a4-qat");
  const Status ptq = set_precision("w4a8-ptq", &options);
  ASSERT_FALSE(ptq.ok());
  EXPECT_NE(ptq.message().find("post-training quantization, not a way to train"), std::string::npos) << ptq.message();
}

// ---------------------------------------------------------------- a layer's own precision

constexpr const char* kTwoDense =
    "[net]\ninput = 8\n[dense]\nunits = 4\n[relu]\n[dense]\nname = out\nunits = 3\nprecision = fp32\n";

TEST(OwnPrecision, CfgKeysAndTheLayerPrecisionOption) {
  const CfgDocument doc = parse_cfg(kTwoDense, "two.cfg").take();
  const auto model = Model::from_cfg(doc);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model.value()->layers()[2]->own_precision().name, "fp32");
  EXPECT_EQ(model.value()->layers()[2]->own_precision().gemm, GemmPrecision::f32);
  EXPECT_TRUE(model.value()->layers()[0]->own_precision().name.empty());
  // The option sets a key (the canonical name) and replaces one; the text keeps everything else.
  const auto edited = with_layer_precisions(doc, "dense1=w8a8e8,out=w16a16g16-rn");
  ASSERT_TRUE(edited.ok()) << edited.status().message();
  EXPECT_NE(edited.value().text.find("[dense]\nprecision = int8-train\nunits = 4\n"), std::string::npos) << edited.value().text;
  EXPECT_NE(edited.value().text.find("precision = w16a16g16-rn\n"), std::string::npos) << edited.value().text;
  EXPECT_EQ(edited.value().text.find("precision = fp32"), std::string::npos) << "replaced, not added";
  const auto rebuilt = Model::from_cfg(edited.value());
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().message();
  EXPECT_EQ(rebuilt.value()->layers()[0]->own_precision().gemm, GemmPrecision::fixed_point);
  EXPECT_TRUE(rebuilt.value()->layers()[0]->own_precision().formats == int8_training_roles());
  EXPECT_EQ(rebuilt.value()->layers()[2]->own_precision().formats.errors.rounding, Rounding::nearest);
}

TEST(OwnPrecision, MistakesAreNamed) {
  const CfgDocument doc = parse_cfg(kTwoDense, "two.cfg").take();
  const std::pair<const char*, const char*> options[] = {
      {"dense9=w8a8", "no layer 'dense9' (the model's: dense1, relu1, out)"},
      {"relu1=w8a8", "relu1 is a relu"},
      {"dense1", "not LAYER=PRECISION"},
      {"=w8a8", "not LAYER=PRECISION"},
      {"dense1=", "not LAYER=PRECISION"},
      {"dense1=w8a8,dense1=fp32", "named twice"},
      {"dense1=w3a99", "99 bits"},
      {"dense1=fp16", "'fp16' is not a layer precision"},
      {"", "the list is empty"},
  };
  for (const auto& [list, rule] : options) {
    const auto edited = with_layer_precisions(doc, list);
    ASSERT_FALSE(edited.ok()) << list;
    EXPECT_NE(edited.status().message().find(rule), std::string::npos) << list << ": " << edited.status().message();
  }
  const std::pair<const char*, const char*> cfgs[] = {
      {"[net]\ninput = 8\n[dense]\nunits = 4\nprecision = w8q8\n", "two.cfg:5: [dense] key 'precision': 'w8q8'"},
      {"[net]\ninput = 8\n[dense]\nunits = 4\nprecision =\n", "two.cfg:5: [dense] key 'precision': no precision given"},
      {"[net]\ninput = 8\n[dense]\nunits = 4\n[relu]\nprecision = fp32\n",
       "[relu] key 'precision': a precision of its own applies to layers with products (dense, conv, conv_transpose, rcl)"},
  };
  for (const auto& [text, rule] : cfgs) {
    const auto model = Model::from_cfg(parse_cfg(text, "two.cfg").take());
    ASSERT_FALSE(model.ok()) << text;
    EXPECT_NE(model.status().message().find(rule), std::string::npos) << model.status().message();
  }
}

}  // namespace
}  // namespace rg
