// Host launcher of kernels/gemm.cl: C = alpha * op(A) * op(B) + beta * C, row-major, with
// ops/gemm.h's GemmShape (the CPU's contract, so a layer can call either backend alike).
#pragma once

#include "base/status.h"
#include "ops/gemm.h"
#include "opencl/buffer.h"
#include "opencl/device.h"

namespace rg::ocl {

// The C tile one work-group computes (16 x 16 = 256 items of 4 x 4 outputs for 64x64; 8 x 8
// items for 32x32; 4 x 4 for 16x16). `automatic`: the largest the device runs the kernel at.
enum class GemmTile { automatic, t64x64, t32x32, t16x16 };

const char* gemm_tile_name(GemmTile tile);  // "64x64"

// `a`, `b`, `c` hold the matrices as stored (A is k x m when trans_a, etc.) with the shape's
// row strides; spans too short are a bug. m or n = 0 enqueues nothing. Errors: sizes past
// the kernels' 32-bit indices, no tile the device runs, and the OpenCL calls'.
Result<Event> f32_gemm(Device& device, const GemmShape& shape, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                       DeviceSpan c, GemmTile tile = GemmTile::automatic);

}  // namespace rg::ocl
