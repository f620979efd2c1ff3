// Tests of f32_gemm (ops/gemm_f32.cpp) against gemm_ref<double>: every transpose
// combination, sizes below/at/above each tile and cache block (MR=6 or 12, NR=8, 16 or 32; the
// narrow 8x8 tile of AVX levels for n <= 8, avx512's 16x16 for n <= 16; KC=512, MC=96,
// NC=2048), padded leading dimensions, alpha/beta cases, NaN in C under beta = 0, bit-exact
// integer products, results that do not depend on the thread count, and the same bits on
// every FMA level (each element one FMA chain over depth, whatever the tile's shape); the
// gathered GEMM, and its depth split for weight gradients; the planar convolution (its bits).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/rng.h"
#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "ops/conv_planar.h"
#include "ops/gemm.h"
#include "ops/im2col.h"

namespace rg {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kCPad = -777.25f;  // in C's padding columns: must survive every call

enum class Fill { uniform, integers };

// Row-major operands as stored, with `pad` extra columns in every row. A and B padding is
// NaN, so a kernel reading past a row's width poisons its result.
struct Operands {
  GemmShape s;
  std::vector<float> a, b, c;
};

std::vector<float> random_matrix(int64_t rows, int64_t cols, int64_t ld, Fill fill, float pad_value, Rng& rng) {
  std::vector<float> m(static_cast<size_t>(rows * ld), pad_value);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      m[static_cast<size_t>(r * ld + c)] = fill == Fill::uniform ? static_cast<float>(rng.uniform(-1.0, 1.0))
                                                                 : static_cast<float>(rng.below(47)) - 23.0f;
    }
  }
  return m;
}

Operands make_operands(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, int64_t pad, Fill fill, Rng& rng) {
  Operands op;
  const int64_t a_rows = ta == Trans::yes ? k : m, a_cols = ta == Trans::yes ? m : k;
  const int64_t b_rows = tb == Trans::yes ? n : k, b_cols = tb == Trans::yes ? k : n;
  op.s = GemmShape{ta, tb, m, n, k, a_cols + pad, b_cols + pad, n + pad};
  op.a = random_matrix(a_rows, a_cols, op.s.lda, fill, kNaN, rng);
  op.b = random_matrix(b_rows, b_cols, op.s.ldb, fill, kNaN, rng);
  op.c = random_matrix(m, n, op.s.ldc, fill, kCPad, rng);
  return op;
}

std::vector<double> to_double(const std::vector<float>& v, bool absolute = false) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = absolute ? std::fabs(static_cast<double>(v[i])) : v[i];
  return out;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

std::string describe(const GemmShape& s, float alpha, float beta) {
  return std::string("A") + (s.trans_a == Trans::yes ? "^T" : "") + " B" + (s.trans_b == Trans::yes ? "^T" : "") +
         " m " + std::to_string(s.m) + " n " + std::to_string(s.n) + " k " + std::to_string(s.k) + " lda " +
         std::to_string(s.lda) + " ldb " + std::to_string(s.ldb) + " ldc " + std::to_string(s.ldc) + " alpha " +
         std::to_string(alpha) + " beta " + std::to_string(beta);
}

// Runs f32_gemm on random floats in [-1, 1] and compares with gemm_ref<double>.
//
// Tolerance. With u = 2^-24 and B_ij = |alpha| sum_p |a_ip b_pj| + |beta c_ij| (computed
// by gemm_ref<double> on absolute values), every rounding in the f32 evaluation (k products,
// k additions, the alpha/beta scaling and the per-KC-block additions into C) is at most u
// times a partial value bounded by B_ij. The worst case is about (k + k/KC + 3) u B_ij;
// the rounding errors of random data are independent with random signs, so their sum stays
// near sqrt(k) u B_ij. We allow 3 sqrt(k + 3) u B_ij: many standard deviations above what
// random data produces, yet a lost or doubled term (size ~|a_ip b_pj|, ~0.25 B/k) or a
// wrong alpha/beta shows up far outside it.
// For k <= 16 the DESIGN.md bound max(1e-5, 1e-6 |ref|) is asserted as well.
void check_random(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, int64_t pad, float alpha, float beta,
                  ThreadPool* pool, Rng& rng) {
  Operands op = make_operands(ta, tb, m, n, k, pad, Fill::uniform, rng);
  const GemmShape& s = op.s;
  if (beta == 0.0f) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) op.c[static_cast<size_t>(i * s.ldc + j)] = kNaN;  // must be ignored
  }
  const std::vector<float> a0 = op.a, b0 = op.b;
  std::vector<double> ref = to_double(op.c);
  gemm_ref<double>(s, alpha, to_double(op.a).data(), to_double(op.b).data(), beta, ref.data());
  std::vector<double> bound = to_double(op.c, true);
  gemm_ref<double>(s, std::fabs(alpha), to_double(op.a, true).data(), to_double(op.b, true).data(), std::fabs(beta),
                   bound.data());

  f32_gemm(s, alpha, op.a.data(), op.b.data(), beta, op.c.data(), pool);

  const double u = std::ldexp(1.0, -24);
  const double factor = 3.0 * std::sqrt(static_cast<double>(k) + 3.0) * u;
  int bad = 0;
  for (int64_t i = 0; i < m && bad < 5; ++i) {
    for (int64_t j = 0; j < s.ldc && bad < 5; ++j) {
      const size_t idx = static_cast<size_t>(i * s.ldc + j);
      const float got = op.c[idx];
      if (j >= n) {
        if (bits(got) != bits(kCPad)) {
          ADD_FAILURE() << describe(s, alpha, beta) << ": padding C[" << i << "][" << j << "] written: " << got;
          ++bad;
        }
        continue;
      }
      const double err = std::fabs(static_cast<double>(got) - ref[idx]);
      double tol = factor * bound[idx];
      if (k <= 16) tol = std::min(tol, std::max(1e-5, 1e-6 * std::fabs(ref[idx])));
      if (!(err <= tol)) {  // NaN fails too
        ADD_FAILURE() << describe(s, alpha, beta) << ": C[" << i << "][" << j << "] = " << got << ", reference "
                      << ref[idx] << ", error " << err << " > " << tol;
        ++bad;
      }
    }
  }
  // A and B are read-only (padding NaNs compared bitwise).
  EXPECT_EQ(std::memcmp(a0.data(), op.a.data(), a0.size() * 4), 0) << describe(s, alpha, beta) << ": A modified";
  EXPECT_EQ(std::memcmp(b0.data(), op.b.data(), b0.size() * 4), 0) << describe(s, alpha, beta) << ": B modified";
}

