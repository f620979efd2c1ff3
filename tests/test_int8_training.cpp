// Int8 training's dynamic int8 GEMM (ops/int8_dynamic_gemm.h): bit-exact against the plain-loop
// reference on every ISA (transposes, strides, tails, depth slices, gathered A, k past int32's
// reach), independent of the thread count and reproducible; the stochastic rounding unbiased;
// the dequantized product within the bound the quantization steps give; NaN/Inf/zero operands;
// and Dense, Conv2D and ConvTranspose2D layers routed through it, forward and backward, within
// the bound of their quantized operands and bit-identical to f32 at the default setting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "isa_param.h"
#include "layer_check.h"
#include "nn/conv.h"
#include "nn/dense.h"
#include "nn/layer_gemm.h"
#include "nn/workspace.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "ops/int8_dynamic_gemm.h"

namespace rg {
namespace {

// Which operand of a product is a gradient (rounded stochastically, int8 training's rule); the
// other rounds to nearest.
enum class GradOperand : uint8_t { none, a, b };
void set_gradient(Int8GemmOptions& o, GradOperand grad) {
  o.a = int8_format(grad == GradOperand::a ? Rounding::stochastic : Rounding::nearest);
  o.b = int8_format(grad == GradOperand::b ? Rounding::stochastic : Rounding::nearest);
}

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

std::vector<float> random_floats(int64_t count, Rng& rng, double scale = 1.0) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) x = static_cast<float>(rng.uniform(-scale, scale));
  return v;
}

// Expects the same bits in two m x n matrices of row stride ldc.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want, int64_t m, int64_t n, int64_t ldc,
                      const std::string& what) {
  int reported = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      if (bits_of(got[at]) != bits_of(want[at]) && reported++ < 5) {
        ADD_FAILURE() << what << ": C[" << i << "][" << j << "] = " << got[at] << ", reference " << want[at];
      }
    }
}

// One random product of op(A) op(B) with padded strides, run on `isa` and by the reference.
struct Case {
  Trans ta, tb;
  int64_t m, n, k;
  GradOperand grad;
  float alpha, beta;
  int64_t depth_block;
};

void run_case(Isa isa, const Case& cs, uint64_t seed, ThreadPool* pool) {
  Rng rng(seed, 17);
  const int64_t lda = (cs.ta == Trans::yes ? cs.m : cs.k) + 3, ldb = (cs.tb == Trans::yes ? cs.k : cs.n) + 2,
                ldc = cs.n + 1;
  const std::vector<float> a = random_floats((cs.ta == Trans::yes ? cs.k : cs.m) * lda, rng, 2.0);
  const std::vector<float> b = random_floats((cs.tb == Trans::yes ? cs.n : cs.k) * ldb, rng, 0.5);
  std::vector<float> c = random_floats(cs.m * ldc, rng), c_ref = c;
  const GemmShape s{cs.ta, cs.tb, cs.m, cs.n, cs.k, lda, ldb, ldc};
  Int8GemmOptions o;
  set_gradient(o, cs.grad);
  o.seed = seed;
  o.stream = 5;
  o.isa = isa;
  o.depth_block = cs.depth_block;
  Int8GemmTrace trace, trace_ref;
  trace.want_sums = trace_ref.want_sums = true;
  o.trace = &trace;
  int8_dynamic_gemm(s, cs.alpha, a.data(), b.data(), cs.beta, c.data(), pool, o);
  o.trace = &trace_ref;
  int8_dynamic_gemm_ref(s, cs.alpha, a.data(), b.data(), cs.beta, c_ref.data(), o);
  const std::string what = std::string(isa_name(isa)) + " " + std::to_string(cs.m) + "x" + std::to_string(cs.n) +
                           "x" + std::to_string(cs.k) + (cs.ta == Trans::yes ? " A^T" : "") +
                           (cs.tb == Trans::yes ? " B^T" : "") + " grad " +
                           std::to_string(static_cast<int>(cs.grad)) + " depth block " +
                           std::to_string(cs.depth_block);
  ASSERT_EQ(trace.sums, trace_ref.sums) << what;
  EXPECT_EQ(trace.key_a, trace_ref.key_a) << what;
  EXPECT_EQ(trace.key_b, trace_ref.key_b) << what;
  EXPECT_EQ(bits_of(trace.max_abs_a), bits_of(trace_ref.max_abs_a)) << what;
  EXPECT_EQ(bits_of(trace.max_abs_b), bits_of(trace_ref.max_abs_b)) << what;
  expect_same_bits(c, c_ref, cs.m, cs.n, ldc, what);
}

class Int8DynamicGemm : public OnEveryIsa {};
INSTANTIATE_TEST_SUITE_P(AllIsas, Int8DynamicGemm, ::testing::ValuesIn(all_isas()), isa_label);

