// The int8 path's integer arithmetic: gemmlowp's fixed-point primitives on hand-checked values,
// every ISA's qs8 tiles (wide and narrow, with and without the fused requantization), vector
// requantization and direct single-channel convolution bit-exact against the reference
// arithmetic (the extremes -128 and 127 included), and the blocked product against plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "cpu/kernel_tables.h"
#include "isa_param.h"
#include "ops/fixed_point.h"
#include "quant/qs8_gemm.h"

namespace rg {
namespace {

constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kMax = std::numeric_limits<int32_t>::max();

TEST(FixedPoint, DoublingHighMulRoundsHalfUp) {
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMin, kMin), kMax);  // the one overflow
  EXPECT_EQ(saturating_rounding_doubling_high_mul(kMax, kMax), kMax - 1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1 << 30, 1 << 30), 1 << 29);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1, 1 << 30), 1);    // 0.5 -> 1
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-1, 1 << 30), 0);   // -0.5 -> 0
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-3, 1 << 30), -1);  // -1.5 -> -1
  EXPECT_EQ(saturating_rounding_doubling_high_mul(3, 1 << 29), 1);    // 0.75 -> 1
  EXPECT_EQ(saturating_rounding_doubling_high_mul(-3, 1 << 29), -1);
  EXPECT_EQ(saturating_rounding_doubling_high_mul(1, (1 << 30) - 1), 0);  // just under 0.5
}

TEST(FixedPoint, DivideByPowerOfTwoRoundsHalfAwayFromZero) {
  EXPECT_EQ(rounding_divide_by_pot(3, 1), 2);
  EXPECT_EQ(rounding_divide_by_pot(-3, 1), -2);
  EXPECT_EQ(rounding_divide_by_pot(5, 2), 1);
  EXPECT_EQ(rounding_divide_by_pot(-5, 2), -1);
  EXPECT_EQ(rounding_divide_by_pot(6, 2), 2);
  EXPECT_EQ(rounding_divide_by_pot(-6, 2), -2);
  EXPECT_EQ(rounding_divide_by_pot(kMin, 31), -1);
  EXPECT_EQ(rounding_divide_by_pot(kMax, 31), 1);
  EXPECT_EQ(rounding_divide_by_pot(-7, 0), -7);
}

TEST(FixedPoint, MultiplierRepresentsTheRealWithin2ToTheMinus31Relative) {
  Rng rng(3, 0);
  for (int i = 0; i < 10000; ++i) {
    const double real = std::ldexp(rng.uniform(0.5, 1.0), -static_cast<int>(rng.uniform(0, 31)));
    const QuantMultiplier m = quantize_multiplier(real);
    ASSERT_GE(m.multiplier, 1 << 30);
    ASSERT_GE(m.shift, 0);
    ASSERT_LE(m.shift, 31);
    const double back = std::ldexp(static_cast<double>(m.multiplier), -31 - m.shift);
    ASSERT_LE(std::fabs(back - real), real * std::ldexp(1.0, -30)) << real;
  }
  EXPECT_EQ(quantize_multiplier(0.0).multiplier, 0);
  EXPECT_EQ(quantize_multiplier(std::ldexp(1.0, -40)).multiplier, 0);
  const QuantMultiplier almost_one = quantize_multiplier(std::nextafter(1.0, 0.0));
  EXPECT_EQ(almost_one.multiplier, kMax);
  EXPECT_EQ(almost_one.shift, 0);
  // And the whole requantization agrees with rounding the real product (away from ties).
  EXPECT_EQ(requantize(1000, quantize_multiplier(0.25), 0, -128, 127), 127);
  EXPECT_EQ(requantize(100, quantize_multiplier(0.25), 3, -128, 127), 28);
  EXPECT_EQ(requantize(-102, quantize_multiplier(0.25), 0, -128, 127), -26);  // -25.5 -> -26
  EXPECT_EQ(requantize(-1000, quantize_multiplier(0.25), -128, -128, 127), -128);
}

