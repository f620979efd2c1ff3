// Host launchers of kernels/winograd.cl: 3x3 stride-1 convolutions of NHWC batches by Winograd
// F(4x4, 3x3) on the device, as ops/winograd_conv.h computes them on the CPU (its transforms, the
// 36 positions' products by f32_gemm_batched): a Conv2D's forward, its dx as the convolution of
// dy with the weight read flipped, and its weight gradient. Other bits than the GEMM's convolution
// (the rounding of the transforms), within the CPU Winograd's tolerance of it.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "ops/im2col.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/gemm.h"

namespace rg::ocl {

// Whether this runs a convolution of `g`: a 3x3 kernel at stride 1, a pad of at most 2 (the
// CPU's rule, nn/conv.h's winograd_fits).
bool cl_winograd_fits(const ConvGeometry& g);

// The parts of the workspace, in floats: U [36][c][filters] (the transformed weight, once per
// call), and per image V [36][tiles][c] and M [36][tiles][filters].
struct WinogradWorkspace {
  int64_t weight = 0, per_image = 0;
  int64_t floats(int64_t images) const { return weight + images * per_image; }
};
WinogradWorkspace winograd_workspace(const ConvGeometry& g, int64_t filters);

// u = the transformed weight of a convolution with g.channels inputs and `filters` outputs:
// weight_read plain reads a Conv2D's weight [9 * g.channels, filters]; flipped reads a Conv2D's
// weight [9 * filters, g.channels] turned (the dx of a Conv2D with `filters` input channels, the
// read f32_conv_gemm's ConvWeight::flipped makes). One launch.
Result<Event> f32_winograd_weight(Device& device, const ConvGeometry& g, int64_t filters, DeviceSpan weight,
                                  ConvWeight weight_read, DeviceSpan u);

// y [images, out_h, out_w, filters] = beta y + the convolution of x [images, h, w, g.channels] by
// the transformed weight u, then the epilogue (as the GEMM's: bias, affine, activation);
// `scratch` holds V and M (images * winograd_workspace's per_image floats). Three launches.
Result<Event> f32_winograd_conv(Device& device, const ConvGeometry& g, int64_t images, DeviceSpan x, DeviceSpan u,
                                int64_t filters, DeviceSpan y, DeviceSpan scratch, const GemmEpilogue& epilogue = {},
                                float beta = 0.0f);

// The weight gradient's slices of each position's sum over the tiles of `images` images: about
// eight work-groups of 64x64 a compute unit in all (at most winograd_grad_most_slices), each slice
// at least 256 tiles.
int winograd_grad_slices(const ConvGeometry& g, int64_t filters, int64_t images, int compute_units);
int winograd_grad_most_slices(const ConvGeometry& g, int64_t filters, int compute_units);  // any batch's bound
// Its workspace: the slices' partial sums (`weight`: 36 slices c filters), and per image V and D.
WinogradWorkspace winograd_grad_workspace(const ConvGeometry& g, int64_t filters, int slices);

// dw [9 * g.channels, filters] (a Conv2D's weight layout) = beta dw + the weight gradient of the
// convolution of x [images, h, w, g.channels] whose output gradient is dy [images, out_h, out_w,
// filters]: V of x, D = A dy A^T of each tile, each position's V^T D over the tiles in `slices`
// slices (f32_gemm_batched), then G^T (their sum) G (beta 0: dw not read). `scratch` holds
// winograd_grad_workspace(g, filters, slices).floats(images). Four launches.
Result<Event> f32_winograd_weight_grad(Device& device, const ConvGeometry& g, int64_t images, DeviceSpan x,
                                       DeviceSpan dy, int64_t filters, int slices, float beta, DeviceSpan dw,
                                       DeviceSpan scratch);

}  // namespace rg::ocl
