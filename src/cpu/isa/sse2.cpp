// Kernels for the sse2 level: explicit instantiations only, compiled with -msse2.
#include "cpu/ukernels/bf16_convert_sse2.h"
#include "cpu/ukernels/f16_convert_impl.h"
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_gemm_impl.h"
#include "cpu/ukernels/f32_vector_impl.h"
#include "cpu/ukernels/f32_winograd_impl.h"
#include "cpu/ukernels/qs8_conv_pairs_x86.h"
#include "cpu/ukernels/qs16_gemm_x86.h"
#include "cpu/ukernels/qs8_gemm_x86.h"
#include "cpu/ukernels/qs8_winograd_x86.h"

namespace rg {

RG_DEFINE_F32_GEMM_KERNELS(sse2, xsimd::sse2, 6, 8)
RG_DEFINE_F32_GEMM_SHIFTED_KERNEL(sse2, xsimd::sse2, 6, 8)
RG_DEFINE_F32_GEMM_DOT_KERNEL(sse2, xsimd::sse2, 1, 3)

RG_DEFINE_F32_VECTOR_KERNELS(sse2, xsimd::sse2)
RG_DEFINE_F32_WINOGRAD_KERNELS(sse2, xsimd::sse2)

RG_DEFINE_F16_CONVERT_KERNELS(sse2, xsimd::sse2)

void bf16_to_f32__sse2(int64_t n, const uint16_t* half, float* out) { ukernel::bf16_to_f32_sse2(n, half, out); }
void f32_to_bf16__sse2(int64_t n, const float* value, uint16_t* out) { ukernel::f32_to_bf16_sse2(n, value, out); }

void qs8_gemm_4x8__sse2(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                        int32_t* acc) {
  qs8_gemm_4x8_sse2(mr, kgroups, a, lda, packed_b, acc);
}

void qs16_gemm_4x8__sse2(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                         int32_t* acc) {
  qs16_gemm_4x8_sse2(mr, kpairs, a, lda, packed_b, acc);
}

void qs16_split_2x8__sse2(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_hi,
                          const int16_t* packed_lo, int32_t* acc_hi, int32_t* acc_lo) {
  qs16_split_2x8_sse2(mr, kpairs, a, lda, packed_hi, packed_lo, acc_hi, acc_lo);
}

void qs8_gemm_requant_4x8__sse2(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc) {
  qs8_gemm_requant_4x8_sse2(mr, nc, kgroups, a, lda, packed_b, rq, c, ldc);
}

void qs8_requantize__sse2(int64_t n, const int32_t* acc, const int32_t* bias, const int32_t* multiplier,
                          const int32_t* shift, int32_t zero_point, int32_t lo, int32_t hi, int8_t* out) {
  qs8_requantize_sse2(n, acc, bias, multiplier, shift, zero_point, lo, hi, out);
}

void qs8_conv_pairs__sse2(int64_t count, int64_t window, int64_t pairs, const int16_t* src, const int64_t* offsets,
                          const int32_t* wt, int64_t n, const Qs8Requant* rq, int8_t* out) {
  qs8_conv_pairs_sse2(count, window, pairs, src, offsets, wt, n, rq, out);
}

void qs8_winograd_input__sse2(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v, int64_t v_stride) {
  qs8_winograd_input_sse2(channels, cpad, px, v, v_stride);
}

void qs8_winograd_4x8__sse2(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride, int64_t ldv,
                            const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out) {
  qs8_winograd_tile_sse2<4, 2>(mr, nc, cpairs, v, v_stride, ldv, u, rq, pool, out);
}

}  // namespace rg