class Qs8OnIsa : public OnEveryIsa {
 protected:
  const Qs8GemmKernel& fast() const { return qs8_gemm_kernel(GetParam()); }  // VNNI's where the CPU has it
  const Qs8GemmKernel& without_vnni() const { return qs8_gemm_kernel(GetParam(), false); }
  const Qs8GemmKernel& narrow() const { return qs8_gemm_narrow_kernel(GetParam()); }
  const Qs8GemmKernel& ref() const { return qs8_gemm_kernel(Isa::reference); }
};

INSTANTIATE_TEST_SUITE_P(AllIsas, Qs8OnIsa, ::testing::ValuesIn(all_isas()), isa_label);

// Values drawn from a few regimes: uniform int8, only the extremes, and weights in [-127, 127].
int8_t draw_activation(Rng& rng, int regime) {
  if (regime == 1) return rng.uniform(0, 1) < 0.5 ? int8_t{-128} : int8_t{127};
  if (regime == 2) return int8_t{-128};
  return static_cast<int8_t>(static_cast<int>(std::floor(rng.uniform(-128, 128))));
}
int8_t draw_weight(Rng& rng, int regime) {
  if (regime == 1) return rng.uniform(0, 1) < 0.5 ? int8_t{-127} : int8_t{127};
  if (regime == 2) return int8_t{-127};
  return static_cast<int8_t>(static_cast<int>(std::floor(rng.uniform(-127, 128))));
}

// The tile of `kernel` on a panel packed for its nr, against plain sums over the same data.
void expect_tile_exact(const Qs8GemmKernel& kernel, int64_t mr, int64_t k, int regime, Rng& rng) {
  const int64_t nr = kernel.nr, kpad = qs8_padded_depth(k), lda = kpad + 3;
  std::vector<int8_t> a(static_cast<size_t>(mr * lda)), b(static_cast<size_t>(k * nr));
  for (auto& v : a) v = draw_activation(rng, regime);
  for (auto& v : b) v = draw_weight(rng, regime);
  auto packed = pack_qs8_weights(k, nr, b.data(), nr, "test weights");
  ASSERT_TRUE(packed.ok());
  std::vector<int32_t> acc(static_cast<size_t>(kernel.mr * nr), 12345);
  kernel.tile(mr, packed.value().kgroups(), a.data(), lda, packed.value().data.data<int8_t>(), acc.data());
  for (int64_t r = 0; r < mr; ++r)
    for (int64_t j = 0; j < nr; ++j) {
      int32_t want = 0;
      for (int64_t p = 0; p < k; ++p) want += int32_t{a[static_cast<size_t>(r * lda + p)]} * b[static_cast<size_t>(p * nr + j)];
      ASSERT_EQ(acc[static_cast<size_t>(r * nr + j)], want)
          << kernel.name << " row " << r << " of " << mr << ", column " << j << ", k " << k << ", regime " << regime;
    }
}

TEST_P(Qs8OnIsa, TileIsExactOnEveryShapeAndAtTheExtremes) {
  Rng rng(5, 0);
  for (const Qs8GemmKernel* kernel : {&fast(), &without_vnni(), &narrow()})
    for (int regime = 0; regime < 3; ++regime)
      for (int64_t mr = 1; mr <= kernel->mr; ++mr)
        for (int64_t k : {1, 2, 3, 4, 5, 7, 8, 9, 16, 25, 150, 577}) expect_tile_exact(*kernel, mr, k, regime, rng);
}

