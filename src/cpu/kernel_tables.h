// The kernel of each family that runs at an ISA level: filled once, read by the ops.
// Layers and ops call through these, never an ISA's kernel directly.
#pragma once

#include "cpu/isa.h"
#include "cpu/ukernels/f32_gemm.h"

namespace rg {

struct F32GemmKernel {
  F32GemmTile tile;
  int mr, nr;        // tile rows and columns
  const char* name;  // "f32_gemm_6x16__avx2_fma"
};

// The best GEMM tile at or below `isa`.
const F32GemmKernel& f32_gemm_kernel(Isa isa);

}  // namespace rg
