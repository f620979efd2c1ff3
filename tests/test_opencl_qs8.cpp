// The int8 inference kernels (kernels/qs8.cl) on every OpenCL device, bit for bit against the
// CPU's int8 engine itself: qs8_gemm against qs8_gemm_ref (shapes of 1 and of no multiple of the
// tile, long sums, extreme values, zero points, multipliers and shifts, a fused ReLU), and the
// stages against quantize_s8 / quantize_s8_rows, dequantize_s8, the int8 max pooling stage and
// qs8_add.
// Every output has guard bytes on both sides that must stay untouched.
#include "opencl/qs8.h"
#include "opencl_test_util.h"
#include "ops/fixed_point.h"
#include "ops/qs8_add.h"
#include "ops/quant_params.h"
#include "quant/int8_model.h"
#include "quant/int8_stages.h"
#include "quant/qs8_gemm.h"

namespace rg::ocl {
namespace {

constexpr int8_t kSentinel8 = 0x5a;
constexpr int32_t kIntMin = std::numeric_limits<int32_t>::min();
constexpr int32_t kIntMax = std::numeric_limits<int32_t>::max();

// A buffer of kGuard sentinels, `values`, kGuard sentinels (elements of T); its span covers `values`.
template <class T>
Guarded guarded(Device& device, const std::vector<T>& values, T sentinel, const std::string& what) {
  std::vector<T> all(values.size() + 2 * kGuard, sentinel);
  std::copy(values.begin(), values.end(), all.begin() + kGuard);
  Guarded g{upload_or_die(device, all, what), {}};
  g.span = element_span(g.buffer, sizeof(T), kGuard, static_cast<int64_t>(values.size()));
  return g;
}

// The bytes between the guards; the guards must still be sentinels.
std::vector<int8_t> unguard_s8(const Guarded& g) {
  std::vector<int8_t> all = download_all<int8_t>(g.buffer);
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(all[i], kSentinel8) << "written before the span";
    EXPECT_EQ(all[all.size() - 1 - i], kSentinel8) << "written after the span";
  }
  return std::vector<int8_t>(all.begin() + kGuard, all.end() - kGuard);
}

void expect_same_s8(const std::vector<int8_t>& got, const std::vector<int8_t>& want, const char* op) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(int{got[i]}, int{want[i]}) << op << " element " << i;
}

int8_t random_s8(Rng& rng, int lo, int hi) { return static_cast<int8_t>(lo + static_cast<int>(rng.below(hi - lo + 1))); }

// One GEMM case: A [m x k] with row stride lda, C with row stride ldc (the bytes between rows,
// past n, must keep what they held).
struct GemmCase {
  int64_t m, n, k, lda, ldc;
  std::vector<int8_t> a, b;
  Qs8OutputStage out;
};

void expect_gemm_matches(Device& device, const GemmCase& t) {
  SCOPED_TRACE(device.label() + " m=" + std::to_string(t.m) + " n=" + std::to_string(t.n) + " k=" +
               std::to_string(t.k));
  std::vector<int8_t> c0(static_cast<size_t>(t.m * t.ldc));
  for (size_t i = 0; i < c0.size(); ++i) c0[i] = static_cast<int8_t>(i * 7 + 3);  // rows' tails stay
  std::vector<int8_t> want = c0;
  qs8_gemm_ref(t.m, t.n, t.k, t.a.data(), t.lda, t.b.data(), t.out, want.data(), t.ldc);

  Guarded a = guarded<int8_t>(device, t.a, kSentinel8, "a"), b = guarded<int8_t>(device, t.b, kSentinel8, "b");
  Guarded bias = guarded<int32_t>(device, t.out.bias, 0, "bias");
  Guarded mult = guarded<int32_t>(device, t.out.multiplier, 0, "multiplier");
  Guarded shift = guarded<int32_t>(device, t.out.shift, 0, "shift");
  Guarded c = guarded<int8_t>(device, c0, kSentinel8, "c");
  auto run = qs8_gemm(device, t.m, t.n, t.k, a.span, t.lda, b.span, bias.span, mult.span, shift.span,
                      t.out.zero_point, t.out.lo, t.out.hi, c.span, t.ldc);
  ASSERT_TRUE(run.ok()) << run.status().message();
  expect_same_s8(unguard_s8(c), want, "qs8_gemm");
  expect_same_s8(unguard_s8(a), t.a, "a (input)");
}

