// The int8 GEMM and Winograd tiles on AVX-512 VNNI (vpdpbusd, vpdpwssd; ukernels/qs8_gemm_x86.h,
// qs8_winograd_x86.h), compiled with the
// avx512 level's flags and -mavx512vnni: a file of its own, since VNNI is a feature beyond the
// avx512 level (Skylake-SP has AVX-512 without it) that kernel_tables.cpp checks in CPUID.
// The requantization (and Winograd's output transform) is avx2's, on the halves of 16 sums.
#include "cpu/ukernels/qs8_gemm_x86.h"
#include "cpu/ukernels/qs8_winograd_x86.h"

namespace rg {

void qs8_gemm_4x16__avx512_vnni(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                                int32_t* acc) {
  __m256i sum[4][2];
  qs8_sums_4x16_vnni(mr, kgroups, a, lda, packed_b, sum);
  for (int r = 0; r < 4; ++r)
    for (int q = 0; q < 2; ++q) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + r * 16 + q * 8), sum[r][q]);
}

void qs8_gemm_requant_4x16__avx512_vnni(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                        const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  __m256i sum[4][2];
  qs8_sums_4x16_vnni(mr, kgroups, a, lda, packed_b, sum);
  requant_store_4xv_avx2<2>(mr, nc, sum, rq, c, ldc);
}

void qs8_winograd_6x16__avx512_vnni(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                    int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out) {
  qs8_winograd_tile_vnni<6>(mr, nc, cpairs, v, v_stride, ldv, u, rq, pool, out);
}

}  // namespace rg
