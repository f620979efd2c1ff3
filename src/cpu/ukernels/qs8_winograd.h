// Integer Winograd F(2x2, 3x3) for 3x3 stride-1 int8 convolutions (docs/quantization.md has
// why it is exact). Declarations only: isa/*.cpp define them, quant/int8_winograd.cpp picks them.
//
// One tile is a 2x2 block of output pixels; it reads a 4x4 block d of input pixels. Per input
// channel c and output channel k, with g the 3x3 int8 filter:
//   V = B^T d B    B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]
//   U = G' g G'^T  G'  = 2 G = [[2, 0, 0], [1, 1, 1], [1, -1, 1], [0, 0, 2]]
//   M = sum over c of U (.) V (16 products, position p = 4 row + column)
//   Y = A^T M A    A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]: exactly 4 times the direct conv's sums.
// d holds raw int8 activations (padding: the input's zero point, as the GEMM stage's im2col),
// so |V| <= 4 * 128 = 512; |U| <= 9 * 127 = 1143: both int16, multiplied on pmaddwd pairs of
// input channels.
#pragma once

#include <cstdint>

#include "cpu/ukernels/qs8_gemm.h"

namespace rg {

// The input transform of one tile, channels in the lanes. px[4a + b] points at the `channels`
// int8 values of tile pixel (a, b). For p < 16 and c < cpad (a multiple of 8):
//   v[p * v_stride + c] = (B^T d_c B)[p], d_c[a][b] = px[4a + b][c]; 0 for c >= channels.
// Reads exactly `channels` bytes behind each pointer.
using Qs8WinogradInput = void (*)(int64_t channels, int64_t cpad, const int8_t* const* px, int16_t* v,
                                  int64_t v_stride);

// The 16 products over the input channels, the output transform and the requantization of up
// to MR tiles by one panel of NR output channels:
//   v    tile r's position p: cpairs pairs of int16 at v + p * v_stride + r * ldv (16-byte aligned;
//        tiles r >= mr are not read), as Qs8WinogradInput writes them
//   u    the panel: u[((p * cpairs + i) * NR + j) * 2 + e] = U[p][2i + e][j], 32-byte aligned
//   M[p][r][j] = sum_{i < cpairs} v_r,p[2i] u[p][i][j][0] + v_r,p[2i + 1] u[p][i][j][1]
//   Y[r][j] = A^T M[.][r][j] A, both in int32 wrapping (exact where |Y| < 2^31)
//   out[4r + 2dy + dx][j] = requantize((Y[r][j][dy][dx] >> 2) + bias[j]) for r < mr, j < nc,
//        with rq's constants (NR readable entries each); a null out[...] is not written.
//   pool: out[r][j] = requantize(max_{dy, dx} (Y[r][j][dy][dx] >> 2) + bias[j]) instead, the
//        tile's 2x2 max pooling (the same bits as pooling the outputs: requantize is non-decreasing).
// cpairs is a multiple of 4.
using Qs8WinogradTile = void (*)(int64_t mr, int64_t nc, int64_t cpairs, const int16_t* v, int64_t v_stride,
                                 int64_t ldv, const int16_t* u, const Qs8Requant* rq, bool pool, int8_t* const* out);

void qs8_winograd_input__reference(int64_t, int64_t, const int8_t* const*, int16_t*, int64_t);
void qs8_winograd_input__sse2(int64_t, int64_t, const int8_t* const*, int16_t*, int64_t);
void qs8_winograd_input__avx2(int64_t, int64_t, const int8_t* const*, int16_t*, int64_t);
void qs8_winograd_input__avx512_vnni(int64_t, int64_t, const int8_t* const*, int16_t*, int64_t);  // with VNNI's tile

void qs8_winograd_4x8__reference(int64_t, int64_t, int64_t, const int16_t*, int64_t, int64_t, const int16_t*,
                                 const Qs8Requant*, bool, int8_t* const*);
void qs8_winograd_4x8__sse2(int64_t, int64_t, int64_t, const int16_t*, int64_t, int64_t, const int16_t*,
                            const Qs8Requant*, bool, int8_t* const*);
void qs8_winograd_6x16__avx2(int64_t, int64_t, int64_t, const int16_t*, int64_t, int64_t, const int16_t*,
                             const Qs8Requant*, bool, int8_t* const*);
void qs8_winograd_12x32__avx512_vnni(int64_t, int64_t, int64_t, const int16_t*, int64_t, int64_t, const int16_t*,
                                     const Qs8Requant*, bool, int8_t* const*);  // vpdpwssd

}  // namespace rg