TEST_P(Int8DynamicGemm, SumsAndOutputBitExactAgainstTheReference) {
  // Sizes below, at and above the tiles (4x8, 4x16) and the 32-row block; depths with tails.
  const int64_t ms[] = {1, 3, 4, 5, 31, 33, 70};
  const int64_t ns[] = {1, 7, 8, 9, 16, 17, 40};
  const int64_t ks[] = {1, 3, 4, 5, 37, 130};
  uint64_t seed = 1;
  for (Trans ta : {Trans::no, Trans::yes})
    for (Trans tb : {Trans::no, Trans::yes})
      for (GradOperand grad : {GradOperand::none, GradOperand::a, GradOperand::b})
        for (int64_t m : ms)
          for (int64_t n : ns)
            for (int64_t k : ks) {
              if ((m * 7 + n * 3 + k) % 3 != 0 && !(m == 70 && n == 40)) continue;  // a third of the grid
              const float beta = (seed % 3 == 0) ? 0.0f : (seed % 3 == 1 ? 1.0f : -0.5f);
              const uint64_t case_seed = seed++;  // read once: argument order is unspecified
              run_case(GetParam(), Case{ta, tb, m, n, k, grad, case_seed % 2 ? 1.0f : 0.75f, beta, 1024}, case_seed,
                       nullptr);
              if (HasFailure()) return;
            }
}

TEST_P(Int8DynamicGemm, DepthSlicesAddUpExactly) {
  // Depth blocks of 4, 8 and 12 on depths that do and do not divide into them.
  uint64_t seed = 100;
  for (int64_t block : {4, 8, 12})
    for (int64_t k : {3, 8, 13, 24, 61})
      for (Trans ta : {Trans::no, Trans::yes})
        for (GradOperand grad : {GradOperand::none, GradOperand::a, GradOperand::b}) {
          run_case(GetParam(), Case{ta, Trans::no, 9, 19, k, grad, 1.0f, 0.0f, block}, seed++, nullptr);
          if (HasFailure()) return;
        }
}

// k = 140,000 of 127 * 127 (or its negation) sums to 2,258,060,000 > 2^31: exact in int64 with
// int32 slices of at most kInt8GemmDepthSlice (whose worst case, 2,114,060,288, still fits).
TEST_P(Int8DynamicGemm, DepthPastInt32RangeIsExact) {
  const int64_t m = 5, n = 17, k = 140000;
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) a[static_cast<size_t>(i * k + p)] = (i % 2 == 0) ? 3.0f : -3.0f;
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) b[static_cast<size_t>(p * n + j)] = (j == 4) ? -0.25f : 0.25f;
  for (int64_t block : {int64_t{1024}, kInt8GemmDepthSlice}) {
    std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
    Int8GemmOptions o;
    o.isa = GetParam();
    o.depth_block = block;
    Int8GemmTrace trace;
    trace.want_sums = true;
    o.trace = &trace;
    int8_dynamic_gemm(GemmShape{Trans::no, Trans::no, m, n, k, k, n, n}, 1.0f, a.data(), b.data(), 0.0f, c.data(),
                      nullptr, o);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t sign = ((i % 2 == 0) ? 1 : -1) * (j == 4 ? -1 : 1);
        ASSERT_EQ(trace.sums[static_cast<size_t>(i * n + j)], sign * int64_t{127 * 127} * k) << i << "," << j;
        // 3 * 0.25 * k, from (3/127) (0.25/127) 127^2 k rounded once
        EXPECT_FLOAT_EQ(c[static_cast<size_t>(i * n + j)], static_cast<float>(sign) * 0.75f * k);
      }
  }
  // The reference agrees on a shorter product of the same values with a transposed A.
  run_case(GetParam(), Case{Trans::yes, Trans::yes, 6, 9, 1500, GradOperand::b, 1.0f, 0.0f, 256}, 77, nullptr);
}

TEST_P(Int8DynamicGemm, GatheredMatchesTheReference) {
  Rng rng(9, 0);
  const int64_t image = 3000;
  const std::vector<float> base = random_floats(image, rng, 3.0);
  for (int64_t m : {1, 5, 37})
    for (int64_t n : {3, 16, 21})
      for (int64_t k : {2, 9, 75})
        for (GradOperand grad : {GradOperand::none, GradOperand::a, GradOperand::b}) {
          std::vector<int32_t> rows(static_cast<size_t>(m)), depth(static_cast<size_t>(k));
          for (int32_t& r : rows) r = static_cast<int32_t>(200 + rng.below(1500));
          for (int32_t& d : depth) d = static_cast<int32_t>(rng.below(1200));
          const GatheredA<float> a{base.data(), rows.data(), depth.data()};
          const int64_t ldb = n + 3, ldc = n + 2;
          const std::vector<float> b = random_floats(k * ldb, rng);
          std::vector<float> c = random_floats(m * ldc, rng), c_ref = c;
          Int8GemmOptions o;
          set_gradient(o, grad);
          o.seed = 3;
          o.isa = GetParam();
          o.depth_block = 8;
          Int8GemmTrace trace, trace_ref;
          trace.want_sums = trace_ref.want_sums = true;
          o.trace = &trace;
          int8_dynamic_gemm_gathered(m, n, k, 1.0f, a, b.data(), ldb, 1.0f, c.data(), ldc, nullptr, o);
          o.trace = &trace_ref;
          int8_dynamic_gemm_gathered_ref(m, n, k, 1.0f, a, b.data(), ldb, 1.0f, c_ref.data(), ldc, o);
          ASSERT_EQ(trace.sums, trace_ref.sums) << m << "x" << n << "x" << k;
          EXPECT_EQ(trace.key_a, trace_ref.key_a);
          EXPECT_EQ(trace.key_b, trace_ref.key_b);
          expect_same_bits(c, c_ref, m, n, ldc, "gathered");
        }
}

