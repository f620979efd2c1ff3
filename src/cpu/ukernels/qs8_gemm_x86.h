// The int8 GEMM tiles and requantization on x86 vectors (contracts: qs8_gemm.h). Raw
// intrinsics: xsimd 8.1 has no pmaddwd or pmaddubsw. Include ONLY from an isa/*.cpp file
// (see f32_gemm_impl.h for why); everything here has internal linkage for the same reason.
#pragma once

#include <immintrin.h>

#include <cstring>

#include "cpu/ukernels/qs8_gemm.h"

namespace rg {
namespace {

// 4 bytes of A (one k group of one row: 4 int8, or a pair of int16) as an int32.
inline int32_t load_group(const void* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Rows past mr read the last live row again (never outside A); their sums are not used.
template <int MR, class T>
inline void tile_rows(int64_t mr, const T* a, int64_t lda, const T* (&rows)[MR]) {
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

// One row's group step: the row's 4 values widened, its (k0, k1) and (k2, k3) pairs broadcast,
// times both halves of the panel, into the row's two sums. The sums are named locals of the
// caller and each product comes before the add: GCC's two-operand SSE2 code then keeps every
// sum in a register (with sum[4][2] as an array and `sum = add(sum, madd(..))` it spilled and
// copied; the same lesson as qs16_gemm_x86.h's tile).
inline void qs8_row_step_sse2(const int8_t* row, __m128i b01_0, __m128i b23_0, __m128i b01_1, __m128i b23_1,
                              __m128i& s0, __m128i& s1) {
  const __m128i a16 = widen_lo(_mm_cvtsi32_si128(load_group(row)));  // [k0 k1 k2 k3 ...]
  const __m128i a01 = _mm_shuffle_epi32(a16, _MM_SHUFFLE(0, 0, 0, 0));
  const __m128i a23 = _mm_shuffle_epi32(a16, _MM_SHUFFLE(1, 1, 1, 1));
  s0 = _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(b01_0, a01), _mm_madd_epi16(b23_0, a23)), s0);
  s1 = _mm_add_epi32(_mm_add_epi32(_mm_madd_epi16(a01, b01_1), _mm_madd_epi16(a23, b23_1)), s1);
}

// Sums of a 4x8 tile, sum[r][q] = columns 4q .. 4q + 3 of row r.
inline void qs8_sums_4x8_sse2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                              __m128i (&sum)[4][2]) {
  const int8_t* rows[4];
  tile_rows(mr, a, lda, rows);
  const int8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  __m128i s00 = _mm_setzero_si128(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  for (int64_t g = 0; g < kgroups; ++g) {
    __m128i b01_0, b23_0, b01_1, b23_1;
    quad_pairs(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32)), &b01_0, &b23_0);
    quad_pairs(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32 + 16)), &b01_1, &b23_1);
    qs8_row_step_sse2(r0 + 4 * g, b01_0, b23_0, b01_1, b23_1, s00, s01);
    qs8_row_step_sse2(r1 + 4 * g, b01_0, b23_0, b01_1, b23_1, s10, s11);
    qs8_row_step_sse2(r2 + 4 * g, b01_0, b23_0, b01_1, b23_1, s20, s21);
    qs8_row_step_sse2(r3 + 4 * g, b01_0, b23_0, b01_1, b23_1, s30, s31);
  }
  sum[0][0] = s00, sum[0][1] = s01, sum[1][0] = s10, sum[1][1] = s11;
  sum[2][0] = s20, sum[2][1] = s21, sum[3][0] = s30, sum[3][1] = s31;
}

inline void qs8_gemm_4x8_sse2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                              int32_t* acc) {
  __m128i sum[4][2];
  qs8_sums_4x8_sse2(mr, kgroups, a, lda, packed_b, sum);
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + r * 8 + q * 4), sum[r][q]);
}

