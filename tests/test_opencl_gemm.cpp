// kernels/gemm.cl on every OpenCL device found: every configuration against gemm_ref and against
// the others' bits, the split over K, and the tuning's search, cache file and choice by shape.
// Without a device the device tests are skipped and say why (PoCL runs them in CI).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "opencl/gemm.h"
#include "opencl/gemm_tuning.h"
#include "opencl/im2col.h"
#include "opencl_test_util.h"

namespace rg::ocl {
namespace {

struct GemmCase {
  int64_t m, n, k;
  int64_t pad;  // extra elements per row of A, B and C as stored
  float alpha, beta;
};

// Stored matrix sizes: rows x row stride.
int64_t stored_rows(bool trans, int64_t rows, int64_t cols) { return trans ? cols : rows; }

// One product on the device against gemm_ref, with offsets into the buffers and C's padding
// columns left alone. `integers`: inputs in [-23, 23] (exact sums: bit-exact required);
// else uniform in [-1, 1], within 1e-5 of the sum of |terms| (DESIGN section 5's bound,
// scaled by the magnitudes) plus 1e-6.
// `config` null: the device's tuning chooses. A and B start `a_at` and `b_at` words into their
// buffers (odd by default: gemm.cl then reads them word by word; multiples of 4 allow float4s).
// Returns C as the device wrote it (padding included).
std::vector<float> check_gemm(Device& device, const GemmCase& t, Trans ta, Trans tb, const GemmConfig* config,
                              bool integers, Rng& rng, int k_slices = 0, int64_t a_at = 3, int64_t b_at = 5) {
  const bool ta_yes = ta == Trans::yes, tb_yes = tb == Trans::yes;
  GemmShape s{ta, tb, t.m, t.n, t.k, 0, 0, 0};
  s.lda = (ta_yes ? t.m : t.k) + t.pad;
  s.ldb = (tb_yes ? t.k : t.n) + t.pad;
  s.ldc = t.n + t.pad;
  const int64_t a_size = stored_rows(ta_yes, t.m, t.k) * s.lda, b_size = stored_rows(tb_yes, t.k, t.n) * s.ldb;
  const int64_t c_size = t.m * s.ldc;
  auto fill = [&](int64_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = integers ? std::floor(rng.uniform_f32() * 47.0f) - 23.0f : rng.uniform_f32() * 2.0f - 1.0f;
    return v;
  };
  const std::vector<float> a = fill(a_size), b = fill(b_size);
  std::vector<float> c = fill(c_size);
  if (t.beta == 0.0f && c_size > 0) c[0] = std::numeric_limits<float>::quiet_NaN();  // must be ignored
  std::vector<float> want = c;
  gemm_ref(s, t.alpha, a.data(), b.data(), t.beta, want.data());

  // Offsets: A and B start a_at and b_at elements into their buffers, C after kGuard sentinels.
  std::vector<float> a_stored(a_at, kSentinel), b_stored(b_at, kSentinel);
  a_stored.insert(a_stored.end(), a.begin(), a.end());
  b_stored.insert(b_stored.end(), b.begin(), b.end());
  Buffer ba = upload_or_die(device, a_stored, "A"), bb = upload_or_die(device, b_stored, "B");
  Guarded gc = guarded_f32(device, c, "C");
  auto event =
      f32_gemm(device, s, t.alpha, ba.f32(a_at), bb.f32(b_at), t.beta, gc.span, GemmLaunch{config, k_slices, {}});
  EXPECT_TRUE(event.ok()) << event.status().message();
  if (!event.ok()) return {};
  EXPECT_TRUE(event.value().wait().ok());
  const std::vector<float> got = unguard(gc);
  for (int64_t i = 0; i < t.m; ++i) {
    for (int64_t j = 0; j < s.ldc; ++j) {
      const int64_t at = i * s.ldc + j;
      if (j >= t.n) {  // padding: untouched
        EXPECT_TRUE(same_bits(got[at], c[at])) << "padding C[" << i << "][" << j << "] written";
        if (!same_bits(got[at], c[at])) return got;
        continue;
      }
      if (integers) {
        EXPECT_EQ(got[at], want[at]) << "C[" << i << "][" << j << "]";
        if (got[at] != want[at]) return got;
        continue;
      }
      double magnitude = std::fabs(t.beta == 0.0f ? 0.0 : t.beta * c[at]);
      for (int64_t p = 0; p < t.k; ++p) {
        const float ap = ta_yes ? a[p * s.lda + i] : a[i * s.lda + p];
        const float bp = tb_yes ? b[j * s.ldb + p] : b[p * s.ldb + j];
        magnitude += std::fabs(static_cast<double>(t.alpha) * ap * bp);
      }
      EXPECT_LE(std::fabs(got[at] - want[at]), 1e-5 * magnitude + 1e-6)
          << "C[" << i << "][" << j << "] = " << got[at] << ", want " << want[at];
      if (!(std::fabs(got[at] - want[at]) <= 1e-5 * magnitude + 1e-6)) return got;
    }
  }
  return got;
}

// Sizes below, at and above each tile (16, 32, 64, 128) and the 8- and 16-deep panels, including 1s.
const GemmCase kGemmCases[] = {
    {1, 1, 1, 0, 1.0f, 0.0f},     {5, 7, 3, 2, 1.0f, 0.0f},       {16, 16, 16, 0, 1.0f, 1.0f},
    {17, 33, 15, 1, 0.5f, -1.5f}, {64, 64, 16, 0, 1.0f, 0.0f},    {65, 63, 17, 3, -1.0f, 0.25f},
    {3, 100, 70, 0, 1.0f, 1.0f},  {70, 2, 33, 1, 2.0f, 0.0f},     {40, 40, 0, 0, 1.0f, 0.5f},
    {128, 128, 8, 0, 1.0f, 0.0f}, {129, 130, 25, 1, 1.0f, 0.5f},
};

// Every candidate configuration, then the tuning's own choice (null).
std::vector<const GemmConfig*> configs_and_automatic() {
  std::vector<const GemmConfig*> out;
  for (const GemmConfig& c : gemm_candidates()) out.push_back(&c);
  out.push_back(nullptr);
  return out;
}

class OpenclGemm : public ::testing::TestWithParam<std::tuple<Trans, Trans>> {};

// Each configuration matches the reference, and all of them give the same bits: they add each
// output's terms in the same order, so the tuner's choice never changes a result.
TEST_P(OpenclGemm, EveryConfigurationMatchesTheReferenceWithTheSameBits) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  for (Device* device : open_devices().devices) {
    for (const GemmCase& t : kGemmCases) {
      std::vector<float> first;
      for (const GemmConfig* config : configs_and_automatic()) {
        const std::string name = config ? config->name() : "automatic";
        SCOPED_TRACE(device->label() + " " + name + " m=" + std::to_string(t.m) + " n=" + std::to_string(t.n) +
                     " k=" + std::to_string(t.k) + " pad=" + std::to_string(t.pad));
        Rng rng(21);  // the same operands for every configuration
        const std::vector<float> got = check_gemm(*device, t, ta, tb, config, false, rng);
        if (HasFailure()) return;
        if (first.empty()) first = got;
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_TRUE(same_bits(got[i], first[i]) || (std::isnan(got[i]) && std::isnan(first[i])))
              << "C word " << i << ": " << got[i] << ", the first configuration gave " << first[i];
        }
      }
    }
  }
}