// A convolution's own offsets (im2col.h): patch rows are runs of kernel * channels consecutive
// values (15 here, and 5 for lenet's conv1: one channel), copied whole in 16-byte pieces; depth
// blocks of 32 and 8 cut them.
TEST_P(Int8DynamicGemm, ConvPatchesMatchTheReference) {
  Rng rng(19, 0);
  for (int64_t block : {8, 32, 1024})
    for (const ConvGeometry& g : {conv_geometry(9, 7, 5, 3, 1, 1).value(), conv_geometry(9, 7, 1, 5, 1, 2).value()}) {
      const int64_t count = 3, filters = 11;
      const PatchOffsets at = patch_offsets(g, count);
      const std::vector<float> image = random_floats(count * g.padded_size(), rng);
      for (bool transposed : {false, true}) {  // forward (pixels x taps) and dW (taps x pixels)
        const int64_t m = transposed ? g.patch_size() : count * g.patches();
        const int64_t k = transposed ? count * g.patches() : g.patch_size();
        const GatheredA<float> a{image.data(), transposed ? at.taps.data() : at.pixels.data(),
                                 transposed ? at.pixels.data() : at.taps.data()};
        const std::vector<float> b = random_floats(k * filters, rng);
        std::vector<float> c(static_cast<size_t>(m * filters)), c_ref(c.size());
        Int8GemmOptions o;
        set_gradient(o, transposed ? GradOperand::b : GradOperand::none);
        o.isa = GetParam();
        o.depth_block = block;
        int8_dynamic_gemm_gathered(m, filters, k, 1.0f, a, b.data(), filters, 0.0f, c.data(), filters, nullptr, o);
        int8_dynamic_gemm_gathered_ref(m, filters, k, 1.0f, a, b.data(), filters, 0.0f, c_ref.data(), filters, o);
        expect_same_bits(c, c_ref, m, filters, filters, transposed ? "conv dW" : "conv forward");
      }
    }
}

// Fixed partitioning and integer sums: 1, 2 and 3 threads give the same bits.
TEST_P(Int8DynamicGemm, SameBitsOnEveryThreadCount) {
  ThreadPool two(2), three(3);
  Rng rng(4, 0);
  const int64_t m = 150, n = 70, k = 300;
  const std::vector<float> a = random_floats(m * k, rng), b = random_floats(k * n, rng);
  for (GradOperand grad : {GradOperand::none, GradOperand::a, GradOperand::b}) {
    std::vector<std::vector<float>> outs;
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &two, &three}) {
      std::vector<float> c(static_cast<size_t>(m * n));
      Int8GemmOptions o;
      set_gradient(o, grad);
      o.seed = 11;
      o.isa = GetParam();
      int8_dynamic_gemm(GemmShape{Trans::no, Trans::no, m, n, k, k, n, n}, 1.0f, a.data(), b.data(), 0.0f, c.data(),
                        pool, o);
      outs.push_back(c);
    }
    expect_same_bits(outs[1], outs[0], m, n, n, "2 threads");
    expect_same_bits(outs[2], outs[0], m, n, n, "3 threads");
  }
  run_case(GetParam(), Case{Trans::yes, Trans::no, 130, 40, 260, GradOperand::a, 1.0f, 1.0f, 64}, 12, &three);
}

// ---------------------------------------------------------------- rounding

TEST(Int8Rounding, NearestIsRoundHalfEvenOfTheScaledValue) {
  EXPECT_EQ(int8_quantize_nearest(0.5f, 1.0f), 0);
  EXPECT_EQ(int8_quantize_nearest(1.5f, 1.0f), 2);
  EXPECT_EQ(int8_quantize_nearest(-2.5f, 1.0f), -2);
  EXPECT_EQ(int8_quantize_nearest(127.49f, 1.0f), 127);
  EXPECT_EQ(int8_quantize_nearest(1000.0f, 1.0f), 127);
  EXPECT_EQ(int8_quantize_nearest(-1000.0f, 1.0f), -127);  // never -128
  EXPECT_EQ(int8_quantize_nearest(std::numeric_limits<float>::quiet_NaN(), 1.0f), 0);
  EXPECT_EQ(int8_quant_multiplier(0.0f), 0.0f);
  EXPECT_EQ(int8_quant_multiplier(1e-35f), 0.0f);  // 127 / max would overflow: quantizes to zeros
  EXPECT_EQ(int8_quant_multiplier(127.0f), 1.0f);
}

