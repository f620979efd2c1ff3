// Every OpenCL kernel on every OpenCL device found, against the CPU's own function with a
// tolerance per op (bit for bit where the arithmetic is the same): elementwise,
// activations, optimizers, losses, pooling, im2col and batch norm. Without a device each test
// is skipped and says why (PoCL runs them in CI). The GEMM's are in test_opencl_gemm.cpp.
#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <iostream>
#include <limits>

#include "nn/loss.h"
#include "nn/optimizer.h"
#include "opencl_test_util.h"

namespace rg::ocl {
namespace {

// ---------------------------------------------------------------- elementwise kernels

TEST(OpenclElementwise, AxpyScaleAddMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(11);
  for (Device* device : open_devices().devices) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(device->label() + " n=" + std::to_string(n));
      const std::vector<float> x = random_floats(rng, n), y = random_floats(rng, n);
      const float a = -0.7f;
      Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, y, "y");
      ASSERT_TRUE(f32_axpy(*device, n, a, gx.span, gy.span).ok());
      std::vector<float> want = y;
      for (int64_t i = 0; i < n; ++i) want[i] = a * x[i] + y[i];
      expect_bits(unguard(gy), want, "f32_axpy");

      ASSERT_TRUE(f32_scale(*device, n, 3.25f, gx.span).ok());
      std::vector<float> scaled = x;
      for (float& v : scaled) v = 3.25f * v;
      expect_bits(unguard(gx), scaled, "f32_scale");

      Guarded out = guarded_f32(*device, std::vector<float>(n, 0.0f), "out");
      ASSERT_TRUE(f32_add(*device, n, gx.span, gy.span, out.span).ok());
      std::vector<float> sum(n);
      for (int64_t i = 0; i < n; ++i) sum[i] = scaled[i] + want[i];
      expect_bits(unguard(out), sum, "f32_add");
      ASSERT_TRUE(f32_add(*device, n, gx.span, gx.span, gx.span).ok());  // in place
      for (float& v : scaled) v = v + v;
      expect_bits(unguard(gx), scaled, "f32_add in place");
    }
  }
}

TEST(OpenclElementwise, ReluForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(12);
  for (Device* device : open_devices().devices) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(device->label() + " n=" + std::to_string(n));
      std::vector<float> x = random_floats(rng, n);
      if (n >= 4) {
        x[0] = 0.0f;
        x[1] = -0.0f;
        x[2] = std::numeric_limits<float>::quiet_NaN();
        x[3] = std::numeric_limits<float>::infinity();
      }
      const std::vector<float> dy = random_floats(rng, n);
      Guarded gx = guarded_f32(*device, x, "x"), gdy = guarded_f32(*device, dy, "dy");
      Guarded gy = guarded_f32(*device, std::vector<float>(n, 9.0f), "y");
      Guarded gdx = guarded_f32(*device, std::vector<float>(n, 9.0f), "dx");
      ASSERT_TRUE(f32_unary_forward(*device, UnaryOp::relu, n, 0.0f, gx.span, gy.span).ok());
      ASSERT_TRUE(f32_unary_backward(*device, UnaryOp::relu, n, 0.0f, gx.span, gdy.span, gdx.span).ok());
      std::vector<float> y(n), dx(n);
      relu_forward(n, x.data(), y.data());
      relu_backward(n, x.data(), dy.data(), dx.data());
      expect_bits(unguard(gy), y, "f32_relu_forward");
      expect_bits(unguard(gdx), dx, "f32_relu_backward");
    }
  }
}

// fp16 storage: the conversions are bit-exact against base/fp16.h on every class of value.
TEST(OpenclElementwise, Fp16StorageConvertsBitExactly) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(13);
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    std::vector<float> x = {0.0f, -0.0f, 1.0f, 65504.0f, 65520.0f, -1e9f, 1e-5f, 2.9802322e-8f, 1.0f + 1.0f / 2048.0f,
                            std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
    for (int i = 0; i < 300; ++i) x.push_back(std::ldexp(rng.uniform_f32() * 2.0f - 1.0f, static_cast<int>(rng.uniform_f32() * 50) - 30));
    const int64_t n = static_cast<int64_t>(x.size());
    Guarded gx = guarded_f32(*device, x, "x");
    // Halves in a buffer with 3 halves of room before the span.
    auto halves = Buffer::allocate(*device, (n + 3) * 2, "halves");
    ASSERT_TRUE(halves.ok()) << halves.status().message();
    ASSERT_TRUE(f16_from_f32(*device, n, gx.span, halves.value().f16(3)).ok());
    const std::vector<uint16_t> h = download_all<uint16_t>(halves.value());
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t want = f32_to_f16(x[i]);
      if (std::isnan(x[i])) {
        EXPECT_TRUE((h[3 + i] & 0x7c00) == 0x7c00 && (h[3 + i] & 0x3ff) != 0) << "NaN stays NaN";
      } else {
        ASSERT_EQ(h[3 + i], want) << "f16_from_f32(" << x[i] << ")";
      }
    }
    Guarded back = guarded_f32(*device, std::vector<float>(n, 0.0f), "back");
    ASSERT_TRUE(f32_from_f16(*device, n, halves.value().f16(3), back.span).ok());
    const std::vector<float> got = unguard(back);
    for (int64_t i = 0; i < n; ++i) {
      const float want = f16_to_f32(h[3 + i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i]));
      } else {
        ASSERT_TRUE(same_bits(got[i], want)) << "f32_from_f16(" << h[3 + i] << ")";
      }
    }
  }
}

TEST(OpenclElementwise, Fp16AxpyRoundsOnceToHalf) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(14);
  for (Device* device : open_devices().devices) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(device->label() + " n=" + std::to_string(n));
      std::vector<uint16_t> x(n), y(n);
      for (int64_t i = 0; i < n; ++i) {
        x[i] = f32_to_f16(rng.uniform_f32() * 8.0f - 4.0f);
        y[i] = f32_to_f16(rng.uniform_f32() * 8.0f - 4.0f);
      }
      Buffer bx = upload_or_die(*device, x, "x"), by = upload_or_die(*device, y, "y");
      const float a = 0.3f;
      ASSERT_TRUE(f16_axpy(*device, n, a, bx.f16(), by.f16(), F16Arithmetic::f32).ok());
      const std::vector<uint16_t> got = download_all<uint16_t>(by);
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t want = f32_to_f16(a * f16_to_f32(x[i]) + f16_to_f32(y[i]));
        ASSERT_EQ(got[i], want) << "element " << i;
      }
    }
  }
}

// Halves for the f16 arithmetic tests: every (x, y) pair of special values (zeros, subnormals,
// the smallest normal, 1, 1/3, the largest finite, Inf, NaN), then random bit patterns.
struct HalfPairs {
  std::vector<uint16_t> x, y;
};
HalfPairs half_pairs(Rng& rng, int64_t n) {
  static const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x3c00, 0xbc01,
                                     0x3555, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe01};
  constexpr int64_t s = sizeof special / sizeof special[0];
  HalfPairs v{std::vector<uint16_t>(n), std::vector<uint16_t>(n)};
  for (int64_t i = 0; i < n; ++i) {
    v.x[i] = i < s * s ? special[i % s] : static_cast<uint16_t>(rng.next_u32());
    v.y[i] = i < s * s ? special[i / s] : static_cast<uint16_t>(rng.next_u32());
  }
  return v;
}
// a for the f16 arithmetic tests: rounded to half (0.3, 3e-8: a subnormal), overflowing x
// (1000) or overflowing half itself (1e5), subnormal products (1/1024), zeros, Inf, NaN.
const float kHalfScales[] = {0.3f, -1.5f, 1000.0f, 1e5f, 1.0f / 1024, 3e-8f, 0.0f, -0.0f,
                             std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};

// A buffer of kGuard sentinels, `values`, kGuard sentinels (halves); span covers `values`.
constexpr uint16_t kHalfSentinel = 0xabcd;
Guarded guarded_f16(Device& device, const std::vector<uint16_t>& values, const std::string& what) {
  std::vector<uint16_t> all(kGuard, kHalfSentinel);
  all.insert(all.end(), values.begin(), values.end());
  all.insert(all.end(), kGuard, kHalfSentinel);
  Guarded g{upload_or_die(device, all, what), {}};
  g.span = g.buffer.f16(kGuard, static_cast<int64_t>(values.size()));
  return g;
}
std::vector<uint16_t> unguard_f16(const Guarded& g) {
  std::vector<uint16_t> all = download_all<uint16_t>(g.buffer);
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(all[i], kHalfSentinel) << "written before the span";
    EXPECT_EQ(all[all.size() - 1 - i], kHalfSentinel) << "written after the span";
  }
  return std::vector<uint16_t>(all.begin() + kGuard, all.end() - kGuard);
}

bool is_nan_f16(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
std::string hex16(uint16_t h) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%04x", h);
  return text;
}
// Bit for bit, but a NaN matches any NaN (its sign and payload are the hardware's).
void expect_halves(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want, const HalfPairs& v,
                   const char* op) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i] == want[i] || (is_nan_f16(got[i]) && is_nan_f16(want[i])))
        << op << " element " << i << " (x " << hex16(v.x[i]) << ", y " << hex16(v.y[i]) << "): " << hex16(got[i])
        << " want " << hex16(want[i]);
  }
}

// One IEEE binary16 operation, correctly rounded: the exact result in double (a product or a sum
// of two halves is exact there), rounded to f32 and then to half by f32_to_f16. The two roundings
// give the correctly rounded half, since f32's 24 bits >= 2 * 11 + 2 (Figueroa 1995).
uint16_t half_mul(uint16_t a, uint16_t b) {
  return f32_to_f16(static_cast<float>(static_cast<double>(f16_to_f32(a)) * f16_to_f32(b)));
}
uint16_t half_add(uint16_t a, uint16_t b) {
  return f32_to_f16(static_cast<float>(static_cast<double>(f16_to_f32(a)) + f16_to_f32(b)));
}

