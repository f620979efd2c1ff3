// The Winograd F(2x2, 3x3) int8 kernels on x86 vectors (contracts: qs8_winograd.h). Include
// ONLY from an isa/*.cpp file: everything here has internal linkage (see qs8_gemm_x86.h).
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "cpu/ukernels/qs8_gemm_x86.h"
#include "cpu/ukernels/qs8_winograd.h"

namespace rg {
namespace {

#if defined(__SSE2__)
inline __m128i add16(__m128i a, __m128i b) { return _mm_add_epi16(a, b); }
inline __m128i sub16(__m128i a, __m128i b) { return _mm_sub_epi16(a, b); }
inline __m128i add32(__m128i a, __m128i b) { return _mm_add_epi32(a, b); }
inline __m128i sub32(__m128i a, __m128i b) { return _mm_sub_epi32(a, b); }
#endif
#if defined(__AVX2__)
inline __m256i add16(__m256i a, __m256i b) { return _mm256_add_epi16(a, b); }
inline __m256i sub16(__m256i a, __m256i b) { return _mm256_sub_epi16(a, b); }
inline __m256i add32(__m256i a, __m256i b) { return _mm256_add_epi32(a, b); }
inline __m256i sub32(__m256i a, __m256i b) { return _mm256_sub_epi32(a, b); }
#endif
#if defined(__AVX512F__) && defined(__AVX512BW__)
inline __m512i add16(__m512i a, __m512i b) { return _mm512_add_epi16(a, b); }
inline __m512i sub16(__m512i a, __m512i b) { return _mm512_sub_epi16(a, b); }
inline __m512i add32(__m512i a, __m512i b) { return _mm512_add_epi32(a, b); }
inline __m512i sub32(__m512i a, __m512i b) { return _mm512_sub_epi32(a, b); }
#endif

// V = B^T d B on 16 vectors d[4a + b] (int16 lanes), in place.
template <class Vec>
inline void winograd_input_4x4(Vec (&d)[16]) {
  auto bt = [](Vec& x0, Vec& x1, Vec& x2, Vec& x3) {  // [x0 - x2, x1 + x2, x2 - x1, x1 - x3]
    const Vec y0 = sub16(x0, x2), y1 = add16(x1, x2), y2 = sub16(x2, x1), y3 = sub16(x1, x3);
    x0 = y0, x1 = y1, x2 = y2, x3 = y3;
  };
  for (int a = 0; a < 4; ++a) bt(d[4 * a], d[4 * a + 1], d[4 * a + 2], d[4 * a + 3]);  // along each row
  for (int b = 0; b < 4; ++b) bt(d[b], d[4 + b], d[8 + b], d[12 + b]);              // along each column
}

// Y = A^T M A on 16 vectors m[4a + b] (int32 lanes) -> y[2 dy + dx].
template <class Vec>
inline void winograd_output_4x4(const Vec (&m)[16], Vec (&y)[4]) {
  Vec t0[4], t1[4];  // the rows of A^T M
  for (int b = 0; b < 4; ++b) {
    t0[b] = add32(add32(m[b], m[4 + b]), m[8 + b]);
    t1[b] = sub32(sub32(m[4 + b], m[8 + b]), m[12 + b]);
  }
  y[0] = add32(add32(t0[0], t0[1]), t0[2]);
  y[1] = sub32(sub32(t0[1], t0[2]), t0[3]);
  y[2] = add32(add32(t1[0], t1[1]), t1[2]);
  y[3] = sub32(sub32(t1[1], t1[2]), t1[3]);
}

#if defined(__SSE2__)
// 8 channels from c0 of the 16 pixels (through a zero-padded copy when fewer than 8 remain).
inline void winograd_input_8_sse2(int64_t channels, int64_t c0, const int8_t* const* px, int16_t* v,
                                  int64_t v_stride) {
  __m128i d[16];
  if (c0 + 8 <= channels) {
    for (int i = 0; i < 16; ++i) d[i] = widen_lo(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(px[i] + c0)));
  } else {
    const int64_t live = channels > c0 ? channels - c0 : 0;
    for (int i = 0; i < 16; ++i) {
      alignas(16) int8_t bytes[16] = {};
      std::memcpy(bytes, px[i] + c0, static_cast<size_t>(live));
      d[i] = widen_lo(_mm_load_si128(reinterpret_cast<const __m128i*>(bytes)));
    }
  }
  winograd_input_4x4(d);
  for (int p = 0; p < 16; ++p) _mm_storeu_si128(reinterpret_cast<__m128i*>(v + p * v_stride + c0), d[p]);
}

inline void qs8_winograd_input_sse2(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v,
                                    int64_t v_stride) {
  for (int64_t c0 = 0; c0 < cpad; c0 += 8) winograd_input_8_sse2(channels, c0, px, v, v_stride);
}

// Pair i of tile row `row` broadcast to every lane: S = i % 4 of the quad loaded at i - S.
template <int S>
inline __m128i pair_sse2(__m128i quad) {
  return _mm_shuffle_epi32(quad, _MM_SHUFFLE(S, S, S, S));
}

// One quad of input-channel pairs (i .. i + 3) into acc[MR][NV] (4 output channels a vector).
template <int MR, int NV, int S>
inline void winograd_quad_step_sse2(const __m128i (&quad)[MR], const int16_t* up, __m128i (&acc)[MR][NV]) {
  constexpr int NR = 4 * NV;
  __m128i b[NV];
  for (int q = 0; q < NV; ++q) b[q] = _mm_load_si128(reinterpret_cast<const __m128i*>(up + (S * NR + 4 * q) * 2));
  for (int r = 0; r < MR; ++r) {
    const __m128i a = pair_sse2<S>(quad[r]);
    for (int q = 0; q < NV; ++q) acc[r][q] = _mm_add_epi32(acc[r][q], _mm_madd_epi16(a, b[q]));
  }
  // Each step's sums stay in their registers: without this GCC reassociates the 4 steps' adds
  // into trees of products, which need more registers than there are and spill.
  for (auto& row : acc)
    for (auto& x : row) __asm__("" : "+x"(x));
}

// Lane-wise max of int32 without SSE4.1's pmaxsd.
inline __m128i max32_sse2(__m128i a, __m128i b) {
  const __m128i greater = _mm_cmpgt_epi32(a, b);
  return _mm_or_si128(_mm_and_si128(greater, a), _mm_andnot_si128(greater, b));
}

template <int MR, int NV>
inline void qs8_winograd_tile_sse2(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                   int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out) {
  static_assert(NV == 2 || NV == 4, "8 or 16 output channels");
  constexpr int NR = 4 * NV;
  alignas(16) int32_t m[16][MR][NR];
  const int16_t* rows[MR];
  for (int r = 0; r < MR; ++r) rows[r] = v + (r < mr ? r : mr - 1) * ldv;
  for (int p = 0; p < 16; ++p) {
    __m128i acc[MR][NV];
    for (auto& row : acc)
      for (auto& x : row) x = _mm_setzero_si128();
    const int16_t* up = u + p * cpairs * NR * 2;
    for (int64_t i = 0; i < cpairs; i += 4, up += 4 * NR * 2) {
      __m128i quad[MR];
      for (int r = 0; r < MR; ++r)
        quad[r] = _mm_load_si128(reinterpret_cast<const __m128i*>(rows[r] + p * v_stride + 2 * i));
      winograd_quad_step_sse2<MR, NV, 0>(quad, up, acc);
      winograd_quad_step_sse2<MR, NV, 1>(quad, up, acc);
      winograd_quad_step_sse2<MR, NV, 2>(quad, up, acc);
      winograd_quad_step_sse2<MR, NV, 3>(quad, up, acc);
    }
    for (int r = 0; r < MR; ++r)
      for (int q = 0; q < NV; ++q) _mm_store_si128(reinterpret_cast<__m128i*>(&m[p][r][4 * q]), acc[r][q]);
  }
  RequantLanesSse2 k[NV];
  for (int q = 0; q < NV; ++q) k[q] = requant_lanes_sse2(rq, 4 * q);
  const RequantRangeSse2 range = requant_range_sse2(rq->zero_point, rq->lo, rq->hi);
  const int pixels = pool ? 1 : 4;
  for (int r = 0; r < MR && r < mr; ++r) {
    __m128i y[NV][4];
    for (int q = 0; q < NV; ++q) {
      __m128i mv[16];
      for (int p = 0; p < 16; ++p) mv[p] = _mm_load_si128(reinterpret_cast<const __m128i*>(&m[p][r][4 * q]));
      winograd_output_4x4(mv, y[q]);
      if (pool) y[q][0] = max32_sse2(max32_sse2(y[q][0], y[q][1]), max32_sse2(y[q][2], y[q][3]));
      for (int i = 0; i < pixels; ++i) y[q][i] = requantize_4_sse2(_mm_srai_epi32(y[q][i], 2), k[q]);
    }
    for (int i = 0; i < pixels; ++i) {
      int8_t* o = out[pool ? r : 4 * r + i];
      if (o == nullptr) continue;
      __m128i bytes = narrow_8_sse2(y[0][i], y[1][i], range);  // 8 channels
      if (NV == 4) bytes = _mm_unpacklo_epi64(bytes, narrow_8_sse2(y[NV - 2][i], y[NV - 1][i], range));
      store_bytes_sse2(o, bytes, nc);
    }
  }
}
#endif

#if defined(__AVX2__)
// Channels from c0 on (0: all).
inline void qs8_winograd_input_avx2(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v,
                                    int64_t v_stride, int64_t c0 = 0) {
  for (; c0 + 16 <= channels; c0 += 16) {
    __m256i d[16];
    for (int i = 0; i < 16; ++i)
      d[i] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(px[i] + c0)));
    winograd_input_4x4(d);
    for (int p = 0; p < 16; ++p) _mm256_storeu_si256(reinterpret_cast<__m256i*>(v + p * v_stride + c0), d[p]);
  }
  for (; c0 < cpad; c0 += 8) winograd_input_8_sse2(channels, c0, px, v, v_stride);  // the last 8 or fewer
}