// Operands at multiples of 4 words with row strides, M and N multiples of 4: gemm.cl reads the
// panels a float4 at a time (VLOAD), the tiles' edges clamped and the last step's terms past K
// zeroed. Each configuration matches the reference with the same bits as the word-by-word reads
// of the same operands at odd offsets.
TEST_P(OpenclGemm, Float4ReadsOfAlignedOperandsGiveTheSameBits) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  std::vector<GemmConfig> configs;
  for (const char* name : {"128x128x8/16x16/v4/p", "128x128x16/16x16/v4", "64x64x16/8x8/v4/p", "64x64x16/16x16/v1"})
    configs.push_back(parse_gemm_config(name).value());
  for (Device* device : open_devices().devices) {
    for (const GemmCase& t : {GemmCase{132, 68, 36, 0, 1.0f, 0.0f}, GemmCase{68, 260, 20, 4, -1.0f, 0.5f},
                              GemmCase{4, 4, 4, 0, 1.0f, 1.0f}, GemmCase{64, 128, 16, 0, 1.0f, 0.0f},
                              GemmCase{36, 44, 19, 1, 1.0f, 0.0f}}) {  // A Bt: float4s along K, 3 terms past it
      Rng odd_rng(25);
      const std::vector<float> odd = check_gemm(*device, t, ta, tb, &configs[0], false, odd_rng);
      for (const GemmConfig& config : configs) {
        SCOPED_TRACE(device->label() + " " + config.name() + " m=" + std::to_string(t.m) + " n=" +
                     std::to_string(t.n) + " k=" + std::to_string(t.k) + " pad=" + std::to_string(t.pad));
        Rng rng(25);  // the same operands
        const std::vector<float> got = check_gemm(*device, t, ta, tb, &config, false, rng, 0, 4, 8);
        if (HasFailure()) return;
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_TRUE(same_bits(got[i], odd[i])) << "C word " << i << ": " << got[i] << ", at odd offsets " << odd[i];
      }
    }
  }
}

TEST_P(OpenclGemm, IntegerProductsAreBitExact) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  Rng rng(22);
  for (Device* device : open_devices().devices) {
    for (const GemmCase& t : {GemmCase{33, 65, 40, 1, 1.0f, 0.0f}, GemmCase{64, 31, 17, 0, 1.0f, 1.0f}}) {
      SCOPED_TRACE(device->label() + " m=" + std::to_string(t.m) + " n=" + std::to_string(t.n));
      check_gemm(*device, t, ta, tb, nullptr, true, rng);
      if (HasFailure()) return;
    }
  }
}

// Split over K: slices summed apart into the device's scratch, then added in order. Each
// configuration matches the reference and gives the same bits as the others at the same split.
TEST_P(OpenclGemm, SlicesOverKMatchTheReferenceWithTheSameBitsInEveryConfiguration) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  for (Device* device : open_devices().devices) {
    ASSERT_TRUE(reserve_gemm_scratch(*device).ok());
    for (const GemmCase& t : {GemmCase{25, 6, 5000, 1, 1.0f, 0.0f}, GemmCase{9, 32, 1000, 0, -0.5f, 1.5f},
                              GemmCase{70, 3, 333, 2, 1.0f, 1.0f}}) {
      for (int k_slices : {3, 8}) {
        std::vector<float> first;
        for (const GemmConfig* config : configs_and_automatic()) {
          SCOPED_TRACE(device->label() + " " + (config ? config->name() : "automatic") + " slices " +
                       std::to_string(k_slices) + " m=" + std::to_string(t.m) + " n=" + std::to_string(t.n) +
                       " k=" + std::to_string(t.k));
          Rng rng(24);
          const std::vector<float> got = check_gemm(*device, t, ta, tb, config, false, rng, k_slices);
          if (HasFailure()) return release_gemm_scratch(*device);
          if (first.empty()) first = got;
          for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], first[i])) << "C word " << i;
        }
      }
    }
    release_gemm_scratch(*device);
  }
}

// A batch of products packed one after another (gemm.cl's BATCHED): each gives the bits of the
// same product by f32_gemm in one slice, with word-by-word and float4 reads, alpha and beta, and
// C's words past the batch untouched.
TEST_P(OpenclGemm, BatchedProductsGiveTheBitsOfEachProductAlone) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  const bool ta_yes = ta == Trans::yes, tb_yes = tb == Trans::yes;
  std::vector<const GemmConfig*> configs = {nullptr};
  const GemmConfig quads = parse_gemm_config("64x64x16/8x8/v4/p").value();
  configs.push_back(&quads);
  for (Device* device : open_devices().devices) {
    for (const GemmCase& t : {GemmCase{37, 20, 16, 0, 1.0f, 0.0f}, GemmCase{64, 8, 32, 4, -0.5f, 1.5f},
                              GemmCase{5, 3, 70, 1, 1.0f, 0.0f}}) {
      for (int64_t batch : {1, 3, 36}) {
        for (const GemmConfig* config : configs) {
          SCOPED_TRACE(device->label() + " " + (config ? config->name() : "automatic") + " batch " +
                       std::to_string(batch) + " m=" + std::to_string(t.m) + " n=" + std::to_string(t.n));
          GemmShape s{ta, tb, t.m, t.n, t.k, (ta_yes ? t.m : t.k) + t.pad, (tb_yes ? t.k : t.n) + t.pad, t.n + t.pad};
          const int64_t a_size = stored_rows(ta_yes, t.m, t.k) * s.lda, b_size = stored_rows(tb_yes, t.k, t.n) * s.ldb;
          const int64_t c_size = t.m * s.ldc;
          Rng rng(26);
          Buffer a = upload_or_die(*device, random_floats(rng, static_cast<size_t>(batch * a_size)), "A");
          Buffer b = upload_or_die(*device, random_floats(rng, static_cast<size_t>(batch * b_size)), "B");
          const std::vector<float> c0 = random_floats(rng, static_cast<size_t>(batch * c_size + 3));
          Buffer c = upload_or_die(*device, c0, "C"), alone = upload_or_die(*device, c0, "C alone");
          const GemmLaunch how{config, 1, {}};
          auto event = f32_gemm_batched(*device, s, batch, t.alpha, a.f32(), b.f32(), t.beta, c.f32(), how);
          ASSERT_TRUE(event.ok()) << event.status().message();
          for (int64_t z = 0; z < batch; ++z) {
            ASSERT_TRUE(f32_gemm(*device, s, t.alpha, a.f32(z * a_size), b.f32(z * b_size), t.beta,
                                 alone.f32(z * c_size), how)
                            .ok());
          }
          const std::vector<float> got = download_all<float>(c), want = download_all<float>(alone);
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_TRUE(same_bits(got[i], want[i])) << "C word " << i << ": " << got[i] << ", alone " << want[i];
          EXPECT_TRUE(same_bits(got.back(), c0.back())) << "past the batch";
        }
      }
    }
  }
}