struct AlphaBeta {
  float alpha, beta;
};
const AlphaBeta kAlphaBeta[] = {{1.0f, 0.0f}, {1.0f, 1.0f}, {0.5f, 2.0f}, {-1.5f, 0.25f}};
const int64_t kPads[] = {0, 3, 17};
const Trans kTrans[] = {Trans::no, Trans::yes};

// Every test runs on every ISA level (skipped where this CPU lacks it) and transpose pair.
class GemmTrans : public ::testing::TestWithParam<std::tuple<Isa, Trans, Trans>> {
 protected:
  void SetUp() override {
    const Isa isa = std::get<0>(GetParam());
    if (!isa_supported(isa, detect_cpu().features)) GTEST_SKIP() << isa_name(isa) << " is not supported by this CPU";
    previous_ = active_isa();
    set_active_isa(isa);
  }
  void TearDown() override { set_active_isa(previous_); }
  // The transposes, as the tests below read them.
  std::tuple<Trans, Trans> transposes() const { return {std::get<1>(GetParam()), std::get<2>(GetParam())}; }

 private:
  Isa previous_ = Isa::reference;
};

std::string trans_name(const ::testing::TestParamInfo<std::tuple<Isa, Trans, Trans>>& info) {
  std::string isa = isa_name(std::get<0>(info.param));
  for (char& ch : isa)
    if (ch == '.') ch = '_';
  return isa + "_" + (std::get<1>(info.param) == Trans::yes ? "At" : "A") +
         (std::get<2>(info.param) == Trans::yes ? "Bt" : "B");
}

INSTANTIATE_TEST_SUITE_P(AllIsasAndTransposes, GemmTrans,
                         ::testing::Combine(::testing::ValuesIn(all_isas()), ::testing::ValuesIn(kTrans),
                                            ::testing::ValuesIn(kTrans)),
                         trans_name);

// Below, at and above MR = 6 or 12 and NR = 8, 16 or 32 in m and n; k small.
TEST_P(GemmTrans, MicroTileEdges) {
  const auto [ta, tb] = transposes();
  Rng rng(1, 0);
  int index = 0;
  for (int64_t m : {1, 5, 6, 7, 8, 9, 11, 12, 13, 25})
    for (int64_t n : {1, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 65})
      for (int64_t k : {1, 5, 8, 9}) {
        const AlphaBeta ab = kAlphaBeta[index % 4];
        check_random(ta, tb, m, n, k, kPads[index % 3], ab.alpha, ab.beta, nullptr, rng);
        ++index;
      }
}

// m across MC = 96 (also where B stops being read in place), k across KC = 512 (the
// accumulation is split into blocks).
TEST_P(GemmTrans, CacheBlockEdgesInMAndK) {
  const auto [ta, tb] = transposes();
  Rng rng(2, 0);
  int index = 0;
  for (int64_t m : {95, 96, 97})
    for (int64_t n : {5, 8, 17})
      for (int64_t k : {1, 6, 511, 512, 513}) {
        const AlphaBeta ab = kAlphaBeta[index % 4];
        check_random(ta, tb, m, n, k, kPads[index % 3], ab.alpha, ab.beta, nullptr, rng);
        ++index;
      }
  for (int64_t k : {255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 1100}) {
    const AlphaBeta ab = kAlphaBeta[index % 4];
    check_random(ta, tb, 13, 9, k, kPads[index % 3], ab.alpha, ab.beta, nullptr, rng);
    ++index;
  }
}

// n across NC = 2048, and one product large enough to be split across a pool.
TEST_P(GemmTrans, CacheBlockEdgesInNAndThreads) {
  const auto [ta, tb] = transposes();
  Rng rng(3, 0);
  ThreadPool pool(2);
  int index = 0;
  for (int64_t n : {2047, 2048, 2049})
    for (int64_t m : {1, 7, 97})
      for (int64_t k : {5, 257}) {
        const AlphaBeta ab = kAlphaBeta[index % 4];
        check_random(ta, tb, m, n, k, kPads[index % 3], ab.alpha, ab.beta, index % 2 ? &pool : nullptr, rng);
        ++index;
      }
  check_random(ta, tb, 145, 520, 600, 5, 1.0f, 0.0f, &pool, rng);
  check_random(ta, tb, 150, 77, 300, 0, 0.5f, 2.0f, &pool, rng);
}

// Integers in [-23, 23]: every product (|p| <= 529) and every partial sum (< 529 k <= 2^24
// for k <= 31715) is exact in float, so the result must equal the double reference bit for
// bit, whatever the blocking. alpha/beta are powers of two or -1 and C holds integers, so
// the scaling stays exact too.
TEST_P(GemmTrans, IntegerInputsBitExact) {
  const auto [ta, tb] = transposes();
  Rng rng(4, 0);
  ThreadPool pool(3);
  struct Case {
    int64_t m, n, k;
    float alpha, beta;
  };
  const Case cases[] = {{1, 1, 1, 1, 0},       {7, 9, 5, 1, 1},       {6, 8, 256, 1, 0},    {73, 17, 257, -1, 1},
                        {13, 513, 600, 0.5f, 2}, {72, 512, 513, 1, -1}, {120, 90, 300, 2, 0.5f}};
  int index = 0;
  for (const Case& c : cases) {
    ASSERT_LT(529 * c.k, 1 << 24);
    Operands op = make_operands(ta, tb, c.m, c.n, c.k, kPads[index % 3], Fill::integers, rng);
    std::vector<double> ref = to_double(op.c);
    gemm_ref<double>(op.s, c.alpha, to_double(op.a).data(), to_double(op.b).data(), c.beta, ref.data());
    f32_gemm(op.s, c.alpha, op.a.data(), op.b.data(), c.beta, op.c.data(), index % 2 ? &pool : nullptr);
    int bad = 0;
    for (int64_t i = 0; i < c.m && bad < 5; ++i) {
      for (int64_t j = 0; j < c.n && bad < 5; ++j) {
        const size_t idx = static_cast<size_t>(i * op.s.ldc + j);
        const auto expected = static_cast<float>(ref[idx]);
        ASSERT_EQ(static_cast<double>(expected), ref[idx]) << "the test's sums must stay exact";
        if (bits(op.c[idx]) != bits(expected)) {
          ADD_FAILURE() << describe(op.s, c.alpha, c.beta) << ": C[" << i << "][" << j << "] = " << op.c[idx]
                        << ", exact " << expected;
          ++bad;
        }
      }
    }
    ++index;
  }
}

