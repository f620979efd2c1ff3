// Unit tests of src/base and src/tensor: Status/Result, the memory account, byte sizes, the
// RNG, fp16 conversion (against an independent double-arithmetic reference), the thread
// pool, shapes and tensor views, and the serial helpers (bytes, CRC, atomic files).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if !defined(_WIN32)
#include <sys/stat.h>
#endif

#include "base/float_mode.h"
#include "base/fp16.h"
#include "base/input_file.h"
#include "base/text_format.h"
#include "base/memory.h"
#include "base/rng.h"
#include "base/output_file.h"
#include "base/serial.h"
#include "base/status.h"
#include "base/thread_pool.h"
#include "base/thread_scratch.h"
#include "tensor/shape.h"
#include "tensor/tensor.h"

#if !defined(_WIN32)
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#endif

namespace rg {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------- Status, Result, macros

Status fail_if(bool fail, int* calls) {
  ++*calls;
  return fail ? Status::error("boom") : Status();
}

// Runs two steps through RG_TRY; the second must not run when the first fails.
Status two_steps(bool first_fails, int* calls) {
  RG_TRY(fail_if(first_fails, calls));
  RG_TRY(fail_if(false, calls));
  return Status();
}

Result<int> half_of(int v) {
  if (v % 2 != 0) return Status::error("odd: " + std::to_string(v));
  return v / 2;
}

// RG_ASSIGN twice in one function (distinct temporaries per line) and on a move-only type.
Result<int> quarter_of(int v) {
  RG_ASSIGN(const int h, half_of(v));
  RG_ASSIGN(int q, half_of(h));
  return q;
}

Result<std::unique_ptr<int>> boxed(int v) {
  if (v < 0) return Status::error("negative");
  return std::unique_ptr<int>(new int(v));
}

Result<int> unbox(int v) {
  RG_ASSIGN(std::unique_ptr<int> p, boxed(v));
  return *p + 1;
}

TEST(Status, OkAndError) {
  const Status ok;
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.message(), "");
  const Status bad = Status::error("disk full");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "disk full");
  EXPECT_EQ(bad.with_context("saving x: ").message(), "saving x: disk full");
  EXPECT_FALSE(bad.with_context("saving x: ").ok());
  EXPECT_TRUE(ok.with_context("saving x: ").ok());
  EXPECT_EQ(ok.with_context("saving x: ").message(), "");
}

TEST(Status, ResultHoldsValueOrError) {
  Result<int> good = half_of(8);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), 4);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = half_of(7);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "odd: 7");
  Result<std::string> s = std::string("moved");
  EXPECT_EQ(s.take(), "moved");
}

TEST(Status, TryReturnsEarly) {
  int calls = 0;
  EXPECT_TRUE(two_steps(false, &calls).ok());
  EXPECT_EQ(calls, 2);
  calls = 0;
  const Status s = two_steps(true, &calls);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "boom");
  EXPECT_EQ(calls, 1);  // the second step never ran
}

TEST(Status, AssignPropagates) {
  ASSERT_TRUE(quarter_of(12).ok());
  EXPECT_EQ(quarter_of(12).value(), 3);
  EXPECT_EQ(quarter_of(7).status().message(), "odd: 7");   // the first RG_ASSIGN fails
  EXPECT_EQ(quarter_of(6).status().message(), "odd: 3");   // the second one fails
  EXPECT_EQ(unbox(4).value(), 5);
  EXPECT_EQ(unbox(-1).status().message(), "negative");
}

TEST(StatusDeathTest, MisuseAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The place from the source folder on, whatever folder the build ran in (base/check.cpp); a
  // regex both of GoogleTest's regex engines read (Windows' has no [...]).
  EXPECT_DEATH({ Result<int> r{Status()}; (void)r; },
               "internal error at src/base/status\\.h:.*: check failed: .*Result built from an ok Status");
  EXPECT_DEATH({
    Result<int> r = half_of(3);
    (void)r.value();
  }, "value\\(\\) of a failed Result");
}

// ---------------------------------------------------------------- memory account

TEST(Memory, CountsCurrentAndPeak) {
  MemoryAccount account("test");
  EXPECT_EQ(account.name(), "test");
  auto a = account.allocate(1000, "a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.value()) % 64, 0u);
  auto b = account.allocate(500, "b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(account.current_bytes(), 1500);
  EXPECT_EQ(account.peak_bytes(), 1500);
  account.release(a.value(), 1000);
  EXPECT_EQ(account.current_bytes(), 500);
  EXPECT_EQ(account.peak_bytes(), 1500);
  account.reset_peak();
  EXPECT_EQ(account.peak_bytes(), 500);
  account.release(b.value(), 500);
  EXPECT_EQ(account.current_bytes(), 0);
  account.release(nullptr, 123);  // a no-op
  EXPECT_EQ(account.current_bytes(), 0);
}

TEST(Memory, BudgetRefusesWithMessage) {
  MemoryAccount account("gpu0");
  account.set_budget(4096);
  EXPECT_EQ(account.budget_bytes(), 4096);
  auto a = account.allocate(3000, "first block");
  ASSERT_TRUE(a.ok());
  auto b = account.allocate(2000, "conv3 workspace");
  ASSERT_FALSE(b.ok());
  const std::string m = b.status().message();
  EXPECT_TRUE(contains(m, "conv3 workspace")) << m;
  EXPECT_TRUE(contains(m, "gpu0")) << m;
  EXPECT_EQ(account.current_bytes(), 3000);  // the refused allocation counts nothing
  auto c = account.allocate(1096, "exactly to the budget");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(account.current_bytes(), 4096);
  account.release(c.value(), 1096);
  account.release(a.value(), 3000);
  account.set_budget(0);  // no budget
  auto d = account.allocate(1 << 20, "big");
  ASSERT_TRUE(d.ok());
  account.release(d.value(), 1 << 20);
}

TEST(Memory, TensorReleasesOnDestruction) {
  MemoryAccount account("tensors");
  {
    auto t = Tensor::zeros(Shape{10, 10}, DType::f32, "t", account);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(account.current_bytes(), 400);
    Tensor view = t.value().rows(2, 5);
    {
      Tensor moved = t.take();  // the Result gives up its handle
      (void)moved;
    }
    EXPECT_EQ(account.current_bytes(), 400);  // the view keeps the storage alive
    (void)view;
  }
  EXPECT_EQ(account.current_bytes(), 0);
  EXPECT_EQ(account.peak_bytes(), 400);

  account.set_budget(1000);
  auto big = Tensor::zeros(Shape{300}, DType::f64, "activations of dense7", account);
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(contains(big.status().message(), "activations of dense7")) << big.status().message();
  EXPECT_EQ(account.current_bytes(), 0);
}

TEST(Memory, ParseBytes) {
  struct Case {
    const char* text;
    int64_t bytes;
  };
  const Case good[] = {{"64M", 64ll << 20}, {"1.5G", 3ll << 29}, {"512k", 512ll << 10}, {"4096", 4096},
                       {"2K", 2048},        {"0", 0},            {"3G", 3ll << 30},    {"1MiB", 1 << 20}};
  for (const auto& c : good) {
    auto r = parse_bytes(c.text);
    ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
    EXPECT_EQ(r.value(), c.bytes) << c.text;
  }
  const char* bad[] = {"12X", "64Q", "-3", "-1M", "", "M", "abc", "nan", "inf"};
  for (const char* text : bad) {
    auto r = parse_bytes(text);
    ASSERT_FALSE(r.ok()) << "'" << text << "' parsed as " << r.value();
    EXPECT_TRUE(contains(r.status().message(), "'" + std::string(text) + "'")) << r.status().message();
  }
}

// A size past int64 must be refused, not wrapped: strtod accepts "1e30", and casting the
// product to int64_t is undefined (on x86 it gives INT64_MIN, a negative budget).
TEST(Memory, ParseBytesRefusesOverflow) {
  for (const char* text : {"1e30G", "9999999999G", "1e19"}) {
    auto r = parse_bytes(text);
    if (r.ok()) {
      ADD_FAILURE() << "'" << text << "' parsed as " << r.value() << " instead of an error";
    } else {
      EXPECT_TRUE(contains(r.status().message(), text)) << r.status().message();
    }
  }
  auto big = parse_bytes("1024G");  // large but representable
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big.value(), 1ll << 40);
}

TEST(Memory, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(312), "312 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3 << 19), "1.5 MiB");
  EXPECT_EQ(format_bytes(5ll << 30), "5.0 GiB");
  EXPECT_EQ(format_bytes(2ll << 40), "2.0 TiB");
}

// ---------------------------------------------------------------- Rng

TEST(Rng, SameSeedAndStreamSameSequence) {
  Rng a(42, 7), b(42, 7), c(42, 8), d(43, 7);
  int same_c = 0, same_d = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t va = a.next_u64();
    EXPECT_EQ(va, b.next_u64());
    same_c += va == c.next_u64();
    same_d += va == d.next_u64();
  }
  EXPECT_EQ(same_c, 0);
  EXPECT_EQ(same_d, 0);
  // Stream 0 (the default) differs from stream 1 of the same seed.
  Rng e(5), f(5, 0), g(5, 1);
  const uint64_t ve = e.next_u64();
  EXPECT_EQ(ve, f.next_u64());
  EXPECT_NE(ve, g.next_u64());
}