// Requantization on SSE2 (qs8_gemm.h's formula, bit for bit). SSE2 has pmuludq (unsigned
// 32x32->64 on lanes 0 and 2) but no signed product and no per-lane shift, so:
// - srdhm on |x| * m as unsigned 64-bit products (|INT32_MIN| = 2^31 is right as unsigned),
//   + the nudge 2^30 (2^30 - 1 for x < 0), >> 31, the sign put back (AVX2 and AVX-512 take
//   signed products instead: requantize_8_avx2);
// - x >> e per lane as a product too: with u = x + 2^31 (unsigned), floor(u / 2^e) =
//   (u * 2^(31 - e)) >> 31, and x >> e = floor(u / 2^e) - 2^(31 - e) (mod 2^32);
// - the clamp on int16 (packssdw saturates, and [lo - zp, hi - zp] lies inside int16).
// Per-lane constants of 4 columns: multiplier, 2^(31 - e) and 2^e - 1.
struct RequantLanesSse2 {
  __m128i bias, multiplier, pow, mask;
};

// 2^k per lane for k in [0, 31], from the float 2^k (its exponent field); cvttps2dq answers
// 2^31 with its out-of-range value 0x80000000, which is 2^31's bit pattern as unsigned.
inline __m128i pow2_sse2(__m128i k) {
  return _mm_cvttps_epi32(_mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(k, _mm_set1_epi32(127)), 23)));
}

inline RequantLanesSse2 requant_lanes_sse2(__m128i bias, __m128i multiplier, __m128i shift) {
  RequantLanesSse2 k;
  k.bias = bias;
  k.multiplier = multiplier;
  k.pow = pow2_sse2(_mm_sub_epi32(_mm_set1_epi32(31), shift));
  k.mask = _mm_sub_epi32(pow2_sse2(shift), _mm_set1_epi32(1));
  return k;
}

inline RequantLanesSse2 requant_lanes_sse2(const Qs8Requant* rq, int64_t j) {
  auto load = [](const int32_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  return requant_lanes_sse2(load(rq->bias + j), load(rq->multiplier + j), load(rq->shift + j));
}

// Lanes 0 and 2 of lo with lanes 1 and 3 of hi, where lo's and hi's 64-bit lanes hold
// values below 2^32: (a 64-bit lane of each product, shifted back into its 32-bit lane).
inline __m128i even_odd_sse2(__m128i lo, __m128i hi) { return _mm_or_si128(lo, _mm_slli_epi64(hi, 32)); }

// acc (bias not yet added) -> rdbpot(srdhm(acc + bias, m), e), not yet offset or clamped.
inline __m128i requantize_4_sse2(__m128i acc, const RequantLanesSse2& k) {
  const __m128i x = _mm_add_epi32(acc, k.bias);
  const __m128i negative = _mm_srai_epi32(x, 31);
  const __m128i magnitude = _mm_sub_epi32(_mm_xor_si128(x, negative), negative);
  const __m128i half = _mm_set_epi32(0, 1 << 30, 0, 1 << 30);
  const __m128i nudge_even = _mm_add_epi64(half, _mm_shuffle_epi32(negative, _MM_SHUFFLE(2, 2, 0, 0)));
  const __m128i nudge_odd = _mm_add_epi64(half, _mm_shuffle_epi32(negative, _MM_SHUFFLE(3, 3, 1, 1)));
  const __m128i even = _mm_srli_epi64(_mm_add_epi64(_mm_mul_epu32(magnitude, k.multiplier), nudge_even), 31);
  const __m128i odd = _mm_srli_epi64(
      _mm_add_epi64(_mm_mul_epu32(_mm_srli_epi64(magnitude, 32), _mm_srli_epi64(k.multiplier, 32)), nudge_odd), 31);
  const __m128i high = _mm_sub_epi32(_mm_xor_si128(even_odd_sse2(even, odd), negative), negative);

  const __m128i biased = _mm_xor_si128(high, _mm_set1_epi32(static_cast<int32_t>(0x80000000u)));
  const __m128i floor_even = _mm_srli_epi64(_mm_mul_epu32(biased, k.pow), 31);
  const __m128i floor_odd = _mm_srli_epi64(_mm_mul_epu32(_mm_srli_epi64(biased, 32), _mm_srli_epi64(k.pow, 32)), 31);
  const __m128i shifted = _mm_sub_epi32(even_odd_sse2(floor_even, floor_odd), k.pow);
  const __m128i remainder = _mm_and_si128(high, k.mask);
  const __m128i threshold = _mm_sub_epi32(_mm_srli_epi32(k.mask, 1), _mm_srai_epi32(high, 31));
  return _mm_sub_epi32(shifted, _mm_cmpgt_epi32(remainder, threshold));
}

// Two requantized vectors -> 8 bytes (the low half): + zero point and the clamp, on int16.
struct RequantRangeSse2 {
  __m128i zero_point, lo, hi;  // int16 lanes
};
inline RequantRangeSse2 requant_range_sse2(int32_t zero_point, int32_t lo, int32_t hi) {
  return {_mm_set1_epi16(static_cast<int16_t>(zero_point)), _mm_set1_epi16(static_cast<int16_t>(lo)),
          _mm_set1_epi16(static_cast<int16_t>(hi))};
}
inline __m128i narrow_8_sse2(__m128i a, __m128i b, const RequantRangeSse2& range) {
  const __m128i v = _mm_adds_epi16(_mm_packs_epi32(a, b), range.zero_point);
  const __m128i clamped = _mm_min_epi16(_mm_max_epi16(v, range.lo), range.hi);
  return _mm_packs_epi16(clamped, clamped);
}

// The low nc (<= 16) bytes of v to c. (Internal linkage: the avx2 file gets its own VEX-encoded copy.)
inline void store_bytes_sse2(int8_t* c, __m128i v, int64_t nc) {
  if (nc == 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(c), v);
    return;
  }
  if (nc == 8) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(c), v);
    return;
  }
  alignas(16) int8_t bytes[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(bytes), v);
  int64_t j = 0;
  if (nc - j >= 8) { std::memcpy(c + j, bytes + j, 8); j += 8; }
  if (nc - j >= 4) { std::memcpy(c + j, bytes + j, 4); j += 4; }
  if (nc - j >= 2) { std::memcpy(c + j, bytes + j, 2); j += 2; }
  if (nc - j >= 1) c[j] = bytes[j];
}