// f16_scale in f32 (any device): a * x in f32, rounded once to half.
TEST(OpenclElementwise, Fp16ScaleInF32RoundsOnceToHalf) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(15);
  for (Device* device : open_devices().devices) {
    for (float a : kHalfScales) {
      SCOPED_TRACE(device->label() + " a=" + std::to_string(a));
      const HalfPairs v = half_pairs(rng, 1000);
      Guarded gx = guarded_f16(*device, v.x, "x");
      ASSERT_TRUE(f16_scale(*device, 1000, a, gx.span, F16Arithmetic::f32).ok());
      std::vector<uint16_t> want(v.x.size());
      for (size_t i = 0; i < want.size(); ++i) want[i] = f32_to_f16(a * f16_to_f32(v.x[i]));
      expect_halves(unguard_f16(gx), want, v, "f16_scale in f32");
    }
  }
}

// Where the device computes in half (its fp16_arithmetic test passed), f16_axpy and f16_scale
// round a to half, then each product and sum to half (no fused op): bit-exact with half_mul and
// half_add. Elsewhere skipped, naming each device and why.
TEST(OpenclElementwise, Fp16AxpyAndScaleInHalfRoundEachOperation) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(16);
  std::string without;  // the devices that compute f16 in f32, and why
  int ran = 0;
  for (Device* device : open_devices().devices) {
    if (!f16_arithmetic_in_half(*device)) {
      without += "\n  " + device->label() + ": fp16 arithmetic no: " + device->capabilities().fp16_arithmetic_note;
      continue;
    }
    ++ran;
    for (float a : kHalfScales) {
      SCOPED_TRACE(device->label() + " a=" + std::to_string(a));
      const int64_t n = 1000;
      const HalfPairs v = half_pairs(rng, n);
      Guarded gx = guarded_f16(*device, v.x, "x"), gy = guarded_f16(*device, v.y, "y");
      ASSERT_TRUE(f16_axpy(*device, n, a, gx.span, gy.span).ok());
      ASSERT_TRUE(f16_scale(*device, n, a, gx.span).ok());
      std::vector<uint16_t> product(n), sum(n);
      for (int64_t i = 0; i < n; ++i) {
        product[i] = half_mul(f32_to_f16(a), v.x[i]);
        sum[i] = half_add(product[i], v.y[i]);
      }
      expect_halves(unguard_f16(gy), sum, v, "f16_axpy__half");
      expect_halves(unguard_f16(gx), product, v, "f16_scale__half");
    }
  }
  if (ran == 0) GTEST_SKIP() << "no device computes f16 in half, so the half kernels are untested:" << without;
  if (!without.empty()) std::cout << "[   NOTE   ] f16 computed in f32 (half kernels untested) on:" << without << "\n";
}

TEST(OpenclElementwise, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  auto event = f32_scale(device, 0, 2.0f, b.f32(1, 0));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_FALSE(event.value().valid());
  EXPECT_TRUE(event.value().wait().ok());
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

// ---------------------------------------------------------------- activations, bias, column sums

// Same bits, or both NaN (a NaN's sign and payload are the hardware's, not the op's).
void expect_same(const std::vector<float>& got, const std::vector<float>& want, const char* op) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    ASSERT_TRUE(same_bits(got[i], want[i])) << op << " element " << i << ": " << got[i] << " want " << want[i];
  }
}

// Floats apart, counting every float between (0 and -0 are 0 apart); NaN against a number is far.
int64_t ulps_apart(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : std::numeric_limits<int64_t>::max();
  const auto ordered = [](float f) {
    int32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : static_cast<int64_t>(bits);
  };
  return std::llabs(ordered(a) - ordered(b));
}

// Tolerances of the transcendental forwards. OpenCL 1.2 (7.4, full profile) allows exp 3 ulp and
// tanh 5 ulp; xsimd's f32 exp and tanh, which the CPU runs, are within about 1-2 ulp. tanh: 5 + 2,
// plus 1 for rounding. sigmoid: e = exp(-|x|) may differ by 5 ulp; 1 / (1 + e) damps e's error
// (by e / (1 + e) <= 1/2) and adds a rounding; x < 0 multiplies e by that: 5 + 3 + 1 = 9, plus 3.
constexpr int64_t kTanhUlps = 8, kSigmoidUlps = 12;

void expect_ulps(const std::vector<float>& got, const std::vector<float>& want, int64_t ulps, const char* op) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(ulps_apart(got[i], want[i]), ulps) << op << " element " << i << ": " << got[i] << " want " << want[i];
  }
}

// Inputs in [-8, 8] with 0, -0, NaN, +-inf and +-20 (sigmoid's e^-20, still normal) at the front.
std::vector<float> activation_inputs(Rng& rng, int64_t n) {
  std::vector<float> x = random_floats(rng, n, -8.0f, 8.0f);
  const float specials[] = {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), 20.0f, -20.0f};
  for (size_t i = 0; i < std::size(specials) && i < x.size(); ++i) x[i] = specials[i];
  return x;
}

// Each elementwise activation through f32_unary_forward / f32_unary_backward against rg::unary /
// rg::unary_grad (the CPU's f32 kernels). The backward gets the CPU's forward output, so its
// check is bit-exact whatever the forward's tolerance.
TEST(OpenclActivation, ForwardAndBackwardOfEveryActivationMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(31);
  const float slope = 0.01f;
  for (Device* device : open_devices().devices) {
    for (int64_t n : kSizes) {
      for (int k = 0; k < kUnaryOps; ++k) {  // every op of RG_UNARY_OP_LIST
        const auto op = static_cast<UnaryOp>(k);
        SCOPED_TRACE(device->label() + " n=" + std::to_string(n) + " op " + std::to_string(static_cast<int>(op)));
        const std::vector<float> x = activation_inputs(rng, n), dy = random_floats(rng, n);
        std::vector<float> y(n), dx(n);
        unary(nullptr, op, n, slope, x.data(), y.data());
        const bool from_input = unary_grad_reads_input(op);
        const std::vector<float>& xy = from_input ? x : y;
        unary_grad(nullptr, op, n, slope, xy.data(), dy.data(), dx.data());

        Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(n, 9.0f), "y");
        ASSERT_TRUE(f32_unary_forward(*device, op, n, slope, gx.span, gy.span).ok());
        const std::vector<float> got_y = unguard(gy);
        if (op == UnaryOp::sigmoid) {
          expect_ulps(got_y, y, kSigmoidUlps, "f32_sigmoid_forward");
        } else if (op == UnaryOp::tanh) {
          expect_ulps(got_y, y, kTanhUlps, "f32_tanh_forward");
        } else {
          expect_same(got_y, y, "forward");
        }
        Guarded gxy = guarded_f32(*device, xy, "xy"), gdy = guarded_f32(*device, dy, "dy");
        Guarded gdx = guarded_f32(*device, std::vector<float>(n, 9.0f), "dx");
        ASSERT_TRUE(f32_unary_backward(*device, op, n, slope, gxy.span, gdy.span, gdx.span).ok());
        expect_same(unguard(gdx), dx, "backward");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Row softmax: the backward is bit-exact with softmax_backward (what the layer runs); the forward
// differs in exp (5 ulp, as above) and in the sum's order (the CPU adds in vector lanes): each of
// two orders of `cols` positive terms is within (cols - 1) 2^-24 relative of the exact sum, and
// 1 / sum and the multiply round once each, so within (10 + 2 cols) 2^-24 relative, doubled.
TEST(OpenclActivation, SoftmaxRowsMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(32);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {3, 10}, {7, 257}, {2, 1000}, {300, 3}};
  for (Device* device : open_devices().devices) {
    for (const auto& [rows, cols] : shapes) {
      SCOPED_TRACE(device->label() + " " + std::to_string(rows) + " x " + std::to_string(cols));
      const int64_t n = rows * cols;
      const std::vector<float> x = random_floats(rng, n, -10.0f, 10.0f), dy = random_floats(rng, n);
      std::vector<float> y(n), dx(n);
      softmax_rows(rows, cols, x.data(), y.data());
      softmax_backward<float>(rows, cols, y.data(), dy.data(), dx.data());

      Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(n, 9.0f), "y");
      ASSERT_TRUE(f32_softmax_rows_forward(*device, rows, cols, gx.span, gy.span).ok());
      const std::vector<float> got = unguard(gy);
      const double relative = 2.0 * (10.0 + 2.0 * static_cast<double>(cols)) * std::ldexp(1.0, -24);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_LE(std::fabs(got[i] - y[i]), relative * y[i] + 1e-37) << "y[" << i << "] = " << got[i] << " want " << y[i];
      }
      ASSERT_TRUE(f32_softmax_rows_forward(*device, rows, cols, gx.span, gx.span).ok());  // in place
      EXPECT_EQ(unguard(gx), got);

      Guarded gcpu_y = guarded_f32(*device, y, "cpu y"), gdy = guarded_f32(*device, dy, "dy");
      Guarded gdx = guarded_f32(*device, std::vector<float>(n, 9.0f), "dx");
      ASSERT_TRUE(f32_softmax_rows_backward(*device, rows, cols, gcpu_y.span, gdy.span, gdx.span).ok());
      expect_bits(unguard(gdx), dx, "f32_softmax_rows_backward");
    }
  }
}

// Shapes of few columns (the CPU's repeated-pattern path, up to 64) and of many.
const std::pair<int64_t, int64_t> kRowShapes[] = {{1, 1}, {5, 3}, {33, 64}, {7, 65}, {100, 100}, {2, 1000}};