// The generator is xoshiro256**: checked against an independent transcription of
// Blackman and Vigna's reference code, stepping from the same state.
TEST(Rng, MatchesReferenceXoshiro) {
  Rng rng(1234, 5);
  const Rng::State st = rng.state();
  uint64_t s[4] = {st.s[0], st.s[1], st.s[2], st.s[3]};
  ASSERT_FALSE(s[0] == 0 && s[1] == 0 && s[2] == 0 && s[3] == 0);
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  for (int i = 0; i < 100; ++i) {
    const uint64_t expected = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    ASSERT_EQ(rng.next_u64(), expected) << "draw " << i;
  }
}

TEST(Rng, BelowInRangeAndUniform) {
  Rng rng(99);
  EXPECT_EQ(rng.below(0), 0u);
  EXPECT_EQ(rng.below(1), 0u);
  for (uint64_t n : {2ull, 3ull, 7ull, 1000ull, (1ull << 40) + 3, ~0ull - 5}) {
    for (int i = 0; i < 2000; ++i) ASSERT_LT(rng.below(n), n);
  }
  // Chi-square over 10 bins, 100k draws, 9 degrees of freedom: mean 9, P(> 40) < 1e-5.
  const int bins = 10, draws = 100000;
  std::vector<int> counts(bins, 0);
  for (int i = 0; i < draws; ++i) ++counts[rng.below(bins)];
  double chi2 = 0;
  const double expected = static_cast<double>(draws) / bins;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 40.0);
  // n = 3 * 2^62: a plain x % n would return values below 2^62 half the time instead of a third.
  const uint64_t big = 3ull << 62;
  int low = 0;
  for (int i = 0; i < 30000; ++i) low += rng.below(big) < (1ull << 62);
  EXPECT_NEAR(low / 30000.0, 1.0 / 3, 0.015);  // sd 0.0027
  // A bin count of 3 that does not divide 2^64: still uniform.
  std::vector<int> thirds(3, 0);
  for (int i = 0; i < 30000; ++i) ++thirds[rng.below(3)];
  chi2 = 0;
  for (int c : thirds) chi2 += (c - 10000.0) * (c - 10000.0) / 10000.0;
  EXPECT_LT(chi2, 25.0);  // 2 dof: P(> 25) ~ 4e-6
}

TEST(Rng, UniformRanges) {
  Rng rng(3);
  double sum = 0;
  for (int i = 0; i < 20000; ++i) {
    const float f = rng.uniform_f32();
    ASSERT_GE(f, 0.0f);
    ASSERT_LT(f, 1.0f);
    const double d = rng.uniform_f64();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
    const double u = rng.uniform(-2.0, 3.0);
    ASSERT_GE(u, -2.0);
    ASSERT_LT(u, 3.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 20000, 0.5, 0.06);  // sd of the mean: 5/sqrt(12*20000) = 0.01
}

TEST(Rng, NormalMomentsLooseBounds) {
  Rng rng(2024, 3);
  const int n = 100000;
  double sum = 0, sum2 = 0;
  int within_one = 0;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum2 += z * z;
    within_one += std::fabs(z) < 1.0;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);  // sd 0.0032
  EXPECT_NEAR(var, 1.0, 0.03);   // sd 0.0045
  EXPECT_NEAR(static_cast<double>(within_one) / n, 0.6827, 0.01);
}

TEST(Rng, StateRoundTripContinuesIdentically) {
  Rng rng(77, 1);
  for (int i = 0; i < 5; ++i) rng.next_u64();
  (void)rng.normal();  // leaves a spare normal inside the state
  const Rng::State saved = rng.state();
  EXPECT_TRUE(saved.has_spare);
  std::vector<double> first;
  for (int i = 0; i < 20; ++i) {
    first.push_back(rng.normal());
    first.push_back(static_cast<double>(rng.next_u64() >> 11));
  }
  Rng other(1, 2);  // a different generator takes over the saved state
  other.set_state(saved);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(other.normal(), first[2 * i]) << i;
    EXPECT_EQ(static_cast<double>(other.next_u64() >> 11), first[2 * i + 1]) << i;
  }
}

TEST(Rng, ShuffledIndicesIsPermutation) {
  Rng rng(8);
  for (int32_t n : {0, 1, 2, 10, 1000}) {
    std::vector<int32_t> order = shuffled_indices(n, rng);
    ASSERT_EQ(order.size(), static_cast<size_t>(n));
    std::vector<int32_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int32_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
    if (n == 1000) {
      int fixed = 0;
      for (int32_t i = 0; i < n; ++i) fixed += order[static_cast<size_t>(i)] == i;
      EXPECT_LT(fixed, 10);  // a real shuffle leaves about one element in place
    }
  }
  // All 6 orders of 3 are equally likely (an off-by-one Fisher-Yates reaches only 2 of them).
  std::map<std::vector<int32_t>, int> seen;
  for (int i = 0; i < 60000; ++i) ++seen[shuffled_indices(3, rng)];
  ASSERT_EQ(seen.size(), 6u);
  double chi2 = 0;
  for (const auto& kv : seen) chi2 += (kv.second - 10000.0) * (kv.second - 10000.0) / 10000.0;
  EXPECT_LT(chi2, 35.0);  // 5 dof
}

// ---------------------------------------------------------------- fp16

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
bool half_is_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

// Independent reference, half -> value by the definition (not bit manipulation).
double ref_half_value(uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  double v;
  if (exponent == 0x1F) {
    v = mantissa == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    v = std::ldexp(static_cast<double>(mantissa), -24);
  } else {
    v = std::ldexp(1.0 + mantissa / 1024.0, exponent - 15);
  }
  return sign ? -v : v;
}

// Independent reference, float -> half by double arithmetic: find the grid spacing of the
// binade, round value/spacing to nearest even with nearbyint (default rounding mode), and
// encode. Not for NaN.
uint16_t ref_f32_to_f16(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7C00;  // includes Inf: 65520 is halfway to 2^16, ties go to even (Inf)
  const int exponent = a < std::ldexp(1.0, -14) ? -14 : std::ilogb(a);  // binade of a (subnormals share -14)
  const double spacing = std::ldexp(1.0, exponent - 10);
  const double q = std::nearbyint(a / spacing);  // exact division by a power of 2
  const double rounded = q * spacing;
  if (rounded < std::ldexp(1.0, -14)) return sign | static_cast<uint16_t>(q);  // subnormal (or zero)
  const int e = std::ilogb(rounded);                                             // may have carried up
  const auto mantissa = static_cast<uint16_t>(std::ldexp(rounded, 10 - e) - 1024.0);
  return sign | static_cast<uint16_t>((e + 15) << 10) | mantissa;
}

TEST(Fp16, HalfToFloatMatchesDefinition) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const float f = f16_to_f32(half);
    const double ref = ref_half_value(half);
    if (half_is_nan(half)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), ref) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;  // -0 stays -0
    }
  }
}