// A product of one row or one column of C (ops' vector path: rows_combine) gives the bits the
// tile path gives the same row or column inside a wider product: op(A)'s row or op(B)'s column
// taken from the wider operands, k across KC blocks, padded strides, every alpha/beta form, with
// and without a pool (M large enough to be split).
TEST_P(GemmTrans, OneRowOrColumnGetsTheTilePathsBits) {
  const auto [ta, tb] = transposes();
  Rng rng(8, 0);
  ThreadPool pool(3);
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{1, 7, 5},   {1, 300, 513}, {1, 40, 1100}, {9, 1, 600}, {300, 1, 70},
                        {1, 1, 1030}, {70, 1, 2100}, {1, 2100, 70}};
  int index = 0;
  for (const Case& c : cases) {
    const int64_t wide_m = c.m == 1 ? 13 : c.m, wide_n = c.n == 1 ? 9 : c.n, i0 = c.m == 1 ? 5 : 0,
                  j0 = c.n == 1 ? 3 : 0;
    const Operands wide = make_operands(ta, tb, wide_m, wide_n, c.k, kPads[index % 3], Fill::uniform, rng);
    const AlphaBeta ab = kAlphaBeta[static_cast<size_t>(index % 4)];
    ThreadPool* threads = index++ % 2 ? &pool : nullptr;
    // The narrow operands: op(A)'s rows [i0, i0 + m) and op(B)'s columns [j0, j0 + n), padded by 2.
    const GemmShape& w = wide.s;
    const int64_t lda = (ta == Trans::no ? c.k : c.m) + 2, ldb = (tb == Trans::no ? c.n : c.k) + 2, ldc = c.n + 2;
    std::vector<float> a(static_cast<size_t>((ta == Trans::no ? c.m : c.k) * lda), kNaN);
    std::vector<float> b(static_cast<size_t>((tb == Trans::no ? c.k : c.n) * ldb), kNaN);
    std::vector<float> narrow_c(static_cast<size_t>(c.m * ldc), kNaN);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t p = 0; p < c.k; ++p)
        a[static_cast<size_t>(ta == Trans::no ? i * lda + p : p * lda + i)] = wide.a[static_cast<size_t>(
            ta == Trans::no ? (i0 + i) * w.lda + p : p * w.lda + i0 + i)];
    for (int64_t p = 0; p < c.k; ++p)
      for (int64_t j = 0; j < c.n; ++j)
        b[static_cast<size_t>(tb == Trans::no ? p * ldb + j : j * ldb + p)] = wide.b[static_cast<size_t>(
            tb == Trans::no ? p * w.ldb + j0 + j : (j0 + j) * w.ldb + p)];
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j)
        narrow_c[static_cast<size_t>(i * ldc + j)] = wide.c[static_cast<size_t>((i0 + i) * w.ldc + j0 + j)];
    std::vector<float> wide_c = wide.c;
    f32_gemm(w, ab.alpha, wide.a.data(), wide.b.data(), ab.beta, wide_c.data(), threads);
    const GemmShape s{ta, tb, c.m, c.n, c.k, lda, ldb, ldc};
    f32_gemm(s, ab.alpha, a.data(), b.data(), ab.beta, narrow_c.data(), threads);
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const float got = narrow_c[static_cast<size_t>(i * ldc + j)];
        const float want = wide_c[static_cast<size_t>((i0 + i) * w.ldc + j0 + j)];
        ASSERT_EQ(bits(got), bits(want)) << describe(s, ab.alpha, ab.beta) << " at (" << i << ", " << j << "): " << got
                                         << ", the tile path " << want;
      }
    for (int64_t i = 0; i < c.m; ++i)  // C's padding untouched
      for (int64_t j = c.n; j < ldc; ++j) ASSERT_TRUE(std::isnan(narrow_c[static_cast<size_t>(i * ldc + j)]));
  }
}

// Split across 1, 2, 3 and 4 threads (and no pool), the bits of C are the same: m > n splits
// rows, m < n splits columns over one op(A) the threads packed together (a dense layer's
// forward: 64 x 300 over 1100, three depth blocks).
TEST_P(GemmTrans, ThreadCountDoesNotChangeBits) {
  const auto [ta, tb] = transposes();
  Rng rng(5, 0);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t = 1; t <= 4; ++t) pools.emplace_back(new ThreadPool(t));
  struct Case {
    int64_t m, n, k, pad;
    float alpha, beta;
  };
  const Case cases[] = {
      {300, 400, 200, 0, 1, 0}, {400, 300, 200, 3, 0.5f, 2}, {97, 1031, 70, 1, 1, 1}, {64, 300, 1100, 2, 1, 0.5f}};
  for (const Case& c : cases) {
    const Operands op = make_operands(ta, tb, c.m, c.n, c.k, c.pad, Fill::uniform, rng);
    ASSERT_GE(2 * c.m * c.n * c.k, int64_t{1} << 21) << "too small to be split";
    std::vector<float> single = op.c;
    f32_gemm(op.s, c.alpha, op.a.data(), op.b.data(), c.beta, single.data(), nullptr);
    for (const auto& pool : pools) {
      std::vector<float> out = op.c;
      f32_gemm(op.s, c.alpha, op.a.data(), op.b.data(), c.beta, out.data(), pool.get());
      EXPECT_EQ(std::memcmp(out.data(), single.data(), out.size() * 4), 0)
          << describe(op.s, c.alpha, c.beta) << ": " << pool->threads() << " threads differ from one";
    }
    // And the result is right (a sanity check of the large case; the bound is the one above).
    std::vector<double> ref = to_double(op.c);
    gemm_ref<double>(op.s, c.alpha, to_double(op.a).data(), to_double(op.b).data(), c.beta, ref.data());
    double worst = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const size_t idx = static_cast<size_t>(i * op.s.ldc + j);
        worst = std::max(worst, std::fabs(single[idx] - ref[idx]));
      }
    EXPECT_LT(worst, 1e-3) << describe(op.s, c.alpha, c.beta);
  }
}

