// Kernels for the sse2 level: explicit instantiations only, compiled with -msse2.
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"

namespace rg {

void f32_gemm_6x8__sse2(int64_t depth, const float* a_panel, const float* b_panel, int64_t ldb, float alpha,
                           float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  ukernel::f32_gemm_tile<xsimd::sse2, 6, 8>(depth, a_panel, b_panel, ldb, alpha, beta, c, ldc, rows, cols);
}

RG_DEFINE_F32_VECTOR_KERNELS(sse2, xsimd::sse2)

}  // namespace rg