// Random operands: A in [-128, 127], B in [-127, 127] (qs8's weights), bias small, multipliers
// from quantize_multiplier of reals that keep most outputs inside the clamp.
GemmCase random_case(Rng& rng, int64_t m, int64_t n, int64_t k, int64_t lda_pad, int64_t ldc_pad) {
  GemmCase t{m, n, k, k + lda_pad, n + ldc_pad, {}, {}, {}};
  t.a.resize(static_cast<size_t>(m * t.lda));
  for (int8_t& v : t.a) v = random_s8(rng, -128, 127);
  t.b.resize(static_cast<size_t>(k * n));
  for (int8_t& v : t.b) v = random_s8(rng, -127, 127);
  const double typical = 127.0 * 127.0 * std::sqrt(static_cast<double>(k)) / 3;
  for (int64_t j = 0; j < n; ++j) {
    const QuantMultiplier q = quantize_multiplier(std::min(0.999, rng.uniform(0.2, 2.0) * 64.0 / typical));
    t.out.bias.push_back(static_cast<int32_t>(rng.below(20001)) - 10000);
    t.out.multiplier.push_back(q.multiplier);
    t.out.shift.push_back(q.shift);
  }
  t.out.zero_point = static_cast<int32_t>(rng.below(41)) - 20;
  return t;
}

TEST(OpenclQs8, GemmMatchesTheReferenceOnManyShapes) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(81);
  // m, n, k, lda - k, ldc - n: 1s, no multiple of 4/16/64, long sums.
  const int64_t shapes[][5] = {{1, 1, 1, 0, 0},   {1, 37, 300, 3, 0}, {5, 1, 17, 0, 2},     {16, 16, 16, 0, 0},
                               {33, 65, 129, 1, 5}, {70, 19, 5000, 4, 1}, {2, 300, 3, 0, 0}, {257, 3, 64, 0, 0}};
  for (Device* device : open_devices().devices) {
    for (const auto& s : shapes) {
      GemmCase t = random_case(rng, s[0], s[1], s[2], s[3], s[4]);
      expect_gemm_matches(*device, t);
      t.out.lo = t.out.zero_point;  // a fused ReLU
      expect_gemm_matches(*device, t);
    }
  }
}

// A long sum of extreme products: -128 * -127 a hundred thousand times (1.6e9, near INT32_MAX),
// with zero points at the ends of the range and shifts of 31 bringing it back into int8.
TEST(OpenclQs8, GemmLongExtremeSumsMatch) {
  SKIP_WITHOUT_OPENCL();
  for (Device* device : open_devices().devices) {
    const int64_t m = 3, n = 20, k = 100000;
    GemmCase t{m, n, k, k, n, std::vector<int8_t>(m * k, -128), std::vector<int8_t>(k * n, -127), {}};
    for (int64_t p = 0; p < k; ++p) t.b[p * n + 1] = 127;  // column 1 sums to -1.6e9
    for (int64_t p = 0; p < k; p += 3) t.a[k + p] = 127;  // row 1 mixes signs
    for (int64_t j = 0; j < n; ++j) {
      t.out.bias.push_back(j % 2 == 0 ? 1000 : -1000);
      t.out.multiplier.push_back(j % 3 == 0 ? kIntMax : (1 << 30) + static_cast<int32_t>(j) * 12345);
      t.out.shift.push_back(j < 10 ? 24 + static_cast<int32_t>(j % 8) : 31);
    }
    for (int32_t zp : {-128, 127, 0}) {
      t.out.zero_point = zp;
      expect_gemm_matches(*device, t);
    }
  }
}