// Degenerate sizes: k = 0 leaves beta C; m = 0 or n = 0 touch nothing; alpha = 0 scales C
// by beta without reading A or B.
TEST(Gemm, DegenerateSizes) {
  const std::vector<float> nan16(16, kNaN);  // operands of every shape below, all NaN
  std::vector<float> c = {1, 2, 3, 4, 5, 6};
  f32_gemm(GemmShape{Trans::no, Trans::no, 2, 3, 0, 1, 3, 3}, 1.0f, nan16.data(), nan16.data(), 0.5f, c.data(),
           nullptr);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2, 2.5f, 3}));
  f32_gemm(GemmShape{Trans::no, Trans::no, 2, 3, 0, 1, 3, 3}, 1.0f, nan16.data(), nan16.data(), 0.0f, c.data(),
           nullptr);
  EXPECT_EQ(c, (std::vector<float>(6, 0.0f)));
  std::vector<float> d = {1, 2, 3};
  f32_gemm(GemmShape{Trans::no, Trans::no, 0, 3, 4, 4, 3, 3}, 1.0f, nan16.data(), nan16.data(), 0.0f, d.data(),
           nullptr);
  f32_gemm(GemmShape{Trans::no, Trans::no, 1, 0, 4, 4, 3, 3}, 1.0f, nan16.data(), nan16.data(), 0.0f, d.data(),
           nullptr);
  EXPECT_EQ(d, (std::vector<float>{1, 2, 3}));
  std::vector<float> e = {4, 8};
  f32_gemm(GemmShape{Trans::no, Trans::no, 2, 1, 1, 1, 1, 1}, 0.0f, nan16.data(), nan16.data(), 0.25f, e.data(),
           nullptr);
  EXPECT_EQ(e, (std::vector<float>{1, 2}));
}

// The overloads the layers call: float goes to f32_gemm, double to the reference.
TEST(Gemm, OverloadsDispatch) {
  const float af[4] = {1, 2, 3, 4}, bf[4] = {5, 6, 7, 8};
  float cf[4] = {kNaN, kNaN, kNaN, kNaN};
  const GemmShape s{Trans::no, Trans::no, 2, 2, 2, 2, 2, 2};
  gemm(s, 1.0f, af, bf, 0.0f, cf, nullptr);
  EXPECT_EQ(cf[0], 19.0f);
  EXPECT_EQ(cf[1], 22.0f);
  EXPECT_EQ(cf[2], 43.0f);
  EXPECT_EQ(cf[3], 50.0f);
  const double ad[4] = {1, 2, 3, 4}, bd[4] = {5, 6, 7, 8};
  double cd[4] = {1, 1, 1, 1};
  gemm(GemmShape{Trans::yes, Trans::yes, 2, 2, 2, 2, 2, 2}, 2.0, ad, bd, 3.0, cd, nullptr);
  // A^T B^T = (B A)^T; B A = [[23, 34], [31, 46]].
  EXPECT_EQ(cd[0], 2 * 23.0 + 3);
  EXPECT_EQ(cd[1], 2 * 31.0 + 3);
  EXPECT_EQ(cd[2], 2 * 34.0 + 3);
  EXPECT_EQ(cd[3], 2 * 46.0 + 3);
}

}  // namespace

// ---------------------------------------------------------------- gathered A (f32_gemm_gathered)
// A[i][p] = src[rows[i] + depth[p]], read through the gathered tiles; against gemm_gathered_ref
// in double with check_random's tolerance. Positions of src that A does not name, and B's
// padding columns, are NaN: reading them poisons the result.
namespace {

struct Gathered {
  int64_t m, n, k, ldb;
  std::vector<float> src, b, c;
  std::vector<int32_t> rows, depth;
  GatheredA<float> a() const { return {src.data(), rows.data(), depth.data()}; }
};

// Offsets shaped like a convolution's: rows 2 apart, or (channels > 0) side by side in runs of
// `channels` with a jump after each, as a weight gradient's rows (a tap's channels); taps in runs
// of 3 with jumps, so that rows overlap (one value serves several rows and taps) as patches do.
Gathered make_gathered(int64_t m, int64_t n, int64_t k, Fill fill, Rng& rng, int64_t channels = 0) {
  Gathered g{m, n, k, n + 5, {}, {}, {}, {}, {}};
  for (int64_t p = 0; p < k; ++p) g.depth.push_back(static_cast<int32_t>(p / 3 * 7 + p % 3));
  for (int64_t i = 0; i < m; ++i) g.rows.push_back(static_cast<int32_t>(channels > 0 ? i + i / channels * 3 : i * 2));
  g.src.assign(static_cast<size_t>(g.rows.back() + g.depth.back() + 1), kNaN);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      float& v = g.src[static_cast<size_t>(g.rows[i] + g.depth[p])];
      v = fill == Fill::uniform ? static_cast<float>(rng.uniform(-1.0, 1.0)) : static_cast<float>(rng.below(47)) - 23.0f;
    }
  g.b = random_matrix(k, n, g.ldb, fill, kNaN, rng);
  g.b.resize(static_cast<size_t>((k - 1) * g.ldb + n));  // B ends with its last value (ASan sees over-reads)
  g.b.shrink_to_fit();
  g.c = random_matrix(m, n, n, fill, 0.0f, rng);
  return g;
}

// C of the double reference: with `absolute`, of |A|, |B|, |C| (the rounding-error scale).
std::vector<double> gathered_ref(const Gathered& g, double alpha, double beta, bool absolute) {
  const std::vector<double> src = to_double(g.src, absolute), b = to_double(g.b, absolute);
  std::vector<double> c = to_double(g.c, absolute);
  gemm_gathered_ref<double>(g.m, g.n, g.k, alpha, GatheredA<double>{src.data(), g.rows.data(), g.depth.data()},
                            b.data(), g.ldb, beta, c.data(), g.n);
  return c;
}

std::string describe_gathered(const Gathered& g, float alpha, float beta) {
  return "gathered m " + std::to_string(g.m) + " n " + std::to_string(g.n) + " k " + std::to_string(g.k) + " alpha " +
         std::to_string(alpha) + " beta " + std::to_string(beta);
}

class GemmGathered : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam(), detect_cpu().features)) GTEST_SKIP() << isa_name(GetParam()) << " is not supported";
    previous_ = active_isa();
    set_active_isa(GetParam());
  }
  void TearDown() override { set_active_isa(previous_); }

 private:
  Isa previous_ = Isa::reference;
};

INSTANTIATE_TEST_SUITE_P(AllIsas, GemmGathered, ::testing::ValuesIn(all_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           std::string name = isa_name(info.param);
                           for (char& ch : name)
                             if (ch == '.') ch = '_';
                           return name + "_gathered";
                         });

}  // namespace