TEST(OpenclActivation, AddBiasMatchesTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(33);
  for (Device* device : open_devices().devices) {
    for (const auto& [rows, cols] : kRowShapes) {
      SCOPED_TRACE(device->label() + " " + std::to_string(rows) + " x " + std::to_string(cols));
      const std::vector<float> bias = random_floats(rng, cols, -3.0f, 3.0f), y = random_floats(rng, rows * cols);
      std::vector<float> want = y;
      add_bias(nullptr, rows, cols, bias.data(), want.data());
      Guarded gb = guarded_f32(*device, bias, "bias"), gy = guarded_f32(*device, y, "y");
      ASSERT_TRUE(f32_add_bias(*device, rows, cols, gb.span, gy.span).ok());
      expect_bits(unguard(gy), want, "f32_add_bias");
      EXPECT_EQ(unguard(gb), bias);
    }
  }
}

// rg::column_sum adds onto `sums` and splits the rows in blocks of rows_per_block(cols) (32768
// elements): 25000 x 3 and 400 x 100 are 3 and 2 blocks, 3 x 40000 and 3 x 100000 three blocks
// of one row. Conv bias gradients: 50176 x 6 (lenet's conv1 at batch 64, 10 blocks of 5461
// rows, the last short), 6400 x 16, 12544 x 32. 8454244 x 1 is 259 blocks of 32768 rows: the
// device's work-groups take 256 blocks at a time, so the block sums go in two rounds. 50176 x 64
// (dcgan's conv1 at batch 256: 98 blocks of 512 rows) and 33000 x 128: enough (block, column) pairs
// for an item each, their partials in the GEMM's scratch when it is there (two launches), else
// the work-groups' rounds: each shape runs without the scratch and with it.
TEST(OpenclActivation, ColumnSumMatchesTheCpuBlockForBlock) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(34);
  std::vector<std::pair<int64_t, int64_t>> shapes(std::begin(kRowShapes), std::end(kRowShapes));
  shapes.insert(shapes.end(), {{300, 7}, {25000, 3}, {400, 100}, {3, 40000}, {0, 4}, {50176, 6}, {6400, 16},
                               {12544, 32}, {3, 100000}, {32768, 1}, {32769, 1}, {8454244, 1}, {50176, 64},
                               {33000, 128}});
  auto check = [&](Device& device, int64_t rows, int64_t cols) {
    std::vector<float> x = random_floats(rng, rows * cols);
    for (size_t i = 0; i < x.size(); i += 7) x[i] *= 1000.0f;  // magnitudes apart: the order shows
    const std::vector<float> sums = random_floats(rng, cols, -5.0f, 5.0f);
    std::vector<float> want = sums;
    column_sum(nullptr, rows, cols, x.data(), want.data());
    Guarded gx = guarded_f32(device, x, "x"), gs = guarded_f32(device, sums, "sums");
    const int64_t before = device.launches(), blocks = rows > 0 ? (rows - 1) / rows_per_block(cols) + 1 : 0;
    ASSERT_TRUE(f32_column_sum(device, rows, cols, gx.span, gs.span).ok());
    expect_bits(unguard(gs), want, "f32_column_sum");
    const std::unique_ptr<Buffer>& scratch = device.gemm_scratch_slot();
    const bool partials = scratch && scratch->bytes() / 4 >= blocks * cols && blocks > 1 && blocks * cols >= kColumnSumPartialItems;
    EXPECT_EQ(device.launches() - before, rows == 0 ? 0 : partials ? 2 : 1);
    if (rows == 25000 || rows == 50176) {  // the blocks matter: a plain sum down the rows differs somewhere
      bool differs = false;
      for (int64_t c = 0; c < cols; ++c) {
        float plain = sums[c];
        for (int64_t r = 0; r < rows; ++r) plain += x[r * cols + c];
        differs = differs || !same_bits(plain, want[c]);
      }
      EXPECT_TRUE(differs) << "this shape does not tell the blocked sum from the plain one";
    }
  };
  for (Device* device : open_devices().devices) {
    for (const bool scratch : {false, true}) {
      if (scratch) {
        ASSERT_TRUE(reserve_gemm_scratch(*device).ok());
      } else {
        release_gemm_scratch(*device);
      }
      for (const auto& [rows, cols] : shapes) {
        SCOPED_TRACE(device->label() + " " + std::to_string(rows) + " x " + std::to_string(cols) +
                     (scratch ? ", the GEMM's scratch reserved" : ""));
        check(*device, rows, cols);
      }
    }
    release_gemm_scratch(*device);
  }
}