// Packed products in slices: slice s of product z, at (z S + s) m ldc, has the bits of f32_gemm
// over that slice's terms alone (S = 3 slices of 32, 32 and 6 of K = 70; alpha 1, beta 0).
TEST_P(OpenclGemm, BatchedSlicesGiveTheBitsOfEachSliceAlone) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  const bool ta_yes = ta == Trans::yes, tb_yes = tb == Trans::yes;
  const int64_t m = 9, n = 20, k = 70, batch = 4, slices = 3, len = 32;
  const GemmShape s{ta, tb, m, n, k, ta_yes ? m : k, tb_yes ? k : n, n};
  const int64_t a_size = m * k, b_size = k * n, c_size = m * n;
  Device& device = *open_devices().devices.at(0);
  Rng rng(27);
  Buffer a = upload_or_die(device, random_floats(rng, static_cast<size_t>(batch * a_size)), "A");
  Buffer b = upload_or_die(device, random_floats(rng, static_cast<size_t>(batch * b_size)), "B");
  Buffer c = upload_or_die(device, std::vector<float>(batch * slices * c_size, std::nanf("")), "C");
  auto event = f32_gemm_batched(device, s, batch, 1.0f, a.f32(), b.f32(), 0.0f, c.f32(), GemmLaunch{nullptr, slices, {}});
  ASSERT_TRUE(event.ok()) << event.status().message();
  const std::vector<float> got = download_all<float>(c);
  for (int64_t z = 0; z < batch; ++z) {
    for (int64_t slice = 0; slice < slices; ++slice) {
      const int64_t k0 = slice * len, terms = std::min(len, k - k0);
      GemmShape part = s;
      part.k = terms;  // the slice's terms: columns k0.. of A (rows with TRANS_A), rows k0.. of B (columns with TRANS_B)
      Buffer alone = upload_or_die(device, std::vector<float>(c_size, 0.0f), "alone");
      ASSERT_TRUE(f32_gemm(device, part, 1.0f, a.f32(z * a_size + (ta_yes ? k0 * s.lda : k0)),
                           b.f32(z * b_size + (tb_yes ? k0 : k0 * s.ldb)), 0.0f, alone.f32(), GemmLaunch{nullptr, 1, {}})
                      .ok());
      const std::vector<float> want = download_all<float>(alone);
      for (int64_t i = 0; i < c_size; ++i)
        ASSERT_TRUE(same_bits(got[(z * slices + slice) * c_size + i], want[i])) << "product " << z << " slice " << slice;
    }
  }
}

// The slices made of K terms when asked for S (16-term multiples, so at most S), and packed products
// of no terms in slices: one slice each, C = 0.
TEST(OpenclGemmBatched, SlicesMadeAndAnEmptySum) {
  EXPECT_EQ(gemm_slices_made(70, 3), 3);
  EXPECT_EQ(gemm_slices_made(36, 5), 3);
  EXPECT_EQ(gemm_slices_made(10, 2), 1);
  EXPECT_EQ(gemm_slices_made(0, 5), 1);
  EXPECT_EQ(gemm_slices_made(5000, 1), 1);
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer a = upload_or_die(device, std::vector<float>(8, 1.0f), "A");
  Buffer c = upload_or_die(device, std::vector<float>(3 * 4 + 1, 7.0f), "C");
  ASSERT_TRUE(f32_gemm_batched(device, GemmShape{Trans::yes, Trans::no, 2, 2, 0, 2, 2, 2}, 3, 1.0f, a.f32(), a.f32(),
                               0.0f, c.f32(), GemmLaunch{nullptr, 3, {}})
                  .ok());
  const std::vector<float> got = download_all<float>(c);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(got[i], 0.0f) << i;
  EXPECT_EQ(got[12], 7.0f) << "past the batch";
}

// More packed products than a launch's third dimension holds are refused by name.
TEST(OpenclGemmBatched, MoreProductsThanALaunchHoldsAreRefused) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Buffer ones = upload_or_die(device, std::vector<float>(65536, 1.0f), "ones");
  auto event = f32_gemm_batched(device, GemmShape{Trans::no, Trans::no, 1, 1, 1, 1, 1, 1}, 65536, 1.0f, ones.f32(),
                                ones.f32(), 0.0f, ones.f32());
  ASSERT_FALSE(event.ok());
  EXPECT_NE(event.status().message().find("65536 products in 1 slices, at most 65535 in all"), std::string::npos)
      << event.status().message();
}

// K = 0 asked in slices: nothing to split, C = beta C.
TEST_P(OpenclGemm, SlicesOfAnEmptySumAreOneProduct) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  Device& device = *open_devices().devices.at(0);
  ASSERT_TRUE(reserve_gemm_scratch(device).ok());
  Buffer a = upload_or_die(device, std::vector<float>(64, 1.0f), "A");
  Buffer c = upload_or_die(device, std::vector<float>(64, 2.0f), "C");
  const GemmShape s{ta, tb, 8, 8, 0, ta == Trans::yes ? 8 : 1, tb == Trans::yes ? 1 : 8, 8};
  auto event = f32_gemm(device, s, 1.0f, a.f32(), a.f32(), 0.5f, c.f32(), GemmLaunch{nullptr, 2, {}});
  ASSERT_TRUE(event.ok()) << event.status().message();
  for (float v : download_all<float>(c)) EXPECT_EQ(v, 1.0f);
  release_gemm_scratch(device);
}

