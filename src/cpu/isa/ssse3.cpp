// Kernels for the ssse3 level (Core 2): the int8 GEMM tiles on pmaddubsw (requantizing with SSE2's
// code), compiled with -mssse3.
// Every other family runs its sse2 kernels there.
#include "cpu/ukernels/qs8_gemm_x86.h"

namespace rg {

void qs8_gemm_4x8__ssse3(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                         int32_t* acc) {
  qs8_gemm_4x8_ssse3(mr, kgroups, a, lda, packed_b, acc);
}

void qs8_gemm_requant_4x8__ssse3(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                 const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  qs8_gemm_requant_4x8_ssse3(mr, nc, kgroups, a, lda, packed_b, rq, c, ldc);
}

}  // namespace rg
