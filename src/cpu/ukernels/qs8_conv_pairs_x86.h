// The int8 direct single-channel convolution (qs8_gemm.h's qs8_conv_pairs) on x86 vectors:
// int16 pixel pairs times int16 weight pairs by pmaddwd, the window's max taken as it goes, then
// qs8_gemm_x86.h's requantization. Include ONLY from an isa/*.cpp file (internal linkage: see
// f32_gemm_impl.h for why).
#pragma once

#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "cpu/ukernels/qs8_gemm_x86.h"

namespace rg {
namespace {

// fn(std::integral_constant<int, FB>{}) for a block of fb filters, FB = min(fb, 8): the direct
// conv's filter-count templates, picked at run time.
template <class Fn>
inline void with_filter_block(int64_t fb, Fn&& fn) {
  switch (fb < 8 ? fb : 8) {
    case 1: fn(std::integral_constant<int, 1>{}); break;
    case 2: fn(std::integral_constant<int, 2>{}); break;
    case 3: fn(std::integral_constant<int, 3>{}); break;
    case 4: fn(std::integral_constant<int, 4>{}); break;
    case 5: fn(std::integral_constant<int, 5>{}); break;
    case 6: fn(std::integral_constant<int, 6>{}); break;
    case 7: fn(std::integral_constant<int, 7>{}); break;
    default: fn(std::integral_constant<int, 8>{}); break;
  }
}

#if defined(__SSE2__)
// qs8_gemm.h's direct single-channel convolution, 4 pixels per vector, FB filters at a time.
template <int FB>
inline void conv_pairs_block_sse2(int64_t x, int64_t window, int64_t pairs, const int16_t* src, const int64_t* offsets, const int32_t* wt,
                                  int64_t n, int64_t f0, __m128i (&best)[8]) {
  for (int64_t w = 0; w < window; ++w) {
    __m128i acc[FB];
    for (int f = 0; f < FB; ++f) acc[f] = _mm_setzero_si128();
    const int16_t* pixels = src + 2 * x;
    const int64_t* o = offsets + w * pairs;
    for (int64_t t = 0; t < pairs; ++t) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pixels + o[t]));
      const int32_t* wrow = wt + t * n + f0;
      for (int f = 0; f < FB; ++f) acc[f] = _mm_add_epi32(acc[f], _mm_madd_epi16(v, _mm_set1_epi32(wrow[f])));
    }
    for (int f = 0; f < FB; ++f) {
      if (w == 0) {
        best[f] = acc[f];
      } else {  // max without SSE4.1's pmaxsd
        const __m128i greater = _mm_cmpgt_epi32(acc[f], best[f]);
        best[f] = _mm_or_si128(_mm_and_si128(greater, acc[f]), _mm_andnot_si128(greater, best[f]));
      }
    }
  }
}

// Filter-major bytes to pixel-major: r[k] holds filter 2k's bytes of P (4 or 8) pixels in
// bytes [0, P) and filter 2k + 1's in [P, 2P); pixel[i][f] = filter f's byte of pixel i.
template <int P>
inline void filters_to_pixels_sse2(const __m128i (&r)[4], int8_t (&pixel)[8][8]) {
  __m128i p[4];  // int16 unit i: pixel i's filters (2k, 2k + 1)
  for (int k = 0; k < 4; ++k) p[k] = _mm_unpacklo_epi8(r[k], _mm_srli_si128(r[k], P));
  auto store = [&](int i, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(pixel[i]), v); };
  const __m128i lo03 = _mm_unpacklo_epi16(p[0], p[1]), lo47 = _mm_unpacklo_epi16(p[2], p[3]);  // pixels 0-3
  store(0, _mm_unpacklo_epi32(lo03, lo47));
  store(2, _mm_unpackhi_epi32(lo03, lo47));
  if (P == 8) {
    const __m128i hi03 = _mm_unpackhi_epi16(p[0], p[1]), hi47 = _mm_unpackhi_epi16(p[2], p[3]);  // pixels 4-7
    store(4, _mm_unpacklo_epi32(hi03, hi47));
    store(6, _mm_unpackhi_epi32(hi03, hi47));
  }
}

// Pixels x .. x + live - 1 (live <= 4) of FB filters from f0: sums, requantization, stores.
template <int FB>
inline void conv_pairs_filters_sse2(int64_t x, int64_t live, int64_t window, int64_t pairs, const int16_t* src,
                                    const int64_t* offsets,
                                    const int32_t* wt, int64_t n, int64_t f0, const Qs8Requant* rq, int8_t* out) {
  __m128i best[8] = {};  // filled for f < FB (window >= 1); zeroed for the compiler, which cannot see that
  conv_pairs_block_sse2<FB>(x, window, pairs, src, offsets, wt, n, f0, best);
  const RequantRangeSse2 range = requant_range_sse2(rq->zero_point, rq->lo, rq->hi);
  auto lanes = [&](int f) {
    return requant_lanes_sse2(_mm_set1_epi32(rq->bias[f0 + f]), _mm_set1_epi32(rq->multiplier[f0 + f]),
                              _mm_set1_epi32(rq->shift[f0 + f]));
  };
  __m128i r[4];  // two filters per narrowing: bytes 0-3 filter 2k, 4-7 filter 2k + 1
  for (int k = 0; k < 4; ++k) {
    const int f = 2 * k, g = 2 * k + 1 < FB ? 2 * k + 1 : f;
    r[k] = f < FB ? narrow_8_sse2(requantize_4_sse2(best[f], lanes(f)), requantize_4_sse2(best[g], lanes(g)), range)
                  : r[0];
  }
  alignas(16) int8_t pixel[8][8];
  filters_to_pixels_sse2<4>(r, pixel);
  for (int64_t i = 0; i < live; ++i) std::memcpy(out + (x + i) * n + f0, pixel[i], FB);
}