// A signalling NaN half comes out a quiet float NaN with the same payload (F16C does this).
TEST(Fp16, HalfNanComesOutQuietWithItsPayload) {
  for (uint32_t h : {0x7C01u, 0x7D55u, 0xFC01u, 0x7E00u, 0x7FFFu}) {
    uint32_t u;
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    std::memcpy(&u, &f, 4);
    EXPECT_EQ(u, ((h & 0x8000u) << 16) | 0x7FC00000u | ((h & 0x3FFu) << 13)) << std::hex << h;
  }
}

TEST(Fp16, RoundTripEveryHalf) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<uint16_t>(h);
    const uint16_t back = f32_to_f16(f16_to_f32(half));
    if (half_is_nan(half)) {
      ASSERT_TRUE(half_is_nan(back)) << std::hex << h << " -> " << back;
      ASSERT_NE(back & 0x0200u, 0u) << "NaN " << std::hex << h << " came back signalling: " << back;
      ASSERT_EQ(back & 0x8000u, h & 0x8000u) << std::hex << h;
      if (h & 0x0200u) {
        ASSERT_EQ(back, half) << "a quiet NaN keeps its payload: " << std::hex << h;
      }
    } else {
      ASSERT_EQ(back, half) << std::hex << h;
    }
  }
}

TEST(Fp16, SpecialCases) {
  struct Case {
    float value;
    uint16_t half;
    const char* what;
  };
  const float tiny = std::ldexp(1.0f, -24);  // smallest subnormal half
  const Case cases[] = {
      {0.0f, 0x0000, "+0"},
      {-0.0f, 0x8000, "-0"},
      {1.0f, 0x3C00, "1"},
      {-2.0f, 0xC000, "-2"},
      {1.0f + std::ldexp(1.0f, -11), 0x3C00, "1 + half ulp: tie to even (down)"},
      {1.0f + 3 * std::ldexp(1.0f, -11), 0x3C02, "1 + 1.5 ulp: tie to even (up)"},
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23), 0x3C01, "just above a tie"},
      {1.0f + std::ldexp(1.0f, -11) - std::ldexp(1.0f, -24), 0x3C00, "just below a tie"},
      {2047.0f + 0.5f, 0x6800, "2047.5: tie, carries into the next binade (2048)"},
      {65504.0f, 0x7BFF, "max normal"},
      {65519.99f, 0x7BFF, "just below the overflow tie"},
      {65520.0f, 0x7C00, "overflow tie goes to Inf"},
      {-65520.0f, 0xFC00, "-65520"},
      {1e10f, 0x7C00, "far past max"},
      {std::numeric_limits<float>::max(), 0x7C00, "float max"},
      {std::numeric_limits<float>::infinity(), 0x7C00, "Inf"},
      {-std::numeric_limits<float>::infinity(), 0xFC00, "-Inf"},
      {tiny, 0x0001, "2^-24"},
      {-tiny, 0x8001, "-2^-24"},
      {std::ldexp(1.0f, -25), 0x0000, "2^-25: tie to even (0)"},
      {-std::ldexp(1.0f, -25), 0x8000, "-2^-25: -0"},
      {std::nextafter(std::ldexp(1.0f, -25), 1.0f), 0x0001, "just above 2^-25"},
      {std::nextafter(std::ldexp(1.0f, -25), 0.0f), 0x0000, "just below 2^-25"},
      {3 * std::ldexp(1.0f, -25), 0x0002, "1.5 * 2^-24: tie to even (2)"},
      {5 * std::ldexp(1.0f, -25), 0x0002, "2.5 * 2^-24: tie to even (2)"},
      {1023 * tiny, 0x03FF, "largest subnormal"},
      {1023.25f * tiny, 0x03FF, "above the largest subnormal, rounds down"},
      {1023.5f * tiny, 0x0400, "tie between the largest subnormal (odd) and 2^-14"},
      {std::ldexp(1.0f, -14), 0x0400, "smallest normal"},
      {std::nextafter(std::ldexp(1.0f, -14), 0.0f), 0x0400, "just below 2^-14 rounds up to it"},
      {std::numeric_limits<float>::denorm_min(), 0x0000, "float subnormal"},
      {-std::numeric_limits<float>::denorm_min(), 0x8000, "negative float subnormal"},
      {std::ldexp(1.0f, -30), 0x0000, "2^-30"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(f32_to_f16(c.value), c.half) << c.what << " (" << c.value << ")";
    EXPECT_EQ(ref_f32_to_f16(c.value), c.half) << "the test's reference disagrees: " << c.what;
  }
  // NaNs: quiet, NaN, sign kept, never Inf; the payload's top bits survive.
  const uint32_t nans[] = {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0x7FBFFFFFu, 0xFF800001u, 0x7FD56000u};
  for (uint32_t bits : nans) {
    const uint16_t h = f32_to_f16(float_of(bits));
    EXPECT_TRUE(half_is_nan(h)) << std::hex << bits << " -> " << h;
    EXPECT_NE(h & 0x0200u, 0u) << std::hex << bits << " -> " << h;
    EXPECT_EQ(h & 0x8000u, (bits >> 16) & 0x8000u) << std::hex << bits;
  }
  EXPECT_EQ(f32_to_f16(float_of(0x7FD56000u)) & 0x3FFu, 0x3FFu & (0x7FD56000u >> 13));
}

TEST(Fp16, MillionRandomFloatsAgainstReference) {
  Rng rng(16);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits;
    if (i % 4 == 0) {
      bits = rng.next_u32();  // any pattern at all
    } else {
      // Exponents from 2^-31 to 2^17: every half binade, the subnormals and both overflow sides.
      const uint32_t exponent = 96 + static_cast<uint32_t>(rng.below(49));
      bits = (rng.next_u32() & 0x80000000u) | (exponent << 23) | (rng.next_u32() & 0x7FFFFFu);
    }
    const float f = float_of(bits);
    const uint16_t got = f32_to_f16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(half_is_nan(got) && (got & 0x200u)) << std::hex << bits << " -> " << got;
      continue;
    }
    ASSERT_EQ(got, ref_f32_to_f16(f)) << std::hex << "bits " << bits << " value " << std::hexfloat << f;
  }
}

// ---------------------------------------------------------------- ThreadPool

// Fails the run loudly instead of hanging the suite when `fn` deadlocks.
void with_watchdog(int seconds, const std::function<void()>& fn) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread dog([done, seconds] {
    for (int i = 0; i < seconds * 10 && !*done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!*done) {
      std::fprintf(stderr, "ThreadPool test still running after %d s: deadlock\n", seconds);
      std::abort();
    }
  });
  fn();
  *done = true;
  dog.join();
}

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  with_watchdog(60, [] {
    for (int threads : {1, 2, 3, 4, 7}) {
      ThreadPool pool(threads);
      EXPECT_EQ(pool.threads(), threads);
      for (int64_t n : {0, 1, 2, 3, 5, 7, 8, 64, 100, 1001}) {
        for (int64_t grain : {0, 1, 2, 3, 7, 64, 1000, 5000}) {
          std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
          for (auto& h : hits) h = 0;
          std::mutex mutex;
          std::vector<std::pair<int64_t, int64_t>> chunks;
          const std::thread::id caller = std::this_thread::get_id();
          bool caller_ran_first = false;
          pool.parallel_for(n, grain, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
            std::lock_guard<std::mutex> lock(mutex);
            chunks.emplace_back(begin, end);
            if (begin == 0 && std::this_thread::get_id() == caller) caller_ran_first = true;
          });
          const std::string where =
              "threads " + std::to_string(threads) + " n " + std::to_string(n) + " grain " + std::to_string(grain);
          for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << where << " i " << i;
          if (n == 0) {
            EXPECT_TRUE(chunks.empty()) << where;
            continue;
          }
          EXPECT_TRUE(caller_ran_first) << where;
          EXPECT_LE(chunks.size(), static_cast<size_t>(threads)) << where;
          const int64_t g = std::max<int64_t>(grain, 1);
          if (n <= g) {
            EXPECT_EQ(chunks.size(), 1u) << where;
          }
          for (const auto& c : chunks) {
            EXPECT_EQ(c.first % g, 0) << where << ": a chunk starts off the grain at " << c.first;
            if (c.second != n) {
              EXPECT_EQ(c.second % g, 0) << where;
            }
          }
        }
      }
    }
  });
}