TEST(Int8Rounding, UniformStreamIsUniformAndAPureFunctionOfKeyAndIndex) {
  const int64_t draws = 1 << 20;
  double sum = 0, sum_sq = 0;
  int64_t buckets[16] = {};
  for (int64_t i = 0; i < draws; ++i) {
    const float u = int8_rounding_uniform(0x1234567890ABCDEFull, static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    sum_sq += static_cast<double>(u) * u;
    ++buckets[static_cast<int>(u * 16)];
  }
  const double mean = sum / draws, var = sum_sq / draws - mean * mean;
  // sd of the mean: sqrt(1/12 / 2^20) = 2.8e-4; 5 sd
  EXPECT_NEAR(mean, 0.5, 1.5e-3);
  EXPECT_NEAR(var, 1.0 / 12, 1e-3);
  double chi2 = 0;
  for (int64_t count : buckets) chi2 += std::pow(count - draws / 16.0, 2) / (draws / 16.0);
  EXPECT_LT(chi2, 45.0);  // 15 degrees of freedom: P(chi2 > 45) ~ 7e-5
  EXPECT_EQ(bits_of(int8_rounding_uniform(7, 123456789)), bits_of(int8_rounding_uniform(7, 123456789)));
  EXPECT_NE(bits_of(int8_rounding_uniform(7, 123456789)), bits_of(int8_rounding_uniform(8, 123456789)));
  EXPECT_NE(bits_of(int8_rounding_uniform(7, 5)), bits_of(int8_rounding_uniform(7, 5 + (uint64_t{1} << 32))));
}

// E[q] = x * multiplier: the mean of N roundings is within 5 sd (sd <= 0.5 / sqrt(N)) of it.
TEST(Int8Rounding, StochasticRoundingIsUnbiased) {
  const int64_t draws = 200000;
  const double tolerance = 5 * 0.5 / std::sqrt(static_cast<double>(draws));
  const float multiplier = 127.0f / 3.0f;
  for (float x : {0.1f, -0.1f, 1.2345f, -2.9999f, 0.0001f, 2.99f, -3.0f, 0.0f}) {
    double by_index = 0, by_key = 0;
    for (int64_t i = 0; i < draws; ++i) {
      by_index += int8_quantize_stochastic(x, multiplier, int8_rounding_uniform(99, static_cast<uint64_t>(i)));
      Int8GemmOptions o;
      o.seed = static_cast<uint64_t>(i);
      by_key += int8_quantize_stochastic(x, multiplier, int8_rounding_uniform(int8_rounding_key(o, 1, 1, 1, 1, 3.0f, x), 0));
    }
    const double want = static_cast<double>(x) * multiplier;
    EXPECT_NEAR(by_index / draws, want, tolerance) << x;
    EXPECT_NEAR(by_key / draws, want, tolerance) << x;
  }
  // Only the two neighbours of x * multiplier ever come out.
  for (int64_t i = 0; i < 1000; ++i) {
    const int q = int8_quantize_stochastic(1.2345f, multiplier, int8_rounding_uniform(1, static_cast<uint64_t>(i)));
    EXPECT_TRUE(q == 52 || q == 53) << q;
  }
}

// The product with a stochastically rounded operand is unbiased too: averaged over seeds it
// converges to the product of the nearest-rounded other operand and the exact gradient.
TEST(Int8Rounding, StochasticProductAveragesToTheExactOne) {
  Rng rng(21, 0);
  const int64_t m = 4, n = 3, k = 64;
  const std::vector<float> a = random_floats(m * k, rng);
  std::vector<float> b = random_floats(k * n, rng);
  b[0] = 1.0f;  // max|B| = 1: B's step is 1 / 127
  // A with values on its grid (integers / 127 * max|A|) rounds exactly: only B's rounding varies.
  std::vector<float> a_grid(a.size());
  for (size_t t = 0; t < a.size(); ++t) a_grid[t] = std::round(a[t] * 127.0f) / 127.0f;
  a_grid[0] = 1.0f;
  std::vector<double> exact(static_cast<size_t>(m * n), 0.0), mean(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        exact[static_cast<size_t>(i * n + j)] += double{a_grid[static_cast<size_t>(i * k + p)]} * b[static_cast<size_t>(p * n + j)];
  const int runs = 4000;
  for (int r = 0; r < runs; ++r) {
    std::vector<float> c(static_cast<size_t>(m * n));
    Int8GemmOptions o;
    set_gradient(o, GradOperand::b);
    o.seed = static_cast<uint64_t>(r);
    int8_dynamic_gemm(GemmShape{Trans::no, Trans::no, m, n, k, k, n, n}, 1.0f, a_grid.data(), b.data(), 0.0f,
                      c.data(), nullptr, o);
    for (size_t t = 0; t < c.size(); ++t) mean[t] += c[t] / runs;
  }
  // Each product's rounding error has sd <= |a| * step / 2 per term: sd of the sum <= step/2 *
  // sqrt(k) = 0.031, of the mean over 4000 runs 5e-4; 5 sd = 2.5e-3.
  for (size_t t = 0; t < exact.size(); ++t) EXPECT_NEAR(mean[t], exact[t], 2.5e-3) << t;
}

TEST(Int8Rounding, SameSeedSameBitsOtherSeedOtherBits) {
  Rng rng(5, 0);
  const int64_t m = 20, n = 30, k = 40;
  const std::vector<float> a = random_floats(m * k, rng), b = random_floats(k * n, rng);
  auto run = [&](uint64_t seed, uint64_t stream) {
    std::vector<float> c(static_cast<size_t>(m * n));
    Int8GemmOptions o;
    set_gradient(o, GradOperand::a);
    o.seed = seed;
    o.stream = stream;
    int8_dynamic_gemm(GemmShape{Trans::no, Trans::no, m, n, k, k, n, n}, 1.0f, a.data(), b.data(), 0.0f, c.data(),
                      nullptr, o);
    return c;
  };
  const std::vector<float> first = run(1, 0);
  expect_same_bits(run(1, 0), first, m, n, n, "same seed");
  EXPECT_NE(run(2, 0), first);
  EXPECT_NE(run(1, 1), first);
}

// ---------------------------------------------------------------- accuracy and special values

// |C - C_f32| <= sum_p (|a| e_b + e_a |b| + e_a e_b), e = the largest rounding error of an
// element: step / 2 rounding to nearest, the step (exclusive) stochastically; plus f32's own
// rounding, 1e-5 of sum |a||b|.
TEST(Int8DynamicAccuracy, WithinTheQuantizationBoundOfTheF32Product) {
  Rng rng(31, 0);
  for (GradOperand grad : {GradOperand::none, GradOperand::a, GradOperand::b})
    for (Trans ta : {Trans::no, Trans::yes}) {
      const int64_t m = 64, n = 48, k = 200;
      const std::vector<float> a = random_floats(m * k, rng, 2.0), b = random_floats(k * n, rng, 0.01);
      const int64_t lda = ta == Trans::yes ? m : k;
      const GemmShape s{ta, Trans::no, m, n, k, lda, n, n};
      std::vector<float> c(static_cast<size_t>(m * n)), c32(c.size());
      Int8GemmOptions o;
      set_gradient(o, grad);
      Int8GemmTrace trace;
      o.trace = &trace;
      int8_dynamic_gemm(s, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr, o);
      gemm_ref(s, 1.0f, a.data(), b.data(), 0.0f, c32.data());
      const double step_a = trace.max_abs_a / 127.0, step_b = trace.max_abs_b / 127.0;
      const double e_a = grad == GradOperand::a ? step_a : step_a / 2, e_b = grad == GradOperand::b ? step_b : step_b / 2;
      double err2 = 0, ref2 = 0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double bound = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double av = std::fabs(ta == Trans::yes ? a[static_cast<size_t>(p * m + i)] : a[static_cast<size_t>(i * k + p)]);
            const double bv = std::fabs(b[static_cast<size_t>(p * n + j)]);
            bound += av * e_b + e_a * bv + e_a * e_b;
            magnitude += av * bv;
          }
          const double got = c[static_cast<size_t>(i * n + j)], want = c32[static_cast<size_t>(i * n + j)];
          ASSERT_LE(std::fabs(got - want), bound + 1e-5 * magnitude) << i << "," << j;
          err2 += (got - want) * (got - want);
          ref2 += want * want;
        }
      // For uniform data the typical error is much smaller than the bound: relative rms about
      // step / sqrt(2) ~ 0.6% rounding to nearest (x sqrt(2) stochastically).
      EXPECT_LT(std::sqrt(err2 / ref2), grad == GradOperand::none ? 0.012 : 0.02);
    }
}