TEST_P(OpenclGemm, SlicesWithoutScratchAreRefused) {
  SKIP_WITHOUT_OPENCL();
  const auto [ta, tb] = GetParam();
  Device& device = *open_devices().devices.at(0);
  release_gemm_scratch(device);
  Buffer a = upload_or_die(device, std::vector<float>(64 * 1024, 1.0f), "A");
  Buffer c = upload_or_die(device, std::vector<float>(64, 0.0f), "C");
  const GemmShape s{ta, tb, 8, 8, 1024, ta == Trans::yes ? 8 : 1024, tb == Trans::yes ? 1024 : 8, 8};
  auto event = f32_gemm(device, s, 1.0f, a.f32(), a.f32(), 0.0f, c.f32(), GemmLaunch{nullptr, 4, {}});
  ASSERT_FALSE(event.ok());
  EXPECT_NE(event.status().message().find("GEMM scratch"), std::string::npos) << event.status().message();
}

TEST(OpenclGemmSlices, EnoughSlicesToFillTheDeviceWithinDepthAndScratch) {
  const GemmShape conv1_dw{Trans::yes, Trans::no, 25, 6, 50176, 25, 6, 6};  // lenet conv1's weight gradient
  EXPECT_EQ(gemm_k_slices(conv1_dw, 132, 1 << 20), 196);                    // 256 terms a slice at least
  GemmShape deeper = conv1_dw;
  deeper.k = 400000;
  EXPECT_EQ(gemm_k_slices(deeper, 132, 1 << 20), 1056);                     // eight groups per unit
  EXPECT_EQ(gemm_k_slices(conv1_dw, 132, 150 * 100), 100);                  // the scratch holds 100
  EXPECT_EQ(gemm_k_slices(conv1_dw, 132, 0), 1);                            // no scratch, no split
  EXPECT_EQ(gemm_k_slices(GemmShape{Trans::no, Trans::no, 25, 6, 600, 600, 6, 6}, 132, 1 << 20), 2);  // 256 deep
  const GemmShape big{Trans::no, Trans::no, 2048, 2048, 2048, 2048, 2048, 2048};
  EXPECT_EQ(gemm_k_slices(big, 132, 1 << 20), 1);  // 1024 tiles of 64x64 fill 132 units
  const GemmShape rcl_dw{Trans::yes, Trans::no, 288, 32, 200704, 288, 32, 32};  // rcnn rcl1's at batch 256
  EXPECT_EQ(gemm_k_slices(rcl_dw, 132, 1 << 22), 212);                           // 5 tiles: 1056 / 5
  const GemmShape just_full{Trans::no, Trans::no, 64 * 264, 64, 4096, 4096, 64, 64};
  EXPECT_EQ(gemm_k_slices(just_full, 132, 1 << 22), 1);  // 264 tiles: two a unit, no split
}

INSTANTIATE_TEST_SUITE_P(Transposes, OpenclGemm,
                         ::testing::Combine(::testing::Values(Trans::no, Trans::yes),
                                            ::testing::Values(Trans::no, Trans::yes)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == Trans::yes ? "At" : "A") +
                                  (std::get<1>(info.param) == Trans::yes ? "Bt" : "B");
                         });

// Outside profiling and KeepEvents a launch asks the driver for no event (half its host time on
// NVIDIA's OpenCL): its Event still says a command was enqueued, waits by finishing the queue, and
// refuses to be timed rather than say 0 seconds.
TEST(OpenclGemmTiming, ALaunchWithoutKeepEventsIsUntracked) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  ASSERT_FALSE(device.profiling());
  const int64_t n = 16;
  Buffer a = upload_or_die(device, std::vector<float>(n * n, 1.0f), "A");
  Buffer b = upload_or_die(device, std::vector<float>(n * n, 2.0f), "B");
  Buffer c = upload_or_die(device, std::vector<float>(n * n, 0.0f), "C");
  const GemmShape s{Trans::no, Trans::no, n, n, n, n, n, n};
  auto event = f32_gemm(device, s, 1.0f, a.f32(), b.f32(), 0.0f, c.f32());
  ASSERT_TRUE(event.ok()) << event.status().message();
  EXPECT_TRUE(event.value().valid());
  EXPECT_EQ(event.value().get(), nullptr);
  ASSERT_TRUE(event.value().wait().ok());
  auto seconds = event.value().seconds();
  ASSERT_FALSE(seconds.ok());
  EXPECT_NE(seconds.status().message().find("KeepEvents"), std::string::npos) << seconds.status().message();
  auto got = download<float>(c, n * n);
  ASSERT_TRUE(got.ok()) << got.status().message();
  for (float v : got.value()) ASSERT_EQ(v, 2.0f * n);
}

TEST(OpenclGemmTiming, TheKernelEventIsProfiled) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  Rng rng(23);
  const int64_t n = 64;
  Buffer a = upload_or_die(device, random_floats(rng, n * n), "A");
  Buffer b = upload_or_die(device, random_floats(rng, n * n), "B");
  Buffer c = upload_or_die(device, std::vector<float>(n * n, 0.0f), "C");
  const GemmShape s{Trans::no, Trans::no, n, n, n, n, n, n};
  const Device::KeepEvents timed(device);
  auto event = f32_gemm(device, s, 1.0f, a.f32(), b.f32(), 0.0f, c.f32());
  ASSERT_TRUE(event.ok()) << event.status().message();
  auto seconds = event.value().seconds();
  ASSERT_TRUE(seconds.ok()) << seconds.status().message();
  EXPECT_GT(seconds.value(), 0.0);
  EXPECT_LT(seconds.value(), 60.0);
}

// The epilogue (bias, batch norm, activation): tests/test_opencl_fusion.cpp.