inline void qs8_conv_pairs_sse2(int64_t count, int64_t window, int64_t pairs, const int16_t* src,
                                const int64_t* offsets, const int32_t* wt, int64_t n, const Qs8Requant* rq,
                                int8_t* out) {
  for (int64_t x = 0; x < count; x += 4) {
    const int64_t live = count - x < 4 ? count - x : 4;
    for (int64_t f0 = 0; f0 < n; f0 += 8) {
      with_filter_block(n - f0, [&](auto fb) {
        conv_pairs_filters_sse2<decltype(fb)::value>(x, live, window, pairs, src, offsets, wt, n, f0, rq, out);
      });
    }
  }
}
#endif

#if defined(__AVX2__)
// qs8_gemm.h's direct single-channel convolution, 8 pixels per vector, FB filters at a time.
template <int FB>
inline void conv_pairs_block_avx2(int64_t x, int64_t window, int64_t pairs, const int16_t* src, const int64_t* offsets,
                                  const int32_t* wt, int64_t n, int64_t f0, __m256i (&best)[8]) {
  for (int64_t w = 0; w < window; ++w) {
    __m256i acc[FB];
    for (int f = 0; f < FB; ++f) acc[f] = _mm256_setzero_si256();
    const int16_t* pixels = src + 2 * x;
    const int64_t* o = offsets + w * pairs;
    for (int64_t t = 0; t < pairs; ++t) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pixels + o[t]));
      const int32_t* wrow = wt + t * n + f0;
      for (int f = 0; f < FB; ++f) acc[f] = _mm256_add_epi32(acc[f], _mm256_madd_epi16(v, _mm256_set1_epi32(wrow[f])));
    }
    for (int f = 0; f < FB; ++f) best[f] = w == 0 ? acc[f] : _mm256_max_epi32(best[f], acc[f]);
  }
}

// Pixels x .. x + live - 1 (live <= 8) of FB filters from f0: sums, requantization, stores.
template <int FB>
inline void conv_pairs_filters_avx2(int64_t x, int64_t live, int64_t window, int64_t pairs, const int16_t* src,
                                    const int64_t* offsets,
                                    const int32_t* wt, int64_t n, int64_t f0, const Qs8Requant* rq, int8_t* out) {
  __m256i best[8] = {};  // filled for f < FB (window >= 1); zeroed for the compiler, which cannot see that
  conv_pairs_block_avx2<FB>(x, window, pairs, src, offsets, wt, n, f0, best);
  const __m256i zp = _mm256_set1_epi32(rq->zero_point), low = _mm256_set1_epi32(rq->lo),
                high = _mm256_set1_epi32(rq->hi);
  auto requantized = [&](int f) {
    return requantize_8_avx2(_mm256_add_epi32(best[f], _mm256_set1_epi32(rq->bias[f0 + f])),
                             _mm256_set1_epi32(rq->multiplier[f0 + f]), _mm256_set1_epi32(rq->shift[f0 + f]), zp, low,
                             high);
  };
  __m128i r[4];  // two filters per narrowing: bytes 0-7 filter 2k, 8-15 filter 2k + 1
  for (int k = 0; k < 4; ++k) {
    const int f = 2 * k, g = 2 * k + 1 < FB ? 2 * k + 1 : f;
    r[k] = f < FB ? narrow_16_avx2(requantized(f), requantized(g)) : r[0];
  }
  alignas(16) int8_t pixel[8][8];
  filters_to_pixels_sse2<8>(r, pixel);
  for (int64_t i = 0; i < live; ++i) std::memcpy(out + (x + i) * n + f0, pixel[i], FB);
}

inline void qs8_conv_pairs_avx2(int64_t count, int64_t window, int64_t pairs, const int16_t* src,
                                const int64_t* offsets, const int32_t* wt, int64_t n, const Qs8Requant* rq,
                                int8_t* out) {
  for (int64_t x = 0; x < count; x += 8) {
    const int64_t live = count - x < 8 ? count - x : 8;
    for (int64_t f0 = 0; f0 < n; f0 += 8) {
      with_filter_block(n - f0, [&](auto fb) {
        conv_pairs_filters_avx2<decltype(fb)::value>(x, live, window, pairs, src, offsets, wt, n, f0, rq, out);
      });
    }
  }
}
#endif

}  // namespace
}  // namespace rg