TEST(Int8DynamicSpecial, NanOrInfMakesCNanZeroOperandGivesBetaC) {
  const int64_t m = 5, n = 6, k = 7;
  Rng rng(2, 0);
  std::vector<float> a = random_floats(m * k, rng), b = random_floats(k * n, rng);
  const GemmShape s{Trans::no, Trans::no, m, n, k, k, n, n};
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (int which = 0; which < 2; ++which) {
      std::vector<float> a2 = a, b2 = b;
      (which == 0 ? a2[11] : b2[13]) = bad;
      std::vector<float> c(static_cast<size_t>(m * n), 1.0f), c_ref = c;
      Int8GemmOptions o;
      set_gradient(o, GradOperand::a);
      Int8GemmTrace trace;
      o.trace = &trace;
      int8_dynamic_gemm(s, 1.0f, a2.data(), b2.data(), 1.0f, c.data(), nullptr, o);
      EXPECT_TRUE(trace.nonfinite);
      for (float v : c) EXPECT_TRUE(std::isnan(v));
      int8_dynamic_gemm_ref(s, 1.0f, a2.data(), b2.data(), 1.0f, c_ref.data(), o);
      for (float v : c_ref) EXPECT_TRUE(std::isnan(v));
    }
  }
  // All-zero or tiny A: the product is 0; beta 0 ignores a NaN in C, beta 2 doubles C.
  for (float fill : {0.0f, -0.0f, 1e-35f}) {
    std::vector<float> zero(a.size(), fill);
    std::vector<float> c(static_cast<size_t>(m * n), std::numeric_limits<float>::quiet_NaN());
    int8_dynamic_gemm(s, 1.0f, zero.data(), b.data(), 0.0f, c.data(), nullptr, Int8GemmOptions{});
    for (float v : c) EXPECT_EQ(v, 0.0f);
    std::vector<float> c2(static_cast<size_t>(m * n), 1.5f);
    int8_dynamic_gemm(s, 1.0f, zero.data(), b.data(), 2.0f, c2.data(), nullptr, Int8GemmOptions{});
    for (float v : c2) EXPECT_EQ(v, 3.0f);
  }
  // k = 0 and alpha = 0: C = beta C, as f32_gemm.
  std::vector<float> c(static_cast<size_t>(m * n), 2.0f);
  int8_dynamic_gemm(GemmShape{Trans::no, Trans::no, m, n, 0, 1, n, n}, 1.0f, a.data(), b.data(), 0.5f, c.data(),
                    nullptr, Int8GemmOptions{});
  for (float v : c) EXPECT_EQ(v, 1.0f);
}