TEST(ThreadPool, ReusableManyTimes) {
  with_watchdog(60, [] {
    ThreadPool pool(4);
    std::atomic<int64_t> total{0};
    int64_t expected = 0;
    for (int call = 0; call < 1000; ++call) {
      const int64_t n = call % 9;  // n < threads leaves some workers without a chunk
      // Now and then the workers fall asleep first: woken by the caller and by each other, or
      // their chunks taken over by the caller.
      if (call % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      pool.parallel_for(n, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) total += i + 1;
      });
      expected += n * (n + 1) / 2;
      ASSERT_EQ(total.load(), expected) << "call " << call;
    }
  });
}

// An exception in a worker's chunk (std::bad_alloc from an allocation there) arrives on the
// caller's thread after every chunk ended, not as std::terminate; the caller's own chunk's
// too; the pool stays usable.
TEST(ThreadPool, AnExceptionInAChunkIsRethrownOnTheCaller) {
  with_watchdog(60, [] {
    ThreadPool pool(4);
    for (int64_t thrower : {int64_t{0}, int64_t{3}}) {  // chunk 0 runs on the caller, 3 on a worker
      std::atomic<int> ended{0};
      bool caught = false;
      try {
        pool.parallel_for(4, 1, [&](int64_t begin, int64_t) {
          if (begin == thrower) throw std::bad_alloc();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // ends after the throw
          ++ended;
        });
      } catch (const std::bad_alloc&) {
        caught = true;
      }
      EXPECT_TRUE(caught) << "chunk " << thrower;
      EXPECT_EQ(ended.load(), 3) << "parallel_for returned before the other chunks ended";
    }
    std::atomic<int64_t> sum{0};
    pool.parallel_for(100, 1, [&](int64_t begin, int64_t end) { sum += end - begin; });
    EXPECT_EQ(sum.load(), 100);
  });
}

// time_regions (train --profile's threads line): off, nothing is counted; on, every call adds its
// wall time and its chunks' own times, each chunk's a sleep it surely took; the chunks' sum never
// above the threads times the region's (they all run inside it), inline calls counted alike.
TEST(ThreadPool, TimedRegionsCountWallAndChunkTimes) {
  with_watchdog(60, [] {
    ThreadPool pool(3);
    const auto nap = [](int64_t b, int64_t e) { std::this_thread::sleep_for(std::chrono::milliseconds(2 * (e - b))); };
    pool.parallel_for(3, 1, nap);
    EXPECT_EQ(pool.region_times().region_seconds, 0.0) << "counted while timing was off";
    EXPECT_EQ(pool.region_times().chunk_seconds, 0.0);
    pool.time_regions(true);
    EXPECT_TRUE(pool.timing_regions());
    pool.parallel_for(3, 1, nap);  // three chunks of 2 ms
    ThreadPool::RegionTimes t = pool.region_times();
    EXPECT_GE(t.region_seconds, 0.002);
    EXPECT_GE(t.chunk_seconds, 0.006);
    EXPECT_LE(t.chunk_seconds, 3 * t.region_seconds + 1e-6);
    pool.parallel_for(1, 1, nap);  // inline on the caller: its chunk is the region
    const ThreadPool::RegionTimes inline_call = pool.region_times();
    EXPECT_GE(inline_call.region_seconds - t.region_seconds, 0.002);
    EXPECT_NEAR(inline_call.chunk_seconds - t.chunk_seconds, inline_call.region_seconds - t.region_seconds, 1e-3);
    pool.time_regions(false);
    pool.parallel_for(3, 1, nap);
    EXPECT_EQ(pool.region_times().region_seconds, inline_call.region_seconds) << "counted after timing went off";
  });
}

TEST(ThreadPool, CreateAndDestroyRepeatedly) {
  with_watchdog(60, [] {
    for (int i = 0; i < 50; ++i) {
      ThreadPool pool(1 + i % 4);
      std::atomic<int> sum{0};
      if (i % 2) pool.parallel_for(10, 1, [&](int64_t b, int64_t e) { sum += static_cast<int>(e - b); });
      EXPECT_EQ(sum.load(), i % 2 ? 10 : 0);
    }
  });
  EXPECT_GE(hardware_threads(), 1);
}

// ---------------------------------------------------------------- ThreadScratch

