// The int8 GEMM tiles and requantization on x86 vectors (contracts: qs8_gemm.h). Raw
// intrinsics: xsimd 8.1 has no pmaddwd or pmaddubsw. Include ONLY from an isa/*.cpp file
// (see f32_gemm_impl.h for why); everything here has internal linkage for the same reason.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "cpu/ukernels/qs8_gemm.h"

namespace rg {
namespace {

// 4 bytes of A (one k group of one row) as an int32.
inline int32_t load_group(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Rows past mr read the last live row again (never outside A); their sums are not used.
template <int MR>
inline void tile_rows(int64_t mr, const int8_t* a, int64_t lda, const int8_t* (&rows)[MR]) {
  for (int r = 0; r < MR; ++r) rows[r] = a + (r < mr ? r : mr - 1) * lda;
}

#if defined(__SSE2__)
// Bytes to int16 lanes, sign-extended: the low (or high) 8 bytes of v.
inline __m128i widen_lo(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
inline __m128i widen_hi(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }

// SSE2: pmaddwd on int16. A panel quad [c0 k0..3, c1 k0..3, c2 .., c3 ..] is regrouped into
// (k0, k1) pairs of the 4 columns and (k2, k3) pairs, so that one pmaddwd with a row's
// (k0, k1) broadcast yields [c0 c1 c2 c3] partial sums directly.
inline void quad_pairs(__m128i quad, __m128i* k01, __m128i* k23) {
  __m128i v = _mm_shufflelo_epi16(quad, _MM_SHUFFLE(3, 1, 2, 0));  // int16 units: [c0k01 c1k01 c0k23 c1k23 ...]
  v = _mm_shufflehi_epi16(v, _MM_SHUFFLE(3, 1, 2, 0));
  v = _mm_shuffle_epi32(v, _MM_SHUFFLE(3, 1, 2, 0));              // [c0k01 c1k01 c2k01 c3k01 | .. k23 ..]
  *k01 = widen_lo(v);
  *k23 = widen_hi(v);
}

inline void qs8_gemm_4x8_sse2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                              int32_t* acc) {
  const int8_t* rows[4];
  tile_rows(mr, a, lda, rows);
  __m128i sum[4][2];
  for (auto& row : sum) row[0] = row[1] = _mm_setzero_si128();
  for (int64_t g = 0; g < kgroups; ++g) {
    __m128i b01[2], b23[2];
    quad_pairs(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32)), &b01[0], &b23[0]);
    quad_pairs(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32 + 16)), &b01[1], &b23[1]);
    for (int r = 0; r < 4; ++r) {
      const __m128i a16 = widen_lo(_mm_cvtsi32_si128(load_group(rows[r] + 4 * g)));  // [k0 k1 k2 k3 ...]
      const __m128i a01 = _mm_shuffle_epi32(a16, _MM_SHUFFLE(0, 0, 0, 0));
      const __m128i a23 = _mm_shuffle_epi32(a16, _MM_SHUFFLE(1, 1, 1, 1));
      for (int q = 0; q < 2; ++q) {
        sum[r][q] = _mm_add_epi32(sum[r][q], _mm_madd_epi16(a01, b01[q]));
        sum[r][q] = _mm_add_epi32(sum[r][q], _mm_madd_epi16(a23, b23[q]));
      }
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + r * 8 + q * 4), sum[r][q]);
}
#endif

#if defined(__SSSE3__)
// SSSE3: pmaddubsw(|a|, sign(b, a)) = pairs a*b in int16, exact for |b| <= 127 (qs8_gemm.h);
// pmaddwd with ones adds the pairs into int32 [c0 c1 c2 c3].
inline void qs8_gemm_4x8_ssse3(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                               int32_t* acc) {
  const int8_t* rows[4];
  tile_rows(mr, a, lda, rows);
  const __m128i ones = _mm_set1_epi16(1);
  __m128i sum[4][2];
  for (auto& row : sum) row[0] = row[1] = _mm_setzero_si128();
  for (int64_t g = 0; g < kgroups; ++g) {
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32 + 16));
    for (int r = 0; r < 4; ++r) {
      const __m128i a4 = _mm_set1_epi32(load_group(rows[r] + 4 * g));
      const __m128i magnitude = _mm_abs_epi8(a4);
      sum[r][0] = _mm_add_epi32(sum[r][0], _mm_madd_epi16(_mm_maddubs_epi16(magnitude, _mm_sign_epi8(b0, a4)), ones));
      sum[r][1] = _mm_add_epi32(sum[r][1], _mm_madd_epi16(_mm_maddubs_epi16(magnitude, _mm_sign_epi8(b1, a4)), ones));
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + r * 8 + q * 4), sum[r][q]);
}
#endif

