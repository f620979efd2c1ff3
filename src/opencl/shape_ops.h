// Launchers of kernels/shape.cl: Upsample (nn/shape_layers.h) and GlobalAvgPool (nn/pooling.h)
// over a batch of NHWC images, forward and backward, and Concat's column slices
// (nn/merge_layers.h), bit-exact with the CPU layers. Spans are
// f32 and must hold the sizes below; an empty batch enqueues nothing.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"

namespace rg::ocl {

// x [batch, height, width, channels] -> y [batch, height*scale, width*scale, channels], nearest.
Result<Event> f32_upsample_forward(Device& device, int64_t batch, int64_t height, int64_t width, int64_t channels,
                                   int64_t scale, DeviceSpan x, DeviceSpan y);
// dx [batch, height, width, channels] (overwritten) = the sum of each value's scale^2 copies in
// dy [batch, height*scale, width*scale, channels], in Upsample::backward's order.
Result<Event> f32_upsample_backward(Device& device, int64_t batch, int64_t height, int64_t width, int64_t channels,
                                    int64_t scale, DeviceSpan dy, DeviceSpan dx);

// x [batch, pixels, channels] -> y [batch, channels]: each channel's sum over the pixels in order,
// times 1 / pixels (float), as GlobalAvgPool::forward.
Result<Event> f32_global_avgpool_forward(Device& device, int64_t batch, int64_t pixels, int64_t channels, DeviceSpan x,
                                         DeviceSpan y);
// dx [batch, pixels, channels] (overwritten) = dy [batch, channels] * (1 / pixels).
Result<Event> f32_global_avgpool_backward(Device& device, int64_t batch, int64_t pixels, int64_t channels,
                                          DeviceSpan dy, DeviceSpan dx);

// Concat: x [positions, slice] into columns [column, column + slice) of y [positions, width].
Result<Event> f32_columns_into(Device& device, int64_t positions, int64_t slice, int64_t width, int64_t column,
                               DeviceSpan x, DeviceSpan y);
// dx [positions, slice] = columns [column, column + slice) of dy [positions, width]; with
// `accumulate`, dx + them.
Result<Event> f32_columns_from(Device& device, int64_t positions, int64_t slice, int64_t width, int64_t column,
                               bool accumulate, DeviceSpan dy, DeviceSpan dx);

}  // namespace rg::ocl