// The implicit GEMM reads the patch matrix from the images: the bits of im2col then the GEMM, split
// over K or not, for a square vector tile, two narrow ones, the smallest (16 items) and the tuning's
// choice; strides 1 to 3, padding of 3 on a 4 x 4 kernel, 25 taps (the most gemm.cl's tap masks
// take at 5 x 5), a 6 x 6 kernel (36 taps: its general path), and a layer of 32 channels and
// filters. The output and the split's scratch are poisoned before each implicit product.
TEST(OpenclConvGemm, TheImplicitPatchMatrixGivesTheBitsOfIm2colThenGemm) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  ASSERT_TRUE(reserve_gemm_scratch(device).ok());
  Rng rng(26);
  struct Case {
    int64_t h, w, c, k, stride, pad, batch, filters;
  };
  std::vector<const GemmConfig*> configs{nullptr};
  for (const GemmConfig& c : gemm_candidates()) {
    for (const char* wanted : {"64x64x16/8x8/v4/p", "128x32x16/16x8/v4/p", "128x16x16/16x4/v4/p", "16x16x16/4x4/v1"})
      if (c.name() == wanted) configs.push_back(&c);
  }
  ASSERT_EQ(configs.size(), 5u) << "a configuration named above is no longer a candidate";
  for (const Case& t : {Case{9, 7, 3, 3, 2, 1, 3, 5}, Case{8, 8, 5, 4, 2, 3, 2, 20}, Case{10, 9, 8, 5, 3, 2, 4, 9},
                        Case{7, 8, 2, 6, 1, 2, 2, 6}, Case{14, 14, 32, 3, 1, 1, 1, 32}}) {
    const ConvGeometry g = conv_geometry(t.h, t.w, t.c, t.k, t.stride, t.pad).value();
    const int64_t rows = t.batch * g.patches(), k = g.patch_size(), filters = t.filters;
    Buffer images = upload_or_die(device, random_floats(rng, t.batch * g.height * g.width * g.channels), "images");
    Buffer weight = upload_or_die(device, random_floats(rng, k * filters), "weight");
    Buffer cols = upload_or_die(device, std::vector<float>(rows * k, 0.0f), "cols");
    Buffer want = upload_or_die(device, std::vector<float>(rows * filters, 0.0f), "want");
    Buffer got = upload_or_die(device, std::vector<float>(rows * filters, 0.0f), "got");
    ASSERT_TRUE(f32_im2col(device, g, t.batch, images.f32(), cols.f32()).ok());
    for (const GemmConfig* config : configs) {
      for (int k_slices : {1, 2}) {
        SCOPED_TRACE(std::to_string(t.h) + "x" + std::to_string(t.w) + "x" + std::to_string(t.c) + " k " +
                     std::to_string(t.k) + " stride " + std::to_string(t.stride) + " pad " + std::to_string(t.pad) +
                     ", " + (config ? config->name() : "automatic") + " slices " + std::to_string(k_slices));
        const GemmLaunch how{config, k_slices, {}};
        auto plain = f32_gemm(device, GemmShape{Trans::no, Trans::no, rows, filters, k, k, filters, filters}, 1.0f,
                              cols.f32(), weight.f32(), 0.0f, want.f32(), how);
        ASSERT_TRUE(plain.ok()) << plain.status().message();
        poison_f32(got);  // nothing the plain product or an earlier case left counts
        poison_gemm_scratch(device);
        auto event = f32_conv_gemm(device, g, t.batch, images.f32(), weight.f32(), filters, got.f32(), how);
        ASSERT_TRUE(event.ok()) << event.status().message();
        const std::vector<float> a = download_all<float>(got), b = download_all<float>(want);
        for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(same_bits(a[i], b[i])) << "y word " << i;
      }
    }
  }
  release_gemm_scratch(device);
}

// ---------------------------------------------------------------- configurations and tuning

TEST(OpenclGemmConfig, NamesParseBackAndBadNamesSayTheRule) {
  for (const GemmConfig& c : gemm_candidates()) {
    auto parsed = parse_gemm_config(c.name());
    ASSERT_TRUE(parsed.ok()) << c.name() << ": " << parsed.status().message();
    EXPECT_EQ(parsed.value().name(), c.name());
  }
  EXPECT_TRUE(parse_gemm_config("64x64x16/16x16/v1").value().prefetch == false);
  EXPECT_TRUE(parse_gemm_config("128x128x8/16x16/v4/p").value().prefetch);
  // Malformed, impossible, or (from a cache file) too big to build: overflowing products, huge
  // tiles, more sums than a work-item's registers hold.
  for (const char* bad : {"", "64x64", "64x64x16/16x16/v3", "64x64x16/16x16/v4/q", "64x64x16/16x16/v4/p/p",
                          "60x64x16/16x16/v4", "64x64x1/16x16/v1", "0x64x16/16x16/v1", "64x64x16/64x64/v1",
                          "65536x65536x1/65536x65536/v1", "4096x4096x1/16x16/v4", "1024x1024x1024/32x32/v4",
                          "256x256x16/16x16/v4", "64x64x16/2048x1/v1"}) {
    auto parsed = parse_gemm_config(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.status().message().find(std::string("'") + bad + "'"), std::string::npos);
    }
  }
}

TEST(OpenclGemmConfig, BigProductsTakeBigTilesAndSmallOnesSmallTiles) {
  std::vector<GemmRate> untuned;
  for (const GemmConfig& c : gemm_candidates()) untuned.push_back({c, 0});
  const GemmShape big{Trans::no, Trans::no, 4096, 4096, 4096, 4096, 4096, 4096};
  const GemmShape small{Trans::no, Trans::no, 10, 12, 500, 500, 12, 12};
  EXPECT_EQ(choose_gemm_config(untuned, big, 132).tile_m, 128);
  EXPECT_EQ(choose_gemm_config(untuned, small, 132).tile_m, 16);
  // Measured rates decide between tiles that fill the device alike.
  std::vector<GemmRate> tuned = {{parse_gemm_config("128x128x8/16x16/v4/p").value(), 100},
                                 {parse_gemm_config("128x128x16/16x16/v4/p").value(), 300}};
  EXPECT_EQ(choose_gemm_config(tuned, big, 132).tile_k, 16);
  // Rates from a search at 2048 on 132 units: 128x256 tiles kept 128 of them busy there, so
  // its 97 counts as 100.03 where every unit is busy (4096), and as 97 again at 2048.
  std::vector<GemmRate> at_2048 = {{parse_gemm_config("128x128x8/16x16/v4/p").value(), 100},
                                   {parse_gemm_config("128x256x8/16x16/v4/p").value(), 97}};
  const GemmShape mid{Trans::no, Trans::no, 2048, 2048, 2048, 2048, 2048, 2048};
  EXPECT_EQ(choose_gemm_config(at_2048, big, 132).tile_n, 128) << "no search size given: the rates as measured";
  EXPECT_EQ(choose_gemm_config(at_2048, big, 132, 2048, 132).tile_n, 256);
  EXPECT_EQ(choose_gemm_config(at_2048, mid, 132, 2048, 132).tile_n, 128);
}

