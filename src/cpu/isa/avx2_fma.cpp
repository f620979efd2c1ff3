// Kernels for the avx2_fma level: explicit instantiations only, compiled with -mavx2 -mfma.
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"

namespace rg {

RG_DEFINE_F32_GEMM_KERNELS(avx2_fma, xsimd::fma3<xsimd::avx2>, 6, 16)
RG_DEFINE_F32_GEMM_KERNELS(avx2_fma, xsimd::fma3<xsimd::avx2>, 8, 8)  // narrow: C of at most 8 columns

RG_DEFINE_F32_VECTOR_KERNELS(avx2_fma, xsimd::fma3<xsimd::avx2>)

}  // namespace rg