// Requantization constants for n columns (padded to 32) from every regime: random, the
// multiplier's edges and zero, every shift 0..31; bias large enough to move the result.
Qs8OutputStage random_output_stage(int64_t n, Rng& rng, int trial) {
  Qs8OutputStage out;
  for (int64_t j = 0; j < n; ++j) {
    const double which = rng.uniform(0, 1);
    out.multiplier.push_back(which < 0.1 ? 0 : which < 0.2 ? (1 << 30) : which < 0.3 ? kMax
                             : static_cast<int32_t>(std::floor(rng.uniform(1 << 30, 2147483647.0))));
    out.shift.push_back(static_cast<int32_t>(std::floor(rng.uniform(0, 32))));
    out.bias.push_back(static_cast<int32_t>(std::floor(rng.uniform(-3e6, 3e6))));
  }
  pad_columns(&out);
  out.zero_point = static_cast<int32_t>(std::floor(rng.uniform(-128, 128)));
  out.lo = trial % 2 ? out.zero_point : -128;  // with and without a fused ReLU
  return out;
}

// The tile with its requantization fused, against the reference's sums requantized by the
// scalar gemmlowp code: every row count, every live column count, and nothing written outside.
void expect_tile_requant_exact(const Qs8GemmKernel& kernel, int64_t mr, int64_t nc, int64_t k, int regime,
                               int trial, Rng& rng) {
  const int64_t nr = kernel.nr, kpad = qs8_padded_depth(k), lda = kpad + 3, ldc = nr + 5;
  std::vector<int8_t> a(static_cast<size_t>(mr * lda)), b(static_cast<size_t>(k * nr));
  for (auto& v : a) v = draw_activation(rng, regime);
  for (auto& v : b) v = draw_weight(rng, regime);
  auto packed = pack_qs8_weights(k, nr, b.data(), nr, "test weights");
  ASSERT_TRUE(packed.ok());
  const Qs8OutputStage out = random_output_stage(nr, rng, trial);
  const Qs8Requant rq{out.bias.data(), out.multiplier.data(), out.shift.data(), out.zero_point, out.lo, out.hi};
  std::vector<int8_t> c(static_cast<size_t>(kernel.mr * ldc + 16), 77);
  kernel.tile_requant(mr, nc, packed.value().kgroups(), a.data(), lda, packed.value().data.data<int8_t>(), &rq, c.data(),
                      ldc);
  for (int64_t r = 0; r < kernel.mr; ++r)
    for (int64_t j = 0; j < ldc; ++j) {
      int32_t want = 77;
      if (r < mr && j < nc) {
        int32_t sum = 0;
        for (int64_t p = 0; p < k; ++p)
          sum += int32_t{a[static_cast<size_t>(r * lda + p)]} * b[static_cast<size_t>(p * nr + j)];
        const size_t u = static_cast<size_t>(j);
        want = requantize(sum + out.bias[u], QuantMultiplier{out.multiplier[u], out.shift[u]}, out.zero_point, out.lo,
                          out.hi);
      }
      ASSERT_EQ(c[static_cast<size_t>(r * ldc + j)], want)
          << kernel.name << " row " << r << " of " << mr << ", column " << j << " of " << nc << ", k " << k
          << ", regime " << regime << ", multiplier " << (j < nr ? out.multiplier[static_cast<size_t>(j)] : 0)
          << ", shift " << (j < nr ? out.shift[static_cast<size_t>(j)] : 0);
    }
}

TEST_P(Qs8OnIsa, FusedRequantizationIsBitExact) {
  Rng rng(11, 0);
  int trial = 0;
  for (const Qs8GemmKernel* kernel : {&fast(), &without_vnni(), &narrow()})
    for (int regime = 0; regime < 3; ++regime)
      for (int64_t mr = 1; mr <= kernel->mr; ++mr)
        for (int64_t nc = 1; nc <= kernel->nr; ++nc)
          for (int64_t k : {1, 5, 25, 150}) expect_tile_requant_exact(*kernel, mr, nc, k, regime, trial++, rng);
}

