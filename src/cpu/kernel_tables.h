// The kernel of each family that runs at an ISA level: filled once, read by the ops.
// Layers and ops call through these, never an ISA's kernel directly.
#pragma once

#include <string>

#include "cpu/isa.h"
#include "tensor/dtype.h"
#include "cpu/ukernels/f16_convert.h"
#include "cpu/ukernels/f32_gemm.h"
#include "cpu/ukernels/f32_vector.h"
#include "cpu/ukernels/f32_winograd.h"
#include "cpu/ukernels/qs16_gemm.h"
#include "cpu/ukernels/qs8_gemm.h"
#include "cpu/ukernels/qs8_winograd.h"

namespace rg {

struct F32GemmKernel {
  F32GemmTile tile;
  F32GemmGatheredTile gathered_tile;  // same MR x NR, op(A) read through row pointers
  int mr, nr;        // tile rows and columns
  const char* name;  // "f32_gemm_6x16__avx2_fma"
};
// No level's tile has more rows (the gathered GEMM keeps a tile's row pointers in an array).
constexpr int kF32GemmMaxMr = 16;

// The best GEMM tile at or below `isa`.
const F32GemmKernel& f32_gemm_kernel(Isa isa);
// The tile for products of at most its nr columns (a conv with few filters): 8x8 where the
// wide tile is 16 columns, 16x16 where it is 32 (avx512) (a wide tile would waste half its lanes
// or more), else the wide tile.
const F32GemmKernel& f32_gemm_narrow_kernel(Isa isa);
// Whichever suits a product with n columns: the narrowest tile at least n wide, where avx512's
// tiles for n <= 8 are avx2_fma's 8x8 (on ymm: its own 16x16 would waste 10 of 16 lanes on 6
// columns, and a double-pumped core runs ymm FMAs at the flops of zmm ones).
const F32GemmKernel& f32_gemm_kernel_for(Isa isa, int64_t n);

// The shifted tile of each level (op(B) read at one offset per depth step: a convolution's
// channel planes, ops/conv_planar.h): 6 rows (a few filters) by the widest columns the level's
// registers hold with 12 accumulators.
struct F32ShiftedKernel {
  F32GemmShiftedTile tile;
  int mr, nr;
  const char* name;  // "f32_gemm_shifted_6x16__avx2_fma"
};
const F32ShiftedKernel& f32_gemm_shifted_kernel(Isa isa);

// The dot tile of each level (C = X Y^T along the depth in 16 lanes, f32_gemm.h: a convolution's
// weight gradient over channel planes, ops/conv_planar.h): MR taps by NR filters, as many
// accumulators as the level's registers hold (4 x 6 of 16 lanes at avx512, 1 x 6 of two 8-lane
// vectors at avx, 1 x 3 of four 4-lane ones at sse2).
struct F32DotKernel {
  F32GemmDotTile tile;
  int mr, nr;
  const char* name;  // "f32_gemm_dot_4x6__avx512"
};
const F32DotKernel& f32_gemm_dot_kernel(Isa isa);

// The elementwise family of one ISA (f32_vector.h states the contracts).
// Its members are the kernels of RG_F32_VECTOR_KERNEL_LIST, named and typed there.
struct F32VectorKernels {
#define RG_F32_VECTOR_MEMBER(member, Type, function, isa) Type member;
  RG_F32_VECTOR_KERNEL_LIST(RG_F32_VECTOR_MEMBER, none)
#undef RG_F32_VECTOR_MEMBER
  const char* isa;  // which kernels these are: "sse2" also serves sse3 to sse4.1
};
const F32VectorKernels& f32_vector_kernels(Isa isa);
// Shorthand for the active ISA's.
inline const F32VectorKernels& f32_vector() { return f32_vector_kernels(active_isa()); }

// The f32 Winograd F(4x4, 3x3) transforms (ukernels/f32_winograd.h) of one level.
struct F32WinogradKernels {
  F32WinogradInput input;
  F32WinogradOutput output;
  F32WinogradGrad grad;  // dy's transform for the weight gradient
  const char* isa;  // "sse2" also serves sse3 to sse4.1
};
const F32WinogradKernels& f32_winograd_kernels(Isa isa);

// A 16-bit float format's (fp16's or bf16's) <-> f32 array conversion (ukernels/f16_convert.h),
// bit-exact on every path.
struct HalfConvertKernels {
  F16ToF32 to_f32;
  F32ToF16 from_f32;
  const char* name;  // "f16c", "sse2" (integer bit manipulation) or "reference" (scalar)
};
// fp16: F16C's converters where the CPU has F16C and `isa` is avx or above (F16C's instructions
// are VEX-encoded and need the OS to save AVX state); else the level's software converters.
const HalfConvertKernels& f16_convert_kernels(Isa isa, bool cpu_has_f16c);
// bf16: sse2's integer converters from sse2 up (a shift and an add: wider levels gain little).
const HalfConvertKernels& bf16_convert_kernels(Isa isa);
// The active ISA's, on this CPU; half_convert: f16's or bf16's by the storage type.
const HalfConvertKernels& f16_convert();
const HalfConvertKernels& bf16_convert();
const HalfConvertKernels& half_convert(DType half);

// The int8 GEMM tile and requantization of one ISA level (ukernels/qs8_gemm.h).
struct Qs8GemmKernel {
  Qs8GemmTile tile;
  Qs8RequantizeRow requantize;
  int mr, nr;        // tile rows and columns; weights are packed in panels of nr columns
  const char* name;  // "qs8_gemm_4x16__avx2"
  Qs8GemmTileRequant tile_requant;  // the same tile (and packing) with the requantization fused
};
// No int8 GEMM tile has more rows (callers of `tile` keep MR x NR sums on the stack).
constexpr int kQs8MaxMr = 8;
// sse2 (pmaddwd) serves sse2 and sse3, ssse3 (pmaddubsw) serves ssse3 to avx, avx2 avx2 and
// avx512, where a CPU with AVX512_VNNI takes avx512_vnni's (vpdpbusd, 8 rows; the same 16-column
// packing and the same sums).
const Qs8GemmKernel& qs8_gemm_kernel(Isa isa, bool cpu_has_vnni);
// This CPU's: VNNI where CPUID says so.
const Qs8GemmKernel& qs8_gemm_kernel(Isa isa);
// The tile for products of at most its nr columns: avx2's 4x8 (its 4x16 would leave half its
// lanes idle), else qs8_gemm_kernel's (8 wide already).
const Qs8GemmKernel& qs8_gemm_narrow_kernel(Isa isa);
// Whichever of the two suits a product with n columns (weights must be packed for its nr).
inline const Qs8GemmKernel& qs8_gemm_kernel_for(Isa isa, int64_t n) {
  const Qs8GemmKernel& narrow = qs8_gemm_narrow_kernel(isa);
  return n <= narrow.nr ? narrow : qs8_gemm_kernel(isa);
}

// The int16 GEMM tile of one ISA level (ukernels/qs16_gemm.h): fixed-point training's products
// of 9 to 16 bits.
struct Qs16GemmKernel {
  Qs16GemmTile tile;
  int mr, nr;        // tile rows and columns; B is packed in panels of nr columns
  const char* name;  // "qs16_gemm_4x16__avx2"
  // Fixed-point products of 2 to 8 bits run here too (their values held as int16), where this
  // tile beats the level's qs8 tile: at sse2 and sse3, whose qs8 tile widens bytes inside its
  // loop (89 instructions a group of 4 x 32 multiply-adds against 66 here).
  bool serves_int8 = false;
  // A split B's products on one fused tile of split_mr rows and the tile's nr columns (null: the
  // tile twice). The driver checks split_mr; a split tile of other columns needs its own nr here.
  Qs16SplitTile split = nullptr;
  int split_mr = 0;
};
// sse2 (pmaddwd) serves sse2 to avx (with its fused split tile, as the reference has), avx2 avx2,
// avx512 its 8x16 on zmm.
const Qs16GemmKernel& qs16_gemm_kernel(Isa isa);

// The direct single-channel int8 convolution on int16 pairs (ukernels/qs8_gemm.h).
struct Qs8ConvKernel {
  Qs8ConvPairs conv_pairs;
  int lanes;         // pixels per vector
  const char* name;  // "qs8_conv_pairs__avx2"
};
// sse2 serves sse2 to avx (pmaddwd is all it needs), avx2 avx2 and avx512.
const Qs8ConvKernel& qs8_conv_kernel(Isa isa);

// The int8 Winograd F(2x2, 3x3) transforms and tile (ukernels/qs8_winograd.h).
struct Qs8WinogradKernel {
  Qs8WinogradInput input;
  Qs8WinogradTile tile;
  int mr, nr;        // tiles and output channels per tile call; weights are packed in panels of nr
  const char* name;  // "qs8_winograd_6x16__avx2"
};
// sse2 (pmaddwd) serves sse2 to avx, avx2 avx2 and avx512, where a CPU with AVX512_VNNI takes
// avx512_vnni's input transform and tile (vpdpwssd, 32 filters a panel; the same bits).
const Qs8WinogradKernel& qs8_winograd_kernel(Isa isa, bool cpu_has_vnni);
// This CPU's: VNNI where CPUID says so.
const Qs8WinogradKernel& qs8_winograd_kernel(Isa isa);

// The fp32 kernels a level runs (GEMM tiles and vector kernels), as one string: levels with the
// same string train fp32 identically, so a study measures them once (study/study_devices.cpp).
std::string f32_kernels_identity(Isa isa);

}  // namespace rg