// Counts the scratch objects alive, to see when a thread's are freed.
std::atomic<int> g_counted_alive{0};
struct Counted {
  Counted() { ++g_counted_alive; }
  ~Counted() { --g_counted_alive; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  int uses = 0;
};

TEST(ThreadScratch, OneObjectPerThreadAndKeyKeptUntilTheThreadReleasesIt) {
  static const ThreadScratchKey key, other_key;
  EXPECT_NE(key.index(), other_key.index());
  release_thread_scratch();  // this thread's from an earlier test, if any
  const int alive_before = g_counted_alive.load();
  Counted& mine = thread_scratch<Counted>(key);
  ++mine.uses;
  EXPECT_EQ(&thread_scratch<Counted>(key), &mine) << "the same object on the thread's next use";
  EXPECT_EQ(thread_scratch<Counted>(key).uses, 1);
  EXPECT_NE(&thread_scratch<Counted>(other_key), &mine) << "another key, another object";
  EXPECT_EQ(g_counted_alive.load(), alive_before + 2);
  with_watchdog(60, [&] {
    ThreadPool pool(4);
    std::mutex mutex;
    std::set<const Counted*> seen;
    for (int round = 0; round < 3; ++round) {  // each worker keeps its own object between jobs
      std::atomic<int> others{0};
      pool.parallel_for(4, 1, [&](int64_t begin, int64_t) {
        if (begin > 0) ++others;  // the caller's chunk 0 waits for a worker to run one
        for (int i = 0; begin == 0 && others.load() == 0 && i < 10000; ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        Counted& c = thread_scratch<Counted>(key);
        ++c.uses;
        std::lock_guard<std::mutex> lock(mutex);
        seen.insert(&c);
      });
    }
    EXPECT_GE(seen.size(), 2u);  // the caller and at least one worker
    EXPECT_LE(seen.size(), 4u);
    EXPECT_EQ(g_counted_alive.load(), alive_before + 1 + static_cast<int>(seen.size()));
  });
  // The pool's workers freed theirs as they ended, before the thread did (not at thread exit).
  EXPECT_EQ(g_counted_alive.load(), alive_before + 2);
  EXPECT_EQ(&thread_scratch<Counted>(key), &mine);
  release_thread_scratch();
  EXPECT_EQ(g_counted_alive.load(), alive_before);
  EXPECT_EQ(thread_scratch<Counted>(key).uses, 0) << "a new object after a release";
  release_thread_scratch();
  release_thread_scratch();  // twice: nothing to free
  EXPECT_EQ(g_counted_alive.load(), alive_before);
}

// ---------------------------------------------------------------- Shape

TEST(Shape, Arithmetic) {
  const Shape image{1, 28, 28};
  EXPECT_EQ(image.rank(), 3);
  EXPECT_EQ(image.numel(), 784);
  EXPECT_EQ(image.numel_from(1), 784 / 1);
  EXPECT_EQ(image.numel_from(2), 28);
  const Shape batch = image.batched(64);
  EXPECT_EQ(batch, (Shape{64, 1, 28, 28}));
  EXPECT_EQ(batch.str(), "[64, 1, 28, 28]");
  EXPECT_EQ(batch.numel(), 64 * 784);
  EXPECT_EQ(batch.numel_from(1), 784);
  EXPECT_EQ(batch.sample(), image);
  EXPECT_NE(batch, image);
  EXPECT_NE((Shape{2, 3}), (Shape{3, 2}));
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(Shape{}.str(), "[]");
  EXPECT_EQ(Shape{5}.sample(), Shape{});
  EXPECT_EQ((Shape{4, 0, 3}).numel(), 0);
  const int64_t dims[] = {2, 3, 4, 5};
  const Shape from = Shape::from_dims(dims, 4);
  EXPECT_EQ(from, (Shape{2, 3, 4, 5}));
  EXPECT_EQ(from[3], 5);
  EXPECT_EQ(Shape::from_dims(dims, 0), Shape{});
}

// ---------------------------------------------------------------- Tensor

TEST(Tensor, ViewsShareStorageAndCloneCopies) {
  auto made = Tensor::zeros(Shape{4, 2, 3}, DType::f32, "t");
  ASSERT_TRUE(made.ok());
  Tensor t = made.take();
  EXPECT_EQ(t.bytes(), 4u * 6 * 4);
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.f32()[i], 0.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(i);

  Tensor mid = t.rows(1, 3);
  EXPECT_EQ(mid.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(mid.f32()[0], 6.0f);  // row 1 starts after one 2x3 sample
  mid.f32()[1] = -1.0f;
  EXPECT_EQ(t.f32()[7], -1.0f);  // written through the view
  Tensor inner = mid.rows(1, 2);  // a view of a view
  EXPECT_EQ(inner.f32()[0], 12.0f);
  EXPECT_EQ(t.rows(4, 4).numel(), 0);

  Tensor flat = t.reshaped(Shape{24});
  EXPECT_EQ(flat.shape(), Shape{24});
  flat.f32()[23] = 99.0f;
  EXPECT_EQ(t.f32()[23], 99.0f);
  EXPECT_EQ(flat.rows(5, 8).f32()[0], 5.0f);

  auto cloned = mid.clone("copy");
  ASSERT_TRUE(cloned.ok());
  Tensor c = cloned.take();
  EXPECT_EQ(c.shape(), mid.shape());
  for (int64_t i = 0; i < c.numel(); ++i) EXPECT_EQ(c.f32()[i], mid.f32()[i]);
  c.f32()[0] = 1234.0f;
  EXPECT_EQ(t.f32()[6], 6.0f);  // the original is untouched

  mid.fill_zero();  // only rows 1 and 2
  EXPECT_EQ(t.f32()[5], 5.0f);
  for (int64_t i = 6; i < 18; ++i) EXPECT_EQ(t.f32()[i], 0.0f) << i;
  EXPECT_EQ(t.f32()[18], 18.0f);

  mid.copy_from(c);  // back into the view
  EXPECT_EQ(t.f32()[6], 1234.0f);
  EXPECT_EQ(t.f32()[7], -1.0f);
  EXPECT_EQ(t.f32()[18], 18.0f);

  auto d = Tensor::zeros(Shape{3}, DType::f64, "d");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.value().bytes(), 24u);
  d.value().data<double>()[2] = 0.5;
  EXPECT_EQ(d.value().rows(2, 3).data<double>()[0], 0.5);
  EXPECT_EQ(static_cast<char*>(d.value().rows(1, 3).raw_data()) - static_cast<char*>(d.value().raw_data()), 8);
}

// ---------------------------------------------------------------- serial

TEST(Serial, RoundTripEveryType) {
  ByteWriter w;
  w.u8(0xAB);
  w.u32(0x01020304u);
  w.u64(0xF1E2D3C4B5A69788ull);
  w.i64(-5);
  w.f64(-0.0);
  w.f64(3.141592653589793);
  w.f64(std::numeric_limits<double>::infinity());
  w.str("");
  w.str(std::string("a\0b", 3));
  const uint8_t blob[3] = {9, 8, 7};
  w.raw(blob, 3);
  const std::vector<uint8_t>& b = w.bytes();
  ASSERT_EQ(b.size(), 1u + 4 + 8 + 8 + 24 + 4 + 7 + 3);
  EXPECT_EQ(b[1], 0x04);  // little-endian
  EXPECT_EQ(b[4], 0x01);
  EXPECT_EQ(b[5], 0x88);
  EXPECT_EQ(b[12], 0xF1);

  ByteReader r(b.data(), b.size(), "blob.bin");
  EXPECT_EQ(r.u8("tag").value(), 0xAB);
  EXPECT_EQ(r.u32("a").value(), 0x01020304u);
  EXPECT_EQ(r.u64("b").value(), 0xF1E2D3C4B5A69788ull);
  EXPECT_EQ(r.i64("c").value(), -5);
  const double z = r.f64("d").value();
  EXPECT_EQ(z, 0.0);
  EXPECT_TRUE(std::signbit(z));
  EXPECT_EQ(r.f64("e").value(), 3.141592653589793);
  EXPECT_EQ(r.f64("f").value(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(r.str("g", 10).value(), "");
  EXPECT_EQ(r.str("h", 10).value(), std::string("a\0b", 3));
  uint8_t back[3] = {};
  EXPECT_TRUE(r.raw(back, 3, "blob").ok());
  EXPECT_EQ(back[0], 9);
  EXPECT_EQ(back[2], 7);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(r.offset(), b.size());
}

TEST(Serial, ReadingPastTheEndNamesSourceAndOffset) {
  const uint8_t data[6] = {1, 2, 3, 4, 5, 6};
  ByteReader r(data, sizeof data, "model.ckpt");
  ASSERT_TRUE(r.u8("version").ok());
  ASSERT_TRUE(r.u32("count").ok());
  auto bad = r.u32("layer count");
  ASSERT_FALSE(bad.ok());
  const std::string m = bad.status().message();
  EXPECT_TRUE(contains(m, "model.ckpt")) << m;
  EXPECT_TRUE(contains(m, "at byte 5")) << m;
  EXPECT_TRUE(contains(m, "layer count")) << m;
  EXPECT_EQ(r.offset(), 5u);  // a failed read consumes nothing
  EXPECT_TRUE(r.u8("last").ok());
  EXPECT_FALSE(r.u8("more").ok());
  EXPECT_FALSE(r.u64("x").ok());
  EXPECT_FALSE(r.f64("x").ok());
  EXPECT_FALSE(r.i64("x").ok());
  uint8_t out[1];
  const Status raw = r.raw(out, 1, "tail");
  EXPECT_FALSE(raw.ok());
  EXPECT_TRUE(contains(raw.message(), "at byte 6")) << raw.message();
  EXPECT_TRUE(contains(r.error("custom").message(), "model.ckpt: at byte 6: custom"));
}

TEST(Serial, OversizedStringRefused) {
  ByteWriter w;
  w.u32(1000000);  // claims a million bytes
  w.raw("abc", 3);
  ByteReader r(w.bytes().data(), w.bytes().size(), "names.bin");
  auto s = r.str("layer name", 256);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.status().message(), "names.bin")) << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), "layer name")) << s.status().message();
  EXPECT_TRUE(contains(s.status().message(), "1000000")) << s.status().message();

  ByteWriter w2;
  w2.u32(10);  // within the limit but longer than the data
  w2.raw("abc", 3);
  ByteReader r2(w2.bytes().data(), w2.bytes().size(), "short.bin");
  auto s2 = r2.str("name", 256);
  ASSERT_FALSE(s2.ok());
  EXPECT_TRUE(contains(s2.status().message(), "short.bin")) << s2.status().message();

  ByteWriter w3;
  w3.str("exactly");  // a length equal to the limit is fine
  ByteReader r3(w3.bytes().data(), w3.bytes().size(), "ok.bin");
  EXPECT_EQ(r3.str("name", 7).value(), "exactly");
}

TEST(Serial, Crc32) {
  const char* check = "123456789";
  EXPECT_EQ(crc32_of(reinterpret_cast<const uint8_t*>(check), 9), 0xCBF43926u);
  EXPECT_EQ(crc32_of(nullptr, 0), 0u);
  const uint8_t a = 'a';
  EXPECT_EQ(crc32_of(&a, 1), 0xE8B7BE43u);
}

namespace fs = std::filesystem;

// A fresh folder under the system's temporary folder, removed with its contents.
class TempDir {
 public:
  TempDir() {
    const fs::path base = fs::temp_directory_path();
    std::random_device seed;
    for (int attempt = 0; attempt < 100 && path_.empty(); ++attempt) {
      const fs::path candidate = base / ("rg_test_base_" + std::to_string(seed()) + "_" + std::to_string(attempt));
      if (fs::create_directory(candidate)) path_ = candidate.generic_string();
    }
    EXPECT_FALSE(path_.empty()) << "cannot create a temporary folder";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool exists(const std::string& path) { return fs::exists(path); }

// A limit refuses a larger file by its size before reading it, and one that grows past it while
// read (/proc's files say 0 bytes and hold more): never the whole of either. /proc/self/status,
// not maps: qemu-user makes its own maps file, with a size (the i686 suite under qemu).
TEST(Serial, ReadFileBytesUnderALimit) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/ten.bin";
  ASSERT_TRUE(write_file_atomic(path, std::vector<uint8_t>(10, 7)).ok());
  EXPECT_EQ(read_file_bytes(path, "a test file", 10).value().size(), 10u);
  const Status larger = read_file_bytes(path, "a test file", 9).status();
  EXPECT_EQ(larger.message(), path + ": 10 B, more than the 9 B a test file may hold");
  const Status grown = read_file_bytes("/proc/self/status", "a status", 16).status();
  EXPECT_EQ(grown.message(), "/proc/self/status: grown while read, more than the 16 B a status may hold");
  EXPECT_GT(read_file_bytes("/proc/self/status", "a status").value().size(), 16u);  // no limit: the whole
}

TEST(Serial, WriteFileAtomic) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/model.ckpt";
  const std::vector<uint8_t> first = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(write_file_atomic(path, first).ok());
  EXPECT_EQ(read_file_bytes(path).value(), first);
  EXPECT_FALSE(exists(path + ".tmp"));