// The tuning of a device as its cache file writes it, read back; files made for something else or
// malformed are refused naming the file and the line.
TEST(OpenclGemmTuning, TheCacheFileRoundTripsAndBadFilesAreRefusedByLine) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  GemmTuning tuning;
  tuning.size = 256;
  tuning.rates = {{gemm_candidates()[3], 10.5}, {gemm_candidates()[5], 2.25}};
  tuning.products = {{"NN/64x32x16/s1", gemm_candidates()[3]}, {"TN/9x8x4096/s4/v/c0123abcd", gemm_candidates()[10]}};
  tuning.conv_winograd = {{"forward/28x28x32/p1/o32/n256", true}, {"dx/14x14x64/p1/o64/n64", false}};
  const std::string text = gemm_tuning_text(device, tuning);
  auto back = parse_gemm_tuning(device, text, "cache.txt");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().size, 256);
  ASSERT_EQ(back.value().products.size(), 2u);
  EXPECT_EQ(back.value().products.at("TN/9x8x4096/s4/v/c0123abcd").name(), gemm_candidates()[10].name());
  ASSERT_EQ(back.value().rates.size(), 2u);
  EXPECT_EQ(back.value().rates[0].config.name(), gemm_candidates()[3].name());
  EXPECT_DOUBLE_EQ(back.value().rates[0].gflops, 10.5);
  EXPECT_DOUBLE_EQ(back.value().rates[1].gflops, 2.25);
  EXPECT_EQ(back.value().conv_winograd, tuning.conv_winograd);
  auto line_of = [&](int n) {
    size_t at = 0;
    for (int i = 1; i < n; ++i) at = text.find('\n', at) + 1;
    return at;
  };
  auto replace_line = [&](int n, const std::string& with) {
    std::string t = text;
    const size_t at = line_of(n);
    return t.replace(at, t.find('\n', at) - at, with);
  };
  const struct {
    std::string text, want;
  } bad[] = {
      {replace_line(1, "something else"), "cache.txt:1: not a GEMM tuning file"},
      {replace_line(1, "retrograd-opencl-gemm-tuning 1"), "cache.txt:1: not a GEMM tuning file"},  // the old format
      {replace_line(2, "for another device | 1.0 | gemm.cl 0"), "cache.txt:2: made for another device"},
      {replace_line(3, "size -4"), "cache.txt:3: want 'size N'"},
      {replace_line(4, "rate 64x64x16/16x16/v3 5"), "cache.txt:4: GEMM configuration '64x64x16/16x16/v3'"},
      {replace_line(4, "NN 64x64x16/16x16/v1 5"), "cache.txt:4: want 'rate CONFIG GFLOPS'"},
      {replace_line(4, "rate 64x64x16/16x16/v1 nan"), "cache.txt:4: want 'rate CONFIG GFLOPS'"},
      {replace_line(4, "rate 64x64x16/16x16/v1 -3"), "cache.txt:4: want 'rate CONFIG GFLOPS'"},
      {replace_line(4, "rate 64x64x16/16x16/v1 3 4"), "cache.txt:4: want 'rate CONFIG GFLOPS'"},
      {replace_line(5, "product NN/1x1x1/s1"), "cache.txt:5: want 'product KEY CONFIG'"},
      {replace_line(5, "product NN/1x1x1/s1 64x64x16/16x16/v1 7"), "cache.txt:5: want 'product KEY CONFIG'"},
      {replace_line(5, "product NN/1x1x1/s1 64x64x16/16x16/v3"), "cache.txt:5: GEMM configuration '64x64x16/16x16/v3'"},
      {replace_line(5, "product NN/1x1x1/s1 32x32x32/8x8/v4"), "cache.txt:5: GEMM configuration '32x32x32/8x8/v4' is not one of the candidates"},
      {replace_line(4, "rate 32x32x32/8x8/v4 5"), "cache.txt:4: GEMM configuration '32x32x32/8x8/v4' is not one of the candidates"},
      {replace_line(7, "conv forward/28x28x32/p1/o32/n256"), "cache.txt:7: want 'conv KEY winograd|gemm'"},
      {replace_line(7, "conv forward/28x28x32/p1/o32/n256 direct"), "cache.txt:7: want 'conv KEY winograd|gemm'"},
      {replace_line(7, "conv forward/28x28x32/p1/o32/n256 gemm 1"), "cache.txt:7: want 'conv KEY winograd|gemm'"},
      {text + "conv dx/14x14x64/p1/o64/n64 winograd\n", "'conv dx/14x14x64/p1/o64/n64' again (line "},
      {text + "product TN/9x8x4096/s4/v/c0123abcd " + gemm_candidates()[3].name() + "\n",
       "'product TN/9x8x4096/s4/v/c0123abcd' again (line "},
      {text.substr(0, line_of(4)), "cache.txt: no rate"},
      {text.substr(0, line_of(2)), "cache.txt: truncated after line 1"},
  };
  for (const auto& b : bad) {
    auto parsed = parse_gemm_tuning(device, b.text, "cache.txt");
    ASSERT_FALSE(parsed.ok()) << b.want;
    EXPECT_NE(parsed.status().message().find(b.want), std::string::npos) << parsed.status().message();
  }
}

// gemm_tuning(device): the cache file when it fits the device, else the policy's answer with the
// reason the file was not used; the file is never the device's only record (the slot keeps it).
TEST(OpenclGemmTuning, TheDeviceReadsItsCacheFileOrSaysWhyNot) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  const std::string dir = temp_dir();
  ScopedEnv cache("RETROGRAD_CACHE", dir);
  ScopedEnv never("RETROGRAD_CL_GEMM_TUNE", "0");
  GemmTuning written;
  written.size = 512;
  written.rates = {{gemm_candidates()[6], 77}};
  const std::string path = gemm_tuning_path(device);
  EXPECT_EQ(path.rfind(dir, 0), 0u) << path;
  {
    std::ofstream(path) << gemm_tuning_text(device, written);
  }
  device.gemm_tuning_slot().reset();
  const GemmTuning& read = gemm_tuning(device);
  EXPECT_EQ(read.source, "read from " + path);
  ASSERT_EQ(read.rates.size(), 1u);
  EXPECT_EQ(read.rates[0].config.name(), gemm_candidates()[6].name());

  {
    std::ofstream(path) << "not a tuning\n";
  }
  device.gemm_tuning_slot().reset();
  const GemmTuning& refused = gemm_tuning(device);
  EXPECT_NE(refused.source.find("not tuned (RETROGRAD_CL_GEMM_TUNE=0)"), std::string::npos) << refused.source;
  EXPECT_NE(refused.source.find(path + ":1: not a GEMM tuning file"), std::string::npos) << refused.source;
  EXPECT_EQ(refused.rates.size(), gemm_candidates().size()) << "every candidate, untuned";

  std::filesystem::remove(path);  // a folder where the cache file goes: said, and left there
  std::filesystem::create_directory(path);
  device.gemm_tuning_slot().reset();
  const GemmTuning& folder = gemm_tuning(device);
  EXPECT_NE(folder.source.find("the cache was not used: " + path + " is a folder"), std::string::npos) << folder.source;
  EXPECT_TRUE(std::filesystem::is_directory(path));
  std::filesystem::remove(path);

  {  // a 3 GiB file (sparse): refused by its size, never read whole
    std::ofstream(path) << gemm_tuning_text(device, written);
  }
  std::filesystem::resize_file(path, int64_t{3} << 30);
  device.gemm_tuning_slot().reset();
  const GemmTuning& huge = gemm_tuning(device);
  EXPECT_NE(huge.source.find(path + ": 3.0 GiB, more than the 1.0 MiB a GEMM tuning file may hold"), std::string::npos)
      << huge.source;
  EXPECT_EQ(huge.rates.size(), gemm_candidates().size()) << "every candidate, untuned";
  std::filesystem::remove(path);
  device.gemm_tuning_slot().reset();  // later tests derive it again under their own environment
}

