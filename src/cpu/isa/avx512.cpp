// Kernels for the avx512 level (x86-64-v4: AVX-512F, BW, DQ, VL): explicit instantiations only,
// compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma.
// The f32 GEMM tiles fit the 32 zmm registers: 12x32 holds 24 accumulators, 2 rows of B and a
// broadcast of A; the narrow 16x16 (C of at most 16 columns) 16, 1 and 1. Chosen by measuring
// on a Xeon (the commit message has the figures). Both sum each element of C as one FMA chain
// over depth, as avx2_fma's tiles do, so the two levels give the same bits.
// The int8 (qs8) families run avx2's kernels at this level (kernel_tables.cpp), but where CPUID
// says AVX512_VNNI, avx512_vnni.cpp's. The int16 (qs16) tile is 8x16 on vpmaddwd.
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"
#include "cpu/ukernels/f32_winograd_impl.h"
#include "cpu/ukernels/qs16_gemm_x86.h"

namespace rg {

RG_DEFINE_F32_GEMM_KERNELS(avx512, xsimd::avx512bw, 12, 32)
RG_DEFINE_F32_GEMM_KERNELS(avx512, xsimd::avx512bw, 16, 16)  // narrow: C of at most 16 columns
// Shifted (the planes of a few filters, ops/conv_planar.h): 6 rows, 12 accumulators, 2 rows of B.
RG_DEFINE_F32_GEMM_SHIFTED_KERNEL(avx512, xsimd::avx512bw, 6, 32)
RG_DEFINE_F32_GEMM_DOT_KERNEL(avx512, xsimd::avx512bw, 4, 6)

RG_DEFINE_F32_VECTOR_KERNELS(avx512, xsimd::avx512bw)
RG_DEFINE_F32_WINOGRAD_KERNELS(avx512, xsimd::avx512bw)

void qs16_gemm_8x16__avx512(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                            int32_t* acc) {
  qs16_gemm_8x16_avx512(mr, kpairs, a, lda, packed_b, acc);
}

}  // namespace rg