// m below, at and above MR (6 or 12, or 8 for the narrow tile of n <= 8) and a cache block (96);
// n around NR (8, 16, 32) with a partial last panel; k around the depth block (256).
TEST_P(GemmGathered, TileAndBlockEdges) {
  Rng rng(11, 0);
  for (int64_t m : {1, 5, 6, 7, 8, 9, 12, 13, 97})
    for (int64_t n : {1, 6, 8, 16, 17, 31, 33, 40})
      for (int64_t k : {1, 7, 256, 257}) {
        const AlphaBeta ab = kAlphaBeta[static_cast<size_t>((m + n + k) % 4)];
        Gathered g = make_gathered(m, n, k, Fill::uniform, rng);
        if (ab.beta == 0.0f) std::fill(g.c.begin(), g.c.end(), kNaN);  // must be ignored
        const std::vector<double> ref = gathered_ref(g, ab.alpha, ab.beta, false);
        const std::vector<double> bound = gathered_ref(g, std::fabs(ab.alpha), std::fabs(ab.beta), true);
        f32_gemm_gathered(m, n, k, ab.alpha, g.a(), g.b.data(), g.ldb, ab.beta, g.c.data(), n, nullptr);
        const double tol_factor = 3.0 * std::sqrt(static_cast<double>(k) + 3.0) * std::ldexp(1.0, -24);
        int bad = 0;
        for (size_t i = 0; i < g.c.size() && bad < 3; ++i) {
          const double err = std::fabs(static_cast<double>(g.c[i]) - ref[i]);
          double tol = tol_factor * bound[i];
          if (k <= 16) tol = std::min(tol, std::max(1e-5, 1e-6 * std::fabs(ref[i])));
          if (!(err <= tol)) {
            ADD_FAILURE() << describe_gathered(g, ab.alpha, ab.beta) << ": C[" << i << "] = " << g.c[i]
                          << ", reference " << ref[i] << ", error " << err << " > " << tol;
            ++bad;
          }
        }
      }
}

// Integer-valued operands in [-23, 23]: every sum is exact, so C equals the reference bit for bit.
// 120 x 40 x 7000: B over 2^18 floats under over 96 rows, packed a depth block at a time (its
// last panel partial where the level's panels are 16 or 32 wide).
TEST_P(GemmGathered, IntegerInputsBitExact) {
  Rng rng(12, 0);
  for (const auto& [m, n, k] : {std::array<int64_t, 3>{23, 21, 5}, std::array<int64_t, 3>{23, 21, 150},
                                std::array<int64_t, 3>{23, 21, 300}, std::array<int64_t, 3>{120, 40, 7000}}) {
    Gathered g = make_gathered(m, n, k, Fill::integers, rng);
    const std::vector<double> ref = gathered_ref(g, 1.0, 1.0, false);
    f32_gemm_gathered(g.m, g.n, g.k, 1.0f, g.a(), g.b.data(), g.ldb, 1.0f, g.c.data(), g.n, nullptr);
    for (size_t i = 0; i < g.c.size(); ++i)
      ASSERT_EQ(static_cast<double>(g.c[i]), ref[i]) << describe_gathered(g, 1, 1) << " at " << i;
  }
}

// Split across 1 to 4 threads (and no pool), the bits of C are the same.
TEST_P(GemmGathered, ThreadCountDoesNotChangeBits) {
  Rng rng(13, 0);
  // the third's B (k x n over 2^18 floats) is packed by depth blocks where a thread has over 96
  // rows (1 and 2 threads, some of 3), read in place where it has fewer (4): the same bits
  for (const auto& size : {std::array<int64_t, 3>{1000, 32, 300}, std::array<int64_t, 3>{300, 6, 2000},
                           std::array<int64_t, 3>{300, 40, 7000}}) {
    const Gathered g = make_gathered(size[0], size[1], size[2], Fill::uniform, rng);
    ASSERT_GE(2 * g.m * g.n * g.k, int64_t{1} << 21) << "too small to be split";
    std::vector<float> single = g.c;
    f32_gemm_gathered(g.m, g.n, g.k, 1.0f, g.a(), g.b.data(), g.ldb, 0.5f, single.data(), g.n, nullptr);
    for (int t = 1; t <= 4; ++t) {
      ThreadPool pool(t);
      std::vector<float> out = g.c;
      f32_gemm_gathered(g.m, g.n, g.k, 1.0f, g.a(), g.b.data(), g.ldb, 0.5f, out.data(), g.n, &pool);
      EXPECT_EQ(std::memcmp(out.data(), single.data(), out.size() * 4), 0)
          << describe_gathered(g, 1, 0.5f) << ": " << t << " threads differ from one";
    }
  }
}

// ---------------------------------------------------------------- planar convolution (ops/conv_planar.h)
// f32_conv_planar gives f32_gemm_gathered's bits over the padded image (the same FMA chains in
// the same depth blocks), on every level, whatever the thread count; and the double reference's
// values. Shapes: lenet's conv1 (1 channel, pad 2) and conv2's dx (16 channels, pad 4), filters
// under, at and over the tile's 6 rows, depth over a block (256) and a row's end off a vector.
namespace {

struct PlanarCase {
  int64_t h, w, c, kernel, pad, filters;
};

std::string describe_planar(const PlanarCase& p) {
  return std::to_string(p.h) + "x" + std::to_string(p.w) + "x" + std::to_string(p.c) + " kernel " +
         std::to_string(p.kernel) + " pad " + std::to_string(p.pad) + " filters " + std::to_string(p.filters);
}

}  // namespace

TEST_P(GemmGathered, PlanarConvGivesTheGatheredBits) {
  Rng rng(14, 0);
  for (const PlanarCase& p : {PlanarCase{28, 28, 1, 5, 2, 6}, PlanarCase{10, 10, 16, 5, 4, 6}, PlanarCase{7, 9, 3, 3, 1, 1},
                              PlanarCase{5, 6, 2, 3, 0, 13}, PlanarCase{6, 6, 32, 3, 1, 4}, PlanarCase{9, 7, 40, 3, 2, 7}}) {
    const ConvGeometry g = conv_geometry(p.h, p.w, p.c, p.kernel, 1, p.pad).value();
    const int64_t count = 3, out = g.patches() * p.filters;
    std::vector<float> images(static_cast<size_t>(count * p.h * p.w * p.c)), w(static_cast<size_t>(g.patch_size() * p.filters));
    for (float& v : images) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    for (float& v : w) v = static_cast<float>(rng.uniform(-1.0, 1.0));
    std::vector<float> padded(static_cast<size_t>(count * g.padded_size()));
    pad_images(g, images.data(), count, padded.data());
    const PatchOffsets at = patch_offsets(g, count);
    std::vector<float> gathered(static_cast<size_t>(count * out), kNaN);
    f32_gemm_gathered(count * g.patches(), p.filters, g.patch_size(), 1.0f,
                      GatheredA<float>{padded.data(), at.pixels.data(), at.taps.data()}, w.data(), p.filters, 0.0f,
                      gathered.data(), p.filters, nullptr);
    std::vector<double> ref(gathered.size()), padded_d(padded.begin(), padded.end()), w_d(w.begin(), w.end());
    gemm_gathered_ref<double>(count * g.patches(), p.filters, g.patch_size(), 1.0,
                              GatheredA<double>{padded_d.data(), at.pixels.data(), at.taps.data()}, w_d.data(),
                              p.filters, 0.0, ref.data(), p.filters);
    for (int t = 0; t <= 3; ++t) {
      std::unique_ptr<ThreadPool> pool = t > 0 ? std::make_unique<ThreadPool>(t) : nullptr;
      std::vector<float> planar(gathered.size(), kNaN);
      f32_conv_planar(pool.get(), g, count, images.data(), w.data(), p.filters, planar.data());
      for (size_t i = 0; i < planar.size(); ++i) {
        ASSERT_NEAR(planar[i], ref[i], 1e-5 * static_cast<double>(g.patch_size())) << describe_planar(p) << " at " << i;
        ASSERT_EQ(std::memcmp(&planar[i], &gathered[i], 4), 0)
            << describe_planar(p) << ", " << t << " threads: " << planar[i] << " against the gathered " << gathered[i]
            << " at " << i;
      }
    }
  }
}

