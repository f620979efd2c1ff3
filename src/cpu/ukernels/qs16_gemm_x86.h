// The int16 GEMM tiles on x86 vectors (contract: qs16_gemm.h). Raw intrinsics (xsimd 8.1 has no
// pmaddwd). Include ONLY from an isa/*.cpp file (see f32_gemm_impl.h for why); everything here
// has internal linkage for the same reason.
//
// One pair step of a row: the row's (k, k+1) pair broadcast to every 32-bit lane, times the
// panel's NR columns of that pair (pmaddwd: lane j = a_k b_kj + a_k+1 b_k+1,j), added to the
// row's int32 sums. Per 8 multiply-adds: one pmaddwd and one paddd (SSE2), against f32 SSE2's
// mulps + addps per 4.
#pragma once

#include <immintrin.h>

#include "cpu/ukernels/qs16_gemm.h"
#include "cpu/ukernels/qs8_gemm_x86.h"  // load_group, tile_rows

namespace rg {
namespace {

#if defined(__SSE2__)
inline void qs16_gemm_4x8_sse2(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                               int32_t* acc) {
  const int16_t* rows[4];
  tile_rows(mr, a, lda, rows);
  __m128i sum[4][2];
  for (auto& row : sum) row[0] = row[1] = _mm_setzero_si128();
  for (int64_t g = 0; g < kpairs; ++g) {
    const __m128i b0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 16));
    const __m128i b1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed_b + g * 16 + 8));
    for (int r = 0; r < 4; ++r) {
      const __m128i pair = _mm_set1_epi32(load_group(rows[r] + 2 * g));
      sum[r][0] = _mm_add_epi32(sum[r][0], _mm_madd_epi16(pair, b0));
      sum[r][1] = _mm_add_epi32(sum[r][1], _mm_madd_epi16(pair, b1));
    }
  }
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm_storeu_si128(reinterpret_cast<__m128i*>(acc + r * 8 + q * 4), sum[r][q]);
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