// On a tuned device a product's first call times the ranking's first three configurations on the
// product itself and keeps the fastest, in the tuning and its cache file; the next call and the
// next run take it from there. The trial's launches write what the product writes (the same bits);
// a product that reads its own output (one slice, beta != 0) cannot run twice and is not timed.
TEST(OpenclGemmTuning, AProductIsTimedOnItselfOnceAndItsChoiceCached) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  ScopedEnv cache("RETROGRAD_CACHE", temp_dir());
  ScopedEnv never("RETROGRAD_CL_GEMM_TUNE", "0");
  GemmTuning written;
  written.size = 256;
  written.rates = {{gemm_candidates()[2], 90}, {gemm_candidates()[9], 80}, {gemm_candidates()[11], 70}, {gemm_candidates()[13], 60}};
  {
    std::ofstream(gemm_tuning_path(device)) << gemm_tuning_text(device, written);
  }
  device.gemm_tuning_slot().reset();
  Rng rng(7);
  check_gemm(device, {70, 33, 40, 1, 1.0f, 0.0f}, Trans::no, Trans::yes, nullptr, false, rng);
  ASSERT_EQ(gemm_tuning(device).products.size(), 1u);
  const auto [key, chosen] = *gemm_tuning(device).products.begin();  // copies: the slot is reset below
  EXPECT_EQ(key, "NT/70x33x40/s1");
  const int units = static_cast<int>(device.info().compute_units);
  const std::vector<GemmConfig> ranked =
      rank_gemm_configs(written.rates, GemmShape{Trans::no, Trans::yes, 70, 33, 40, 41, 41, 34}, units, 256, units);
  EXPECT_NE(std::find(ranked.begin(), ranked.begin() + 3, chosen), ranked.begin() + 3)
      << chosen.name() << ": not among the ranking's first three";
  check_gemm(device, {70, 33, 40, 1, 1.0f, 0.0f}, Trans::no, Trans::yes, nullptr, true, rng);
  check_gemm(device, {50, 20, 30, 0, 1.0f, 1.0f}, Trans::no, Trans::no, nullptr, false, rng);  // beta 1
  EXPECT_EQ(gemm_tuning(device).products.size(), 1u) << "timed once; beta 1 on one slice not at all";
  device.gemm_tuning_slot().reset();
  const GemmTuning& read = gemm_tuning(device);
  EXPECT_EQ(read.source.rfind("read from ", 0), 0u) << read.source;
  ASSERT_EQ(read.products.count(key), 1u) << "the choice is in the cache file";
  EXPECT_EQ(read.products.at(key).name(), chosen.name());
  device.gemm_tuning_slot().reset();  // later tests derive it again under their own environment
}

// The search on a real device, small: every candidate timed on A B, best first, its programs built
// before (several at once: ProgramCache::build_all) and kept.
TEST(OpenclGemmTuning, TheSearchTimesEveryCandidateBestFirst) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  GemmTuneOptions options;
  options.candidates = {gemm_candidates()[2], gemm_candidates()[9], gemm_candidates()[11]};
  options.min_size = 64;
  options.max_size = 128;
  options.reps = 1;
  const int64_t held = device.memory().current_bytes();
  auto tuned = tune_gemm(device, options);
  ASSERT_TRUE(tuned.ok()) << tuned.status().message();
  EXPECT_GE(tuned.value().size, 64);
  EXPECT_LE(tuned.value().size, 128);
  ASSERT_EQ(tuned.value().rates.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_GT(tuned.value().rates[i].gflops, 0);
  EXPECT_GE(tuned.value().rates[0].gflops, tuned.value().rates[1].gflops);
  EXPECT_GE(tuned.value().rates[1].gflops, tuned.value().rates[2].gflops);
  EXPECT_NE(tuned.value().source.find("tuned now"), std::string::npos);
  EXPECT_EQ(device.memory().current_bytes(), held) << "the search's buffers are freed";
}

