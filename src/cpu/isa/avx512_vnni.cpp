// The int8 GEMM tile and the Winograd input transform and tile on AVX-512 VNNI (vpdpbusd,
// vpdpwssd; ukernels/qs8_gemm_x86.h, qs8_winograd_x86.h), compiled with the avx512 level's flags
// and -mavx512vnni: a file of its own, since VNNI is a feature beyond the avx512 level
// (Skylake-SP has AVX-512 without it) that kernel_tables.cpp checks in CPUID. The requantization
// (and Winograd's output transform) is avx2's arithmetic on all 16 sums at once: the same bits.
#include "cpu/ukernels/qs8_gemm_x86.h"
#include "cpu/ukernels/qs8_winograd_x86.h"

namespace rg {

void qs8_gemm_8x16__avx512_vnni(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                                int32_t* acc) {
  __m512i sum[8];
  qs8_sums_vnni<8>(mr, kgroups, a, lda, packed_b, sum);
  for (int r = 0; r < 8; ++r) _mm512_storeu_si512(acc + r * 16, sum[r]);
}

void qs8_gemm_requant_8x16__avx512_vnni(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                        const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  __m512i sum[8];
  qs8_sums_vnni<8>(mr, kgroups, a, lda, packed_b, sum);
  requant_store_vnni<8>(mr, nc, sum, rq, c, ldc);
}

void qs8_winograd_input__avx512_vnni(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v,
                                     int64_t v_stride) {
  qs8_winograd_input_avx512(channels, cpad, px, v, v_stride);
}

void qs8_winograd_12x32__avx512_vnni(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                     int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool,
                                     int8_t* const* out) {
  qs8_winograd_tile_vnni<12, 2>(mr, nc, cpairs, v, v_stride, ldv, u, rq, pool, out);
}

}  // namespace rg