// A tile's products m[p][r][j] through the output transform, the requantization (and the pool).
template <int MR, int NV>
inline void qs8_winograd_output_avx2(int64_t mr, int64_t nc, const int32_t (&m)[16][MR][8 * NV], const Qs8Requant* rq,
                                     bool pool, int8_t* const* out) {
  auto load = [](const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); };
  const __m256i zp = _mm256_set1_epi32(rq->zero_point), low = _mm256_set1_epi32(rq->lo),
                high = _mm256_set1_epi32(rq->hi);
  const int pixels = pool ? 1 : 4;
  for (int r = 0; r < MR && r < mr; ++r) {
    __m256i y[NV][4];
    for (int q = 0; q < NV; ++q) {
      __m256i mv[16];
      for (int p = 0; p < 16; ++p) mv[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(&m[p][r][8 * q]));
      winograd_output_4x4(mv, y[q]);
      if (pool) y[q][0] = _mm256_max_epi32(_mm256_max_epi32(y[q][0], y[q][1]), _mm256_max_epi32(y[q][2], y[q][3]));
      const __m256i bias = load(rq->bias + 8 * q), multiplier = load(rq->multiplier + 8 * q),
                    shift = load(rq->shift + 8 * q);
      for (int i = 0; i < pixels; ++i)
        y[q][i] = requantize_8_avx2(_mm256_add_epi32(_mm256_srai_epi32(y[q][i], 2), bias), multiplier, shift, zp, low,
                                    high);
    }
    for (int i = 0; i < pixels; ++i)
      if (int8_t* o = out[pool ? r : 4 * r + i]) store_bytes_sse2(o, narrow_16_avx2(y[0][i], y[NV - 1][i]), nc);
  }
}

