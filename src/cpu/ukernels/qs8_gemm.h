// Signed 8-bit GEMM tiles and the requantization of their int32 sums back to int8
// (docs/quantization.md gives the arithmetic). Declarations only: isa/*.cpp define them.
//
// Operands of a tile, MR x NR:
//   a        rows i < mr of A, int8, row stride lda; each row holds 4 * kgroups readable bytes.
//   packed_b one panel of NR columns of B [k x n], int8, k in groups of 4:
//            packed_b[(g * NR + j) * 4 + q] = B[4g + q][j]; rows past k and columns past n are 0.
//   acc      [MR x NR] int32, row stride NR: acc[i][j] = sum_p A[i][p] * B[p][j], rows i < mr
//            exact (rows >= mr are unspecified).
// B's values must lie in [-127, 127] (weights are quantized symmetrically); A's may be any int8.
// That is what keeps pmaddubsw exact: it multiplies |a| <= 128 by sign(a) * b, |b| <= 127, and
// a pair of such products, <= 2 * 128 * 127 = 32512, never saturates its int16 sum.
//
// Requantization of one row of n sums:
//   out[j] = clamp(zero_point + rdbpot(srdhm(acc[j] + bias[j], multiplier[j]), shift[j]), lo, hi)
// with gemmlowp's SaturatingRoundingDoublingHighMul (srdhm) and RoundingDivideByPOT (rdbpot);
// multiplier[j] in [2^30, 2^31) or 0, shift[j] in [0, 31]; acc + bias must not overflow int32.
#pragma once

#include <cstdint>

namespace rg {

using Qs8GemmTile = void (*)(int64_t mr, int64_t kgroups, const int8_t* a, int64_t lda, const int8_t* packed_b,
                             int32_t* acc);
using Qs8RequantizeRow = void (*)(int64_t n, const int32_t* acc, const int32_t* bias, const int32_t* multiplier,
                                  const int32_t* shift, int32_t zero_point, int32_t lo, int32_t hi, int8_t* out);

void qs8_gemm_4x8__reference(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);
void qs8_gemm_4x8__sse2(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);   // pmaddwd
void qs8_gemm_4x8__ssse3(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);  // pmaddubsw
void qs8_gemm_4x16__avx2(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);  // vpmaddubsw

// Scalar gemmlowp arithmetic (quant/fixed_point.h), for the levels without a vector version.
void qs8_requantize__reference(int64_t, const int32_t*, const int32_t*, const int32_t*, const int32_t*, int32_t,
                               int32_t, int32_t, int8_t*);
void qs8_requantize__avx2(int64_t, const int32_t*, const int32_t*, const int32_t*, const int32_t*, int32_t, int32_t,
                          int32_t, int8_t*);

}  // namespace rg
