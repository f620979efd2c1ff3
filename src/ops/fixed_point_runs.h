// The fixed-point quantizers' inner loops, written so that the compiler vectorizes them at the
// baseline (float multiply, rounding by the 1.5 * 2^23 trick, integer clamp, 32-bit hashing),
// shared by the integer products (int8_dynamic_gemm.cpp) and the in-place rounding
// (fixed_point_gemm.cpp). Each gives what fixed_point_format.h's scalar definitions give, for
// values within the grid's range (|x * mult| <= 2 qmax (1 + 2^-23)); a saturating (fixed) scale
// goes through the scalar definitions instead. Include only from those two files.
#pragma once

#include <cstdint>
#include <cstring>

#include "ops/fixed_point_format.h"
#include "ops/int8_dynamic_gemm.h"

namespace rg {
namespace fixed_point_runs {

constexpr int32_t kAbsMask = 0x7fffffff;
constexpr int32_t kInfBits = 0x7f800000;    // |x|'s bits at or above this: Inf or NaN
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: (v + M) - M rounds |v| < 2^22 half-even
constexpr float kTwoToMinus24 = 1.0f / 16777216.0f;
constexpr uint32_t kIndexMul = 0x9E3779B1u;

// MurmurHash3's finalizer: a bijection of 32-bit words with full avalanche.
inline uint32_t fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

// max over |x|'s bit patterns (sign cleared): for non-negative floats the integer order is the
// value order, so this is max|x|'s bits, and at or above kInfBits when a NaN or Inf is present.
inline int32_t max_abs_bits(const float* x, int64_t count) {
  int32_t m = 0;
  for (int64_t t = 0; t < count; ++t) {
    int32_t bits;
    std::memcpy(&bits, x + t, sizeof bits);
    bits &= kAbsMask;
    m = bits > m ? bits : m;
  }
  return m;
}

// A run's multipliers: one for all its elements, or one each (a per-channel B's row).
struct UniformMult {
  float m;
  float operator[](int64_t) const { return m; }
};
struct EachMult {
  const float* m;
  float operator[](int64_t t) const { return m[t]; }
};

// Nearest rounding of a contiguous run (values finite, |x * mult| <= 2 qmax (1 + 2^-23)).
// Rounding first and clamping the integer gives what clamping first would (the bounds are
// integers), and the loop vectorizes (no float select).
template <class Q, class Mult>
inline void quantize_run_nearest(const float* x, int64_t count, Mult mult, int32_t zero, int32_t qmax, Q* out) {
  for (int64_t t = 0; t < count; ++t) {
    const float v = (x[t] * mult[t] + kRoundMagic) - kRoundMagic;
    int32_t q = static_cast<int32_t>(v) + zero;
    q = q < -qmax ? -qmax : q;
    q = q > qmax ? qmax : q;
    out[t] = static_cast<Q>(q);
  }
}

// Stochastic rounding of a run whose elements have indices index0 + t * stride in the stream.
template <class Q, class Mult>
inline void quantize_run_stochastic(const float* x, int64_t count, Mult mult, int32_t zero, int32_t qmax, uint64_t key,
                                    uint64_t index0, uint64_t stride, Q* out) {
  if (count <= 0) return;
  const uint64_t last = index0 + static_cast<uint64_t>(count - 1) * stride;
  if (last > 0xFFFFFFFFull) {  // indices past 2^32: the general (scalar) formula
    for (int64_t t = 0; t < count; ++t) {
      out[t] = static_cast<Q>(fixed_point_quantize_stochastic(
          x[t], mult[t], qmax, int8_rounding_uniform(key, index0 + static_cast<uint64_t>(t) * stride), zero));
    }
    return;
  }
  // int8_rounding_uniform with the index's high word 0, inlined so that the loop vectorizes; its
  // hash input lo * kIndexMul + k1 (mod 2^32) advanced by an add per element, where SSE2 has no
  // 32-bit multiply (lo = lo0 + t * step).
  const uint32_t k1 = static_cast<uint32_t>(key) ^ static_cast<uint32_t>(key >> 32);
  const uint32_t step = static_cast<uint32_t>(stride) * kIndexMul;
  uint32_t input = static_cast<uint32_t>(index0) * kIndexMul + k1;
  // As fixed_point_quantize_stochastic, with the clamp moved after the rounding: for |v| within
  // an ulp of the bounds both give the same value, and the loop vectorizes.
  for (int64_t t = 0; t < count; ++t) {
    const float v = x[t] * mult[t];
    const int32_t truncated = static_cast<int32_t>(v);
    const int32_t floor_v = truncated - static_cast<int32_t>(v < static_cast<float>(truncated));
    const float frac = v - static_cast<float>(floor_v);  // exact
    const uint32_t h = fmix32(input);
    input += step;
    const float u = static_cast<float>(static_cast<int32_t>(h >> 8)) * kTwoToMinus24;
    int32_t q = floor_v + static_cast<int32_t>(u < frac) + zero;
    q = q < -qmax ? -qmax : q;
    q = q > qmax ? qmax : q;
    out[t] = static_cast<Q>(q);
  }
}

}  // namespace fixed_point_runs
}  // namespace rg