TEST(OpenclActivation, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  const auto expect_nothing = [](const Result<Event>& event) {
    ASSERT_TRUE(event.ok()) << event.status().message();
    EXPECT_FALSE(event.value().valid());
  };
  expect_nothing(f32_unary_forward(device, UnaryOp::sigmoid, 0, 0.0f, b.f32(1, 0), b.f32(1, 0)));
  expect_nothing(f32_column_sum(device, 0, 1, b.f32(1, 0), b.f32()));
  expect_nothing(f32_column_sum(device, 4, 0, b.f32(1, 0), b.f32(1, 0)));
  expect_nothing(f32_add_bias(device, 0, 1, b.f32(), b.f32(1, 0)));
  expect_nothing(f32_softmax_rows_forward(device, 0, 5, b.f32(1, 0), b.f32(1, 0)));
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

// ---------------------------------------------------------------- optimizers

// Several steps of the CPU's Optimizer against f32_sgd / f32_adam on the same weights and grads,
// with a learning rate that changes per step. SGD: + and * only, so bit-exact on any IEEE
// device. Adam also divides and takes a square root: bit-exact where the device builds them
// correctly rounded (division_options); elsewhere OpenCL 1.2 allows 2.5 ulp for / and 3 for
// sqrt, which moves the update by a few ulp of itself and w by at most a few ulp of w per step.
void check_optimizer(Device& device, const OptimizerConfig& config, Rng& rng) {
  const int64_t sizes[] = {1000, 7, 1};
  std::vector<Param> params(std::size(sizes));
  std::vector<Param*> pointers;
  std::vector<Buffer> w, grad, state0, state1;
  for (size_t p = 0; p < params.size(); ++p) {
    const int64_t n = sizes[p];
    params[p].name = "p" + std::to_string(p);
    auto value = Tensor::zeros(Shape{n}, DType::f32, "w");
    auto g = Tensor::zeros(Shape{n}, DType::f32, "grad");
    ASSERT_TRUE(value.ok() && g.ok());
    params[p].value = value.take();
    params[p].grad = g.take();
    const std::vector<float> init = random_floats(rng, n);
    std::memcpy(params[p].value.f32(), init.data(), n * sizeof(float));
    pointers.push_back(&params[p]);
    w.push_back(upload_or_die(device, init, "w"));
    grad.push_back(upload_or_die(device, std::vector<float>(n, 0.0f), "grad"));
    state0.push_back(upload_or_die(device, std::vector<float>(n, 0.0f), "m"));
    state1.push_back(upload_or_die(device, std::vector<float>(n, 0.0f), "s"));
  }
  Optimizer cpu(config, pointers);
  ASSERT_TRUE(cpu.init().ok());
  Buffer flags = upload_or_die(device, std::vector<int32_t>(3 * params.size(), 0), "flags");  // finite grads: stay 0
  const DeviceSpan flag_span = element_span(flags, 4);
  const bool adam = config.kind == OptimizerKind::adam;
  const bool exact = !adam || !detail::division_options(device).empty();
  for (int64_t t = 1; t <= 4; ++t) {
    const double lr = (adam ? 1e-3 : 0.1) / static_cast<double>(t);
    for (size_t p = 0; p < params.size(); ++p) {
      const std::vector<float> g = random_floats(rng, sizes[p], -2.0f, 2.0f);
      std::memcpy(params[p].grad.f32(), g.data(), g.size() * sizeof(float));
      ASSERT_TRUE(write_buffer(grad[p], 0, g.data(), static_cast<int64_t>(g.size() * sizeof(float))).ok());
    }
    cpu.step(lr);
    for (size_t p = 0; p < params.size(); ++p) {
      const int64_t n = sizes[p];
      if (adam) {
        ASSERT_TRUE(f32_adam(device, n, adam_step_for(config, t, lr), w[p].f32(), grad[p].f32(), state0[p].f32(),
                             state1[p].f32(), flag_span, 3 * static_cast<int64_t>(p))
                        .ok());
      } else {
        const DeviceSpan v = config.momentum != 0 ? state0[p].f32() : DeviceSpan{};
        ASSERT_TRUE(
            f32_sgd(device, n, sgd_step_for(config, lr), w[p].f32(), grad[p].f32(), v, flag_span, 3 * static_cast<int64_t>(p))
                .ok());
      }
      SCOPED_TRACE("step " + std::to_string(t) + " param " + std::to_string(p));
      const auto as_vector = [n](const Tensor& tensor) { return std::vector<float>(tensor.f32(), tensor.f32() + n); };
      const std::vector<float> got = download_all<float>(w[p]), want = as_vector(params[p].value);
      if (exact) {
        expect_bits(got, want, "w");
      } else {
        expect_ulps(got, want, 4 * t, "w");
      }
      if (adam) {
        expect_bits(download_all<float>(state0[p]), as_vector(cpu.state()[p]), "m");  // + and * only
        if (exact) expect_bits(download_all<float>(state1[p]), as_vector(cpu.state()[params.size() + p]), "s");
      } else if (config.momentum != 0) {
        expect_bits(download_all<float>(state0[p]), as_vector(cpu.state()[p]), "velocity");
      }
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_EQ(download_all<int32_t>(flags), std::vector<int32_t>(3 * params.size(), 0)) << "finite gradients flagged";
}

TEST(OpenclOptimizer, SgdMatchesTheCpuOptimizerStepForStep) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(41);
  for (Device* device : open_devices().devices) {
    for (int variant = 0; variant < 4; ++variant) {
      SCOPED_TRACE(device->label() + " variant " + std::to_string(variant));
      OptimizerConfig config;
      config.kind = OptimizerKind::sgd;
      config.momentum = variant == 0 ? 0.0 : 0.9;  // 0: plain; 1: momentum; 2: + weight decay; 3: nesterov
      config.weight_decay = variant >= 2 ? 5e-4 : 0.0;
      config.nesterov = variant == 3;
      check_optimizer(*device, config, rng);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(OpenclOptimizer, AdamMatchesTheCpuOptimizerStepForStep) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(42);
  for (Device* device : open_devices().devices) {
    for (double weight_decay : {0.0, 0.01}) {
      SCOPED_TRACE(device->label() + " weight decay " + std::to_string(weight_decay));
      OptimizerConfig config;
      config.kind = OptimizerKind::adam;
      config.weight_decay = weight_decay;
      check_optimizer(*device, config, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// The update guard: an Inf or a NaN at the first, a middle or the last of 37 gradients, or a
// weight there the update overflows (-FLT_MAX stepped down by a rate of 1e35), sets the
// update's flag and says where (37 - the element, for the gradient and for the new weight; the
// ints around untouched); finite gradients and weights leave all 0. SGD, SGD with momentum, Adam.
TEST(OpenclOptimizer, ANonFiniteGradientOrUpdateSetsItsFlag) {
  SKIP_WITHOUT_OPENCL();
  constexpr int64_t n = 37;
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (Device* device : open_devices().devices) {
    for (int kind = 0; kind < 3; ++kind) {                        // 0 sgd, 1 sgd with momentum, 2 adam
      for (int64_t at : {int64_t{-1}, int64_t{0}, n / 2, n - 1})  // -1: every gradient finite
        for (const bool overflow : {false, true}) {
          SCOPED_TRACE(device->label() + " optimizer " + std::to_string(kind) + " bad element " + std::to_string(at) +
                       (overflow ? ", an overflowing update" : ", a bad gradient"));
          std::vector<float> g(n, 0.5f), w0(n, 1.0f);
          if (at >= 0 && !overflow) g[static_cast<size_t>(at)] = at == n / 2 ? nan : -inf;
          if (at >= 0 && overflow) w0[static_cast<size_t>(at)] = -FLT_MAX;
          Buffer w = upload_or_die(*device, w0, "w");
          Buffer grad = upload_or_die(*device, g, "grad");
          Buffer m = upload_or_die(*device, std::vector<float>(n, 0.0f), "m");
          Buffer s = upload_or_die(*device, std::vector<float>(n, 0.0f), "s");
          Buffer flags = upload_or_die(*device, std::vector<int32_t>{0, 0, 0, 0, 0}, "flags");
          const DeviceSpan flag_span = element_span(flags, 4);
          OptimizerConfig config;
          config.kind = kind == 2 ? OptimizerKind::adam : OptimizerKind::sgd;
          config.momentum = kind == 1 ? 0.9 : 0.0;
          const double lr = overflow ? 1e35 : kind == 2 ? 1e-3 : 0.1;
          const Status launched = kind == 2 ? f32_adam(*device, n, adam_step_for(config, 1, lr), w.f32(), grad.f32(),
                                                       m.f32(), s.f32(), flag_span, 1)
                                                  .status()
                                            : f32_sgd(*device, n, sgd_step_for(config, lr), w.f32(), grad.f32(),
                                                      kind == 1 ? m.f32() : DeviceSpan{}, flag_span, 1)
                                                  .status();
          ASSERT_TRUE(launched.ok()) << launched.message();
          const int32_t where = at >= 0 ? static_cast<int32_t>(n - at) : 0;  // a bad gradient's new weight is bad too
          EXPECT_EQ(download_all<int32_t>(flags), (std::vector<int32_t>{0, at >= 0 ? 1 : 0, overflow ? 0 : where, where, 0}));
        }
    }
  }
}

TEST(OpenclOptimizer, AdamStepConstantsAreTheOptimizers) {
  OptimizerConfig config;
  config.kind = OptimizerKind::adam;
  const AdamStep step = adam_step_for(config, 1, 1e-3);
  EXPECT_EQ(step.one_minus_beta2, 0.001f);  // 1 - 0.999 in double, then rounded: not 1.0f - 0.999f
  EXPECT_EQ(step.step_size, static_cast<float>(1e-3 / (1.0 - 0.9)));
  EXPECT_EQ(step.correction2_sqrt, static_cast<float>(std::sqrt(1.0 - 0.999)));
}

// ---------------------------------------------------------------- losses

// A buffer of kGuard sentinels of T, `values`, kGuard sentinels; its span (element_span) covers
// `values`. For the int32 labels and hits and the double row losses.
template <class T>
struct GuardedOf {
  Buffer buffer;
  DeviceSpan span;
};
template <class T>
GuardedOf<T> guarded_of(Device& device, const std::vector<T>& values, T sentinel, const std::string& what) {
  std::vector<T> all(kGuard, sentinel);
  all.insert(all.end(), values.begin(), values.end());
  all.insert(all.end(), kGuard, sentinel);
  GuardedOf<T> g{upload_or_die(device, all, what), {}};
  g.span = element_span(g.buffer, sizeof(T), kGuard, static_cast<int64_t>(values.size()));
  return g;
}
template <class T>
std::vector<T> unguard_of(const GuardedOf<T>& g, T sentinel) {
  std::vector<T> all = download_all<T>(g.buffer);
  for (int64_t i = 0; i < kGuard; ++i) {
    EXPECT_EQ(all[i], sentinel) << "written before the span";
    EXPECT_EQ(all[all.size() - 1 - i], sentinel) << "written after the span";
  }
  return std::vector<T>(all.begin() + kGuard, all.end() - kGuard);
}

constexpr double kLossSentinel = -777.0;
const std::pair<int64_t, int64_t> kLossShapes[] = {{1, 1}, {3, 10}, {7, 257}, {300, 3}, {257, 2}};

// Row losses in double on both sides; the device's exp/log/log1p (OpenCL 1.2: 3 ulp in double)
// against glibc's (under 1 ulp): each term a few 2^-52 relative, the sums add (cols) roundings,
// the log turns the sum's relative error into an absolute one. 1e-12 (1 + |want|) is far above
// that and far below a float's 6e-8, so a kernel computing in float fails it. The total: the host
// adds the rows in compute_loss's order, so its error is the rows' errors, summed.
void expect_losses(const std::vector<double>& got, const std::vector<double>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    ASSERT_LE(std::fabs(got[r] - want[r]), tolerance * (1.0 + std::fabs(want[r])))
        << "row " << r << ": " << got[r] << " want " << want[r];
  }
}

// Gradients g = (float)(a) * grad_scale with a = p - [c == label] or sigmoid - t in double. The device's
// a may differ by a few 2^-52 absolute (exp's ulps), which after the float cast is at most 1 ulp of a
// float, unless a cancelled (p near 1, sigmoid near t) where 2^-52 absolute is many float ulps of a tiny
// a: so within 2 ulp relative plus 1e-14 |grad_scale| absolute. Bit-exact where `exact`.
void expect_grads(const std::vector<float>& got, const std::vector<float>& want, float grad_scale, bool exact,
                  const char* op) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (exact) {
      ASSERT_TRUE(same_bits(got[i], want[i])) << op << " dx[" << i << "] = " << got[i] << " want " << want[i];
    } else {
      ASSERT_LE(std::fabs(got[i] - want[i]), std::ldexp(2.0, -24) * std::fabs(want[i]) + 1e-14 * std::fabs(grad_scale))
          << op << " dx[" << i << "] = " << got[i] << " want " << want[i];
    }
  }
}

// Each loss through f32_loss against ops/loss.h's function: per row (the CPU run on that row alone
// returns its row loss), the total through sum_row_losses, the gradient with a grad_scale that is not
// 1 / rows, and again without a gradient (dx untouched, the same row losses).
TEST(OpenclLoss, EveryLossMatchesTheCpuRowForRow) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(41);
  for (Device* device : open_devices().devices) {
    const bool fp64 = device->info().has_extension("cl_khr_fp64");
    for (LossKind kind : {LossKind::softmax_cross_entropy, LossKind::mse, LossKind::bce_with_logits}) {
      for (const auto& [rows, cols] : kLossShapes) {
        SCOPED_TRACE(device->label() + " " + loss_name(kind) + " " + std::to_string(rows) + " x " + std::to_string(cols));
        const int64_t n = rows * cols;
        const float grad_scale = 0.375f / static_cast<float>(rows);
        std::vector<float> x = random_floats(rng, n, -10.0f, 10.0f), target = random_floats(rng, n, 0.0f, 1.0f);
        if (n > 3) x[1] = 0.0f, x[2] = -0.0f, x[3] = 40.0f;  // ties at 0, a confident logit
        std::vector<int32_t> labels(rows);
        for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>(rng.uniform_f32() * cols) % cols;
        labels[rows - 1] = static_cast<int32_t>(cols - 1);
        const bool softmax = kind == LossKind::softmax_cross_entropy;

        std::vector<float> dx(n);
        std::vector<double> row_want(rows);
        double total_want = 0;
        for (int64_t r = 0; r < rows; ++r) {
          const float* xr = x.data() + r * cols;
          float* dxr = dx.data() + r * cols;
          const float* tr = target.data() + r * cols;
          row_want[r] = softmax ? softmax_xent(1, cols, xr, labels.data() + r, grad_scale, dxr)
                        : kind == LossKind::mse ? mse(1, cols, xr, tr, grad_scale, dxr)
                                                : bce_with_logits(1, cols, xr, tr, grad_scale, dxr);
        }
        std::vector<float> whole(n);  // the whole batch at once: the total compute_loss returns
        total_want = softmax ? softmax_xent(rows, cols, x.data(), labels.data(), grad_scale, whole.data())
                     : kind == LossKind::mse ? mse(rows, cols, x.data(), target.data(), grad_scale, whole.data())
                                             : bce_with_logits(rows, cols, x.data(), target.data(), grad_scale, whole.data());
        ASSERT_EQ(whole, dx);

        Guarded gx = guarded_f32(*device, x, "x"), gt = guarded_f32(*device, target, "target");
        GuardedOf<int32_t> gl = guarded_of<int32_t>(*device, labels, -99, "labels");
        Guarded gdx = guarded_f32(*device, std::vector<float>(n, 9.0f), "dx");
        GuardedOf<double> gloss = guarded_of(*device, std::vector<double>(rows, 5.0), kLossSentinel, "row loss");
        const DeviceSpan target_span = softmax ? gl.span : gt.span;
        auto event = f32_loss(*device, kind, rows, cols, gx.span, target_span, grad_scale, gdx.span, gloss.span);
        if (!fp64) {  // refused, and says why
          ASSERT_FALSE(event.ok());
          EXPECT_TRUE(contains(event.status().message(), "cl_khr_fp64")) << event.status().message();
          continue;
        }
        ASSERT_TRUE(event.ok()) << event.status().message();
        const std::vector<double> got_rows = unguard_of(gloss, kLossSentinel);
        const double tolerance = kind == LossKind::mse ? 0.0 : 1e-12;  // mse: + - * / only, bit-exact
        expect_losses(got_rows, row_want, tolerance);
        auto total = sum_row_losses(gloss.buffer, kGuard, rows);
        ASSERT_TRUE(total.ok()) << total.status().message();
        EXPECT_LE(std::fabs(total.value() - total_want), tolerance * (static_cast<double>(rows) + std::fabs(total_want)));
        if (kind == LossKind::mse) {
          EXPECT_EQ(total.value(), total_want);
        }
        expect_grads(unguard(gdx), dx, grad_scale, kind == LossKind::mse, loss_name(kind));
        EXPECT_EQ(unguard_of(gl, -99), labels);

        // No gradient: dx.mem null; dx stays as it was, the row losses are the same bits.
        Guarded untouched = guarded_f32(*device, std::vector<float>(n, 9.0f), "dx");
        GuardedOf<double> again = guarded_of(*device, std::vector<double>(rows, 5.0), kLossSentinel, "row loss");
        ASSERT_TRUE(f32_loss(*device, kind, rows, cols, gx.span, target_span, grad_scale, DeviceSpan{}, again.span).ok());
        EXPECT_EQ(unguard_of(again, kLossSentinel), got_rows);
        EXPECT_EQ(unguard(untouched), std::vector<float>(n, 9.0f));
        if (HasFatalFailure()) return;
      }
    }
  }
}

// count_correct through f32_argmax_hits + sum_hits, row for row: logits from {0, 1, 2} so most rows
// have ties (the first column wins), a NaN at the front of one row (it never wins, nor loses its
// place as the first), a NaN later in another, and rows whose label is the tied later column.
TEST(OpenclLoss, ArgmaxHitsCountAsCountCorrect) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(42);
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {9, 3}, {300, 4}, {5, 257}};
  for (Device* device : open_devices().devices) {
    for (const auto& [rows, cols] : shapes) {
      SCOPED_TRACE(device->label() + " " + std::to_string(rows) + " x " + std::to_string(cols));
      auto pred = Tensor::zeros(Shape{rows, cols}, DType::f32, "pred");
      ASSERT_TRUE(pred.ok());
      float* p = pred.value().f32();
      for (int64_t i = 0; i < rows * cols; ++i) p[i] = static_cast<float>(static_cast<int>(rng.uniform_f32() * 3.0f));
      if (rows > 2 && cols > 2) p[0] = std::numeric_limits<float>::quiet_NaN(), p[cols + 1] = p[0];
      std::vector<int32_t> labels(rows);
      for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>(rng.uniform_f32() * cols) % cols;
      std::vector<int32_t> want(rows);
      for (int64_t r = 0; r < rows; ++r) {
        want[r] = static_cast<int32_t>(count_correct(pred.value().rows(r, r + 1), labels.data() + r));
      }
      const std::vector<float> values(p, p + rows * cols);
      Guarded gp = guarded_f32(*device, values, "pred");
      GuardedOf<int32_t> gl = guarded_of<int32_t>(*device, labels, -99, "labels");
      GuardedOf<int32_t> hits = guarded_of<int32_t>(*device, std::vector<int32_t>(rows, 7), -99, "hits");
      ASSERT_TRUE(f32_argmax_hits(*device, rows, cols, gp.span, gl.span, hits.span).ok());
      EXPECT_EQ(unguard_of(hits, -99), want);
      auto count = sum_hits(hits.buffer, kGuard, rows);
      ASSERT_TRUE(count.ok()) << count.status().message();
      EXPECT_EQ(count.value(), count_correct(pred.value(), labels.data()));
    }
  }
}

TEST(OpenclLoss, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<double>{1.0}, "one");
  auto event = f32_mse(device, 0, 4, b.f32(0, 0), b.f32(0, 0), 1.0f, DeviceSpan{}, element_span(b, 8, 1, 0));
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_FALSE(event.value().valid());
  EXPECT_EQ(download_all<double>(b)[0], 1.0);
}

// ---------------------------------------------------------------- pooling

// Geometries: disjoint windows that tile (the CPU writes 0 + share), disjoint ones that leave an
// edge uncovered (zeroed first), overlapping windows with padding (shares added), a 1x1, a window
// larger than its stride by two, and a stride above the kernel.
struct PoolCase {
  int64_t height, width, channels, kernel, stride, pad;
};
const PoolCase kPoolCases[] = {{4, 4, 3, 2, 2, 0}, {5, 5, 2, 2, 2, 0}, {5, 6, 3, 3, 1, 1},
                               {7, 7, 4, 3, 2, 1}, {1, 1, 1, 1, 1, 0}, {6, 5, 2, 3, 3, 1},
                               {8, 3, 5, 4, 2, 2}, {7, 7, 1, 2, 3, 0}};

ConvGeometry pool_geometry(const PoolCase& c) {
  ConvGeometry g;
  g.height = c.height, g.width = c.width, g.channels = c.channels, g.kernel = c.kernel, g.stride = c.stride, g.pad = c.pad;
  g.out_h = (c.height + 2 * c.pad - c.kernel) / c.stride + 1;
  g.out_w = (c.width + 2 * c.pad - c.kernel) / c.stride + 1;
  return g;
}

// Each sample through ops/pool2d.h against the batch on the device, bit for bit. Inputs are small
// integers (most windows have tied maxima: the first position must win and get the whole dy) with
// -0 next to +0 and a NaN (never the max, unless the window holds nothing else: then -inf).
TEST(OpenclPool, MaxAndAverageForwardAndBackwardMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(51);
  const int64_t batch = 3;
  for (Device* device : open_devices().devices) {
    for (const PoolCase& c : kPoolCases) {
      const ConvGeometry g = pool_geometry(c);
      const int64_t in_sample = g.height * g.width * g.channels, out_sample = g.out_h * g.out_w * g.channels;
      const int64_t in = batch * in_sample, out = batch * out_sample;
      std::vector<float> x(in);
      for (float& v : x) v = static_cast<float>(static_cast<int>(rng.uniform_f32() * 4.0f)) - 1.0f;
      for (int64_t i = 0; i < in; i += 11) x[i] = -0.0f;
      if (in > 3) x[3] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<float> dy = random_floats(rng, out);
      for (PoolOp op : {PoolOp::max, PoolOp::average}) {
        SCOPED_TRACE(device->label() + (op == PoolOp::max ? " max" : " average") + " " + std::to_string(g.height) +
                     "x" + std::to_string(g.width) + "x" + std::to_string(g.channels) + " k" + std::to_string(g.kernel) +
                     " s" + std::to_string(g.stride) + " p" + std::to_string(g.pad));
        std::vector<float> y(out), dx(in, 7.0f), general(in, 7.0f), rem(g.channels);
        for (int64_t b = 0; b < batch; ++b) {
          const float* xb = x.data() + b * in_sample;
          float* yb = y.data() + b * out_sample;
          const float* dyb = dy.data() + b * out_sample;
          if (op == PoolOp::max) {
            max_pool_forward(g, xb, yb);
            max_pool_backward(g, xb, yb, dyb, dx.data() + b * in_sample, rem.data());
            max_pool_backward(g, xb, yb, dyb, general.data() + b * in_sample, rem.data(), true);
          } else {
            avg_pool_forward(g, xb, yb);
            avg_pool_backward(g, dyb, dx.data() + b * in_sample);
            avg_pool_backward(g, dyb, general.data() + b * in_sample, true);
          }
        }
        expect_bits(general, dx, "the CPU's two backward paths");

        Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(out, 9.0f), "y");
        ASSERT_TRUE(f32_pool_forward(*device, op, g, batch, gx.span, gy.span).ok());
        expect_bits(unguard(gy), y, "f32_pool_forward");
        Guarded gcpu_y = guarded_f32(*device, y, "cpu y"), gdy = guarded_f32(*device, dy, "dy");
        Guarded gdx = guarded_f32(*device, std::vector<float>(in, 9.0f), "dx");
        ASSERT_TRUE(f32_pool_backward(*device, op, g, batch, gx.span, gcpu_y.span, gdy.span, gdx.span).ok());
        expect_bits(unguard(gdx), dx, "f32_pool_backward");
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(OpenclPool, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  const ConvGeometry g = pool_geometry(kPoolCases[0]);
  auto forward = f32_pool_forward(device, PoolOp::max, g, 0, b.f32(1, 0), b.f32(1, 0));
  ASSERT_TRUE(forward.ok()) << forward.status().message();
  EXPECT_FALSE(forward.value().valid());
  auto backward = f32_pool_backward(device, PoolOp::average, g, 0, DeviceSpan{}, DeviceSpan{}, b.f32(1, 0), b.f32(1, 0));
  ASSERT_TRUE(backward.ok()) << backward.status().message();
  EXPECT_FALSE(backward.value().valid());
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

}  // namespace
}  // namespace rg::ocl

namespace rg::ocl {
namespace {

// ---------------------------------------------------------------- im2col

// Geometries (conv_geometry's, so pad < kernel): overlapping patches with padding, a stride of two
// with padding, a pointwise 1x1, a stride above the kernel (image elements in no patch), a kernel
// of four with pad 3, a one-pixel image, and a non-square image with more channels.
struct Im2colCase {
  int64_t height, width, channels, kernel, stride, pad;
};
const Im2colCase kIm2colCases[] = {{5, 5, 3, 3, 1, 1}, {6, 5, 2, 3, 2, 1}, {4, 3, 5, 1, 1, 0}, {7, 7, 1, 2, 3, 0},
                                   {5, 6, 2, 4, 1, 3}, {1, 1, 1, 1, 1, 0}, {3, 8, 6, 3, 1, 2}};

// Each image through ops/im2col.h against the batch on the device, bit for bit: im2col; col2im_add
// onto random images (accumulate) and onto a zeroed one (not), from random columns, so the order
// of the additions shows in the bits wherever patches overlap.
TEST(OpenclIm2col, Im2colAndCol2imMatchTheCpu) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(61);
  const int64_t batch = 3;
  for (Device* device : open_devices().devices) {
    for (const Im2colCase& c : kIm2colCases) {
      auto geometry = conv_geometry(c.height, c.width, c.channels, c.kernel, c.stride, c.pad);
      ASSERT_TRUE(geometry.ok()) << geometry.status().message();
      const ConvGeometry g = geometry.value();
      SCOPED_TRACE(device->label() + " " + std::to_string(g.height) + "x" + std::to_string(g.width) + "x" +
                   std::to_string(g.channels) + " k" + std::to_string(g.kernel) + " s" + std::to_string(g.stride) +
                   " p" + std::to_string(g.pad));
      const int64_t image_size = g.height * g.width * g.channels, cols_size = g.patches() * g.patch_size();
      const int64_t in = batch * image_size, out = batch * cols_size;
      const std::vector<float> x = random_floats(rng, in), cols = random_floats(rng, out, -4.0f, 4.0f);
      const std::vector<float> base = random_floats(rng, in);
      std::vector<float> want_cols(out, 9.0f), added = base, onto_zero(in, 0.0f);
      for (int64_t b = 0; b < batch; ++b) {
        im2col(g, x.data() + b * image_size, want_cols.data() + b * cols_size);
        col2im_add(g, cols.data() + b * cols_size, added.data() + b * image_size);
        col2im_add(g, cols.data() + b * cols_size, onto_zero.data() + b * image_size);
      }

      Guarded gx = guarded_f32(*device, x, "image"), gcols = guarded_f32(*device, std::vector<float>(out, 9.0f), "cols");
      ASSERT_TRUE(f32_im2col(*device, g, batch, gx.span, gcols.span).ok());
      expect_bits(unguard(gcols), want_cols, "f32_im2col");
      Guarded gin = guarded_f32(*device, cols, "cols in"), gadded = guarded_f32(*device, base, "image +=");
      ASSERT_TRUE(f32_col2im_add(*device, g, batch, gin.span, gadded.span).ok());
      expect_bits(unguard(gadded), added, "f32_col2im_add accumulating");
      Guarded gzero = guarded_f32(*device, std::vector<float>(in, 9.0f), "image =");
      ASSERT_TRUE(f32_col2im_add(*device, g, batch, gin.span, gzero.span, /*accumulate=*/false).ok());
      expect_bits(unguard(gzero), onto_zero, "f32_col2im_add onto zero");
      if (HasFatalFailure()) return;
    }
  }
}

TEST(OpenclIm2col, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  const ConvGeometry g = conv_geometry(4, 4, 2, 3, 1, 1).value();
  auto forward = f32_im2col(device, g, 0, b.f32(1, 0), b.f32(1, 0));
  ASSERT_TRUE(forward.ok()) << forward.status().message();
  EXPECT_FALSE(forward.value().valid());
  auto backward = f32_col2im_add(device, g, 0, b.f32(1, 0), b.f32(1, 0));
  ASSERT_TRUE(backward.ok()) << backward.status().message();
  EXPECT_FALSE(backward.value().valid());
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

}  // namespace
}  // namespace rg::ocl

namespace rg::ocl {
namespace {

// ---------------------------------------------------------------- batch norm

// x [rows, channels]: NHWC images flattened (rows = n h w) and features; rows below, at and past
// the 64-row blocks of the CPU's sums, and one row (the variance is not unbiased). Both merge the
// blocks in groups of 64 (ops/batch_norm_blocks.h); the device an item a group, through a local
// tile of at most 4096 floats (1024 groups a round): 20000 rows are 313 blocks (5 groups, the last
// short), 300000 rows 74 groups, 64 x 64 x 1030 + 7 rows 1031 groups (two rounds on any device),
// 9000 rows of 700 channels groups the CPU's rounds of partials (46 blocks at a time) cut in two.
struct BatchNormCase {
  int64_t rows, channels;
};
const BatchNormCase kBatchNormCases[] = {{18, 4},    {5, 3},      {64, 2},           {147, 5},  {1, 3},
                                         {300, 1},   {20000, 3},  {300000, 1},       {9000, 700},
                                         {64 * 64 * 1030 + 7, 1}};

std::vector<float> tensor_values(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }
void set_values(const Tensor& t, const std::vector<float>& values) {
  std::memcpy(t.f32(), values.data(), values.size() * sizeof(float));
}

// nn/batch_norm.cpp's BatchNorm layer against the kernels on the same values, bit for bit (double
// + - * / sqrt are correctly rounded in OpenCL C): training and inference forward (y and the running
// statistics), then backward with dgamma/dbeta accumulated onto old values with dx, and overwritten
// without dx. Inputs off zero mean and unit variance, so the statistics matter.
TEST(OpenclBatchNorm, ForwardAndBackwardMatchTheLayer) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(71);
  constexpr double kSavedSentinel = -12345.0;
  for (Device* device : open_devices().devices) {
    const bool fp64 = device->info().has_extension("cl_khr_fp64");
    for (const BatchNormCase& c : kBatchNormCases) {
      for (bool training : {true, false}) {
        SCOPED_TRACE(device->label() + (training ? " training " : " inference ") + std::to_string(c.rows) + " x " +
                     std::to_string(c.channels));
        BatchNorm layer(0.1, 1e-5);
        layer.set_name("bn");
        ASSERT_TRUE(layer.configure(Shape{c.channels}).ok());
        ASSERT_TRUE(layer.init(rng, DType::f32).ok());
        Param& gamma = *layer.params()[0];
        Param& beta = *layer.params()[1];
        Param& running_mean = *layer.buffers()[0];
        Param& running_var = *layer.buffers()[1];
        set_values(gamma.value, random_floats(rng, c.channels, 0.5f, 2.0f));
        set_values(beta.value, random_floats(rng, c.channels));
        set_values(running_mean.value, random_floats(rng, c.channels));
        set_values(running_var.value, random_floats(rng, c.channels, 0.25f, 3.0f));
        const int64_t n = c.rows * c.channels;
        std::vector<float> x = random_floats(rng, n, -3.0f, 5.0f);
        for (int64_t i = 0; i < n; i += 3) x[i] *= 7.0f;
        const std::vector<float> dy = random_floats(rng, n), old_dgamma = random_floats(rng, c.channels),
                                 old_dbeta = random_floats(rng, c.channels);
        Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(n, 9.0f), "y");
        Guarded ggamma = guarded_f32(*device, tensor_values(gamma.value), "gamma");
        Guarded gbeta = guarded_f32(*device, tensor_values(beta.value), "beta");
        Guarded gmean = guarded_f32(*device, tensor_values(running_mean.value), "running mean");
        Guarded gvar = guarded_f32(*device, tensor_values(running_var.value), "running var");
        GuardedOf<double> saved = guarded_of<double>(
            *device, std::vector<double>(batch_norm_saved_count(c.channels, c.rows), 3.0), kSavedSentinel, "saved");

        auto tx = Tensor::zeros(Shape{c.rows, c.channels}, DType::f32, "x");
        auto ty = Tensor::zeros(Shape{c.rows, c.channels}, DType::f32, "y");
        auto tdy = Tensor::zeros(Shape{c.rows, c.channels}, DType::f32, "dy");
        auto tdx = Tensor::zeros(Shape{c.rows, c.channels}, DType::f32, "dx");
        ASSERT_TRUE(tx.ok() && ty.ok() && tdy.ok() && tdx.ok());
        set_values(tx.value(), x);
        set_values(tdy.value(), dy);
        LayerContext ctx;
        ctx.training = training;
        layer.forward(tx.value(), ty.value(), ctx);

        auto forward = f32_batch_norm_forward(*device, c.rows, c.channels, training, 0.1, 1e-5, gx.span, ggamma.span,
                                              gbeta.span, gmean.span, gvar.span, saved.span, gy.span);
        if (!fp64) {  // refused, and says why
          ASSERT_FALSE(forward.ok());
          EXPECT_TRUE(contains(forward.status().message(), "cl_khr_fp64")) << forward.status().message();
          continue;
        }
        ASSERT_TRUE(forward.ok()) << forward.status().message();
        expect_bits(unguard(gy), tensor_values(ty.value()), "y");
        expect_bits(unguard(gmean), tensor_values(running_mean.value), "running mean");
        expect_bits(unguard(gvar), tensor_values(running_var.value), "running var");

        // Backward, accumulating, with dx.
        set_values(gamma.grad, old_dgamma);
        set_values(beta.grad, old_dbeta);
        ctx.accumulate_grads = true;
        layer.backward(tx.value(), ty.value(), tdy.value(), tdx.value(), ctx);
        Guarded gdy = guarded_f32(*device, dy, "dy"), gdx = guarded_f32(*device, std::vector<float>(n, 9.0f), "dx");
        Guarded gdgamma = guarded_f32(*device, old_dgamma, "dgamma"), gdbeta = guarded_f32(*device, old_dbeta, "dbeta");
        auto backward = f32_batch_norm_backward(*device, c.rows, c.channels, training, true, gx.span, gdy.span,
                                                ggamma.span, saved.span, gdgamma.span, gdbeta.span, gdx.span);
        ASSERT_TRUE(backward.ok()) << backward.status().message();
        expect_bits(unguard(gdx), tensor_values(tdx.value()), "dx");
        expect_bits(unguard(gdgamma), tensor_values(gamma.grad), "dgamma accumulated");
        expect_bits(unguard(gdbeta), tensor_values(beta.grad), "dbeta accumulated");
        unguard_of(saved, kSavedSentinel);

        // Overwriting, without dx.
        ctx.accumulate_grads = false;
        layer.backward(tx.value(), ty.value(), tdy.value(), Tensor(), ctx);
        backward = f32_batch_norm_backward(*device, c.rows, c.channels, training, false, gx.span, gdy.span,
                                           ggamma.span, saved.span, gdgamma.span, gdbeta.span, DeviceSpan{});
        ASSERT_TRUE(backward.ok()) << backward.status().message();
        expect_bits(unguard(gdgamma), tensor_values(gamma.grad), "dgamma overwritten");
        expect_bits(unguard(gdbeta), tensor_values(beta.grad), "dbeta overwritten");
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(OpenclBatchNorm, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  const DeviceSpan one = b.f32(0, 1);
  auto forward = f32_batch_norm_forward(device, 0, 1, true, 0.1, 1e-5, one, one, one, one, one, one, one);
  ASSERT_TRUE(forward.ok()) << forward.status().message();
  EXPECT_FALSE(forward.value().valid());
  auto backward = f32_batch_norm_backward(device, 0, 1, true, true, one, one, one, one, one, one, one);
  ASSERT_TRUE(backward.ok()) << backward.status().message();
  EXPECT_FALSE(backward.value().valid());
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

// ---------------------------------------------------------------- fill and copy

// Zeroing writes +0 over anything (-0, NaN), the guards untouched; copies between buffers and
// between disjoint ranges of one buffer are bit for bit (NaN payloads included).
TEST(OpenclFillCopy, FillZeroAndCopyAreExact) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(81);
  for (Device* device : open_devices().devices) {
    for (int64_t n : kSizes) {
      SCOPED_TRACE(device->label() + " n=" + std::to_string(n));
      std::vector<float> x = random_floats(rng, n);
      x[0] = -0.0f;
      if (n > 2) x[2] = std::numeric_limits<float>::quiet_NaN();
      Guarded gz = guarded_f32(*device, x, "zeroed");
      auto filled = f32_fill_zero(*device, gz.span);
      ASSERT_TRUE(filled.ok()) << filled.status().message();
      expect_bits(unguard(gz), std::vector<float>(n, 0.0f), "f32_fill_zero");

      Guarded from = guarded_f32(*device, x, "from"), to = guarded_f32(*device, std::vector<float>(n, 9.0f), "to");
      ASSERT_TRUE(f32_copy(*device, from.span, to.span, n).ok());
      const std::vector<float> got = unguard(to);
      ASSERT_EQ(std::memcmp(got.data(), x.data(), x.size() * sizeof(float)), 0) << "f32_copy";

      // Within one buffer: [0, n) of the span to [n + 3, 2n + 3).
      std::vector<float> both = x;
      both.resize(2 * n + 3, 9.0f);
      Guarded one = guarded_f32(*device, both, "one buffer");
      ASSERT_TRUE(f32_copy(*device, one.buffer.f32(kGuard, n), one.buffer.f32(kGuard + n + 3, n), n).ok());
      std::copy(x.begin(), x.end(), both.begin() + n + 3);
      const std::vector<float> got_one = unguard(one);
      ASSERT_EQ(std::memcmp(got_one.data(), both.data(), both.size() * sizeof(float)), 0) << "f32_copy in one buffer";
    }
  }
}

TEST(OpenclFillCopy, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  auto filled = f32_fill_zero(device, b.f32(1, 0));
  ASSERT_TRUE(filled.ok()) << filled.status().message();
  EXPECT_FALSE(filled.value().valid());
  auto copied = f32_copy(device, b.f32(0, 1), b.f32(0, 1), 0);  // n = 0: no overlap to refuse
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  EXPECT_FALSE(copied.value().valid());
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

// ---------------------------------------------------------------- upsample, global average pooling

Tensor tensor_of(const Shape& shape, const std::vector<float>& values) {
  auto t = Tensor::zeros(shape, DType::f32, "test tensor");
  RG_CHECK(t.ok(), "" << t.status().message());
  set_values(t.value(), values);
  return t.take();
}

// Inputs of mixed magnitudes with -0s, so the order of the sums shows in the bits.
std::vector<float> mixed_floats(Rng& rng, int64_t n) {
  std::vector<float> v = random_floats(rng, n);
  for (int64_t i = 0; i < n; ++i) v[i] *= i % 3 == 0 ? 1000.0f : i % 3 == 1 ? 1e-3f : 1.0f;
  for (int64_t i = 0; i < n; i += 13) v[i] = -0.0f;
  return v;
}

// [batch, height, width, channels] by scale: a batch of one, 1x1 by 1, outputs and inputs not
// multiples of 256, channels above and below the other dimensions.
struct UpsampleCase {
  int64_t batch, height, width, channels, scale;
};
const UpsampleCase kUpsampleCases[] = {{1, 1, 1, 1, 1}, {1, 3, 5, 2, 2}, {2, 7, 9, 3, 3},
                                       {3, 4, 4, 17, 2}, {1, 5, 3, 1, 4}, {2, 6, 2, 5, 1}};

// nn/shape_layers.cpp's Upsample (threaded) against the kernels, bit for bit.
TEST(OpenclShape, UpsampleForwardAndBackwardMatchTheLayer) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(82);
  ThreadPool pool(3);
  for (Device* device : open_devices().devices) {
    for (const UpsampleCase& c : kUpsampleCases) {
      SCOPED_TRACE(device->label() + " " + std::to_string(c.batch) + "x" + std::to_string(c.height) + "x" +
                   std::to_string(c.width) + "x" + std::to_string(c.channels) + " by " + std::to_string(c.scale));
      Upsample layer(c.scale);
      auto out_shape = layer.configure(Shape{c.height, c.width, c.channels});
      ASSERT_TRUE(out_shape.ok()) << out_shape.status().message();
      ASSERT_TRUE(layer.init(rng, DType::f32).ok());
      const int64_t in = c.batch * c.height * c.width * c.channels, out = in * c.scale * c.scale;
      const std::vector<float> x = mixed_floats(rng, in), dy = mixed_floats(rng, out);
      const Shape in_shape{c.batch, c.height, c.width, c.channels};
      const Shape y_shape{c.batch, c.height * c.scale, c.width * c.scale, c.channels};
      Tensor tx = tensor_of(in_shape, x), ty = tensor_of(y_shape, std::vector<float>(out, 9.0f));
      Tensor tdy = tensor_of(y_shape, dy), tdx = tensor_of(in_shape, std::vector<float>(in, 9.0f));
      LayerContext ctx;
      ctx.pool = &pool;
      ctx.training = true;
      layer.forward(tx, ty, ctx);
      layer.backward(tx, ty, tdy, tdx, ctx);

      Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(out, 9.0f), "y");
      auto forward = f32_upsample_forward(*device, c.batch, c.height, c.width, c.channels, c.scale, gx.span, gy.span);
      ASSERT_TRUE(forward.ok()) << forward.status().message();
      expect_bits(unguard(gy), tensor_values(ty), "f32_upsample_forward");
      Guarded gdy = guarded_f32(*device, dy, "dy"), gdx = guarded_f32(*device, std::vector<float>(in, 9.0f), "dx");
      auto backward =
          f32_upsample_backward(*device, c.batch, c.height, c.width, c.channels, c.scale, gdy.span, gdx.span);
      ASSERT_TRUE(backward.ok()) << backward.status().message();
      expect_bits(unguard(gdx), tensor_values(tdx), "f32_upsample_backward");
      if (HasFatalFailure()) return;
    }
  }
}

// [batch, height, width, channels]: one pixel, 1 / pixels inexact (63, 143), 256 pixels, a batch
// of one, channel counts past 256 items in all.
struct GlobalPoolCase {
  int64_t batch, height, width, channels;
};
const GlobalPoolCase kGlobalPoolCases[] = {{1, 1, 1, 1}, {1, 7, 9, 3}, {3, 5, 5, 17},
                                           {2, 16, 16, 10}, {4, 13, 11, 7}, {2, 3, 1, 300}};

// nn/pooling.cpp's GlobalAvgPool (threaded) against the kernels, bit for bit.
TEST(OpenclShape, GlobalAvgPoolForwardAndBackwardMatchTheLayer) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(83);
  ThreadPool pool(3);
  for (Device* device : open_devices().devices) {
    for (const GlobalPoolCase& c : kGlobalPoolCases) {
      SCOPED_TRACE(device->label() + " " + std::to_string(c.batch) + "x" + std::to_string(c.height) + "x" +
                   std::to_string(c.width) + "x" + std::to_string(c.channels));
      GlobalAvgPool layer;
      ASSERT_TRUE(layer.configure(Shape{c.height, c.width, c.channels}).ok());
      ASSERT_TRUE(layer.init(rng, DType::f32).ok());
      const int64_t pixels = c.height * c.width, in = c.batch * pixels * c.channels, out = c.batch * c.channels;
      const std::vector<float> x = mixed_floats(rng, in), dy = mixed_floats(rng, out);
      const Shape in_shape{c.batch, c.height, c.width, c.channels};
      Tensor tx = tensor_of(in_shape, x), ty = tensor_of(Shape{c.batch, c.channels}, std::vector<float>(out, 9.0f));
      Tensor tdy = tensor_of(Shape{c.batch, c.channels}, dy), tdx = tensor_of(in_shape, std::vector<float>(in, 9.0f));
      LayerContext ctx;
      ctx.pool = &pool;
      ctx.training = true;
      layer.forward(tx, ty, ctx);
      layer.backward(tx, ty, tdy, tdx, ctx);

      Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(out, 9.0f), "y");
      auto forward = f32_global_avgpool_forward(*device, c.batch, pixels, c.channels, gx.span, gy.span);
      ASSERT_TRUE(forward.ok()) << forward.status().message();
      expect_bits(unguard(gy), tensor_values(ty), "f32_global_avgpool_forward");
      Guarded gdy = guarded_f32(*device, dy, "dy"), gdx = guarded_f32(*device, std::vector<float>(in, 9.0f), "dx");
      auto backward = f32_global_avgpool_backward(*device, c.batch, pixels, c.channels, gdy.span, gdx.span);
      ASSERT_TRUE(backward.ok()) << backward.status().message();
      expect_bits(unguard(gdx), tensor_values(tdx), "f32_global_avgpool_backward");
      if (HasFatalFailure()) return;
    }
  }
}

TEST(OpenclShape, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  const DeviceSpan none = b.f32(1, 0);
  auto up = f32_upsample_forward(device, 0, 3, 4, 2, 2, none, none);
  ASSERT_TRUE(up.ok()) << up.status().message();
  EXPECT_FALSE(up.value().valid());
  auto up_back = f32_upsample_backward(device, 0, 3, 4, 2, 2, none, none);
  ASSERT_TRUE(up_back.ok()) << up_back.status().message();
  EXPECT_FALSE(up_back.value().valid());
  auto pool = f32_global_avgpool_forward(device, 0, 9, 2, none, none);
  ASSERT_TRUE(pool.ok()) << pool.status().message();
  EXPECT_FALSE(pool.value().valid());
  auto pool_back = f32_global_avgpool_backward(device, 0, 9, 2, none, none);
  ASSERT_TRUE(pool_back.ok()) << pool_back.status().message();
  EXPECT_FALSE(pool_back.value().valid());
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

// ---------------------------------------------------------------- dropout

// Dropout::apply_mask restated on the host with ops/dropout_mask.h's draws: value i of row r
// draws dropout_draw(dropout_state(step_seed), (row_offset + r) row_size + i).
std::vector<float> host_dropout(int64_t rows, int64_t row_size, uint64_t step_seed, int64_t row_offset,
                                uint64_t threshold, float scale, const std::vector<float>& in) {
  std::vector<float> out(in.size());
  const uint64_t state = dropout_state(step_seed);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < row_size; ++i) {
      const size_t at = static_cast<size_t>(r * row_size + i);
      out[at] = dropout_draw(state, static_cast<uint64_t>((row_offset + r) * row_size + i)) < threshold ? 0.0f
                                                                                                     : in[at] * scale;
    }
  return out;
}

// [rows, row_size]: one value, one row, rows of 64 and 65 values (the CPU kernel's blocks), more
// items than a work-group, rows not a multiple of anything.
struct DropoutCase {
  int64_t rows, row_size;
};
const DropoutCase kDropoutCases[] = {{1, 1},    {1, 300}, {4, 257}, {7, 33},   {300, 3},
                                     {2, 1000}, {3, 64},  {5, 65},  {9, 512},  {40, 1800}};

TEST(OpenclDropout, HostConstantsAreTheLayers) {
  EXPECT_EQ(dropout_threshold(0.0), 0u);
  EXPECT_EQ(dropout_threshold(0.5), uint64_t{1} << 31);
  EXPECT_EQ(dropout_threshold(0.3), 1288490189u);  // llround(0.3 * 2^32)
  EXPECT_EQ(dropout_scale(0.5), 2.0f);
  EXPECT_EQ(dropout_scale(0.3), static_cast<float>(1.0 / 0.7));
  EXPECT_EQ(dropout_step_seed(12345, 0), 12345u);
  EXPECT_EQ(dropout_step_seed(0, 1), 0x9E3779B97F4A7C15ull);
  EXPECT_EQ(dropout_state(0), 0u);  // SplitMix64's mix fixes 0
  EXPECT_EQ(dropout_draw(0, 0), static_cast<uint32_t>(splitmix64_mix(0x9E3779B97F4A7C15ull) >> 32));
}

// Two checks chained: nn/dropout.cpp's layer (threaded context) equals host_dropout, forward and
// backward, with the layer's seed got as Dropout::init gets it (the first next_u64() of the Rng
// it is given: an identical Rng gives the same value); then the kernel equals host_dropout, out
// of place and in place. noise_stream 7 and row_offset 5, so both reach the streams.
TEST(OpenclDropout, MaskMatchesTheLayer) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(84);
  ThreadPool pool(3);
  const uint64_t noise_stream = 7;
  const int64_t row_offset = 5;
  for (Device* device : open_devices().devices) {
    for (double rate : {0.3, 0.5}) {
      for (const DropoutCase& c : kDropoutCases) {
        SCOPED_TRACE(device->label() + " rate " + std::to_string(rate) + " " + std::to_string(c.rows) + " x " +
                     std::to_string(c.row_size));
        Dropout layer(rate);
        ASSERT_TRUE(layer.configure(Shape{c.row_size}).ok());
        const uint64_t model_seed = rng.next_u64();
        Rng init_rng(model_seed), same_rng(model_seed);
        ASSERT_TRUE(layer.init(init_rng, DType::f32).ok());
        const uint64_t layer_seed = same_rng.next_u64();  // what Dropout::init drew
        const uint64_t step_seed = dropout_step_seed(layer_seed, noise_stream);
        const uint64_t threshold = dropout_threshold(rate);
        const float scale = dropout_scale(rate);

        const int64_t n = c.rows * c.row_size;
        const std::vector<float> x = random_floats(rng, n), dy = random_floats(rng, n);
        const Shape shape{c.rows, c.row_size};
        Tensor tx = tensor_of(shape, x), ty = tensor_of(shape, std::vector<float>(n, 9.0f));
        Tensor tdy = tensor_of(shape, dy), tdx = tensor_of(shape, std::vector<float>(n, 9.0f));
        LayerContext ctx;
        ctx.pool = &pool;
        ctx.training = true;
        ctx.noise_stream = noise_stream;
        ctx.row_offset = row_offset;
        layer.forward(tx, ty, ctx);
        layer.backward(tx, ty, tdy, tdx, ctx);
        const std::vector<float> want_y = host_dropout(c.rows, c.row_size, step_seed, row_offset, threshold, scale, x);
        const std::vector<float> want_dx = host_dropout(c.rows, c.row_size, step_seed, row_offset, threshold, scale, dy);
        expect_bits(tensor_values(ty), want_y, "the layer's forward against host_dropout");
        expect_bits(tensor_values(tdx), want_dx, "the layer's backward against host_dropout");

        Guarded gx = guarded_f32(*device, x, "x"), gy = guarded_f32(*device, std::vector<float>(n, 9.0f), "y");
        auto forward = f32_dropout_apply(*device, c.rows, c.row_size, step_seed, row_offset, threshold, scale,
                                         gx.span, gy.span);
        ASSERT_TRUE(forward.ok()) << forward.status().message();
        expect_bits(unguard(gy), want_y, "f32_dropout_apply forward");
        Guarded gdy = guarded_f32(*device, dy, "dy");  // in place: dx over dy
        auto backward = f32_dropout_apply(*device, c.rows, c.row_size, step_seed, row_offset, threshold, scale,
                                          gdy.span, gdy.span);
        ASSERT_TRUE(backward.ok()) << backward.status().message();
        expect_bits(unguard(gdy), want_dx, "f32_dropout_apply backward in place");
        if (HasFatalFailure()) return;
      }
    }
  }
}

// The threshold is a ulong: 2^32 (past any draw) drops everything, 0 keeps everything.
TEST(OpenclDropout, ThresholdEndsDropAllOrNothing) {
  SKIP_WITHOUT_OPENCL();
  Rng rng(85);
  const int64_t rows = 3, row_size = 100;
  const std::vector<float> x = random_floats(rng, rows * row_size);
  for (Device* device : open_devices().devices) {
    SCOPED_TRACE(device->label());
    for (uint64_t threshold : {uint64_t{0}, uint64_t{1} << 32}) {
      Guarded gy = guarded_f32(*device, std::vector<float>(x.size(), 9.0f), "y"), gx = guarded_f32(*device, x, "x");
      ASSERT_TRUE(f32_dropout_apply(*device, rows, row_size, 99, 0, threshold, 1.5f, gx.span, gy.span).ok());
      std::vector<float> want(x.size(), 0.0f);
      if (threshold == 0)
        for (size_t i = 0; i < x.size(); ++i) want[i] = x[i] * 1.5f;
      expect_bits(unguard(gy), want, threshold == 0 ? "threshold 0" : "threshold 2^32");
    }
  }
}

TEST(OpenclDropout, NothingToDoEnqueuesNothing) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer b = upload_or_die(device, std::vector<float>{1.0f}, "one");
  for (int64_t rows : {0, 4}) {
    auto event = f32_dropout_apply(device, rows, 0, 1, 0, 1u << 31, 2.0f, b.f32(1, 0), b.f32(1, 0));
    ASSERT_TRUE(event.ok()) << event.status().message();
    EXPECT_FALSE(event.value().valid());
  }
  EXPECT_EQ(download_all<float>(b)[0], 1.0f);
}

}  // namespace
}  // namespace rg::ocl