  const std::vector<uint8_t> second = {42, 43};  // shorter: no old bytes may remain
  ASSERT_TRUE(write_file_atomic(path, second).ok());
  EXPECT_EQ(read_file_bytes(path).value(), second);
  EXPECT_TRUE(write_file_atomic(dir.path() + "/empty.bin", {}).ok());
  EXPECT_TRUE(read_file_bytes(dir.path() + "/empty.bin").value().empty());

  // The folder is missing: an error naming the path, nothing created.
  const std::string lost = dir.path() + "/no_such_dir/model.ckpt";
  const Status s = write_file_atomic(lost, first);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(s.message(), dir.path() + "/no_such_dir/model.ckpt")) << s.message();
  EXPECT_FALSE(exists(dir.path() + "/no_such_dir"));

  // The target is a folder: refused before anything is written, nothing left beside it.
  const std::string folder = dir.path() + "/folder";
  ASSERT_TRUE(fs::create_directory(folder));
  ASSERT_TRUE(write_file_atomic(folder + "/inside", first).ok());
  const Status over = write_file_atomic(folder, first);
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(contains(over.message(), folder + " is a folder")) << over.message();
  EXPECT_EQ(read_file_bytes(folder + "/inside").value(), first);
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_FALSE(is_temporary_of(path, entry.path().filename().string())) << entry.path();
    EXPECT_FALSE(is_temporary_of(folder, entry.path().filename().string())) << entry.path();
  }
}

TEST(Serial, ReadMissingFileNamesPath) {
  TempDir dir;
  const std::string path = dir.path() + "/absent.bin";
  auto r = read_file_bytes(path);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status().message(), path)) << r.status().message();
}


// Issue 29, section 2: input files say what they are before they are read, and sizes are
// checked against memory before they are allocated.
TEST(InputFile, ARegularFileGivesItsSizeAndReadsExactly) {
  TempDir dir;
  const std::string path = dir.path() + "/eight.bin";
  ASSERT_TRUE(write_file_atomic(path, std::vector<uint8_t>(8, 7)).ok());
  auto size = input_file_size(path, "a test file");
  ASSERT_TRUE(size.ok()) << size.status().message();
  EXPECT_EQ(size.value(), 8);
  auto in = open_input_file(path, "a test file");
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(in.value().size, 8);
  uint8_t bytes[16];
  ASSERT_TRUE(in.value().read(bytes, 5, "the start").ok());
  const Status past = in.value().read(bytes, 5, "the rest");  // 3 bytes are left
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(contains(past.message(), path + ": the file ends in the rest (5 bytes needed, 3 there")) << past.message();
  const Status missing = open_input_file(dir.path() + "/absent", "a test file").status();
  EXPECT_TRUE(contains(missing.message(), dir.path() + "/absent: cannot open")) << missing.message();
}

TEST(InputFile, AFolderIsRefusedByItsKind) {
  TempDir dir;
  for (const Status& s : {open_input_file(dir.path(), "a checkpoint").status(),
                          input_file_size(dir.path(), "a checkpoint").status(),
                          read_file_bytes(dir.path(), "a checkpoint").status()}) {
    EXPECT_EQ(s.message(), dir.path() + " is a folder, not a checkpoint");
  }
  EXPECT_EQ(path_kind(dir.path()), "a folder");
  EXPECT_EQ(path_kind(dir.path() + "/absent"), "");
  EXPECT_TRUE(path_exists(dir.path()));
}

TEST(InputFile, DevicesAreRefusedBeforeAnyRead) {
#if defined(_WIN32)
  GTEST_SKIP() << "no /dev on Windows";
#else
  for (const char* device : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    if (!path_exists(device)) continue;
    const Status s = read_file_bytes(device, "a cfg file").status();  // would never end on /dev/zero
    EXPECT_EQ(s.message(), std::string(device) + " is a character device, not a cfg file");
  }
#endif
}

TEST(InputFile, AFifoIsRefusedWithoutWaitingForAWriter) {
#if defined(_WIN32)
  GTEST_SKIP() << "FIFOs are POSIX";
#else
  TempDir dir;
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  // Opening a FIFO for reading blocks until a writer comes: these return at once instead.
  EXPECT_EQ(open_input_file(fifo, "a checkpoint").status().message(), fifo + " is a FIFO (named pipe), not a checkpoint");
  EXPECT_EQ(read_file_bytes(fifo).status().message(), fifo + " is a FIFO (named pipe), not a regular file");
#endif
}

// Restores the host account's budget after a test that sets one.
struct ScopedHostBudget {
  explicit ScopedHostBudget(int64_t bytes) : old(host_memory().budget_bytes()) { host_memory().set_budget(bytes); }
  ~ScopedHostBudget() { host_memory().set_budget(old); }
  int64_t old;
};

TEST(HostMemory, ACheckRefusesWhatTheBudgetOrTheMachineCannotHold) {
  {
    const ScopedHostBudget budget(host_memory().current_bytes() + (int64_t{1} << 20));
    EXPECT_TRUE(check_host_memory(int64_t{1} << 19, "half a MiB").ok());
    const Status over = check_host_memory(int64_t{2} << 20, "two MiB");
    ASSERT_FALSE(over.ok());
    EXPECT_TRUE(contains(over.message(), "two MiB: 2.0 MiB needed, more than the 1.0 MiB left of the ")) << over.message();
  }
  const AvailableMemory available = available_host_memory();
#if defined(__linux__) || defined(_WIN32)
  EXPECT_GT(available.bytes, 0) << "MemAvailable or the available physical memory is known here";
#endif
  if (available.bytes == 0) GTEST_SKIP() << "this system says nothing of its available memory";
  EXPECT_TRUE(check_host_memory(1, "a byte").ok());
  const Status over = check_host_memory(available.bytes + (int64_t{1} << 40), "a TiB more than there is");
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(contains(over.message(), "a TiB more than there is: ")) << over.message();
  EXPECT_TRUE(contains(over.message(), "this machine has available (" + available.source + ")")) << over.message();
}

// Issue 29, section 4: outputs replace nothing but what they name. Each class of what can be
// at an output's path: a link (written through), a device or FIFO (written in place), a folder,
// a socket or a link loop (refused), an unwritable folder (refused before writing), concurrent
// writers (unique temporaries, the lock), a killed writer's temporaries (removed).

std::vector<std::string> folder_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(OutputFile, ALinkIsWrittenThroughToItsTargetAndStays) {
#if defined(_WIN32)
  GTEST_SKIP() << "symbolic links need privileges on Windows";
#else
  TempDir dir;
  const std::string target = dir.path() + "/run3.ckpt", link = dir.path() + "/latest.ckpt";
  ASSERT_TRUE(write_file_atomic(target, {1, 2, 3}).ok());
  fs::create_symlink("run3.ckpt", link);  // relative, as ln -s makes it
  ASSERT_TRUE(write_file_atomic(link, {7, 8}).ok());
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(fs::read_symlink(link).string(), "run3.ckpt");
  EXPECT_EQ(read_file_bytes(target).value(), (std::vector<uint8_t>{7, 8}));

  // A link whose target does not exist yet: the target is created, the link kept.
  const std::string dangling = dir.path() + "/next.ckpt";
  fs::create_symlink(dir.path() + "/made.ckpt", dangling);
  ASSERT_TRUE(check_output_writable(dangling).ok());
  ASSERT_TRUE(write_file_atomic(dangling, {9}).ok());
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(read_file_bytes(dir.path() + "/made.ckpt").value(), (std::vector<uint8_t>{9}));
  EXPECT_EQ(folder_entries(dir.path()), (std::vector<std::string>{"latest.ckpt", "made.ckpt", "next.ckpt", "run3.ckpt"}));
#endif
}