// ---------------------------------------------------------------- layers

// A layer in f32 (default, and int8 training) and its twin in f64 with the same weights; the
// f64 twin evaluates the bilinear maps (x, W) -> y, (dy, W) -> dx, (x, dy) -> dW at absolute
// values and ones, which bound the int8 result's error:
//   |y8 - y| <= e_W F(|x|, 1) + e_x F(1, |W|) + e_x e_W F(1, 1)
// with e = step / 2 for x and W (nearest) and e = step for dy (stochastic), step = max|.| / 127 of
// the whole tensor (a chunk's own step is no larger). Bias and its gradient do not go through a
// GEMM: they must be bit-identical to f32.
struct LayerPair {
  std::unique_ptr<Layer> f32, f64;
  Shape in, out;
};

LayerPair make_layer_pair(const std::function<std::unique_ptr<Layer>()>& make, const Shape& in) {
  LayerPair p{make(), make(), in, Shape{}};
  p.f32->set_name("l");
  p.f64->set_name("l");
  auto out = p.f32->configure(in);
  EXPECT_TRUE(out.ok());
  p.out = out.value();
  EXPECT_TRUE(p.f64->configure(in).ok());
  Rng rng(1, 0);
  EXPECT_TRUE(p.f32->init(rng, DType::f32).ok());
  EXPECT_TRUE(p.f64->init(rng, DType::f64).ok());
  // Bias not zero, so that its f32 path is exercised.
  std::vector<Param*> params = p.f32->params();
  for (size_t i = 1; i < params.size(); ++i) fill_random(params[i]->value, rng, -0.1, 0.1);
  return p;
}

Shape batch_shape(int64_t n, const Shape& sample) {
  std::vector<int64_t> dims{n};
  for (int d = 0; d < sample.rank(); ++d) dims.push_back(sample[d]);
  return Shape::from_dims(dims.data(), static_cast<int>(dims.size()));
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(get(t, i)));
  return m;
}

Tensor to_f64(const Tensor& t, bool absolute) {
  Tensor out = make(t.shape(), DType::f64);
  for (int64_t i = 0; i < t.numel(); ++i) set(out, i, absolute ? std::fabs(get(t, i)) : get(t, i));
  return out;
}

Tensor ones_like(const Tensor& t) {
  Tensor out = make(t.shape(), DType::f64);
  fill_value(out, 1.0);
  return out;
}

struct Outputs {
  Tensor y, dx, dw, db;
};

Outputs run_f32(Layer& layer, const Tensor& x, const Tensor& dy, const LayerContext& ctx) {
  Outputs o{make(dy.shape(), DType::f32), make(x.shape(), DType::f32), Tensor(), Tensor()};
  layer.forward(x, o.y, ctx);
  layer.backward(x, o.y, dy, o.dx, ctx);
  std::vector<Param*> params = layer.params();
  RG_CHECK(params[0]->grad.defined(), "weight grad");
  auto dw = params[0]->grad.clone("dw");
  o.dw = dw.take();
  if (params.size() > 1) o.db = params[1]->grad.clone("db").take();
  return o;
}

