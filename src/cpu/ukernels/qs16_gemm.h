// Signed 16-bit GEMM tiles: fixed-point training's products of 9 to 16 bits (issue 34) on
// pmaddwd (SSE2: the Athlon 64 has it), vpmaddwd (AVX2, AVX-512BW). Declarations only:
// isa/*.cpp define them.
//
// Operands of a tile, MR x NR:
//   a        rows i < mr of A, int16, row stride lda (elements); each row holds 2 * kpairs
//            readable values.
//   packed_b one panel of NR columns of B [k x n], int16, k in pairs:
//            packed_b[(g * NR + j) * 2 + q] = B[2g + q][j]; rows past k and columns past n are 0.
//   acc      [MR x NR] int32, row stride NR: acc[i][j] = sum_p A[i][p] * B[p][j], rows i < mr
//            exact (rows >= mr are unspecified).
// The sums are int32 and nothing widens them: the caller bounds kpairs so that no sum can
// overflow, kpairs * 2 * max|A| * max|B| <= 2^31 - 1 (ops/int8_dynamic_gemm.cpp picks the depth
// blocks, and splits a full 16-bit operand into its high and low bytes where that bound would
// leave blocks too short). Values lie in [-32767, 32767]: -32768 never occurs, so a pmaddwd
// pair, at most 2 * 32767^2 = 2,147,352,578, fits int32 on its own.
#pragma once

#include <cstdint>

namespace rg {

using Qs16GemmTile = void (*)(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_b,
                              int32_t* acc);

// A split B's tile (the caller's split into high and low bytes): both products of A in one pass,
// against the high bytes' panel and the low bytes' panel (each laid out as packed_b), into
// acc_hi and acc_lo (each as acc). A's pair is broadcast once for both and one call does both:
// on SSE2 a 2x8 tile takes 32 instructions a pair step for 32 multiply-adds, where the 4x8 tile
// run twice takes 66 for 64 (and twice the calls).
using Qs16SplitTile = void (*)(int64_t mr, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* packed_hi,
                               const int16_t* packed_lo, int32_t* acc_hi, int32_t* acc_lo);

void qs16_gemm_4x8__reference(int64_t, int64_t, const int16_t*, int64_t, const int16_t*, int32_t*);
void qs16_gemm_4x8__sse2(int64_t, int64_t, const int16_t*, int64_t, const int16_t*, int32_t*);    // pmaddwd
void qs16_gemm_4x16__avx2(int64_t, int64_t, const int16_t*, int64_t, const int16_t*, int32_t*);   // vpmaddwd
void qs16_gemm_8x16__avx512(int64_t, int64_t, const int16_t*, int64_t, const int16_t*, int32_t*); // vpmaddwd zmm
void qs16_split_2x8__reference(int64_t, int64_t, const int16_t*, int64_t, const int16_t*, const int16_t*, int32_t*,
                               int32_t*);
void qs16_split_2x8__sse2(int64_t, int64_t, const int16_t*, int64_t, const int16_t*, const int16_t*, int32_t*,
                          int32_t*);

}  // namespace rg
