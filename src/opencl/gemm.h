// Host launcher of kernels/gemm.cl: C = alpha * op(A) * op(B) + beta * C, row-major, with
// ops/gemm.h's GemmShape (the CPU's contract, so a layer can call either backend alike).
#pragma once

#include "base/status.h"
#include "ops/gemm.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/gemm_config.h"

namespace rg::ocl {

// `a`, `b`, `c` hold the matrices as stored (A is k x m when trans_a, etc.) with the shape's
// row strides; spans too short are a bug. m or n = 0 enqueues nothing. `config` null: the
// device's tuning chooses (gemm_tuning.h, choose_gemm_config). Every configuration adds each
// output's terms in the same order, so the choice changes the speed, never the bits.
// Errors: sizes past the kernels' 32-bit indices, a configuration the device cannot build or
// run (none, when choosing), and the OpenCL calls'.
Result<Event> f32_gemm(Device& device, const GemmShape& shape, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                       DeviceSpan c, const GemmConfig* config = nullptr);

}  // namespace rg::ocl
