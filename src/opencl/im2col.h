// Launchers of kernels/im2col.cl: the patch matrix of a batch of NHWC images for a convolution's
// GEMM, and its adjoint, exactly as ops/im2col.h's per-image im2col and col2im_add lay it out
// (bit-exact). col2im gathers: one work-item per image element sums the columns of the patches
// holding it, so no two items write one element, whatever the overlap. And the depthwise
// convolution's three passes (ops/depthwise.h: weights [kernel^2, channels], bias [channels]),
// no patch matrix, each element summed in the CPU's order (the same bits as its scalar
// reference; the CPU's FMA level rounds its sums once a term).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "ops/im2col.h"

namespace rg::ocl {

// image [batch, g.height, g.width, g.channels] -> cols [batch * g.patches(), g.patch_size()]
// (each image's patch matrix after the previous one's); padding reads as +0, as im2col.
Result<Event> f32_im2col(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan image, DeviceSpan cols);
// image [batch, height, width, channels] += (accumulate) or = (not: onto +0, image not read) the
// patch rows of cols [batch * patches, patch_size], each added where im2col read it, in
// col2im_add's order (patches row by row): the same bits as col2im_add on each image.
Result<Event> f32_col2im_add(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan cols, DeviceSpan image,
                             bool accumulate = true);

// Depthwise: y [batch, out_h, out_w, channels] = bias (when bias.mem is not null) + x's taps times w.
Result<Event> f32_depthwise_forward(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x, DeviceSpan w,
                                    DeviceSpan bias, DeviceSpan y);
// dx [batch, height, width, channels] (overwritten) = dy [batch, out_h, out_w, channels]'s taps times w.
Result<Event> f32_depthwise_input_grad(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan dy,
                                       DeviceSpan w, DeviceSpan dx);
// dw [kernel^2, channels] (+)= the sum over the batch's pixels of x at each tap times dy.
Result<Event> f32_depthwise_weight_grad(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                                        DeviceSpan dy, bool accumulate, DeviceSpan dw);

}  // namespace rg::ocl