#if defined(__AVX2__)
// AVX2: the SSSE3 scheme on 8 columns per register (each 128-bit half holds 4 columns).
inline void qs8_gemm_4x16_avx2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                               int32_t* acc) {
  const int8_t* rows[4];
  tile_rows(mr, a, lda, rows);
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sum[4][2];
  for (auto& row : sum) row[0] = row[1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < kgroups; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed_b + g * 64));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed_b + g * 64 + 32));
    for (int r = 0; r < 4; ++r) {
      const __m256i a4 = _mm256_set1_epi32(load_group(rows[r] + 4 * g));
      const __m256i magnitude = _mm256_abs_epi8(a4);
      sum[r][0] = _mm256_add_epi32(
          sum[r][0], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(b0, a4)), ones));
      sum[r][1] = _mm256_add_epi32(
          sum[r][1], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(b1, a4)), ones));
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * 16 + q * 8), sum[r][q]);
}

// 8 lanes of qs8_gemm.h's requantization. srdhm for multiplier m >= 0: |x| * m as unsigned
// 64-bit products (|INT32_MIN| = 2^31 is right as unsigned), plus gemmlowp's nudge (2^30, or
// 2^30 - 1 when x < 0, which is its 1 - 2^30 on the negated value), shifted down by 31, and
// the sign put back. rdbpot as gemmlowp writes it, with per-lane shifts.
inline __m256i requantize_8_avx2(__m256i x, __m256i multiplier, __m256i shift, __m256i zero_point, __m256i lo,
                                 __m256i hi) {
  const __m256i magnitude = _mm256_abs_epi32(x);
  const __m256i negative = _mm256_srai_epi32(x, 31);
  const __m256i half = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i nudge_even = _mm256_add_epi64(half, _mm256_shuffle_epi32(negative, _MM_SHUFFLE(2, 2, 0, 0)));
  const __m256i nudge_odd = _mm256_add_epi64(half, _mm256_shuffle_epi32(negative, _MM_SHUFFLE(3, 3, 1, 1)));
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(magnitude, multiplier), nudge_even), 31);
  const __m256i odd = _mm256_srli_epi64(
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(magnitude, 32), _mm256_srli_epi64(multiplier, 32)),
                       nudge_odd),
      31);
  const __m256i high = _mm256_sign_epi32(_mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA), x);

  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), shift), _mm256_set1_epi32(1));
  const __m256i remainder = _mm256_and_si256(high, mask);
  const __m256i threshold = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_srai_epi32(high, 31));
  const __m256i rounded =
      _mm256_sub_epi32(_mm256_srav_epi32(high, shift), _mm256_cmpgt_epi32(remainder, threshold));
  // Clamped to [lo - zp, hi - zp] before the zero point is added, so that nothing wraps.
  const __m256i clamped = _mm256_min_epi32(_mm256_max_epi32(rounded, _mm256_sub_epi32(lo, zero_point)),
                                           _mm256_sub_epi32(hi, zero_point));
  return _mm256_add_epi32(clamped, zero_point);
}

// 8 int32 lanes (each within int8) -> 8 bytes.
inline int64_t narrow_8_avx2(__m256i v) {
  const __m128i packed16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return _mm_cvtsi128_si64(_mm_packs_epi16(packed16, packed16));
}

inline void qs8_requantize_avx2(int64_t n, const int32_t* acc, const int32_t* bias, const int32_t* multiplier,
                                const int32_t* shift, int32_t zero_point, int32_t lo, int32_t hi, int8_t* out) {
  const __m256i zp = _mm256_set1_epi32(zero_point), low = _mm256_set1_epi32(lo), high = _mm256_set1_epi32(hi);
  auto load = [](const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i x = _mm256_add_epi32(load(acc + j), load(bias + j));
    const int64_t bytes = narrow_8_avx2(requantize_8_avx2(x, load(multiplier + j), load(shift + j), zp, low, high));
    std::memcpy(out + j, &bytes, 8);
  }
  if (j < n) {  // the tail on zero-padded copies
    int32_t x[8] = {}, m[8] = {}, s[8] = {};
    for (int64_t i = j; i < n; ++i) {
      x[i - j] = acc[i] + bias[i];
      m[i - j] = multiplier[i];
      s[i - j] = shift[i];
    }
    const int64_t bytes = narrow_8_avx2(requantize_8_avx2(load(x), load(m), load(s), zp, low, high));
    std::memcpy(out + j, &bytes, static_cast<size_t>(n - j));
  }
}
#endif

}  // namespace
}  // namespace rg
