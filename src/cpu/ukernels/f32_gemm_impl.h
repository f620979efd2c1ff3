// The f32 GEMM tile written once with xsimd batches; isa/*.cpp instantiate it per
// architecture. Include ONLY from an isa/*.cpp file: everything here is compiled with
// that file's instruction-set flags. Every function and reader is templated on Arch, so no
// symbol can be shared with (and picked by the linker for) baseline code or another ISA.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <xsimd/xsimd.hpp>

#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/xsimd_fma.h"

namespace rg {
namespace ukernel {

// How the tile reads op(A)[r][p]: from a packed panel (panel[p * MR + r]) ...
template <class Arch, int MR>
struct PackedRows {
  const float* panel;
  float at(int64_t p, int r) const { return panel[p * MR + r]; }
};

// ... or gathered from MR row pointers and one offset per depth step (rows[r][offsets[p]]):
// a convolution's patch matrix read straight from the image. The pointers are copied into
// locals so the compiler keeps them in registers.
template <class Arch, int MR>
struct GatheredRows {
  const float* row[MR];
  const int32_t* offsets;
  GatheredRows(const float* const* rows, const int32_t* depth_offsets) : offsets(depth_offsets) {
    for (int r = 0; r < MR; ++r) row[r] = rows[r];
  }
  float at(int64_t p, int r) const { return row[r][offsets[p]]; }
};

// How the tile reads op(B)[p][c]: from a panel, rows ldb apart (b_panel[p * ldb + c]) ...
struct PanelB {
  const float* panel;
  int64_t ldb;
  const float* row(int64_t p) const { return panel + p * ldb; }
};

// ... or each depth step's row at its own offset from one base (base[offsets[p] + c]): a
// convolution's channel planes read at each tap's shift (ops/conv_planar.h).
struct ShiftedB {
  const float* base;
  const int32_t* offsets;
  const float* row(int64_t p) const { return base + offsets[p]; }
};

// The first `left` (0 < left < W) floats of a vector, for a tile's partial columns: masked moves
// where the level has them (AVX, AVX-512), else lane by lane; the lanes past `left` load as 0
// and are never stored. (Not memcpy: a library call a row cost more than a narrow tile's sums.)
#if defined(__AVX__)
// The mask of lanes [0, left) for AVX's masked moves (a float compare: AVX has no integer one).
inline __m256i first_lanes_avx(int left) {
  const __m256 lanes = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_castps_si256(_mm256_cmp_ps(lanes, _mm256_set1_ps(static_cast<float>(left)), _CMP_LT_OQ));
}
#endif

template <class Batch>
inline Batch load_first(const float* p, int left) {
  constexpr int W = static_cast<int>(Batch::size);
#if defined(__AVX512F__)
  if constexpr (W == 16) return Batch(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << left) - 1), p));
#endif
#if defined(__AVX__)
  if constexpr (W == 8) {
    return Batch(_mm256_maskload_ps(p, first_lanes_avx(left)));
  }
#endif
  alignas(64) float lanes[W] = {};
  for (int j = 0; j < left; ++j) lanes[j] = p[j];
  return Batch::load_aligned(lanes);
}

template <class Batch>
inline void store_first(float* p, const Batch& v, int left) {
  constexpr int W = static_cast<int>(Batch::size);
#if defined(__AVX512F__)
  if constexpr (W == 16) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << left) - 1), v);
    return;
  }
#endif
#if defined(__AVX__)
  if constexpr (W == 8) {
    _mm256_maskstore_ps(p, first_lanes_avx(left), v);
    return;
  }
#endif
  alignas(64) float lanes[W];
  v.store_aligned(lanes);
  for (int j = 0; j < left; ++j) p[j] = lanes[j];
}

