// bf16 <-> f32 on SSE2 intrinsics, 8 values a step (every level from sse2 up runs these: a
// shift and an add leave wider vectors little to gain). Include ONLY from isa/sse2.cpp (see
// f32_gemm_impl.h for why). Bit-exact against base/fp16.h's bf16_to_f32 and f32_to_bf16, which
// also convert the tail.
#pragma once

#include <emmintrin.h>

#include <cstdint>

#include "base/fp16.h"
#include "cpu/ukernels/f16_convert.h"

namespace rg {
namespace ukernel {

// bf16 bits are the float's top 16: each interleaved with 16 zero bits below it.
inline void bf16_to_f32_sse2(int64_t n, const uint16_t* half, float* out) {
  int64_t i = 0;
  const __m128i zero = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(half + i));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi16(zero, h));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 4), _mm_unpackhi_epi16(zero, h));
  }
  for (; i < n; ++i) out[i] = bf16_to_f32(half[i]);
}

// Four floats' bf16 bits, sign-extended in 32-bit lanes: u + 0x7FFF + (bit 16 of u) rounds to
// nearest even (the add wraps as the scalar one does), an arithmetic shift keeps the top 16 bits
// (so that packs_epi32 packs them unchanged); a NaN keeps its top bits with the quiet bit set.
inline __m128i bf16_lanes_sse2(__m128 x) {
  const __m128i u = _mm_castps_si128(x);
  const __m128i odd = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
  const __m128i rounded = _mm_srai_epi32(_mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7FFF)), odd), 16);
  const __m128i nan = _mm_or_si128(_mm_srai_epi32(u, 16), _mm_set1_epi32(0x40));
  const __m128i is_nan = _mm_cmpgt_epi32(_mm_and_si128(u, _mm_set1_epi32(0x7FFFFFFF)), _mm_set1_epi32(0x7F800000));
  return _mm_or_si128(_mm_and_si128(is_nan, nan), _mm_andnot_si128(is_nan, rounded));
}

inline void f32_to_bf16_sse2(int64_t n, const float* value, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i lo = bf16_lanes_sse2(_mm_loadu_ps(value + i)), hi = bf16_lanes_sse2(_mm_loadu_ps(value + i + 4));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packs_epi32(lo, hi));
  }
  for (; i < n; ++i) out[i] = f32_to_bf16(value[i]);
}

}  // namespace ukernel
}  // namespace rg