// The f64 twin with weight w (bias zeroed): y = F(x, w); dx = G(dy, w); dW = H(x, dy).
Outputs run_f64(Layer& layer, const Tensor& x, const Tensor& w, const Tensor& dy) {
  std::vector<Param*> params = layer.params();
  params[0]->value.copy_from(w);
  if (params.size() > 1) params[1]->value.fill_zero();
  Outputs o{make(dy.shape(), DType::f64), make(x.shape(), DType::f64), Tensor(), Tensor()};
  LayerContext ctx;
  ctx.accumulate_grads = false;
  ctx.gemm = GemmPrecision::fixed_point;  // ignored in f64: the reference runs
  layer.forward(x, o.y, ctx);
  layer.backward(x, o.y, dy, o.dx, ctx);
  o.dw = params[0]->grad.clone("dw").take();
  return o;
}

void check_layer_int8(const std::function<std::unique_ptr<Layer>()>& make_layer, const Shape& in, int64_t batch,
                      ThreadPool* pool, const std::string& what) {
  LayerPair p = make_layer_pair(make_layer, in);
  Rng rng(7, 0);
  const Tensor x = make(batch_shape(batch, in), DType::f32);
  const Tensor dy = make(batch_shape(batch, p.out), DType::f32);
  fill_random(x, rng, -1.0, 1.0);
  fill_random(dy, rng, -0.02, 0.02);
  Workspace workspace;
  LayerContext ctx;
  ctx.pool = pool;
  ctx.accumulate_grads = false;
  ctx.workspace = &workspace;
  const Outputs f = run_f32(*p.f32, x, dy, ctx);
  // The default context runs exactly f32_gemm: the same bits as a context that never heard of int8.
  const Outputs f_again = run_f32(*p.f32, x, dy, ctx);
  EXPECT_EQ(values(f.y), values(f_again.y)) << what;
  LayerContext q_ctx = ctx;
  q_ctx.gemm = GemmPrecision::fixed_point;
  q_ctx.gemm_seed = 42;
  q_ctx.noise_stream = 3;
  const Outputs q = run_f32(*p.f32, x, dy, q_ctx);
  const Outputs q_again = run_f32(*p.f32, x, dy, q_ctx);
  EXPECT_EQ(values(q.y), values(q_again.y)) << what << ": not reproducible";
  EXPECT_EQ(values(q.dw), values(q_again.dw)) << what << ": not reproducible";
  EXPECT_NE(values(q.y), values(f.y)) << what << ": the int8 path did not run";
  if (f.db.defined()) {
    EXPECT_EQ(values(q.db), values(f.db)) << what << ": bias grad must stay f32";
  }

  const Tensor& w = p.f32->params()[0]->value;
  const double e_x = max_abs(x) / 127 / 2, e_w = max_abs(w) / 127 / 2, e_dy = max_abs(dy) / 127;
  Layer& twin = *p.f64;
  const Tensor x_abs = to_f64(x, true), x_one = ones_like(x), w_abs = to_f64(w, true), w_one = ones_like(w);
  const Tensor dy_abs = to_f64(dy, true), dy_one = ones_like(dy);
  const Outputs abs_one = run_f64(twin, x_abs, w_one, dy_abs);    // F(|x|,1), G(|dy|,1), H(|x|,|dy|)
  const Outputs one_abs = run_f64(twin, x_one, w_abs, dy_one);    // F(1,|W|), G(1,|W|), H(1,1)
  const Outputs one_one = run_f64(twin, x_one, w_one, dy_one);    // F(1,1), G(1,1)
  const Outputs abs_abs = run_f64(twin, x_abs, w_abs, dy_abs);    // magnitudes for f32's own error
  const Outputs abs_x_one_dy = run_f64(twin, x_abs, w_one, dy_one);  // H(|x|, 1)
  const Outputs one_x_abs_dy = run_f64(twin, x_one, w_one, dy_abs);  // H(1, |dy|)
  auto check = [&](const char* name, const Tensor& got, const Tensor& want, const std::function<double(int64_t)>& bound,
                   const Tensor& magnitude) {
    double worst = 0, err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double err = std::fabs(get(got, i) - get(want, i));
      const double limit = bound(i) + 1e-5 * get(magnitude, i) + 1e-12;
      worst = std::max(worst, err / limit);
      err2 += err * err;
      ref2 += get(want, i) * get(want, i);
    }
    EXPECT_LE(worst, 1.0) << what << " " << name << ": error / bound";
    std::printf("    %s %s: relative rms error %.4f, worst error / bound %.3f\n", what.c_str(), name,
                std::sqrt(err2 / std::max(ref2, 1e-300)), worst);
  };
  // y: minus the bias, which both add identically.
  Tensor y_f = make(f.y.shape(), DType::f64), y_q = make(f.y.shape(), DType::f64);
  for (int64_t i = 0; i < f.y.numel(); ++i) {
    set(y_f, i, get(f.y, i));
    set(y_q, i, get(q.y, i));
  }
  check("y", y_q, y_f,
        [&](int64_t i) { return e_w * get(abs_one.y, i) + e_x * get(one_abs.y, i) + e_x * e_w * get(one_one.y, i); },
        abs_abs.y);
  check("dx", q.dx, f.dx,
        [&](int64_t i) {
          return e_w * get(abs_one.dx, i) + e_dy * get(one_abs.dx, i) + e_dy * e_w * get(one_one.dx, i);
        },
        abs_abs.dx);
  check("dW", q.dw, f.dw,
        [&](int64_t i) {
          return e_dy * get(abs_x_one_dy.dw, i) + e_x * get(one_x_abs_dy.dw, i) + e_x * e_dy * get(one_abs.dw, i);
        },
        abs_abs.dw);
}