TEST(OutputFile, DevicesAndFifosAreWrittenInPlace) {
#if defined(_WIN32)
  GTEST_SKIP() << "FIFOs and /dev are POSIX";
#else
  // /dev/null is only looked at: a regression here must not be able to replace it.
  auto null_device = resolve_output("/dev/null");
  ASSERT_TRUE(null_device.ok()) << null_device.status().message();
  EXPECT_EQ(null_device.value().kind, OutputKind::device_or_fifo);
  EXPECT_TRUE(check_output_writable("/dev/null").ok());

  TempDir dir;
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::vector<uint8_t> got;
  std::thread reader([&] {
    FILE* f = std::fopen(fifo.c_str(), "rb");
    if (f == nullptr) return;
    int c;
    while ((c = std::fgetc(f)) != EOF) got.push_back(static_cast<uint8_t>(c));
    std::fclose(f);
  });
  const std::vector<uint8_t> bytes = {'{', '}', '\n'};
  const Status wrote = write_file_atomic(fifo, bytes);
  reader.join();
  ASSERT_TRUE(wrote.ok()) << wrote.message();
  EXPECT_EQ(got, bytes) << "the FIFO's reader gets the bytes";
  EXPECT_TRUE(fs::is_fifo(fifo)) << "the FIFO stays a FIFO";
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"pipe"});
#endif
}

TEST(OutputFile, FoldersSocketsAndLinkLoopsAreRefused) {
  TempDir dir;
  const std::string folder = dir.path() + "/out";
  ASSERT_TRUE(fs::create_directory(folder));
  for (const Status& s : {check_output_writable(folder), write_file_atomic(folder, {1})}) {
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(contains(s.message(), folder + " is a folder")) << s.message();
  }
  EXPECT_FALSE(check_output_writable("").ok());
#if !defined(_WIN32)
  const std::string link = dir.path() + "/to_folder";
  fs::create_symlink(folder, link);
  const Status through = check_output_writable(link);
  ASSERT_FALSE(through.ok());
  EXPECT_TRUE(contains(through.message(), link + " (a link to " + folder + ") is a folder")) << through.message();

  const std::string loop = dir.path() + "/loop";
  fs::create_symlink("loop", loop);
  const Status looped = write_file_atomic(loop, {1});
  ASSERT_FALSE(looped.ok());
  EXPECT_TRUE(contains(looped.message(), loop)) << looped.message();
  EXPECT_TRUE(fs::is_symlink(loop));

  const std::string socket_path = dir.path() + "/sock";
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket_path.size(), sizeof address.sun_path);
  std::strcpy(address.sun_path, socket_path.c_str());
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
  const Status socket_refused = write_file_atomic(socket_path, {1});
  close(fd);
  ASSERT_FALSE(socket_refused.ok());
  EXPECT_TRUE(contains(socket_refused.message(), socket_path + " is a socket")) << socket_refused.message();
  EXPECT_TRUE(fs::is_socket(socket_path));
#endif
}

TEST(OutputFile, AnUnwritableFolderIsRefusedBeforeWriting) {
  TempDir dir;
  const Status missing = check_output_writable(dir.path() + "/no/such/run.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.message(), "the folder " + dir.path() + "/no/such does not exist")) << missing.message();
  EXPECT_TRUE(check_output_writable(dir.path() + "/run.json").ok());
  EXPECT_TRUE(folder_entries(dir.path()).empty()) << "the check leaves nothing behind";
#if defined(_WIN32)
  GTEST_SKIP() << "folder permission bits are POSIX";
#else
  const std::string locked = dir.path() + "/read_only";
  ASSERT_TRUE(fs::create_directory(locked));
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const std::string probe = locked + "/probe";
  FILE* f = std::fopen(probe.c_str(), "wb");
  if (f != nullptr) {  // root writes anyway; tests/test_reliability.cpp drops to uid 65534 for this
    std::fclose(f);
    std::remove(probe.c_str());
    fs::permissions(locked, fs::perms::owner_all);
    GTEST_SKIP() << "this user writes into a read-only folder (root)";
  }
  const Status refused = check_output_writable(locked + "/run.json");
  fs::permissions(locked, fs::perms::owner_all);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.message(), "cannot create a file in the folder " + locked)) << refused.message();
#endif
}

TEST(OutputFile, ConcurrentWritersEachLeaveAWholeFile) {
#if defined(_WIN32)
  GTEST_SKIP() << "MoveFileEx over a file another thread is replacing may fail with a sharing violation; "
                  "OutputLock keeps two runs from writing one checkpoint there";
#endif
  TempDir dir;
  const std::string path = dir.path() + "/shared.ckpt";
  const std::vector<uint8_t> a(100000, 0xAA), b(50000, 0xBB);
  std::atomic<int> failures{0};
  auto writer = [&](const std::vector<uint8_t>& bytes) {
    for (int i = 0; i < 20; ++i) failures += write_file_atomic(path, bytes).ok() ? 0 : 1;
  };
  std::thread first(writer, std::cref(a)), second(writer, std::cref(b));
  first.join();
  second.join();
  EXPECT_EQ(failures.load(), 0) << "unique temporaries: no writer's rename takes another's file away";
  const std::vector<uint8_t> now = read_file_bytes(path).value();
  EXPECT_TRUE(now == a || now == b) << "a whole file of one writer, " << now.size() << " bytes";
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"shared.ckpt"});
}

TEST(OutputLock, ASecondWriterIsRefusedNamingTheFirst) {
  TempDir dir;
  const std::string path = dir.path() + "/run.ckpt";
  auto first = OutputLock::acquire(path);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first.value()->lock_path(), path + ".lock");
  EXPECT_TRUE(exists(path + ".lock"));
  auto second = OutputLock::acquire(path);
  ASSERT_FALSE(second.ok());
  const std::string message = second.status().message();
  EXPECT_TRUE(contains(message, path + " is being written by ")) << message;
  EXPECT_TRUE(contains(message, path + ".lock")) << message;
#if !defined(_WIN32)
  EXPECT_TRUE(contains(message, "process " + std::to_string(getpid()))) << message;
#endif
  first = Status::error("released");  // the first writer ends: its lock file goes with it
  EXPECT_FALSE(exists(path + ".lock"));
  auto third = OutputLock::acquire(path);
  EXPECT_TRUE(third.ok()) << third.status().message();
}

TEST(OutputLock, AKilledWritersLeftoversAreRemovedAndNothingElse) {
  TempDir dir;
  const std::string path = dir.path() + "/run.ckpt";
  EXPECT_TRUE(is_temporary_of(path, "run.ckpt.tmp-4242-0123abcd"));
  for (const char* name : {"run.ckpt.tmp", "run.ckpt.tmp-x", "run.ckpt.tmp-42-0123abc", "run.ckpt.tmp--0123abcd",
                           "run.ckpt.tmp-42-0123abcg", "other.ckpt.tmp-42-0123abcd", "run.ckpt"}) {
    EXPECT_FALSE(is_temporary_of(path, name)) << name;
  }
  const std::vector<std::string> kept = {"other.ckpt.tmp-42-0123abcd", "run.ckpt", "run.ckpt.lock", "run.ckpt.tmp-x"};
  for (const std::string& name : kept) ASSERT_TRUE(write_file_atomic(dir.path() + "/" + name, {1}).ok());
  ASSERT_TRUE(write_file_atomic(dir.path() + "/run.ckpt.tmp-4242-0123abcd", {1, 2}).ok());  // a SIGKILLed write's
  // The lock file a killed run left is not held: the next run takes it, and its leftovers go.
  auto lock = OutputLock::acquire(path);
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_EQ(folder_entries(dir.path()), kept);
}