// The requantization epilogue of a 4x8 tile held as sum[r][q] (4 columns each).
inline void requant_store_4x8_sse2(int64_t mr, int64_t nc, const __m128i (&sum)[4][2], const Qs8Requant* rq,
                                   int8_t* c, int64_t ldc) {
  const RequantLanesSse2 k0 = requant_lanes_sse2(rq, 0), k1 = requant_lanes_sse2(rq, 4);
  const RequantRangeSse2 range = requant_range_sse2(rq->zero_point, rq->lo, rq->hi);
  for (int r = 0; r < 4 && r < mr; ++r)
    store_bytes_sse2(c + r * ldc,
                     narrow_8_sse2(requantize_4_sse2(sum[r][0], k0), requantize_4_sse2(sum[r][1], k1), range), nc);
}

inline void qs8_gemm_requant_4x8_sse2(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                      const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  __m128i sum[4][2];
  qs8_sums_4x8_sse2(mr, kgroups, a, lda, packed_b, sum);
  requant_store_4x8_sse2(mr, nc, sum, rq, c, ldc);
}

// A row of n requantized outputs, 8 at a time.
inline void qs8_requantize_sse2(int64_t n, const int32_t* acc, const int32_t* bias, const int32_t* multiplier,
                                const int32_t* shift, int32_t zero_point, int32_t lo, int32_t hi, int8_t* out) {
  const RequantRangeSse2 range = requant_range_sse2(zero_point, lo, hi);
  auto load = [](const int32_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const RequantLanesSse2 k0 = requant_lanes_sse2(load(bias + j), load(multiplier + j), load(shift + j));
    const RequantLanesSse2 k1 = requant_lanes_sse2(load(bias + j + 4), load(multiplier + j + 4), load(shift + j + 4));
    store_bytes_sse2(out + j,
                     narrow_8_sse2(requantize_4_sse2(load(acc + j), k0), requantize_4_sse2(load(acc + j + 4), k1), range),
                     8);
  }
  if (j < n) {  // the tail on zero-padded copies
    alignas(16) int32_t x[8] = {}, b[8] = {}, m[8] = {}, s[8] = {};
    for (int64_t i = j; i < n; ++i) {
      x[i - j] = acc[i];
      b[i - j] = bias[i];
      m[i - j] = multiplier[i];
      s[i - j] = shift[i];
    }
    const RequantLanesSse2 k0 = requant_lanes_sse2(load(b), load(m), load(s));
    const RequantLanesSse2 k1 = requant_lanes_sse2(load(b + 4), load(m + 4), load(s + 4));
    store_bytes_sse2(out + j, narrow_8_sse2(requantize_4_sse2(load(x), k0), requantize_4_sse2(load(x + 4), k1), range),
                     n - j);
  }
}
#endif