TEST(Int8TrainingLayers, DenseWithinTheQuantizationBound) {
  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    check_layer_int8([] { return std::unique_ptr<Layer>(new Dense(37, Init::he_uniform, true)); }, Shape{50}, 40, p,
                     "dense 50->37");
    check_layer_int8([] { return std::unique_ptr<Layer>(new Dense(300, Init::glorot_uniform, false)); }, Shape{200},
                     64, p, "dense 200->300");
  }
}

TEST(Int8TrainingLayers, ConvWithinTheQuantizationBound) {
  ThreadPool pool(2);
  // 3x3 pad 1 (direct dx), 5x5 stride 2 (im2col dx), pointwise.
  check_layer_int8([] { return std::unique_ptr<Layer>(new Conv2D(conv_options(8, 3, 1, 1))); }, Shape{10, 9, 3}, 6, &pool,
                   "conv 3x3");
  check_layer_int8([] { return std::unique_ptr<Layer>(new Conv2D(conv_options(16, 5, 2, 2))); }, Shape{12, 12, 4}, 5, nullptr,
                   "conv 5x5/2");
  check_layer_int8([] { return std::unique_ptr<Layer>(new Conv2D(conv_options(5, 1, 1, 0))); }, Shape{6, 6, 7}, 4, nullptr,
                   "conv 1x1");
  // Scratch of 123,136 elements a sample (padded image, 256 x 400 patch matrix): 8 samples a
  // chunk, so 10 make two chunks and dW adds the second chunk's product to the first's.
  check_layer_int8([] { return std::unique_ptr<Layer>(new Conv2D(conv_options(8, 5, 2, 2))); }, Shape{32, 32, 16}, 10, &pool,
                   "conv 5x5/2 in chunks");
  check_layer_int8([] { return std::unique_ptr<Layer>(new Conv2D(conv_options(8, 5, 1, 2))); }, Shape{16, 16, 16}, 3, &pool,
                   "conv 5x5 direct dx");
  // Both routes to dx, and the chunking, were taken above.
  Conv2D direct(conv_options(8, 5, 1, 2)), via_cols(conv_options(8, 3, 1, 1)), chunked(conv_options(8, 5, 2, 2));
  ASSERT_TRUE(direct.configure(Shape{16, 16, 16}).ok());
  ASSERT_TRUE(via_cols.configure(Shape{10, 9, 3}).ok());
  ASSERT_TRUE(chunked.configure(Shape{32, 32, 16}).ok());
  EXPECT_TRUE(direct.direct_input_grad());
  EXPECT_FALSE(via_cols.direct_input_grad());
  EXPECT_LT(chunked.workspace_elements(10), 10 * chunked.workspace_elements(1));
}

TEST(Int8TrainingLayers, ConvTransposeWithinTheQuantizationBound) {
  check_layer_int8([] { return std::unique_ptr<Layer>(new ConvTranspose2D(conv_options(6, 4, 2, 1))); }, Shape{5, 5, 8}, 4,
                   nullptr, "conv_transpose 4x4/2");
  check_layer_int8([] { return std::unique_ptr<Layer>(new ConvTranspose2D(conv_options(3, 3, 2, 1, 1))); }, Shape{4, 6, 5}, 3,
                   nullptr, "conv_transpose 3x3/2 output_pad 1");
}

// The gradient check's f64 instantiation never takes the int8 path.
TEST(Int8TrainingLayers, DoubleIgnoresTheSetting) {
  Rng rng(3, 0);
  const GemmShape s{Trans::no, Trans::yes, 7, 5, 9, 9, 9, 5};
  std::vector<double> a(63), b(45), c1(35), c2(35);
  for (double& v : a) v = rng.uniform(-1, 1);
  for (double& v : b) v = rng.uniform(-1, 1);
  LayerContext ctx;
  ctx.gemm = GemmPrecision::fixed_point;
  layer_gemm(ctx, kInputGradProduct, 3, s, 1.0, a.data(), b.data(), 0.0, c1.data());
  gemm_ref(s, 1.0, a.data(), b.data(), 0.0, c2.data());
  EXPECT_EQ(c1, c2);
}

}  // namespace
}  // namespace rg