// An output written in pieces (make-data's IDX files): the target stays as it was until commit,
// and a stream dropped before it (a failed write, an error upstream) leaves nothing behind.
TEST(OutputFile, AStreamReplacesItsTargetOnlyAtCommit) {
  TempDir dir;
  const std::string path = dir.path() + "/images";
  const std::vector<uint8_t> old_bytes = {9, 9, 9};
  ASSERT_TRUE(write_file_atomic(path, old_bytes).ok());
  {
    auto dropped = OutputStream::open(path);
    ASSERT_TRUE(dropped.ok()) << dropped.status().message();
    ASSERT_TRUE(dropped.value()->write("abcdef", 6).ok());
    EXPECT_EQ(read_file_bytes(path).value(), old_bytes);
  }
  EXPECT_EQ(read_file_bytes(path).value(), old_bytes);
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"images"});

  auto kept = OutputStream::open(path);
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE(kept.value()->write("ab", 2).ok());
  ASSERT_TRUE(kept.value()->write("cd", 2).ok());
  EXPECT_EQ(read_file_bytes(path).value(), old_bytes);
  ASSERT_TRUE(kept.value()->commit().ok());
  EXPECT_EQ(read_file_bytes(path).value(), (std::vector<uint8_t>{'a', 'b', 'c', 'd'}));
  EXPECT_FALSE(kept.value()->write("x", 1).ok());  // closed: an error, not a write
  EXPECT_EQ(folder_entries(dir.path()), std::vector<std::string>{"images"});
}


// Issue 30: subnormal floats
//
// What one thread computes from values the compiler cannot see (volatile): a product of two
// normal floats whose exact value, 2^-140 (about 7e-43), is subnormal (FTZ makes it 0), and a
// subnormal input scaled back into the normal range (DAZ reads the input as 0: the result is 0).
// Powers of two: every result is exact, under keep too.
struct UnderflowSeen {
  float product = -1;
  float scaled_subnormal = -1;
};

UnderflowSeen compute_underflow() {
  volatile float small = 0x1p-70f, subnormal = 0x1p-140f, scale = 0x1p30f;
  UnderflowSeen seen;
  seen.product = small * small;
  seen.scaled_subnormal = subnormal * scale;  // 2^-110 when read as it is
  return seen;
}

// Restores the process's default when a test ends, passed or not.
struct DenormalsRestorer {
  ~DenormalsRestorer() { set_denormals(Denormals::flush); }
};

bool x86_cpu() {
#if defined(__i386__) || defined(__x86_64__) || defined(_M_IX86) || defined(_M_X64)
  return true;
#else
  return false;
#endif
}

// compute_underflow() on the caller (index 0) and on each of `pool`'s workers (one chunk each);
// fails the test when a chunk ran on a thread it should not have. The caller's chunk waits
// (up to 10 s) for the others to start, so it never takes over a sleeping worker's chunk.
std::vector<UnderflowSeen> underflow_on_every_thread(ThreadPool& pool) {
  const int threads = pool.threads();
  std::vector<UnderflowSeen> seen(static_cast<size_t>(threads));
  std::vector<std::thread::id> ran_on(static_cast<size_t>(threads));
  std::atomic<int> started{0};
  pool.parallel_for(threads, 1, [&](int64_t begin, int64_t end) {
    if (begin > 0) ++started;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (begin == 0 && started.load() < threads - 1 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    for (int64_t i = begin; i < end; ++i) {
      seen[static_cast<size_t>(i)] = compute_underflow();
      ran_on[static_cast<size_t>(i)] = std::this_thread::get_id();
    }
  });
  EXPECT_EQ(ran_on[0], std::this_thread::get_id());
  for (int i = 1; i < threads; ++i) EXPECT_NE(ran_on[static_cast<size_t>(i)], std::this_thread::get_id()) << "chunk " << i;
  return seen;
}

void expect_flushed(const UnderflowSeen& seen, const std::string& where) {
  EXPECT_EQ(seen.product, 0.0f) << where << ": 2^-70 * 2^-70 under flush (FTZ)";
  if (cpu_has_denormals_are_zero()) {
    EXPECT_EQ(seen.scaled_subnormal, 0.0f) << where << ": a subnormal input under flush (DAZ)";
  }
}

void expect_kept(const UnderflowSeen& seen, const std::string& where) {
  EXPECT_EQ(seen.product, 0x1p-140f) << where << ": 2^-70 * 2^-70 under keep";
  EXPECT_EQ(seen.scaled_subnormal, 0x1p-110f) << where << ": a subnormal input under keep";
}

TEST(FloatMode, NamesRoundTripAndABadOneIsRefused) {
  for (Denormals mode : {Denormals::flush, Denormals::keep}) {
    auto parsed = denormals_from_name(denormals_name(mode));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), mode);
  }
  for (const char* bad : {"", "Flush", "on", "keep "}) {
    auto parsed = denormals_from_name(bad);
    ASSERT_FALSE(parsed.ok()) << "'" << bad << "'";
    EXPECT_TRUE(contains(parsed.status().message(), "flush or keep")) << parsed.status().message();
  }
}

TEST(FloatMode, FlushIsTheDefaultAndReachesTheCallerAndEveryWorker) {
  if (!x86_cpu()) GTEST_SKIP() << "no subnormal mode to set off x86: both modes compute IEEE subnormals";
  if (!cpu_has_denormals_are_zero()) std::printf("note: this CPU has no DAZ: subnormal inputs are not checked\n");
  EXPECT_EQ(denormals(), Denormals::flush);
  with_watchdog(60, [] {
    ThreadPool pool(4);  // its workers follow the default before their first job
    const std::vector<UnderflowSeen> seen = underflow_on_every_thread(pool);
    for (size_t i = 0; i < seen.size(); ++i) expect_flushed(seen[i], i == 0 ? "caller" : "worker " + std::to_string(i));
  });
}

TEST(FloatMode, KeepComputesSubnormalsOnTheCallerAndEveryWorker) {
  if (!x86_cpu()) GTEST_SKIP() << "no subnormal mode to set off x86";
  DenormalsRestorer restore;
  with_watchdog(60, [] {
    ThreadPool pool(4);
    set_denormals(Denormals::keep);
    expect_kept(compute_underflow(), "caller, right after set_denormals");
    const std::vector<UnderflowSeen> seen = underflow_on_every_thread(pool);
    for (size_t i = 0; i < seen.size(); ++i) expect_kept(seen[i], i == 0 ? "caller" : "worker " + std::to_string(i));
  });
}

TEST(FloatMode, SwitchingBackAndForthReachesWorkersThatAlreadyRan) {
  if (!x86_cpu()) GTEST_SKIP() << "no subnormal mode to set off x86";
  DenormalsRestorer restore;
  with_watchdog(60, [] {
    ThreadPool pool(3);
    for (int round = 0; round < 6; ++round) {
      const Denormals mode = round % 2 == 0 ? Denormals::keep : Denormals::flush;
      set_denormals(mode);
      const std::vector<UnderflowSeen> seen = underflow_on_every_thread(pool);
      for (size_t i = 0; i < seen.size(); ++i) {
        const std::string where = std::string(denormals_name(mode)) + " round " + std::to_string(round) + " thread " +
                                  std::to_string(i);
        if (mode == Denormals::flush) {
          expect_flushed(seen[i], where);
        } else {
          expect_kept(seen[i], where);
        }
      }
    }
  });
}

// A thread of its own (the batch prefetcher's kind) computes under its OS default until it
// follows the process's choice.
TEST(FloatMode, AThreadOfItsOwnFollowsTheChoice) {
  if (!x86_cpu()) GTEST_SKIP() << "no subnormal mode to set off x86";
  DenormalsRestorer restore;
  for (Denormals mode : {Denormals::keep, Denormals::flush}) {
    set_denormals(mode);
    UnderflowSeen seen;
    std::thread([&seen] {
      follow_denormals_on_this_thread();
      seen = compute_underflow();
    }).join();
    if (mode == Denormals::flush) {
      expect_flushed(seen, "own thread");
    } else {
      expect_kept(seen, "own thread");
    }
  }
}

TEST(TextFormat, SentenceStartCapitalisesTheFirstLetterOnly) {
  EXPECT_EQ(sentence_start("more threads are slower"), "More threads are slower");
  EXPECT_EQ(sentence_start("Already"), "Already");
  EXPECT_EQ(sentence_start("3 of 49"), "3 of 49");
  EXPECT_EQ(sentence_start(""), "");
}

}  // namespace
}  // namespace rg