namespace {

// One weight gradient case's operands: `count` samples, dy, the gathered GEMM's double reference.
struct PlanarGradCase {
  PlanarCase p;
  int64_t count;
  ConvGeometry g;
  std::vector<float> images, dy;
  std::vector<double> ref;
};

PlanarGradCase make_planar_grad(const PlanarCase& p, int64_t count, Rng& rng) {
  PlanarGradCase k{p, count, conv_geometry(p.h, p.w, p.c, p.kernel, 1, p.pad).value(), {}, {}, {}};
  k.images.resize(static_cast<size_t>(count * p.h * p.w * p.c));
  k.dy.resize(static_cast<size_t>(count * k.g.patches() * p.filters));
  for (float& v : k.images) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  for (float& v : k.dy) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  std::vector<float> padded(static_cast<size_t>(count * k.g.padded_size()));
  pad_images(k.g, k.images.data(), count, padded.data());
  const PatchOffsets at = patch_offsets(k.g, count);
  std::vector<double> padded_d(padded.begin(), padded.end()), dy_d(k.dy.begin(), k.dy.end());
  k.ref.resize(static_cast<size_t>(k.g.patch_size() * p.filters));
  gemm_gathered_ref<double>(k.g.patch_size(), p.filters, count * k.g.patches(), 1.0,
                            GatheredA<double>{padded_d.data(), at.taps.data(), at.pixels.data()}, dy_d.data(),
                            p.filters, 0.0, k.ref.data(), p.filters);
  return k;
}

// dw = keep dw + the planar weight gradient at the active level, `threads` in a pool (0: none).
std::vector<float> planar_weight_grad(const PlanarGradCase& k, int threads, float keep, std::vector<float> dw) {
  std::unique_ptr<ThreadPool> pool = threads > 0 ? std::make_unique<ThreadPool>(threads) : nullptr;
  std::vector<float> partials(
      static_cast<size_t>(gemm_depth_partials(k.g.patch_size(), k.p.filters, k.count * k.g.patches())), kNaN);
  f32_conv_planar_weight_grad(pool.get(), k.g, k.count, k.images.data(), k.dy.data(), k.p.filters, keep, dw.data(),
                              partials.data());
  return dw;
}

// lenet's conv1 (3 sample blocks of 5), conv2's shape, odd sides and channels, 13 filters (3 of
// avx512's 6-wide tiles' columns past them, 4 of sse2's 3), 2 samples where the depth would make
// 3 blocks (a block a sample).
constexpr PlanarCase kPlanarGradCases[] = {{28, 28, 1, 5, 2, 6}, {10, 10, 16, 5, 4, 6}, {7, 9, 3, 3, 1, 1},
                                           {5, 6, 2, 3, 0, 13}, {9, 7, 40, 3, 2, 7}, {40, 40, 1, 3, 1, 2}};

}  // namespace

// The planar weight gradient against the double sums (2e-6 of the depth, a sum of up to 7840
// terms in [-1, 1]); at 0-3 threads the same bits; keep 1 adds to dW; and the levels without
// FMA give the reference level's bits (each lane a product, then a sum: f32_gemm.h's dot tiles).
TEST_P(GemmGathered, PlanarWeightGradMatchesTheSums) {
  Rng rng(15, 0);
  for (const PlanarCase& p : kPlanarGradCases) {
    const PlanarGradCase k = make_planar_grad(p, p.h == 40 ? 2 : 5, rng);
    const std::vector<float> alone = planar_weight_grad(k, 0, 0.0f, std::vector<float>(k.ref.size(), kNaN));
    const double tolerance = 2e-6 * static_cast<double>(k.count * k.g.patches());
    for (size_t i = 0; i < alone.size(); ++i) ASSERT_NEAR(alone[i], k.ref[i], tolerance) << describe_planar(p) << " at " << i;
    for (int t = 1; t <= 3; ++t) {
      const std::vector<float> split = planar_weight_grad(k, t, 0.0f, std::vector<float>(k.ref.size(), kNaN));
      ASSERT_EQ(std::memcmp(split.data(), alone.data(), alone.size() * sizeof(float)), 0) << describe_planar(p) << ", " << t;
    }
    const std::vector<float> added = planar_weight_grad(k, 2, 1.0f, std::vector<float>(k.ref.size(), 0.5f));
    for (size_t i = 0; i < added.size(); ++i) ASSERT_NEAR(added[i], k.ref[i] + 0.5, tolerance) << describe_planar(p);
    if (GetParam() != Isa::reference && GetParam() < Isa::avx2_fma) {
      set_active_isa(Isa::reference);
      const std::vector<float> reference = planar_weight_grad(k, 0, 0.0f, std::vector<float>(k.ref.size(), kNaN));
      set_active_isa(GetParam());
      EXPECT_EQ(std::memcmp(reference.data(), alone.data(), alone.size() * sizeof(float)), 0) << describe_planar(p);
    }
  }
}

// Its cost model takes the few-filter layers only, at stride 1: lenet's conv1 and conv2's dx; not
// cnn's conv1 (32 filters) nor a stride-2 layer.
TEST(PlanarConv, TakesFewFiltersAtStrideOne) {
  EXPECT_TRUE(planar_conv_wins(conv_geometry(28, 28, 1, 5, 1, 2).value(), 6));
  EXPECT_TRUE(planar_conv_wins(conv_geometry(10, 10, 16, 5, 1, 4).value(), 6));
  EXPECT_FALSE(planar_conv_wins(conv_geometry(28, 28, 1, 3, 1, 1).value(), 32));
  EXPECT_FALSE(planar_conv_wins(conv_geometry(28, 28, 1, 4, 2, 1).value(), 6));
  EXPECT_FALSE(planar_conv_wins(conv_geometry(64, 64, 32, 3, 1, 1).value(), 6));  // planes past L2
}

