// Kernels for the sse2 level: explicit instantiations only, compiled with -msse2.
#include "cpu/ukernels/f16_convert_impl.h"
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"

namespace rg {

RG_DEFINE_F32_GEMM_KERNELS(sse2, xsimd::sse2, 6, 8)

RG_DEFINE_F32_VECTOR_KERNELS(sse2, xsimd::sse2)

RG_DEFINE_F16_CONVERT_KERNELS(sse2, xsimd::sse2)

}  // namespace rg
