// f32 GEMM micro-kernels: one MR x NR tile of C from packed panels.
//   a_panel: depth x MR floats, a_panel[p * MR + r] = op(A)[row r][p]
//   b_panel: depth rows of NR floats, ldb apart: b_panel[p * ldb + c] = op(B)[p][col c]
//            (ldb = NR for a packed panel; B's own row stride when B is used in place)
//   C[r][c] = alpha * sum_p a_panel[p][r] * b_panel[p][c] + beta * C[r][c]  for r < rows <= MR, c < cols <= NR
//   (beta = 0: C is not read, so NaN or garbage there is ignored)
// The gathered tiles read op(A) through MR row pointers and one offset per depth step instead
// of a packed panel: op(A)[r][p] = a_rows[r][a_offsets[p]] (every a_rows[r] valid, also for
// r >= rows), so a convolution's patch matrix is read straight from the image.
// The shifted tiles read op(A) from a packed panel and op(B) through one offset per depth step
// from one base: op(B)[p][c] = b_base[b_offsets[p] + c], a convolution's channel planes read at
// each tap's shift (ops/conv_planar.h). They read whole vectors: up to NR - 1 floats past a
// partial tile's last column, which are never stored (the caller keeps them readable).
// The dot tiles sum along rows instead, C = X Y^T over the depth:
//   C[i][j] = sum_p x_base[x_offsets[i] + p] * y[j * ldy + p] + beta * C[i][j]  for i < rows <= MR, j < cols <= NR
//   (a convolution's weight gradient over channel planes: X the input's planes at each tap's
//   shift, Y the output gradient's planes; ops/conv_planar.h). depth is a multiple of 16, and
//   every level sums in the same 16 lanes: lane q the products of p = q mod 16 in order (fused
//   where the level has FMA), then the lanes added pairwise, q + 8, + 4, + 2, + 1, then C: so the
//   FMA levels give each other's bits, and those without, the reference's.
// Partial tiles (rows < MR or cols < NR) do the same arithmetic as full ones, so where a
// tile boundary falls (it moves with the thread count) never changes a result.
// Declarations only (no inline code: isa/*.cpp files include this with their ISA flags).
#pragma once

#include <cstdint>

namespace rg {

using F32GemmTile = void (*)(int64_t depth, const float* a_panel, const float* b_panel, int64_t ldb, float alpha,
                             float beta, float* c, int64_t ldc, int64_t rows, int64_t cols);

using F32GemmGatheredTile = void (*)(int64_t depth, const float* const* a_rows, const int32_t* a_offsets,
                                     const float* b_panel, int64_t ldb, float alpha, float beta, float* c,
                                     int64_t ldc, int64_t rows, int64_t cols);

void f32_gemm_6x8__reference(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_6x8__sse2(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_6x16__avx(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_6x16__avx2_fma(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_8x8__avx(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_8x8__avx2_fma(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_12x32__avx512(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);
void f32_gemm_16x16__avx512(int64_t, const float*, const float*, int64_t, float, float, float*, int64_t, int64_t, int64_t);

using F32GemmShiftedTile = void (*)(int64_t depth, const float* a_panel, const float* b_base,
                                    const int32_t* b_offsets, float alpha, float beta, float* c, int64_t ldc,
                                    int64_t rows, int64_t cols);

#define RG_DECLARE_F32_GEMM_GATHERED(name)                                                                        \
  void name(int64_t, const float* const*, const int32_t*, const float*, int64_t, float, float, float*, int64_t, \
            int64_t, int64_t)
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_6x8__reference);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_6x8__sse2);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_6x16__avx);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_6x16__avx2_fma);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_8x8__avx);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_8x8__avx2_fma);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_12x32__avx512);
RG_DECLARE_F32_GEMM_GATHERED(f32_gemm_gathered_16x16__avx512);
#undef RG_DECLARE_F32_GEMM_GATHERED

#define RG_DECLARE_F32_GEMM_SHIFTED(name) \
  void name(int64_t, const float*, const float*, const int32_t*, float, float, float*, int64_t, int64_t, int64_t)
RG_DECLARE_F32_GEMM_SHIFTED(f32_gemm_shifted_6x8__reference);
RG_DECLARE_F32_GEMM_SHIFTED(f32_gemm_shifted_6x8__sse2);
RG_DECLARE_F32_GEMM_SHIFTED(f32_gemm_shifted_6x16__avx);
RG_DECLARE_F32_GEMM_SHIFTED(f32_gemm_shifted_6x16__avx2_fma);
RG_DECLARE_F32_GEMM_SHIFTED(f32_gemm_shifted_6x32__avx512);
#undef RG_DECLARE_F32_GEMM_SHIFTED

constexpr int kF32DotLanes = 16;  // the dot tiles' lanes, at every level

using F32GemmDotTile = void (*)(int64_t depth, const float* x_base, const int32_t* x_offsets, const float* y,
                                int64_t ldy, float beta, float* c, int64_t ldc, int64_t rows, int64_t cols);

#define RG_DECLARE_F32_GEMM_DOT(name) \
  void name(int64_t, const float*, const int32_t*, const float*, int64_t, float, float*, int64_t, int64_t, int64_t)
RG_DECLARE_F32_GEMM_DOT(f32_gemm_dot_1x6__reference);
RG_DECLARE_F32_GEMM_DOT(f32_gemm_dot_1x3__sse2);
RG_DECLARE_F32_GEMM_DOT(f32_gemm_dot_1x6__avx);
RG_DECLARE_F32_GEMM_DOT(f32_gemm_dot_1x6__avx2_fma);
RG_DECLARE_F32_GEMM_DOT(f32_gemm_dot_4x6__avx512);
#undef RG_DECLARE_F32_GEMM_DOT

}  // namespace rg