// The fused requantization at int32's edges: zero sums (A all 0), so each output is the
// requantized bias, the biases running through INT32_MIN, INT32_MAX and the powers of two between,
// against every shift and the multiplier's edges (random sums reach none of these).
TEST_P(Qs8OnIsa, FusedRequantizationAtTheInt32Edges) {
  const int32_t biases[] = {kMin,  kMin + 1, -(1 << 30) - 1, -(1 << 30), -65537,   -1,
                            0,     1,        65537,          1 << 30,    kMax - 1, kMax};
  const int32_t multipliers[] = {0, 1 << 30, (1 << 30) + 1, kMax - 1, kMax};
  for (const Qs8GemmKernel* kernel : {&fast(), &without_vnni()}) {
    const int64_t nr = kernel->nr, k = 4, ldc = nr;
    std::vector<int8_t> a(static_cast<size_t>(kernel->mr * k), 0), b(static_cast<size_t>(k * nr), 57);
    auto packed = pack_qs8_weights(k, nr, b.data(), nr, "test weights");
    ASSERT_TRUE(packed.ok());
    for (int32_t shift = 0; shift < 32; ++shift)
      for (int32_t multiplier : multipliers) {
        Qs8OutputStage out;
        for (int64_t j = 0; j < nr; ++j) {
          out.bias.push_back(biases[static_cast<size_t>(j + shift) % (sizeof biases / sizeof biases[0])]);
          out.multiplier.push_back(multiplier);
          out.shift.push_back(shift);
        }
        pad_columns(&out);
        out.zero_point = shift % 3 - 1;
        const Qs8Requant rq{out.bias.data(), out.multiplier.data(), out.shift.data(), out.zero_point, out.lo, out.hi};
        std::vector<int8_t> c(static_cast<size_t>(kernel->mr * ldc), 77);
        kernel->tile_requant(kernel->mr, nr, 1, a.data(), k, packed.value().data.data<int8_t>(), &rq, c.data(), ldc);
        for (int64_t j = 0; j < nr; ++j) {
          const size_t u = static_cast<size_t>(j);
          const int32_t want =
              requantize(out.bias[u], QuantMultiplier{multiplier, shift}, out.zero_point, out.lo, out.hi);
          ASSERT_EQ(c[u], want) << kernel->name << ", bias " << out.bias[u] << ", multiplier " << multiplier
                                << ", shift " << shift;
        }
      }
  }
}

TEST_P(Qs8OnIsa, TileSumsTheWorstCaseWithoutSaturating) {
  // Every pair -128 * -127 = 16256 and 2 of them 32512: one step under int16's limit. Weights
  // of -128 are refused by the packer, since -128 * -128 pairs would saturate pmaddubsw.
  // (VNNI: a + 128 is 0 for every -128, and the column sums' 128 x -127 x 1024 come off exactly.)
  for (const Qs8GemmKernel* kernel : {&fast(), &without_vnni()}) {
    const int64_t k = 1024, nr = kernel->nr;
    std::vector<int8_t> a(static_cast<size_t>(kernel->mr * k), -128), b(static_cast<size_t>(k * nr), -127);
    auto packed = pack_qs8_weights(k, nr, b.data(), nr, "test weights");
    ASSERT_TRUE(packed.ok());
    std::vector<int32_t> acc(static_cast<size_t>(kernel->mr * nr));
    kernel->tile(kernel->mr, k / 4, a.data(), k, packed.value().data.data<int8_t>(), acc.data());
    for (int32_t v : acc) ASSERT_EQ(v, 1024 * 128 * 127) << kernel->name;
  }
}