// The requantization alone: k = 1, A = 1, B = 0, so each column's output is requantize(bias[j])
// with its own multiplier and shift, over INT32_MIN/MAX, negative ties and every shift.
TEST(OpenclQs8, GemmRequantizationEdgeCasesMatch) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(82);
  std::vector<int32_t> accs = {0, 1, -1, 2, -2, 3, -3, kIntMin, kIntMax, kIntMin + 1, -(1 << 30), 1 << 30};
  for (int e = 0; e < 31; ++e) accs.push_back(-(1 << e)), accs.push_back(1 << e), accs.push_back(-(3 << e) / 2);
  while (accs.size() < 400) accs.push_back(static_cast<int32_t>(rng.next_u32()));
  const std::vector<int32_t> mults = {kIntMax, kIntMin, 1 << 30, (1 << 30) + 1, 0, 1, -1, 1518500250};
  GemmCase t{1, 0, 1, 1, 0, {1}, {}, {}};
  for (int32_t acc : accs)
    for (int32_t mult : mults)
      for (int32_t s : {0, 31, static_cast<int32_t>(rng.below(32))}) {
        t.out.bias.push_back(acc);
        t.out.multiplier.push_back(mult);
        t.out.shift.push_back(s);
      }
  for (int s = 0; s < 32; ++s)  // every shift on a small product: 2^30 * 2^30 / 2^31 = 2^29
    t.out.bias.push_back(1 << 30), t.out.multiplier.push_back(1 << 30), t.out.shift.push_back(s);
  t.n = t.ldc = static_cast<int64_t>(t.out.bias.size());
  t.b.assign(static_cast<size_t>(t.n), 0);
  for (Device* device : open_devices().devices) {
    for (int32_t zp : {0, -128, 127, 5}) {
      t.out.zero_point = zp;
      t.out.lo = -128;
      expect_gemm_matches(*device, t);
      t.out.lo = zp;  // fused ReLU
      expect_gemm_matches(*device, t);
    }
  }
}

// f32 inputs that test quantize's rounding: random values, exact ties after scaling (x.5 with a
// power-of-two scale), values past the int8 range, zeros, NaN and infinities.
std::vector<float> quantize_inputs(Rng& rng, float scale) {
  std::vector<float> x = {0.0f, -0.0f, 1e30f, -1e30f, 3e9f, -3e9f, std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()};
  for (int t = -300; t <= 300; ++t) x.push_back((static_cast<float>(t) + 0.5f) * scale);  // ties (exact when scale is 2^e)
  for (int i = 0; i < 2000; ++i) x.push_back((rng.uniform_f32() * 2.0f - 1.0f) * 200.0f * scale);
  return x;
}

TEST(OpenclQs8, QuantizeMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(83);
  const QuantParams params[] = {{0.25f, 0}, {0.0625f, -128}, {1.0f, 127}, {0.1f, 3}, {0.0371f, -17}, {2.0f, -5}};
  for (Device* device : open_devices().devices) {
    for (const QuantParams& p : params) {
      SCOPED_TRACE(device->label() + " scale " + std::to_string(p.scale) + " zero point " + std::to_string(p.zero_point));
      const std::vector<float> x = quantize_inputs(rng, p.scale);
      const int64_t n = static_cast<int64_t>(x.size());
      std::vector<int8_t> want(x.size()), rows(x.size());
      quantize_s8(n, x.data(), p, want.data());
      quantize_s8_rows(n, x.data(), p, rows.data());  // the stage's vector form: the same bits
      expect_same_s8(rows, want, "quantize_s8_rows vs quantize_s8");
      Guarded gx = guarded_f32(*device, x, "x");
      Guarded q = guarded<int8_t>(*device, std::vector<int8_t>(x.size(), 0), kSentinel8, "q");
      ASSERT_TRUE(qs8_quantize(*device, n, p, gx.span, q.span).ok());
      expect_same_s8(unguard_s8(q), want, "qs8_quantize");
    }
  }
}

TEST(OpenclQs8, DequantizeMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  std::vector<int8_t> q;
  for (int r = 0; r < 3; ++r)
    for (int v = -128; v <= 127; ++v) q.push_back(static_cast<int8_t>(v));
  const int64_t n = static_cast<int64_t>(q.size());
  const QuantParams params[] = {{0.25f, 0}, {0.0371f, -128}, {1.7e-3f, 127}, {0.1f, 3}, {3e37f, -100}};
  for (Device* device : open_devices().devices) {
    for (const QuantParams& p : params) {
      SCOPED_TRACE(device->label() + " scale " + std::to_string(p.scale));
      std::vector<float> want(q.size());
      dequantize_s8(n, q.data(), p, want.data());
      Guarded gq = guarded<int8_t>(*device, q, kSentinel8, "q");
      Guarded x = guarded_f32(*device, std::vector<float>(q.size(), 0.0f), "x");
      ASSERT_TRUE(qs8_dequantize(*device, n, p, gq.span, x.span).ok());
      expect_bits(unguard(x), want, "qs8_dequantize");
    }
  }
}