#if defined(__SSSE3__)
// SSSE3: pmaddubsw(|a|, sign(b, a)) = pairs a*b in int16, exact for |b| <= 127 (qs8_gemm.h);
// pmaddwd with ones adds the pairs into int32 [c0 c1 c2 c3].
// One row's group step on SSSE3 (pmaddubsw takes unsigned x signed: |a| times b with a's sign
// moved onto b), into the row's two sums; named sums and products before adds, as
// qs8_row_step_sse2 (GCC spilled the array form).
inline void qs8_row_step_ssse3(const int8_t* row, __m128i b0, __m128i b1, __m128i ones, __m128i& s0, __m128i& s1) {
  const __m128i a4 = _mm_set1_epi32(load_group(row));
  const __m128i magnitude = _mm_abs_epi8(a4);
  s0 = _mm_add_epi32(_mm_madd_epi16(_mm_maddubs_epi16(magnitude, _mm_sign_epi8(b0, a4)), ones), s0);
  s1 = _mm_add_epi32(_mm_madd_epi16(_mm_maddubs_epi16(magnitude, _mm_sign_epi8(b1, a4)), ones), s1);
}

inline void qs8_sums_4x8_ssse3(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                               __m128i (&sum)[4][2]) {
  const int8_t* rows[4];
  tile_rows(mr, a, lda, rows);
  const int8_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  const __m128i ones = _mm_set1_epi16(1);
  __m128i s00 = _mm_setzero_si128(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  for (int64_t g = 0; g < kgroups; ++g) {
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 32 + 16));
    qs8_row_step_ssse3(r0 + 4 * g, b0, b1, ones, s00, s01);
    qs8_row_step_ssse3(r1 + 4 * g, b0, b1, ones, s10, s11);
    qs8_row_step_ssse3(r2 + 4 * g, b0, b1, ones, s20, s21);
    qs8_row_step_ssse3(r3 + 4 * g, b0, b1, ones, s30, s31);
  }
  sum[0][0] = s00, sum[0][1] = s01, sum[1][0] = s10, sum[1][1] = s11;
  sum[2][0] = s20, sum[2][1] = s21, sum[3][0] = s30, sum[3][1] = s31;
}

inline void qs8_gemm_4x8_ssse3(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                               int32_t* acc) {
  __m128i sum[4][2];
  qs8_sums_4x8_ssse3(mr, kgroups, a, lda, packed_b, sum);
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + r * 8 + q * 4), sum[r][q]);
}

inline void qs8_gemm_requant_4x8_ssse3(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                       const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  __m128i sum[4][2];
  qs8_sums_4x8_ssse3(mr, kgroups, a, lda, packed_b, sum);
  requant_store_4x8_sse2(mr, nc, sum, rq, c, ldc);
}
#endif

#if defined(__AVX2__)
// AVX2: the SSSE3 scheme on 8 columns per register (each 128-bit half holds 4 columns);
// V registers per row: 4x16 (V = 2) or the narrow 4x8 (V = 1).
template <int V>
inline void qs8_sums_avx2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                          __m256i (&sum)[4][V]) {
  const int8_t* rows[4];
  tile_rows(mr, a, lda, rows);
  const __m256i ones = _mm256_set1_epi16(1);
  for (auto& row : sum)
    for (auto& v : row) v = _mm256_setzero_si256();
  for (int64_t g = 0; g < kgroups; ++g) {
    __m256i b[V];
    for (int q = 0; q < V; ++q) b[q] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed_b + (g * V + q) * 32));
    for (int r = 0; r < 4; ++r) {
      const __m256i a4 = _mm256_set1_epi32(load_group(rows[r] + 4 * g));
      const __m256i magnitude = _mm256_abs_epi8(a4);
      for (int q = 0; q < V; ++q)
        sum[r][q] = _mm256_add_epi32(
            sum[r][q], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, _mm256_sign_epi8(b[q], a4)), ones));
    }
  }
}

