// Kernels for the avx2_fma level: explicit instantiations only, compiled with -mavx2 -mfma.
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"

namespace rg {

void f32_gemm_6x16__avx2_fma(int64_t depth, const float* a_panel, const float* b_panel, int64_t ldb, float alpha,
                           float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  ukernel::f32_gemm_tile<xsimd::fma3<xsimd::avx2>, 6, 16>(depth, a_panel, b_panel, ldb, alpha, beta, c, ldc, rows, cols);
}

RG_DEFINE_F32_VECTOR_KERNELS(avx2_fma, xsimd::fma3<xsimd::avx2>)

}  // namespace rg
