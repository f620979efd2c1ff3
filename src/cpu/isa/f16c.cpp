// fp16 conversion with F16C (Ivy Bridge, Piledriver and later): vcvtph2ps / vcvtps2ph on 8
// lanes, compiled with -mavx -mf16c. xsimd 8.1 has no fp16 type, hence raw intrinsics.
// vcvtph2ps quiets signalling NaNs and vcvtps2ph rounds to nearest even (immediate 0):
// what base/fp16.cpp's scalar converters do, bit for bit.
#include <immintrin.h>

#include <cstring>

#include "cpu/ukernels/f16_convert.h"

namespace rg {

void f16_to_f32__f16c(int64_t n, const uint16_t* half, float* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(half + i))));
  }
  if (i < n) {
    alignas(32) uint16_t in[8] = {};
    alignas(32) float result[8];
    std::memcpy(in, half + i, static_cast<size_t>(n - i) * sizeof(uint16_t));
    _mm256_store_ps(result, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(out + i, result, static_cast<size_t>(n - i) * sizeof(float));
  }
}

void f32_to_f16__f16c(int64_t n, const float* value, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(value + i), 0));
  }
  if (i < n) {
    alignas(32) float in[8] = {};
    alignas(32) uint16_t result[8];
    std::memcpy(in, value + i, static_cast<size_t>(n - i) * sizeof(float));
    _mm_store_si128(reinterpret_cast<__m128i*>(result), _mm256_cvtps_ph(_mm256_load_ps(in), 0));
    std::memcpy(out + i, result, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

}  // namespace rg