template <int MR, int NV>
inline void qs8_winograd_tile_avx2(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                   int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out) {
  static_assert(NV == 1 || NV == 2, "8 or 16 output channels");
  constexpr int NR = 8 * NV;
  alignas(32) int32_t m[16][MR][NR];
  const int16_t* rows[MR];
  for (int r = 0; r < MR; ++r) rows[r] = v + (r < mr ? r : mr - 1) * ldv;
  for (int p = 0; p < 16; ++p) {
    __m256i acc[MR][NV];
    for (auto& row : acc)
      for (auto& x : row) x = _mm256_setzero_si256();
    const int16_t* up = u + p * cpairs * NR * 2;
    const int64_t offset = p * v_stride;
    for (int64_t i = 0; i < cpairs; ++i, up += NR * 2) {
      __m256i b[NV];
      for (int q = 0; q < NV; ++q) b[q] = _mm256_load_si256(reinterpret_cast<const __m256i*>(up + 8 * q * 2));
      for (int r = 0; r < MR; ++r) {
        int32_t pair;
        std::memcpy(&pair, rows[r] + offset + 2 * i, sizeof pair);
        const __m256i a = _mm256_set1_epi32(pair);
        for (int q = 0; q < NV; ++q) acc[r][q] = _mm256_add_epi32(acc[r][q], _mm256_madd_epi16(a, b[q]));
      }
    }
    for (int r = 0; r < MR; ++r)
      for (int q = 0; q < NV; ++q) _mm256_store_si256(reinterpret_cast<__m256i*>(&m[p][r][8 * q]), acc[r][q]);
  }
  qs8_winograd_output_avx2<MR, NV>(mr, nc, m, rq, pool, out);
}
#endif