TEST_P(Qs8OnIsa, RequantizeIsBitExact) {
  Rng rng(7, 0);
  const int32_t special[] = {kMin, kMin + 1, -65536, -32769, -32768, -257, -256, -255, -129, -128, -3, -2, -1, 0, 1,
                             2, 3, 127, 128, 255, 256, 32767, 32768, 65535, kMax - 1, kMax};
  for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 64, 100}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int32_t> acc(static_cast<size_t>(n)), bias(static_cast<size_t>(n)), mult(static_cast<size_t>(n)),
          shift(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        const size_t u = static_cast<size_t>(j);
        const double pick = rng.uniform(0, 1);
        acc[u] = pick < 0.3 ? special[static_cast<size_t>(rng.uniform(0, 1) * (sizeof special / sizeof *special))]
                            : static_cast<int32_t>(std::floor(rng.uniform(-1e6, 1e6)));
        bias[u] = 0;
        if (acc[u] > kMin + 1000 && acc[u] < kMax - 1000) bias[u] = static_cast<int32_t>(std::floor(rng.uniform(-999, 999)));
        // Multipliers from the whole range, their edges, and zero; shifts 0..31.
        const double which = rng.uniform(0, 1);
        mult[u] = which < 0.1 ? 0 : which < 0.2 ? (1 << 30) : which < 0.3 ? kMax
                                                        : static_cast<int32_t>(std::floor(rng.uniform(1 << 30, 2147483647.0)));
        shift[u] = static_cast<int32_t>(std::floor(rng.uniform(0, 32)));
      }
      const int32_t zp = static_cast<int32_t>(std::floor(rng.uniform(-128, 128)));
      const int32_t lo = trial % 2 ? zp : -128;  // with and without a fused ReLU
      std::vector<int8_t> got(static_cast<size_t>(n) + 8, 77), want(static_cast<size_t>(n) + 8, 77);
      fast().requantize(n, acc.data(), bias.data(), mult.data(), shift.data(), zp, lo, 127, got.data());
      ref().requantize(n, acc.data(), bias.data(), mult.data(), shift.data(), zp, lo, 127, want.data());
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], want[j]) << fast().name << " n " << n << " at " << j << ": acc " << (j < acc.size() ? acc[j] : 0)
                                   << " mult " << (j < mult.size() ? mult[j] : 0) << " shift "
                                   << (j < shift.size() ? shift[j] : 0);
    }
  }
}

TEST_P(Qs8OnIsa, RequantizeEveryShiftAtTheExtremes) {
  // Every shift with the accumulators and multipliers where the rounding steps change: the
  // vector code's shift-by-product and sign handling against gemmlowp's scalar code.
  const int32_t accs[] = {kMin, kMin + 1, -1073741825, -1073741824, -65537, -65536, -32769, -3, -2, -1, 0, 1, 2, 3,
                          32767, 65535, 65536, 1073741823, 1073741824, kMax - 1, kMax};
  const int32_t mults[] = {0, 1 << 30, (1 << 30) + 1, 1518500250, kMax - 1, kMax};
  std::vector<int32_t> acc, bias, mult, shift;
  for (int32_t s = 0; s < 32; ++s)
    for (int32_t a : accs)
      for (int32_t m : mults) {
        acc.push_back(a);
        bias.push_back(0);
        mult.push_back(m);
        shift.push_back(s);
      }
  const int64_t n = static_cast<int64_t>(acc.size());
  for (int32_t zp : {-128, -5, 0, 127})
    for (int32_t lo : {-128, zp}) {
      std::vector<int8_t> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      fast().requantize(n, acc.data(), bias.data(), mult.data(), shift.data(), zp, lo, 127, got.data());
      ref().requantize(n, acc.data(), bias.data(), mult.data(), shift.data(), zp, lo, 127, want.data());
      for (size_t j = 0; j < got.size(); ++j)
        ASSERT_EQ(got[j], want[j]) << fast().name << ": acc " << acc[j] << " mult " << mult[j] << " shift " << shift[j]
                                   << " zp " << zp << " lo " << lo;
    }
}