template <int V>
inline void qs8_gemm_4xv_avx2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                              int32_t* acc) {
  __m256i sum[4][V];
  qs8_sums_avx2<V>(mr, kgroups, a, lda, packed_b, sum);
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < V; ++q) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * 8 * V + q * 8), sum[r][q]);
}

inline void qs8_gemm_4x16_avx2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                               int32_t* acc) {
  qs8_gemm_4xv_avx2<2>(mr, kgroups, a, lda, packed_b, acc);
}

// 8 lanes of qs8_gemm.h's requantization. srdhm for a multiplier m in [2^30, 2^31) or 0 is
// floor((x m + 2^30) / 2^31) for every x: gemmlowp's truncating division of x m + (1 - 2^30) when
// x m < 0 is the ceiling there, the same value. So the signed 64-bit products (vpmuldq, even
// lanes; the odd ones shifted down first) plus 2^30, and bits 31..62 of each (the result fits in
// int32, so a logical shift gives its bits): the even lanes shifted down by 31, the odd ones up
// by 1 into their high halves, blended. rdbpot as gemmlowp writes it, with per-lane shifts.
inline __m256i requantize_8_avx2(__m256i x, __m256i multiplier, __m256i shift, __m256i zero_point, __m256i lo,
                                 __m256i hi) {
  const __m256i half = _mm256_set1_epi64x(int64_t{1} << 30);
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, multiplier), half), 31);
  const __m256i odd = _mm256_slli_epi64(
      _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(multiplier, 32)), half), 1);
  const __m256i high = _mm256_blend_epi32(even, odd, 0xAA);

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
  int64_t bytes;  // a store, not _mm_cvtsi128_si64: that needs a 64-bit register (no i686)
  _mm_storel_epi64(reinterpret_cast<__m128i*>(&bytes), _mm_packs_epi16(packed16, packed16));
  return bytes;
}

// 16 int32 lanes (each within int8) -> 16 bytes.
inline __m128i narrow_16_avx2(__m256i v0, __m256i v1) {
  const __m128i lo = _mm_packs_epi32(_mm256_castsi256_si128(v0), _mm256_extracti128_si256(v0, 1));
  const __m128i hi = _mm_packs_epi32(_mm256_castsi256_si128(v1), _mm256_extracti128_si256(v1, 1));
  return _mm_packs_epi16(lo, hi);
}

// A tile's sums (qs8_sums_avx2's layout) requantized and stored: rows < mr, columns < nc.
template <int V>
inline void requant_store_4xv_avx2(int64_t mr, int64_t nc, const __m256i (&sum)[4][V], const Qs8Requant* rq, int8_t* c,
                                   int64_t ldc) {
  auto load = [](const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  const __m256i zp = _mm256_set1_epi32(rq->zero_point), low = _mm256_set1_epi32(rq->lo),
                high = _mm256_set1_epi32(rq->hi);
  __m256i bias[V], multiplier[V], shift[V];
  for (int q = 0; q < V; ++q) {
    bias[q] = load(rq->bias + 8 * q);
    multiplier[q] = load(rq->multiplier + 8 * q);
    shift[q] = load(rq->shift + 8 * q);
  }
  for (int r = 0; r < 4 && r < mr; ++r) {
    __m256i y[2];
    for (int q = 0; q < V; ++q)
      y[q] = requantize_8_avx2(_mm256_add_epi32(sum[r][q], bias[q]), multiplier[q], shift[q], zp, low, high);
    if (V == 1) y[1] = y[0];
    store_bytes_sse2(c + r * ldc, narrow_16_avx2(y[0], y[1]), nc);
  }
}

template <int V>
inline void qs8_gemm_requant_4xv_avx2(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                      const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  __m256i sum[4][V];
  qs8_sums_avx2<V>(mr, kgroups, a, lda, packed_b, sum);
  requant_store_4xv_avx2<V>(mr, nc, sum, rq, c, ldc);
}

#if defined(__AVX512F__)
// requantize_8_avx2's arithmetic on 16 lanes, the same bits (rdbpot's compare into a mask).
inline __m512i requantize_16_avx512(__m512i x, __m512i multiplier, __m512i shift, __m512i zero_point, __m512i lo,
                                    __m512i hi) {
  const __m512i half = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, multiplier), half), 31);
  const __m512i odd = _mm512_slli_epi64(
      _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), _mm512_srli_epi64(multiplier, 32)), half), 1);
  const __m512i high = _mm512_mask_blend_epi32(0xAAAA, even, odd);

  const __m512i one = _mm512_set1_epi32(1);
  const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, shift), one);
  const __m512i remainder = _mm512_and_si512(high, mask);
  const __m512i threshold = _mm512_sub_epi32(_mm512_srli_epi32(mask, 1), _mm512_srai_epi32(high, 31));
  const __m512i shifted = _mm512_srav_epi32(high, shift);
  const __m512i rounded =
      _mm512_mask_add_epi32(shifted, _mm512_cmpgt_epi32_mask(remainder, threshold), shifted, one);
  const __m512i clamped = _mm512_min_epi32(_mm512_max_epi32(rounded, _mm512_sub_epi32(lo, zero_point)),
                                           _mm512_sub_epi32(hi, zero_point));
  return _mm512_add_epi32(clamped, zero_point);
}
#endif