// ---------------------------------------------------------------- the depth split (weight gradients)
// f32_gemm_gathered_depth_split: depth blocks by the shape alone, each into its own partial, added
// in block order. Shapes like the presets' weight gradients: cnn's conv1 (9 x 32, 784 pixels a
// sample), lenet's conv1 (25 x 6) and conv2 (150 x 16), and uneven ones (blocks of unequal depth,
// a C of more than one cache block of rows).
namespace {

struct SplitCase {
  int64_t m, n, k;
};
constexpr SplitCase kSplitCases[] = {{9, 32, 20000}, {25, 6, 5000}, {150, 16, 6400}, {13, 17, 2500}, {97, 40, 4100}};

// The cases of a pass: rows apart (channels 0: A read gathered) all of them; rows side by side
// in runs of 20 (A packed where B has more than one panel) those of over 32 columns, and one more.
std::vector<SplitCase> split_cases(int64_t channels) {
  if (channels == 0) return std::vector<SplitCase>(std::begin(kSplitCases), std::end(kSplitCases));
  return {{97, 40, 4100}, {13, 70, 2500}};
}

// The partials a case needs, NaN: a block that read its buffer before writing it would show.
std::vector<float> nan_partials(const Gathered& g) {
  return std::vector<float>(static_cast<size_t>(gemm_depth_partials(g.m, g.n, g.k)), kNaN);
}

}  // namespace

// Shallow products are not split; a deep one with few rows is; one with rows enough for the
// threads is not (cnn's conv4, 576 x 64), nor one whose partials would pass 2^18 floats; the
// partials never shrink as k grows (a conv sizes them by its largest chunk).
TEST(GemmDepthSplit, BlocksFollowTheShapeAlone) {
  EXPECT_EQ(gemm_depth_blocks(9, 32, 2047), 1);
  EXPECT_EQ(gemm_depth_partials(9, 32, 2047), 0);
  EXPECT_EQ(gemm_depth_blocks(9, 32, 64 * 784), 16);
  EXPECT_EQ(gemm_depth_blocks(288, 32, 18 * 784), 13);
  EXPECT_EQ(gemm_depth_blocks(576, 64, 32 * 196), 1);
  EXPECT_EQ(gemm_depth_blocks(288, 1024, 64 * 784), 1);
  for (const auto& mn : {std::array<int64_t, 2>{1, 1}, std::array<int64_t, 2>{25, 6}, std::array<int64_t, 2>{288, 32},
                         std::array<int64_t, 2>{300, 333}, std::array<int64_t, 2>{256, 1024}}) {
    int64_t last = 0;
    for (int64_t k = 0; k <= 40000; k += 97) {
      const int64_t partials = gemm_depth_partials(mn[0], mn[1], k);
      ASSERT_GE(partials, last) << mn[0] << " x " << mn[1] << ", k " << k;
      ASSERT_LE(partials, int64_t{1} << 18) << mn[0] << " x " << mn[1] << ", k " << k;
      last = partials;
    }
  }
}

// Against the double reference, every alpha/beta case (NaN in C under beta 0 ignored), A read
// gathered and packed (split_cases).
TEST_P(GemmGathered, DepthSplitMatchesReference) {
  Rng rng(15, 0);
  int index = 0;
  for (int64_t channels : {0, 20})
  for (const SplitCase& sc : split_cases(channels)) {
    const AlphaBeta ab = kAlphaBeta[static_cast<size_t>(index++ % 4)];
    Gathered g = make_gathered(sc.m, sc.n, sc.k, Fill::uniform, rng, channels);
    ASSERT_GT(gemm_depth_blocks(g.m, g.n, g.k), 1) << describe_gathered(g, ab.alpha, ab.beta);
    if (ab.beta == 0.0f) std::fill(g.c.begin(), g.c.end(), kNaN);
    const std::vector<double> ref = gathered_ref(g, ab.alpha, ab.beta, false);
    const std::vector<double> bound = gathered_ref(g, std::fabs(ab.alpha), std::fabs(ab.beta), true);
    std::vector<float> partials = nan_partials(g);
    f32_gemm_gathered_depth_split(g.m, g.n, g.k, ab.alpha, g.a(), g.b.data(), g.ldb, ab.beta, g.c.data(), g.n,
                                  partials.data(), nullptr);
    const double tol_factor = 3.0 * std::sqrt(static_cast<double>(g.k) + 3.0) * std::ldexp(1.0, -24);
    for (size_t i = 0; i < g.c.size(); ++i) {
      const double err = std::fabs(static_cast<double>(g.c[i]) - ref[i]);
      ASSERT_LE(err, tol_factor * bound[i]) << describe_gathered(g, ab.alpha, ab.beta) << ": C[" << i << "] = " << g.c[i]
                                            << ", reference " << ref[i];
    }
  }
}

// No pool and 1, 2, 3, 4 and 16 threads give the same bits: the blocks do not follow the threads
// (A gathered and packed, split_cases).
TEST_P(GemmGathered, DepthSplitThreadCountDoesNotChangeBits) {
  Rng rng(16, 0);
  for (int64_t channels : {0, 20})
  for (const SplitCase& sc : split_cases(channels)) {
    const Gathered g = make_gathered(sc.m, sc.n, sc.k, Fill::uniform, rng, channels);
    std::vector<float> partials = nan_partials(g), single = g.c;
    f32_gemm_gathered_depth_split(g.m, g.n, g.k, 1.0f, g.a(), g.b.data(), g.ldb, 0.5f, single.data(), g.n,
                                  partials.data(), nullptr);
    for (int t : {1, 2, 3, 4, 16}) {
      ThreadPool pool(t);
      std::vector<float> out = g.c;
      partials = nan_partials(g);
      f32_gemm_gathered_depth_split(g.m, g.n, g.k, 1.0f, g.a(), g.b.data(), g.ldb, 0.5f, out.data(), g.n,
                                    partials.data(), &pool);
      EXPECT_EQ(std::memcmp(out.data(), single.data(), out.size() * 4), 0)
          << describe_gathered(g, 1, 0.5f) << ": " << t << " threads differ from none";
    }
  }
}