TEST_P(Qs8OnIsa, BlockedProductMatchesPlainLoopsWhateverTheThreads) {
  Rng rng(9, 0);
  ThreadPool pool(2);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {5, 3, 7}, {33, 17, 25}, {70, 40, 150},
                         {257, 10, 400}, {64, 130, 96}, {45, 6, 25}, {37, 8, 150}}) {
    const int64_t lda = qs8_padded_depth(k);
    std::vector<int8_t> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = draw_activation(rng, 0);
    for (auto& v : b) v = draw_weight(rng, 0);
    Qs8OutputStage out;
    for (int64_t j = 0; j < n; ++j) {
      out.bias.push_back(static_cast<int32_t>(std::floor(rng.uniform(-5000, 5000))));
      const QuantMultiplier q = quantize_multiplier(rng.uniform(1e-5, 1e-3));
      out.multiplier.push_back(q.multiplier);
      out.shift.push_back(q.shift);
    }
    pad_columns(&out);
    out.zero_point = -5;
    out.lo = -5;  // a fused ReLU
    // Packed for the kernel a layer of n columns gets: the narrow one at n <= 8.
    auto packed = pack_qs8_weights(k, n, b.data(), qs8_gemm_kernel_for(GetParam(), n).nr, "test weights");
    ASSERT_TRUE(packed.ok());
    std::vector<int8_t> want(static_cast<size_t>(m * n)), one(want.size()), two(want.size());
    qs8_gemm_ref(m, n, k, a.data(), lda, b.data(), out, want.data(), n);
    qs8_gemm(GetParam(), m, a.data(), lda, packed.value(), out, one.data(), n, nullptr);
    qs8_gemm(GetParam(), m, a.data(), lda, packed.value(), out, two.data(), n, &pool);
    ASSERT_EQ(one, want) << m << "x" << n << "x" << k;
    ASSERT_EQ(two, want) << m << "x" << n << "x" << k << " on 2 threads";
  }
}

// Weights of 4 bits held two a byte (issue 34's packed w4): the product gives the bits of the
// same values packed one a byte, with [-8, 7] at both ends, on every shape of the test above; the
// payload is half, exactly.
TEST_P(Qs8OnIsa, FourBitWeightsGiveTheBitsOfTheSameValuesInEightBits) {
  Rng rng(21, 0);
  ThreadPool pool(2);
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {5, 3, 7}, {33, 17, 25}, {70, 40, 150},
                         {257, 10, 400}, {64, 130, 96}, {45, 6, 25}}) {
    const int64_t lda = qs8_padded_depth(k);
    std::vector<int8_t> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(k * n));
    for (auto& v : a) v = draw_activation(rng, 1);
    for (size_t i = 0; i < b.size(); ++i) b[i] = i % 7 == 0 ? (i % 2 ? -8 : 7) : static_cast<int8_t>(rng.below(16)) - 8;
    Qs8OutputStage out;
    for (int64_t j = 0; j < n; ++j) {
      out.bias.push_back(static_cast<int32_t>(std::floor(rng.uniform(-500, 500))));
      const QuantMultiplier q = quantize_multiplier(rng.uniform(1e-4, 1e-2));
      out.multiplier.push_back(q.multiplier);
      out.shift.push_back(q.shift);
    }
    pad_columns(&out);
    const int64_t nr = qs8_gemm_kernel_for(GetParam(), n).nr;
    auto eight = pack_qs8_weights(k, n, b.data(), nr, "test weights");
    auto four = pack_qs8_weights(k, n, b.data(), nr, "test weights", 4);
    ASSERT_TRUE(eight.ok() && four.ok());
    ASSERT_EQ(four.value().data.bytes() * 2, eight.value().data.bytes());
    std::vector<int8_t> want(static_cast<size_t>(m * n)), one(want.size()), two(want.size());
    qs8_gemm_ref(m, n, k, a.data(), lda, b.data(), out, want.data(), n);
    qs8_gemm(GetParam(), m, a.data(), lda, four.value(), out, one.data(), n, nullptr);
    qs8_gemm(GetParam(), m, a.data(), lda, four.value(), out, two.data(), n, &pool);
    ASSERT_EQ(one, want) << m << "x" << n << "x" << k;
    ASSERT_EQ(two, want) << m << "x" << n << "x" << k << " on 2 threads";
  }
}

