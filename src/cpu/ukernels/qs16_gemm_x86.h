// The int16 GEMM tiles on x86 vectors (contract: qs16_gemm.h). Raw intrinsics (xsimd 8.1 has no
// pmaddwd). Include ONLY from an isa/*.cpp file (see f32_gemm_impl.h for why); everything here
// has internal linkage for the same reason.
//
// One pair step of a row: the row's (k, k+1) pair broadcast to every 32-bit lane, times the
// panel's NR columns of that pair (pmaddwd: lane j = a_k b_kj + a_k+1 b_k+1,j), added to the
// row's int32 sums. Per 8 multiply-adds: one pmaddwd and one paddd (SSE2), against f32 SSE2's
// mulps + addps per 4; in all (loads, broadcasts, a copy a row) 33 instructions per 64 in the
// SSE2 4x8 tile.
#pragma once

#include <immintrin.h>

#include "cpu/ukernels/qs16_gemm.h"
#include "cpu/ukernels/qs8_gemm_x86.h"  // load_group, tile_rows

namespace rg {
namespace {

#if defined(__SSE2__)
// One row's pair step on SSE2: the pair broadcast, times both halves of the panel, into the
// row's two sums. Written so that GCC's two-operand code needs one register copy a row: with
// the sums in an array and `sum = add(sum, madd(pair, b))` it kept three copies a row and
// spilled a sum (48 instructions a pair step of the 4x8 tile instead of 33; perf on cnn w12a12g12
// at RETROGRAD_ISA=sse2: the tile 71% of the run).
inline void qs16_row_step_sse2(const int16_t* row, __m128i b0, __m128i b1, __m128i& s0, __m128i& s1) {
  const __m128i pair = _mm_set1_epi32(load_group(row));
  s0 = _mm_add_epi32(_mm_madd_epi16(b0, pair), s0);
  s1 = _mm_add_epi32(_mm_madd_epi16(pair, b1), s1);
}

inline void qs16_gemm_4x8_sse2(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                               int32_t* acc) {
  const int16_t* rows[4];
  tile_rows(mr, a, lda, rows);
  const int16_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  __m128i s00 = _mm_setzero_si128(), s01 = s00, s10 = s00, s11 = s00, s20 = s00, s21 = s00, s30 = s00, s31 = s00;
  for (int64_t g = 0; g < kpairs; ++g) {
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 16));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 16 + 8));
    qs16_row_step_sse2(r0 + 2 * g, b0, b1, s00, s01);
    qs16_row_step_sse2(r1 + 2 * g, b0, b1, s10, s11);
    qs16_row_step_sse2(r2 + 2 * g, b0, b1, s20, s21);
    qs16_row_step_sse2(r3 + 2 * g, b0, b1, s30, s31);
  }
  const __m128i sums[8] = {s00, s01, s10, s11, s20, s21, s30, s31};
  for (int t = 0; t < 8; ++t) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + t * 4), sums[t]);
}

inline void store4_sse2(int32_t* out, __m128i v0, __m128i v1, __m128i v2, __m128i v3) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4), v1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 8), v2);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 12), v3);
}

// A split B's 2x8 tile (Qs16SplitTile): a row's pair broadcast once, times both halves of the
// high bytes' and the low bytes' panels, 8 sums in registers. GCC loads the 4 panel vectors
// again for the second row instead of copying them: a pair step is 8 loads, 2 x (movd +
// pshufd), 8 pmaddwd, 8 paddd and the loop's 4, 32 instructions for 32 multiply-adds.
inline void qs16_split_2x8_sse2(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_hi,
                                const int16_t* packed_lo, int32_t* acc_hi, int32_t* acc_lo) {
  const int16_t* rows[2];
  tile_rows(mr, a, lda, rows);
  const int16_t *r0 = rows[0], *r1 = rows[1];
  __m128i h00 = _mm_setzero_si128(), h01 = h00, l00 = h00, l01 = h00, h10 = h00, h11 = h00, l10 = h00, l11 = h00;
  for (int64_t g = 0; g < kpairs; ++g) {
    const __m128i hi0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_hi + g * 16));
    const __m128i hi1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_hi + g * 16 + 8));
    const __m128i lo0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_lo + g * 16));
    const __m128i lo1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_lo + g * 16 + 8));
    qs16_row_step_sse2(r0 + 2 * g, hi0, hi1, h00, h01);
    qs16_row_step_sse2(r0 + 2 * g, lo0, lo1, l00, l01);
    qs16_row_step_sse2(r1 + 2 * g, hi0, hi1, h10, h11);
    qs16_row_step_sse2(r1 + 2 * g, lo0, lo1, l10, l11);
  }
  store4_sse2(acc_hi, h00, h01, h10, h11);
  store4_sse2(acc_lo, l00, l01, l10, l11);
}
#endif

#if defined(__AVX2__)
inline void qs16_gemm_4x16_avx2(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                                int32_t* acc) {
  const int16_t* rows[4];
  tile_rows(mr, a, lda, rows);
  __m256i sum[4][2];
  for (auto& row : sum) row[0] = row[1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < kpairs; ++g) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed_b + g * 32));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed_b + g * 32 + 16));
    for (int r = 0; r < 4; ++r) {
      const __m256i pair = _mm256_set1_epi32(load_group(rows[r] + 2 * g));
      sum[r][0] = _mm256_add_epi32(sum[r][0], _mm256_madd_epi16(pair, b0));
      sum[r][1] = _mm256_add_epi32(sum[r][1], _mm256_madd_epi16(pair, b1));
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * 16 + q * 8), sum[r][q]);
}
#endif

#if defined(__AVX512BW__)
inline void qs16_gemm_8x16_avx512(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                                  int32_t* acc) {
  const int16_t* rows[8];
  tile_rows(mr, a, lda, rows);
  __m512i sum[8];
  for (auto& row : sum) row = _mm512_setzero_si512();
  for (int64_t g = 0; g < kpairs; ++g) {
    const __m512i b = _mm512_loadu_si512(packed_b + g * 32);
    for (int r = 0; r < 8; ++r) {
      sum[r] = _mm512_add_epi32(sum[r], _mm512_madd_epi16(_mm512_set1_epi32(load_group(rows[r] + 2 * g)), b));
    }
  }
  for (int r = 0; r < 8; ++r) _mm512_storeu_si512(acc + r * 16, sum[r]);
}
#endif

}  // namespace
}  // namespace rg
