// Kernels for the sse2 level: explicit instantiations only, compiled with -msse2.
#include "cpu/ukernels/f16_convert_impl.h"
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"
#include "cpu/ukernels/qs8_gemm_x86.h"

namespace rg {

RG_DEFINE_F32_GEMM_KERNELS(sse2, xsimd::sse2, 6, 8)

RG_DEFINE_F32_VECTOR_KERNELS(sse2, xsimd::sse2)

RG_DEFINE_F16_CONVERT_KERNELS(sse2, xsimd::sse2)

void qs8_gemm_4x8__sse2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                        int32_t* acc) {
  qs8_gemm_4x8_sse2(mr, kgroups, a, lda, packed_b, acc);
}

}  // namespace rg