// widen_s4 against its reference: every byte value, every even length to 100 (the vector loop
// and the tail), every offset.
TEST(Qs8Kernels, WidenS4MatchesItsReference) {
  std::vector<uint8_t> packed(300);
  for (size_t i = 0; i < packed.size(); ++i) packed[i] = static_cast<uint8_t>(i * 37 + 11);
  for (int v = 0; v < 256; ++v) packed[static_cast<size_t>(v)] = static_cast<uint8_t>(v);
  for (int64_t offset : {0, 1, 3, 128})
    for (int64_t n = 0; n <= 100; n += 2) {
      std::vector<int8_t> want(static_cast<size_t>(n) + 1, 99), got(want);
      widen_s4_ref(n, packed.data() + offset, want.data());
      widen_s4(n, packed.data() + offset, got.data());
      ASSERT_EQ(got, want) << "n " << n << " offset " << offset;
      for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(want[static_cast<size_t>(i)] >= -8 && want[static_cast<size_t>(i)] <= 7);
    }
  std::vector<int8_t> all(512);
  widen_s4(512, packed.data(), all.data());
  for (int v = 0; v < 256; ++v) {
    ASSERT_EQ(all[static_cast<size_t>(2 * v)], ((v & 15) >= 8 ? (v & 15) - 16 : (v & 15))) << v;
    ASSERT_EQ(all[static_cast<size_t>(2 * v + 1)], ((v >> 4) >= 8 ? (v >> 4) - 16 : (v >> 4))) << v;
  }
}

// The direct single-channel convolution against its formula (qs8_gemm.h), pixels in any
// count, 1 to 11 filters, with and without a 4-pixel max window, at the extremes.
TEST_P(Qs8OnIsa, ConvPairsIsBitExact) {
  const Qs8ConvKernel& kernel = qs8_conv_kernel(GetParam());
  Rng rng(13, 0);
  int trial = 0;
  for (int regime = 0; regime < 3; ++regime)
    for (int64_t window : {1, 4})
      for (int64_t count : {1, 3, 7, 8, 9, 14, 17, 28})
        for (int64_t n : {1, 2, 5, 6, 8, 9, 11})
          for (int64_t pairs : {1, 5, 15}) {
            // Each source its own run of the buffer, readable for count rounded up to 8 pairs, in
            // a shuffled order.
            const int64_t readable = 2 * ((count + 7) / 8 * 8), sources = window * pairs;
            std::vector<int16_t> data(static_cast<size_t>(sources * readable));
            for (auto& v : data) v = draw_activation(rng, regime);
            std::vector<int64_t> offsets;
            for (int64_t i = 0; i < sources; ++i) offsets.push_back(((i * 7) % sources) * readable);
            std::vector<int32_t> wt(static_cast<size_t>(pairs * n));
            for (auto& v : wt) {
              const int16_t lo = draw_weight(rng, regime), hi = rng.uniform(0, 1) < 0.2 ? int16_t{0} : draw_weight(rng, regime);
              v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(lo)) |
                                       (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16));
            }
            const Qs8OutputStage out = random_output_stage(n, rng, trial++);
            const Qs8Requant rq{out.bias.data(), out.multiplier.data(), out.shift.data(), out.zero_point, out.lo, out.hi};
            std::vector<int8_t> got(static_cast<size_t>(count * n + 8), 77);
            kernel.conv_pairs(count, window, pairs, data.data(), offsets.data(), wt.data(), n, &rq, got.data());
            for (int64_t x = 0; x < count; ++x)
              for (int64_t f = 0; f < n; ++f) {
                int32_t best = 0;
                for (int64_t w = 0; w < window; ++w) {
                  int32_t sum = 0;
                  for (int64_t t = 0; t < pairs; ++t) {
                    const int16_t* p = data.data() + offsets[static_cast<size_t>(w * pairs + t)];
                    const int32_t k = wt[static_cast<size_t>(t * n + f)];
                    sum += p[2 * x] * static_cast<int16_t>(k & 0xFFFF) + p[2 * x + 1] * static_cast<int16_t>(k >> 16);
                  }
                  best = w == 0 ? sum : std::max(best, sum);
                }
                const size_t u = static_cast<size_t>(f);
                const int32_t want = requantize(best + out.bias[u], QuantMultiplier{out.multiplier[u], out.shift[u]},
                                                out.zero_point, out.lo, out.hi);
                ASSERT_EQ(got[static_cast<size_t>(x * n + f)], want)
                    << kernel.name << " pixel " << x << " of " << count << ", filter " << f << " of " << n << ", window "
                    << window << ", pairs " << pairs << ", regime " << regime;
              }
            for (size_t j = static_cast<size_t>(count * n); j < got.size(); ++j) ASSERT_EQ(got[j], 77) << "wrote past the end";
          }
}

