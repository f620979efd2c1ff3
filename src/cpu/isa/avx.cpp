// Kernels for the avx level: explicit instantiations only, compiled with -mavx.
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"
#include "cpu/ukernels/f32_winograd_impl.h"

namespace rg {

RG_DEFINE_F32_GEMM_KERNELS(avx, xsimd::avx, 6, 16)
RG_DEFINE_F32_GEMM_KERNELS(avx, xsimd::avx, 8, 8)  // narrow: C of at most 8 columns
RG_DEFINE_F32_GEMM_SHIFTED_KERNEL(avx, xsimd::avx, 6, 16)
RG_DEFINE_F32_GEMM_DOT_KERNEL(avx, xsimd::avx, 1, 6)

RG_DEFINE_F32_VECTOR_KERNELS(avx, xsimd::avx)
RG_DEFINE_F32_WINOGRAD_KERNELS(avx, xsimd::avx)

}  // namespace rg
