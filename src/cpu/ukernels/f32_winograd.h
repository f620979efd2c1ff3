// f32 Winograd F(4x4, 3x3) transforms (Lavin and Gray 2016, points 0, +-1, +-2, infinity),
// channels in the lanes. ops/winograd_conv.h runs them around one GEMM per position.
// One tile is a 4x4 block of output pixels; it reads a 6x6 block d of input pixels. Per input
// channel c and output channel f, with g the 3x3 filter:
//   V = B^T d B,   U = G g G^T,   M = sum over c of U (.) V (36 positions, xi = 6 row + column),
//   Y = A^T M A:   the 4x4 outputs of the direct convolution, up to rounding.
// The matrices are below, once; the vector kernels compute the same sums factored (fewer
// operations), so their bits differ from the reference's in the last places, as every level's
// GEMM does. Declarations only (isa/*.cpp define the kernels, kernel_tables.cpp picks them).
#pragma once

#include <cstdint>

namespace rg {

constexpr int kWinogradTile = 4;    // output pixels per tile side
constexpr int kWinogradInput = 6;   // input pixels per tile side
constexpr int kWinogradPoints = 36; // positions xi of V, U and M

// Flops of the factored transforms (f32_winograd_impl.h) per tile and channel, a multiply-add
// counted as 2: B^T's 1-D pass of six values 19, twelve passes (columns, then rows) for the
// input's 6x6; A^T's 13, ten passes (six columns, four rows) for the output; A's 11, ten passes
// (four columns, six rows) for dy's 4x4 -> 6x6.
constexpr int64_t kWinogradInputFlops = 12 * 19;
constexpr int64_t kWinogradOutputFlops = 10 * 13;
constexpr int64_t kWinogradGradFlops = 10 * 11;

constexpr float kWinogradBT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0}, {0, 4, -4, -1, 1, 0},
                                     {0, -2, -1, 2, 1, 0}, {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr float kWinogradG[6][3] = {{1.0f / 4, 0, 0},
                                    {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                    {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                    {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                    {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                    {0, 0, 1}};
constexpr float kWinogradAT[4][6] = {{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// The input transform of one tile: d[i * 6 + j] points at the c values of tile pixel (i, j)
// (a zero row for pixels past the image). For xi < 36 and ch < c:
//   v[xi * v_stride + ch] = (B^T d_ch B)[xi / 6][xi % 6],  d_ch[i][j] = d[i * 6 + j][ch]
using F32WinogradInput = void (*)(int64_t c, const float* const* d, float* v, int64_t v_stride);

// The output transform of one tile: m[xi * m_stride + ch] holds M[xi] for ch < f. For ch < f:
//   out[i * 4 + j][ch] = (A^T M_ch A)[i][j]; a null out[i * 4 + j] (a pixel past the image) is
//   not written.
using F32WinogradOutput = void (*)(int64_t f, const float* m, int64_t m_stride, float* const* out);

// The weight gradient's transform of one tile of dy (the adjoint of the output transform):
// dy[i * 4 + j] points at the f values of output pixel (i, j) (null: a pixel past the output,
// read as zeros). For xi < 36 and ch < f:
//   v[xi * v_stride + ch] = (A dy_ch A^T)[xi / 6][xi % 6],  A = kWinogradAT^T;
// the weight gradient of a filter is then G^T (sum over tiles of (B^T d B) (.) (A dy A^T)) G.
using F32WinogradGrad = void (*)(int64_t f, const float* const* dy, float* v, int64_t v_stride);

#define RG_DECLARE_F32_WINOGRAD(isa)                                                                 \
  void f32_winograd_input__##isa(int64_t c, const float* const* d, float* v, int64_t v_stride);      \
  void f32_winograd_output__##isa(int64_t f, const float* m, int64_t m_stride, float* const* out);   \
  void f32_winograd_grad__##isa(int64_t f, const float* const* dy, float* v, int64_t v_stride)
RG_DECLARE_F32_WINOGRAD(reference);
RG_DECLARE_F32_WINOGRAD(sse2);
RG_DECLARE_F32_WINOGRAD(avx);
RG_DECLARE_F32_WINOGRAD(avx2_fma);
RG_DECLARE_F32_WINOGRAD(avx512);
#undef RG_DECLARE_F32_WINOGRAD

}  // namespace rg