TEST(Qs8Kernels, EachLevelUsesItsTile) {
  EXPECT_STREQ(qs8_gemm_kernel(Isa::sse3).name, "qs8_gemm_4x8__sse2");
  EXPECT_STREQ(qs8_gemm_kernel(Isa::ssse3).name, "qs8_gemm_4x8__ssse3");
  EXPECT_STREQ(qs8_gemm_kernel(Isa::avx).name, "qs8_gemm_4x8__ssse3");
  EXPECT_STREQ(qs8_gemm_kernel(Isa::avx2_fma).name, "qs8_gemm_4x16__avx2");
  EXPECT_STREQ(qs8_gemm_narrow_kernel(Isa::avx2_fma).name, "qs8_gemm_4x8__avx2");
  EXPECT_STREQ(qs8_gemm_narrow_kernel(Isa::ssse3).name, "qs8_gemm_4x8__ssse3");
  EXPECT_STREQ(qs8_gemm_kernel_for(Isa::avx2_fma, 8).name, "qs8_gemm_4x8__avx2");
  EXPECT_STREQ(qs8_gemm_kernel_for(Isa::avx2_fma, 9).name, "qs8_gemm_4x16__avx2");
  EXPECT_STREQ(qs8_conv_kernel(Isa::sse2).name, "qs8_conv_pairs__sse2");
  EXPECT_STREQ(qs8_conv_kernel(Isa::avx).name, "qs8_conv_pairs__sse2");
  EXPECT_STREQ(qs8_conv_kernel(Isa::avx2_fma).name, "qs8_conv_pairs__avx2");
  // avx512 runs avx2's int8 kernels, but VNNI's GEMM tile where the CPU has it (the same packing).
  EXPECT_STREQ(qs8_gemm_kernel(Isa::avx512, true).name, "qs8_gemm_8x16__avx512_vnni");
  EXPECT_STREQ(qs8_gemm_kernel(Isa::avx512, false).name, "qs8_gemm_4x16__avx2");
  EXPECT_STREQ(qs8_gemm_kernel(Isa::avx2_fma, true).name, "qs8_gemm_4x16__avx2");
  EXPECT_EQ(qs8_gemm_kernel(Isa::avx512, true).nr, qs8_gemm_kernel(Isa::avx512, false).nr);
  EXPECT_STREQ(qs8_gemm_kernel(Isa::avx512).name,
               detect_cpu().features.avx512vnni ? "qs8_gemm_8x16__avx512_vnni" : "qs8_gemm_4x16__avx2");
  EXPECT_STREQ(qs8_gemm_narrow_kernel(Isa::avx512).name, "qs8_gemm_4x8__avx2");
  EXPECT_STREQ(qs8_conv_kernel(Isa::avx512).name, "qs8_conv_pairs__avx2");
}

}  // namespace
}  // namespace rg
