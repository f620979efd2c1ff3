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

// The requantization constants of a run of output columns (the formula above).
struct Qs8Requant {
  const int32_t* bias;        // one per column
  const int32_t* multiplier;  // in [2^30, 2^31) or 0
  const int32_t* shift;       // in [0, 31]
  int32_t zero_point, lo, hi;
};

// The tile with its requantization fused (the sums never leave the registers): the same
// operands and packing as Qs8GemmTile, then for rows i < mr and columns j < nc (nc <= NR)
//   c[i * ldc + j] = requantize(acc[i][j] + bias[j]) with rq's constants,
// rq's arrays holding NR readable entries from the panel's first column (zeros past n:
// Qs8OutputStage's padding). Nothing else of c is written.
using Qs8GemmTileRequant = void (*)(int64_t mr, int64_t nc, int64_t kgroups, const int8_t* a, int64_t lda,
                                    const int8_t* packed_b, const Qs8Requant* rq, int8_t* c, int64_t ldc);

// Direct convolution of a single-channel image on int16 pairs, with an optional max pooling
// before the requantization (which is non-decreasing, so the max of requantized values is the
// requantized max). For output pixel x < count and filter f < n, with p = src + offsets[w * pairs + t]
// and k = wt[t * n + f] (an int32 holding two int16: lo, hi):
//   sum_w[x][f] = sum_{t < pairs} p[2x] * k.lo + p[2x + 1] * k.hi          (pmaddwd's operands)
//   out[x * n + f] = requantize(max_{w < window} sum_w[x][f] + bias[f])
// Each of the window * pairs sources has 2 * (count rounded up to 8) readable int16 (offsets, in
// int16, rather than pointers: one image's sources move together from one call to the next). The
// int16 are int8 activations and weights in [-127, 127], so no sum overflows for pairs < 2^16.
using Qs8ConvPairs = void (*)(int64_t count, int64_t window, int64_t pairs, const int16_t* src,
                              const int64_t* offsets, const int32_t* wt, int64_t n, const Qs8Requant* rq,
                              int8_t* out);

void qs8_gemm_4x8__reference(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);
void qs8_gemm_4x8__sse2(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);   // pmaddwd
void qs8_gemm_4x8__ssse3(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);  // pmaddubsw
void qs8_gemm_4x16__avx2(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);  // vpmaddubsw

void qs8_gemm_4x8__avx2(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);   // narrow: n <= 8
void qs8_gemm_8x16__avx512_vnni(int64_t, int64_t, const int8_t*, int64_t, const int8_t*, int32_t*);  // vpdpbusd

void qs8_gemm_requant_4x8__reference(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*,
                                     const Qs8Requant*, int8_t*, int64_t);
void qs8_gemm_requant_4x8__sse2(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*, const Qs8Requant*,
                                int8_t*, int64_t);
void qs8_gemm_requant_4x8__ssse3(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*, const Qs8Requant*,
                                 int8_t*, int64_t);
void qs8_gemm_requant_4x16__avx2(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*, const Qs8Requant*,
                                 int8_t*, int64_t);
void qs8_gemm_requant_4x8__avx2(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*, const Qs8Requant*,
                                int8_t*, int64_t);
void qs8_gemm_requant_8x16__avx512_vnni(int64_t, int64_t, int64_t, const int8_t*, int64_t, const int8_t*,
                                        const Qs8Requant*, int8_t*, int64_t);

void qs8_conv_pairs__reference(int64_t, int64_t, int64_t, const int16_t*, const int64_t*, const int32_t*, int64_t,
                               const Qs8Requant*, int8_t*);
void qs8_conv_pairs__sse2(int64_t, int64_t, int64_t, const int16_t*, const int64_t*, const int32_t*, int64_t,
                          const Qs8Requant*, int8_t*);
void qs8_conv_pairs__avx2(int64_t, int64_t, int64_t, const int16_t*, const int64_t*, const int32_t*, int64_t,
                          const Qs8Requant*, int8_t*);

// Scalar gemmlowp arithmetic (ops/fixed_point.h), for the levels without a vector version.
void qs8_requantize__reference(int64_t, const int32_t*, const int32_t*, const int32_t*, const int32_t*, int32_t,
                               int32_t, int32_t, int8_t*);
void qs8_requantize__sse2(int64_t, const int32_t*, const int32_t*, const int32_t*, const int32_t*, int32_t, int32_t,
                          int32_t, int8_t*);
void qs8_requantize__avx2(int64_t, const int32_t*, const int32_t*, const int32_t*, const int32_t*, int32_t, int32_t,
                          int32_t, int8_t*);

}  // namespace rg