// The depth split packs A a block at a time where B has more than one panel and A's rows lie side
// by side (a weight gradient's: a tap's channels); f32_gemm_gathered reads it gathered. Both tiles
// are one FMA chain per element: unsplit (rows enough to feed the threads), the two give the same
// bits, with tiles inside a run of rows (copied MR floats at a time) and across runs (row by row),
// partial tiles and panels, 1 to 4 panels.
TEST_P(GemmGathered, PackedAGivesTheGatheredBits) {
  Rng rng(17, 0);
  ThreadPool pool(3);
  for (int64_t channels : {20, 64, 1000})
    for (const auto& [m, n, k] : {std::array<int64_t, 3>{400, 40, 300}, std::array<int64_t, 3>{385, 17, 600},
                                  std::array<int64_t, 3>{500, 33, 257}, std::array<int64_t, 3>{390, 64, 20}}) {
      const Gathered g = make_gathered(m, n, k, Fill::uniform, rng, channels);
      ASSERT_EQ(gemm_depth_blocks(m, n, k), 1) << describe_gathered(g, 1, 0.5f);
      for (ThreadPool* threads : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> gathered = g.c, packed = g.c;
        f32_gemm_gathered(m, n, k, 1.0f, g.a(), g.b.data(), g.ldb, 0.5f, gathered.data(), n, threads);
        f32_gemm_gathered_depth_split(m, n, k, 1.0f, g.a(), g.b.data(), g.ldb, 0.5f, packed.data(), n, nullptr,
                                      threads);
        EXPECT_EQ(std::memcmp(packed.data(), gathered.data(), packed.size() * 4), 0)
            << describe_gathered(g, 1, 0.5f) << ", rows side by side in runs of " << channels
            << (threads != nullptr ? ", 3 threads" : "");
      }
    }
}

// ---------------------------------------------------------------- the same bits on every FMA level
// Every FMA level (avx2_fma and up) sums each element of C as one FMA chain over depth, in order,
// and applies alpha and beta alike; its tiles differ only in shape. So a level above avx2_fma
// gives avx2_fma's bits exactly, on shapes that leave partial tiles and panels at both sizes, in
// both GEMMs, with and without a pool. Skipped, with the reason, where this CPU has none.
namespace {

std::vector<Isa> fma_levels_above_avx2() {
  std::vector<Isa> levels;
  for (Isa isa : all_isas())
    if (isa > Isa::avx2_fma && isa_supported(isa, detect_cpu().features)) levels.push_back(isa);
  return levels;
}

// C from `run` at each level; a mismatch names the level, the case and the first element that differs.
template <class Run>
void expect_same_bits_as_avx2(const std::vector<Isa>& levels, const std::vector<float>& c0, const std::string& what,
                              Run run) {
  const Isa previous = active_isa();
  set_active_isa(Isa::avx2_fma);
  std::vector<float> want = c0;
  run(want.data());
  for (Isa isa : levels) {
    set_active_isa(isa);
    std::vector<float> got = c0;
    run(got.data());
    size_t i = 0;
    while (i < got.size() && bits(got[i]) == bits(want[i])) ++i;
    EXPECT_EQ(i, got.size()) << what << ": " << isa_name(isa) << " gives " << (i < got.size() ? got[i] : 0.0f)
                             << " at " << i << ", avx2 " << (i < got.size() ? want[i] : 0.0f);
  }
  set_active_isa(previous);
}

}  // namespace

TEST(GemmAcrossLevels, FmaLevelsGiveAvx2sBits) {
  const std::vector<Isa> levels = fma_levels_above_avx2();
  if (!isa_supported(Isa::avx2_fma, detect_cpu().features) || levels.empty())
    GTEST_SKIP() << "this CPU has no FMA level above avx2 (avx512) to compare with avx2";
  Rng rng(14, 0);
  ThreadPool pool(3);
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{1, 1, 1}, {13, 33, 7}, {25, 65, 513}, {97, 17, 300}, {37, 9, 1025}, {11, 15, 2}, {100, 200, 70}};
  int index = 0;
  for (const Case& c : cases)
    for (Trans ta : kTrans)
      for (Trans tb : kTrans) {
        const AlphaBeta ab = kAlphaBeta[static_cast<size_t>(index % 4)];
        ThreadPool* threads = index++ % 2 ? &pool : nullptr;
        const Operands op = make_operands(ta, tb, c.m, c.n, c.k, kPads[index % 3], Fill::uniform, rng);
        expect_same_bits_as_avx2(levels, op.c, describe(op.s, ab.alpha, ab.beta), [&](float* out) {
          f32_gemm(op.s, ab.alpha, op.a.data(), op.b.data(), ab.beta, out, threads);
        });
      }
  for (const Case& c : {Case{13, 33, 7}, Case{97, 17, 300}, Case{25, 65, 257}, Case{50, 10, 20}, Case{300, 6, 600},
                        Case{200, 40, 513}}) {
    const AlphaBeta ab = kAlphaBeta[static_cast<size_t>(index % 4)];
    ThreadPool* threads = index++ % 2 ? &pool : nullptr;
    const Gathered g = make_gathered(c.m, c.n, c.k, Fill::uniform, rng);
    expect_same_bits_as_avx2(levels, g.c, describe_gathered(g, ab.alpha, ab.beta), [&](float* out) {
      f32_gemm_gathered(g.m, g.n, g.k, ab.alpha, g.a(), g.b.data(), g.ldb, ab.beta, out, g.n, threads);
    });
  }
  for (const PlanarCase& p : kPlanarGradCases) {  // the planar weight gradient's 16 lanes, at every FMA level
    const PlanarGradCase k = make_planar_grad(p, 3, rng);
    ThreadPool* threads = index++ % 2 ? &pool : nullptr;
    expect_same_bits_as_avx2(levels, std::vector<float>(k.ref.size(), 0.25f), describe_planar(p) + ", planar dW",
                             [&](float* out) {
                               std::vector<float> partials(k.ref.size() * 16, kNaN);
                               f32_conv_planar_weight_grad(threads, k.g, k.count, k.images.data(), k.dy.data(),
                                                           p.filters, 1.0f, out, partials.data());
                             });
  }
  for (const SplitCase& c : kSplitCases) {  // the depth split: its blocks and sums are the levels' own too
    ThreadPool* threads = index++ % 2 ? &pool : nullptr;
    const Gathered g = make_gathered(c.m, c.n, c.k, Fill::uniform, rng);
    std::vector<float> partials = nan_partials(g);
    expect_same_bits_as_avx2(levels, g.c, describe_gathered(g, 1, 1) + ", depth split", [&](float* out) {
      f32_gemm_gathered_depth_split(g.m, g.n, g.k, 1.0f, g.a(), g.b.data(), g.ldb, 1.0f, out, g.n, partials.data(),
                                    threads);
    });
  }
}

}  // namespace rg