template <class Arch, int MR, int NR, class ARows, class BRows>
inline void f32_gemm_tile(int64_t depth, const ARows& a, const BRows& b_rows, float alpha, float beta, float* c,
                          int64_t ldc, int64_t rows, int64_t cols) {
  using Batch = xsimd::batch<float, Arch>;
  constexpr int W = static_cast<int>(Batch::size);
  constexpr int NV = NR / W;
  static_assert(NR % W == 0, "NR must be a multiple of the vector width");

  Batch acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[r][v] = Batch(0.0f);

  for (int64_t p = 0; p < depth; ++p) {
    Batch b[NV];
    const float* b_row = b_rows.row(p);
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) b[v] = Batch::load_unaligned(b_row + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const Batch a_rp(a.at(p, r));
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[r][v] = fused_multiply_add(a_rp, b[v], acc[r][v]);
    }
  }

  // C = alpha * acc + beta * C, the same arithmetic in partial tiles: beta 1 is
  // fma(alpha, acc, C); beta 0 never reads C; any other beta scales C first.
  const Batch scale(alpha), keep(beta);
  auto updated = [&](const Batch& old, const Batch& sum) {
    if (beta == 0.0f) return Batch(scale * sum);
    if (beta == 1.0f) return fused_multiply_add(scale, sum, old);
    return fused_multiply_add(scale, sum, keep * old);
  };
  if (rows == MR && cols == NR) {
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) {
        float* out = c + r * ldc + v * W;
        updated(beta == 0.0f ? Batch(0.0f) : Batch::load_unaligned(out), acc[r][v]).store_unaligned(out);
      }
    return;
  }
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      const int left = static_cast<int>(cols) - v * W;
      float* out = c + r * ldc + v * W;
      if (left >= W) {
        updated(beta == 0.0f ? Batch(0.0f) : Batch::load_unaligned(out), acc[r][v]).store_unaligned(out);
      } else if (left > 0) {
        store_first(out, updated(beta == 0.0f ? Batch(0.0f) : load_first<Batch>(out, left), acc[r][v]), left);
      }
    }
}

// The three entry points each ISA file instantiates.
template <class Arch, int MR, int NR>
inline void f32_gemm_tile_packed(int64_t depth, const float* a_panel, const float* b_panel, int64_t ldb, float alpha,
                                 float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  f32_gemm_tile<Arch, MR, NR>(depth, PackedRows<Arch, MR>{a_panel}, PanelB{b_panel, ldb}, alpha, beta, c, ldc, rows,
                              cols);
}
template <class Arch, int MR, int NR>
inline void f32_gemm_tile_gathered(int64_t depth, const float* const* a_rows, const int32_t* a_offsets,
                                   const float* b_panel, int64_t ldb, float alpha, float beta, float* c, int64_t ldc,
                                   int64_t rows, int64_t cols) {
  f32_gemm_tile<Arch, MR, NR>(depth, GatheredRows<Arch, MR>(a_rows, a_offsets), PanelB{b_panel, ldb}, alpha, beta, c,
                              ldc, rows, cols);
}
template <class Arch, int MR, int NR>
inline void f32_gemm_tile_shifted(int64_t depth, const float* a_panel, const float* b_base, const int32_t* b_offsets,
                                  float alpha, float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  f32_gemm_tile<Arch, MR, NR>(depth, PackedRows<Arch, MR>{a_panel}, ShiftedB{b_base, b_offsets}, alpha, beta, c, ldc,
                              rows, cols);
}

// The 16 lanes' sums added pairwise (lane q + 8, + 4, + 2, + 1), as f32_gemm.h's dot tiles state
// (templated on Arch like everything here: see the top).
template <class Arch>
inline float add_dot_lanes(float* lanes) {
  for (int step = kF32DotLanes / 2; step >= 1; step /= 2)
    for (int q = 0; q < step; ++q) lanes[q] += lanes[q + step];
  return lanes[0];
}