#if defined(__AVX512VNNI__)
// qs8_winograd_input_avx2 on 32 channels a zmm, then avx2's for the rest.
inline void qs8_winograd_input_avx512(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v,
                                      int64_t v_stride) {
  int64_t c0 = 0;
  for (; c0 + 32 <= channels; c0 += 32) {
    __m512i d[16];
    for (int i = 0; i < 16; ++i)
      d[i] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(px[i] + c0)));
    winograd_input_4x4(d);
    for (int p = 0; p < 16; ++p) _mm512_storeu_si512(v + p * v_stride + c0, d[p]);
  }
  qs8_winograd_input_avx2(channels, cpad, px, v, v_stride, c0);
}

// qs8_winograd_output_avx2 on NV zmm of 16 output channels each.
template <int MR, int NV>
inline void qs8_winograd_output_avx512(int64_t mr, int64_t nc, const int32_t (&m)[16][MR][16 * NV],
                                       const Qs8Requant* rq, bool pool, int8_t* const* out) {
  const __m512i zp = _mm512_set1_epi32(rq->zero_point), low = _mm512_set1_epi32(rq->lo),
                high = _mm512_set1_epi32(rq->hi);
  const int pixels = pool ? 1 : 4;
  for (int q = 0; q < NV && 16 * q < nc; ++q) {
    const __m512i bias = _mm512_loadu_si512(rq->bias + 16 * q);
    const __m512i multiplier = _mm512_loadu_si512(rq->multiplier + 16 * q);
    const __m512i shift = _mm512_loadu_si512(rq->shift + 16 * q);
    const int64_t live = std::min<int64_t>(16, nc - 16 * q);
    for (int r = 0; r < MR && r < mr; ++r) {
      __m512i mv[16], y[4];
      for (int p = 0; p < 16; ++p) mv[p] = _mm512_load_si512(&m[p][r][16 * q]);
      winograd_output_4x4(mv, y);
      if (pool) y[0] = _mm512_max_epi32(_mm512_max_epi32(y[0], y[1]), _mm512_max_epi32(y[2], y[3]));
      for (int i = 0; i < pixels; ++i) {
        const __m512i requantized = requantize_16_avx512(_mm512_add_epi32(_mm512_srai_epi32(y[i], 2), bias),
                                                         multiplier, shift, zp, low, high);
        int8_t* o = out[pool ? r : 4 * r + i];
        if (o != nullptr) store_bytes_sse2(o + 16 * q, _mm512_cvtsepi32_epi8(requantized), live);
      }
    }
  }
}

// The 12x32 tile's products on AVX-512 VNNI: vpdpwssd adds a pair of int16 products into each
// int32 lane, pmaddwd and the add in one (neither saturates here: |V| <= 512, |U| <= 1143), and
// 16 columns of a pair fill one zmm (column j's two int16 in lane j). 32 columns, two zmm: each
// broadcast of V's pair feeds two vpdpwssd (6x16's broadcasts, one per vpdpwssd, bound it on a
// Zen 5), 24
// sums are in flight (vpdpwssd takes 5 cycles and issues 2 a cycle on Intel: 6x16's 6 kept it
// 60% busy), and each load of the panel (64 KB at 64 channels: from L2) serves 12 tiles. Then the
// output transform and the requantization on zmm: avx2's arithmetic, the same bits.
template <int MR, int NV>
inline void qs8_winograd_tile_vnni(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                   int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out) {
  constexpr int NR = 16 * NV;
  alignas(64) int32_t m[16][MR][NR];
  const int16_t* rows[MR];
  for (int r = 0; r < MR; ++r) rows[r] = v + (r < mr ? r : mr - 1) * ldv;
  for (int p = 0; p < 16; ++p) {
    __m512i acc[MR][NV];
    for (auto& row : acc)
      for (auto& x : row) x = _mm512_setzero_si512();
    const int16_t* up = u + p * cpairs * NR * 2;
    const int64_t offset = p * v_stride;
    for (int64_t i = 0; i < cpairs; ++i, up += NR * 2) {
      __m512i b[NV];
      for (int q = 0; q < NV; ++q) b[q] = _mm512_loadu_si512(up + 32 * q);
      for (int r = 0; r < MR; ++r) {
        int32_t pair;
        std::memcpy(&pair, rows[r] + offset + 2 * i, sizeof pair);
        const __m512i a = _mm512_set1_epi32(pair);
        for (int q = 0; q < NV; ++q) acc[r][q] = _mm512_dpwssd_epi32(acc[r][q], a, b[q]);
      }
    }
    for (int r = 0; r < MR; ++r)
      for (int q = 0; q < NV; ++q) _mm512_store_si512(&m[p][r][16 * q], acc[r][q]);
  }
  qs8_winograd_output_avx512<MR, NV>(mr, nc, m, rq, pool, out);
}
#endif

}  // namespace
}  // namespace rg