// Every pair of int8 values, under scales far apart and alike, extreme zero points, with and
// without the fused relu, gives qs8_add's bits.
TEST(OpenclQs8, AddMatchesTheReference) {
  SKIP_WITHOUT_OPENCL();
  std::vector<int8_t> a, b;
  for (int x = -128; x <= 127; ++x)
    for (int y = -128; y <= 127; ++y) a.push_back(static_cast<int8_t>(x)), b.push_back(static_cast<int8_t>(y));
  const int64_t n = static_cast<int64_t>(a.size());
  struct Case {
    QuantParams a, b, out;
    bool relu;
  };
  const Case cases[] = {{{0.05f, 3}, {0.05f, -7}, {0.1f, -20}, false},  {{0.02f, -128}, {0.3f, 127}, {0.25f, 5}, true},
                        {{1e-4f, 0}, {0.9f, -100}, {0.01f, -128}, false}, {{0.7f, 12}, {0.001f, 0}, {3.0f, 0}, true}};
  for (Device* device : open_devices().devices) {
    for (const Case& c : cases) {
      SCOPED_TRACE(device->label() + " scales " + std::to_string(c.a.scale) + ", " + std::to_string(c.b.scale));
      auto p = qs8_add_params(c.a, c.b, c.out, c.relu ? qs8_clamp(c.out, 0.0f, std::numeric_limits<float>::infinity()) : Qs8Clamp{}, "add");
      ASSERT_TRUE(p.ok()) << p.status().message();
      std::vector<int8_t> want(a.size());
      qs8_add(n, a.data(), b.data(), p.value(), want.data());
      Guarded ga = guarded<int8_t>(*device, a, kSentinel8, "a"), gb = guarded<int8_t>(*device, b, kSentinel8, "b");
      Guarded y = guarded<int8_t>(*device, std::vector<int8_t>(a.size(), 0), kSentinel8, "y");
      ASSERT_TRUE(qs8_add(*device, n, p.value(), ga.span, gb.span, y.span).ok());
      expect_same_s8(unguard_s8(y), want, "qs8_add");
    }
  }
}

TEST(OpenclQs8, MaxPoolMatchesTheStage) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(84);
  // height, width, channels, kernel, stride, pad: the CPU's 2x2 path and its general one.
  const int64_t geometries[][6] = {{8, 8, 3, 2, 2, 0}, {7, 9, 5, 3, 2, 1}, {5, 5, 1, 3, 1, 1}, {6, 4, 17, 2, 2, 0},
                                   {1, 1, 2, 1, 1, 0}};
  for (Device* device : open_devices().devices) {
    for (const auto& s : geometries) {
      auto g = conv_geometry(s[0], s[1], s[2], s[3], s[4], s[5]);
      ASSERT_TRUE(g.ok()) << g.status().message();
      const int64_t batch = 3;
      SCOPED_TRACE(device->label() + " " + std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" +
                   std::to_string(s[2]) + " k" + std::to_string(s[3]) + " s" + std::to_string(s[4]) + " p" +
                   std::to_string(s[5]));
      auto stage = make_max_pool_stage(g.value());
      auto x = Tensor::zeros(Shape{batch, s[0], s[1], s[2]}, DType::i8, "x");
      auto y = Tensor::zeros(Shape{batch, g.value().out_h, g.value().out_w, s[2]}, DType::i8, "y");
      ASSERT_TRUE(x.ok() && y.ok());
      std::vector<int8_t> input(static_cast<size_t>(x.value().numel()));
      for (int8_t& v : input) v = random_s8(rng, -128, 127);
      std::memcpy(x.value().data<int8_t>(), input.data(), input.size());
      stage->run(x.value(), y.value(), nullptr);
      const int8_t* ys = y.value().data<int8_t>();
      const std::vector<int8_t> want(ys, ys + y.value().numel());
      Guarded gx = guarded<int8_t>(*device, input, kSentinel8, "x");
      Guarded gy = guarded<int8_t>(*device, std::vector<int8_t>(want.size(), 0), kSentinel8, "y");
      ASSERT_TRUE(qs8_max_pool(*device, g.value(), batch, gx.span, gy.span).ok());
      expect_same_s8(unguard_s8(gy), want, "qs8_max_pool");
    }
  }
}

}  // namespace
}  // namespace rg::ocl