// C = X Y^T along the depth in 16 lanes (f32_gemm.h's dot tiles): each lane's sum in NV vectors
// of W floats, X's MR rows loaded once a step and each of Y's NR rows once.
template <class Arch, int MR, int NR>
inline void f32_gemm_dot_tile(int64_t depth, const float* x_base, const int32_t* x_offsets, const float* y,
                              int64_t ldy, float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  using Batch = xsimd::batch<float, Arch>;
  constexpr int W = static_cast<int>(Batch::size);
  constexpr int NV = kF32DotLanes / W;
  static_assert(kF32DotLanes % W == 0, "the lanes must be whole vectors");
  const float* x[MR];
  const float* yr[NR];
  for (int i = 0; i < MR; ++i) x[i] = x_base + x_offsets[std::min<int64_t>(i, rows - 1)];
  for (int j = 0; j < NR; ++j) yr[j] = y + std::min<int64_t>(j, cols - 1) * ldy;
  Batch acc[MR][NR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][j][v] = Batch(0.0f);
  for (int64_t p = 0; p < depth; p += kF32DotLanes) {
    Batch xv[MR][NV];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) xv[i][v] = Batch::load_unaligned(x[i] + p + v * W);
#pragma GCC unroll 16
    for (int j = 0; j < NR; ++j)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) {
        const Batch yv = Batch::load_unaligned(yr[j] + p + v * W);
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) acc[i][j][v] = fused_multiply_add(xv[i][v], yv, acc[i][j][v]);
      }
  }
  alignas(64) float lanes[kF32DotLanes];
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][j][v].store_aligned(lanes + v * W);
      const float sum = add_dot_lanes<Arch>(lanes);
      float& out = c[i * ldc + j];
      out = beta == 0.0f ? sum : beta == 1.0f ? out + sum : beta * out + sum;
    }
}

}  // namespace ukernel
}  // namespace rg

// Defines f32_gemm_dot_<MR>x<NR>__<isa> (f32_gemm.h).
#define RG_DEFINE_F32_GEMM_DOT_KERNEL(isa, Arch, MR, NR)                                                           \
  void f32_gemm_dot_##MR##x##NR##__##isa(int64_t depth, const float* x_base, const int32_t* x_offsets,           \
                                         const float* y, int64_t ldy, float beta, float* c, int64_t ldc,         \
                                         int64_t rows, int64_t cols) {                                           \
    ukernel::f32_gemm_dot_tile<Arch, MR, NR>(depth, x_base, x_offsets, y, ldy, beta, c, ldc, rows, cols);        \
  }

// Defines f32_gemm_<MR>x<NR>__<isa> and f32_gemm_gathered_<MR>x<NR>__<isa> (f32_gemm.h).
#define RG_DEFINE_F32_GEMM_KERNELS(isa, Arch, MR, NR)                                                         \
  void f32_gemm_##MR##x##NR##__##isa(int64_t depth, const float* a_panel, const float* b_panel, int64_t ldb,     \
                                     float alpha, float beta, float* c, int64_t ldc, int64_t rows, int64_t cols) { \
    ukernel::f32_gemm_tile_packed<Arch, MR, NR>(depth, a_panel, b_panel, ldb, alpha, beta, c, ldc, rows, cols);  \
  }                                                                                                            \
  void f32_gemm_gathered_##MR##x##NR##__##isa(int64_t depth, const float* const* a_rows,                       \
                                              const int32_t* a_offsets, const float* b_panel, int64_t ldb,     \
                                              float alpha, float beta, float* c, int64_t ldc, int64_t rows,    \
                                              int64_t cols) {                                                  \
    ukernel::f32_gemm_tile_gathered<Arch, MR, NR>(depth, a_rows, a_offsets, b_panel, ldb, alpha, beta, c, ldc,  \
                                                  rows, cols);                                                 \
  }

// Defines f32_gemm_shifted_<MR>x<NR>__<isa> (f32_gemm.h).
#define RG_DEFINE_F32_GEMM_SHIFTED_KERNEL(isa, Arch, MR, NR)                                                   \
  void f32_gemm_shifted_##MR##x##NR##__##isa(int64_t depth, const float* a_panel, const float* b_base,        \
                                             const int32_t* b_offsets, float alpha, float beta, float* c,     \
                                             int64_t ldc, int64_t rows, int64_t cols) {                       \
    ukernel::f32_gemm_tile_shifted<Arch, MR, NR>(depth, a_panel, b_base, b_offsets, alpha, beta, c, ldc, rows, \
                                                 cols);                                                        \
  }