#if defined(__AVX512VNNI__)
// AVX-512 VNNI: vpdpbusd adds the 4 products of unsigned bytes of one operand and signed bytes
// of the other into each int32 lane, so one instruction a row takes a k group of 16 columns (the
// 16-column panel's 64 bytes, column j's 4 bytes in lane j: qs8_gemm.h's packing as it is). A is
// signed: a ^ 0x80 is a + 128 as an unsigned byte, which adds 128 x (the column's sum of B) to
// every sum; one more vpdpbusd of ones gives those column sums, taken off at the end. Exact int32
// (no saturating step, unlike pmaddubsw), so the same sums as every other level. 8 rows: with
// the column sums 9 chains in flight (vpdpbusd takes 5 cycles and issues 2 a cycle on Intel's
// server cores, where 4 rows kept the units half busy).
template <int MR>
inline void qs8_sums_vnni(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                          __m512i (&sum)[MR]) {
  const int8_t* rows[MR];
  tile_rows(mr, a, lda, rows);
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u)), ones = _mm512_set1_epi8(1);
  __m512i acc[MR];
  for (auto& x : acc) x = _mm512_setzero_si512();
  __m512i column_sums = _mm512_setzero_si512();
  for (int64_t g = 0; g < kgroups; ++g) {
    const __m512i b = _mm512_loadu_si512(packed_b + g * 64);
    column_sums = _mm512_dpbusd_epi32(column_sums, ones, b);
    for (int r = 0; r < MR; ++r)
      acc[r] = _mm512_dpbusd_epi32(acc[r], _mm512_xor_si512(_mm512_set1_epi32(load_group(rows[r] + 4 * g)), flip), b);
  }
  const __m512i offset = _mm512_slli_epi32(column_sums, 7);
  for (int r = 0; r < MR; ++r) sum[r] = _mm512_sub_epi32(acc[r], offset);
}

// Those sums requantized on all 16 lanes and stored: rows < mr, columns < nc.
template <int MR>
inline void requant_store_vnni(int64_t mr, int64_t nc, const __m512i (&sum)[MR], const Qs8Requant* rq, int8_t* c,
                               int64_t ldc) {
  const __m512i zp = _mm512_set1_epi32(rq->zero_point), low = _mm512_set1_epi32(rq->lo),
                high = _mm512_set1_epi32(rq->hi);
  const __m512i bias = _mm512_loadu_si512(rq->bias), multiplier = _mm512_loadu_si512(rq->multiplier),
                shift = _mm512_loadu_si512(rq->shift);
  for (int r = 0; r < MR && r < mr; ++r) {
    const __m512i q = requantize_16_avx512(_mm512_add_epi32(sum[r], bias), multiplier, shift, zp, low, high);
    store_bytes_sse2(c + r * ldc, _mm512_cvtsepi32_epi8(q), nc);
  }
}
#endif

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
