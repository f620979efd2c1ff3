// fp16 <-> f32 without F16C, written once with xsimd integer batches (for CPUs before Ivy
// Bridge: the Athlon 64, the Core 2). Include ONLY from an isa/*.cpp file (see
// f32_gemm_impl.h for why); RG_DEFINE_F16_CONVERT_KERNELS defines one ISA's kernels.
// Lane values stay below 2^31, so the signed 32-bit compares of SSE2 order them right.
#pragma once

#include <cstring>
#include <xsimd/xsimd.hpp>

#include "cpu/ukernels/f16_convert.h"

namespace rg {
namespace ukernel {

// half bits h (one per 32-bit lane) -> float bits, as base/fp16.cpp's f16_to_f32:
//   exponent and mantissa shifted into place and rebiased by 112; Inf/NaN (exponent 31) get
//   another 112 and NaNs the quiet bit; zero and subnormals become 2^-14 (1 + m/1024) - 2^-14
//   = m 2^-24, exact in float.
template <class Arch>
inline xsimd::batch<float, Arch> half_bits_to_float(xsimd::batch<int32_t, Arch> h) {
  using I = xsimd::batch<int32_t, Arch>;
  using F = xsimd::batch<float, Arch>;
  const I body = (h & I(0x7FFF)) << 13;
  const I exponent = body & I(0x0F800000);
  const I rebiased = body + I(0x38000000);
  const I special = (rebiased + I(0x38000000)) | xsimd::select(body > I(0x0F800000), I(0x00400000), I(0));
  const F tiny = xsimd::bitwise_cast<F>(rebiased + I(0x00800000)) - F(6.103515625e-05f);  // - 2^-14
  I out = xsimd::select(exponent == I(0x0F800000), special, rebiased);
  out = xsimd::select(exponent == I(0), xsimd::bitwise_cast<I>(tiny), out);
  return xsimd::bitwise_cast<F>(out | ((h & I(0x8000)) << 16));
}

// float -> half bits in the low 16 bits of each lane, as base/fp16.cpp's f32_to_f16. Below
// the normal half range, adding 0.5 (whose ulp is 2^-24, the subnormal half's step) rounds
// |x| to nearest even in hardware; the mantissa bits of the sum are the half's.
template <class Arch>
inline xsimd::batch<int32_t, Arch> float_to_half_bits(xsimd::batch<float, Arch> x) {
  using I = xsimd::batch<int32_t, Arch>;
  using F = xsimd::batch<float, Arch>;
  const I u = xsimd::bitwise_cast<I>(x);
  const I a = u & I(0x7FFFFFFF);
  const I sign = (u >> 16) & I(0x8000);  // arithmetic shift: the mask keeps bit 15 only
  const I nan = I(0x7E00) | ((a >> 13) & I(0x1FF));
  const I normal = (a + I(0xFFF) + ((a >> 13) & I(1)) - I(0x38000000)) >> 13;
  const I small = xsimd::bitwise_cast<I>(xsimd::bitwise_cast<F>(a) + F(0.5f)) - I(0x3F000000);
  I out = xsimd::select(a >= I(0x38800000), normal, small);
  out = xsimd::select(a >= I(0x477FF000), I(0x7C00), out);
  out = xsimd::select(a > I(0x7F800000), nan, out);
  return out | sign;
}

// W lanes at a time: widened into / narrowed from 32-bit lanes through aligned buffers (the
// compiler turns these copies into unpack and pack instructions); the tail on zero padding.
template <class Arch>
void f16_to_f32_soft(int64_t n, const uint16_t* half, float* out) {
  constexpr int64_t W = static_cast<int64_t>(xsimd::batch<int32_t, Arch>::size);
  alignas(64) int32_t wide[W];
  alignas(64) float result[W];
  for (int64_t i = 0; i < n; i += W) {
    const int64_t live = n - i < W ? n - i : W;
    for (int64_t k = 0; k < W; ++k) wide[k] = k < live ? half[i + k] : 0;
    half_bits_to_float<Arch>(xsimd::batch<int32_t, Arch>::load_aligned(wide)).store_aligned(result);
    std::memcpy(out + i, result, static_cast<size_t>(live) * sizeof(float));
  }
}

template <class Arch>
void f32_to_f16_soft(int64_t n, const float* value, uint16_t* out) {
  constexpr int64_t W = static_cast<int64_t>(xsimd::batch<float, Arch>::size);
  alignas(64) float in[W];
  alignas(64) int32_t bits[W];
  for (int64_t i = 0; i < n; i += W) {
    const int64_t live = n - i < W ? n - i : W;
    std::memcpy(in, value + i, static_cast<size_t>(live) * sizeof(float));
    for (int64_t k = live; k < W; ++k) in[k] = 0.0f;
    float_to_half_bits<Arch>(xsimd::batch<float, Arch>::load_aligned(in)).store_aligned(bits);
    for (int64_t k = 0; k < live; ++k) out[i + k] = static_cast<uint16_t>(bits[k]);
  }
}

}  // namespace ukernel

#define RG_DEFINE_F16_CONVERT_KERNELS(isa, Arch)                                                 \
  void f16_to_f32__##isa(int64_t n, const uint16_t* half, float* out) {                         \
    ukernel::f16_to_f32_soft<Arch>(n, half, out);                                                \
  }                                                                                              \
  void f32_to_f16__##isa(int64_t n, const float* value, uint16_t* out) {                        \
    ukernel::f32_to_f16_soft<Arch>(n, value, out);                                               \
  }

}  // namespace rg