// The implicit products of a convolution's backward against im2col + the plain GEMM, bit for bit
// (the same values, the same sums), over every configuration, splits of 1 to 3 slices and beta 0
// and 1: a conv's weight gradient (op(A) the patch matrix transposed), a transposed conv's dx (the
// weight read transposed) and its weight gradient (op(B) the patch matrix); and at stride 1 a
// conv's dx as a conv over dy with the weight read flipped, against the same conv of a weight
// flipped here (nn/conv.cpp's flip_weight, written out). Strides 1 to 3, pads 0 to 3, even
// kernels, 1 to 17 channels, up to 130 filters.
TEST(OpenclConvGemm, ImplicitBackwardProductsGiveTheBitsOfIm2colThenTheGemm) {
  SKIP_WITHOUT_OPENCL();
  Device& device = *open_devices().devices.at(0);
  ASSERT_TRUE(reserve_gemm_scratch(device).ok());
  Rng rng(77);
  struct Case {
    int64_t h, w, c, k, stride, pad, batch, filters;
  };
  for (const Case& t : {Case{9, 7, 3, 3, 2, 1, 3, 5}, Case{6, 5, 17, 3, 1, 0, 2, 33}, Case{5, 6, 4, 2, 1, 1, 2, 7},
                        Case{8, 8, 5, 4, 2, 3, 2, 70}, Case{3, 3, 1, 3, 1, 2, 1, 130}, Case{10, 9, 8, 5, 3, 2, 4, 9}}) {
    const ConvGeometry g = conv_geometry(t.h, t.w, t.c, t.k, t.stride, t.pad).value();
    const int64_t rows = t.batch * g.patches(), k = g.patch_size(), f = t.filters;
    SCOPED_TRACE(std::to_string(t.h) + "x" + std::to_string(t.w) + "x" + std::to_string(t.c) + " k " +
                 std::to_string(t.k) + " stride " + std::to_string(t.stride) + " pad " + std::to_string(t.pad) +
                 ", " + std::to_string(f) + " filters");
    Buffer images = upload_or_die(device, random_floats(rng, t.batch * g.height * g.width * g.channels), "images");
    Buffer dy = upload_or_die(device, random_floats(rng, rows * f), "dy");
    Buffer cols = upload_or_die(device, std::vector<float>(rows * k, 0.0f), "cols");
    ASSERT_TRUE(f32_im2col(device, g, t.batch, images.f32(), cols.f32()).ok());
    const std::vector<float> start = random_floats(rng, k * f);
    Buffer w = upload_or_die(device, start, "w");  // a transposed conv's [f, k]; a conv's [k, k, c, f]
    // At stride 1 the conv whose dx is the conv of dy (f channels) with flipped [k, k, f, c] =
    // w [k - 1 - kh][k - 1 - kw][c][f]; `flipped_g` its geometry, none where there is none.
    std::optional<ConvGeometry> flipped_g;
    if (auto fg = conv_geometry(g.out_h, g.out_w, f, t.k, 1, t.k - 1 - t.pad);
        t.stride == 1 && t.pad < t.k && fg.ok() && fg.value().out_h == t.h && fg.value().out_w == t.w)
      flipped_g = fg.value();
    std::vector<float> flipped_host(static_cast<size_t>(k * f));
    for (int64_t tap = 0; tap < t.k * t.k; ++tap)
      for (int64_t ff = 0; ff < f; ++ff)
        for (int64_t ch = 0; ch < t.c; ++ch)
          flipped_host[static_cast<size_t>((tap * f + ff) * t.c + ch)] =
              start[static_cast<size_t>(((t.k * t.k - 1 - tap) * t.c + ch) * f + ff)];
    Buffer flipped = upload_or_die(device, flipped_host, "flipped");
    // The tuning's choice, then one candidate of each code path gemm.cl has (8x16 sums an item,
    // PREFETCH 0, VEC 2, VEC 1, the smallest tile): every candidate took PoCL 9.5 minutes here.
    std::vector<const GemmConfig*> configs{nullptr};
    for (const GemmConfig& c : gemm_candidates()) {
      const std::string name = c.name();
      for (const char* wanted : {"128x256x8/16x16/v4/p", "128x128x16/16x16/v4", "128x128x8/16x16/v2/p",
                                 "64x64x16/8x8/v4/p", "64x64x16/16x16/v1", "16x16x16/4x4/v1"})
        if (name == wanted) configs.push_back(&c);
    }
    for (const GemmConfig* config : configs)
      for (int slices : {1, 2, 3})
        for (float beta : {0.0f, 1.0f}) {
          SCOPED_TRACE((config ? config->name() : "chosen") + ", " + std::to_string(slices) + " slices, beta " +
                       std::to_string(beta));
          const GemmLaunch how{config, slices, {}};
          // Both or neither run: a split whose partials exceed the scratch is refused either way.
          auto expect_same = [&](const Result<Event>& plain, const Result<Event>& implicit, const Buffer& want,
                                 const Buffer& got, const char* what) {
            ASSERT_EQ(plain.ok(), implicit.ok()) << what << ": " << (plain.ok() ? implicit : plain).status().message();
            if (!plain.ok()) return;
            const std::vector<float> a = download_all<float>(got), b = download_all<float>(want);
            for (size_t i = 0; i < a.size(); ++i) ASSERT_TRUE(same_bits(a[i], b[i])) << what << " word " << i;
          };
          // Each plain product first, then the scratch poisoned: the implicit one's split must
          // write its own partials, not sum what the plain one left.
          Buffer want = upload_or_die(device, start, "want"), got = upload_or_die(device, start, "got");
          const auto dw = f32_gemm(device, GemmShape{Trans::yes, Trans::no, k, f, rows, k, f, f}, 1.0f, cols.f32(),
                                   dy.f32(), beta, want.f32(), how);
          poison_gemm_scratch(device);
          expect_same(dw, f32_conv_gemm_weight_grad(device, g, t.batch, images.f32(), dy.f32(), f, beta, got.f32(), how),
                      want, got, "conv dW");
          Buffer want_dx = upload_or_die(device, std::vector<float>(rows * f, 3.0f), "want dx");
          Buffer got_dx = upload_or_die(device, std::vector<float>(rows * f, 3.0f), "got dx");
          const auto dx = f32_gemm(device, GemmShape{Trans::no, Trans::yes, rows, f, k, k, k, f}, 1.0f, cols.f32(),
                                   w.f32(), 0.0f, want_dx.f32(), how);
          poison_f32(got_dx);  // beta 0: every word written
          poison_gemm_scratch(device);
          expect_same(dx,
                      f32_conv_gemm(device, g, t.batch, images.f32(), w.f32(), f, got_dx.f32(), how, ConvWeight::transposed),
                      want_dx, got_dx, "transposed conv dx");
          // The flipped read is load_b's alone: the chosen configuration, a 16x16 work-group and the
          // smallest tile (each geometry and configuration is two programs to build, minutes on PoCL).
          const bool flip_config = config == nullptr || config->name() == "64x64x16/16x16/v1" ||
                                   config->name() == "16x16x16/4x4/v1";
          if (flipped_g && flip_config) {  // dx [batch, h, w, c] (beta 1: added to what it held)
            const std::vector<float> held = random_floats(rng, t.batch * t.h * t.w * t.c);
            Buffer want_cx = upload_or_die(device, held, "want conv dx"), got_cx = upload_or_die(device, held, "got conv dx");
            const auto cx = f32_conv_gemm(device, *flipped_g, t.batch, dy.f32(), flipped.f32(), t.c, want_cx.f32(), how,
                                          ConvWeight::plain, beta);
            poison_gemm_scratch(device);
            expect_same(cx, f32_conv_gemm(device, *flipped_g, t.batch, dy.f32(), w.f32(), t.c, got_cx.f32(), how,
                                          ConvWeight::flipped, beta),
                        want_cx, got_cx, "conv dx, the weight read flipped");
          }
          Buffer want_tw = upload_or_die(device, start, "want tdW"), got_tw = upload_or_die(device, start, "got tdW");
          const auto tdw = f32_gemm(device, GemmShape{Trans::yes, Trans::no, f, k, rows, f, k, k}, 1.0f, dy.f32(),
                                    cols.f32(), beta, want_tw.f32(), how);
          poison_gemm_scratch(device);
          expect_same(tdw, f32_conv_gemm_transposed_weight_grad(device, g, t.batch, dy.f32(), f, images.f32(), beta,
                                                                got_tw.f32(), how),
                      want_tw, got_tw, "transposed conv dW");
        }
  }
  release_gemm_scratch(device);
}

}  // namespace
}  // namespace rg::ocl
