// Launchers of kernels/pool.cl: max and average pooling over a batch of NHWC images, forward and
// backward, as ops/pool2d.h's per-sample functions compute them (bit-exact). The backwards gather:
// one work-item per input element sums the shares of the windows holding it, so no two items write
// one element, whatever the overlap.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "ops/im2col.h"

namespace rg::ocl {

enum class PoolOp { max, average };

// x [batch, g.height, g.width, g.channels] -> y [batch, g.out_h, g.out_w, g.channels]; as
// max_pool_forward (padding never wins; NaN or equal values keep the earlier) / avg_pool_forward.
Result<Event> f32_pool_forward(Device& device, PoolOp op, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                               DeviceSpan y);
// dx [batch, height, width, channels] (overwritten) from dy [batch, out_h, out_w, channels]. Max:
// each window's dy to its first position, row by row, whose x equals its y (x, y: the forward's input
// and output), as max_pool_backward; average: dy / kernel^2 to each position, as avg_pool_backward
// (x and y are not read; pass any spans, e.g. empty ones).
Result<Event> f32_pool_backward(Device& device, PoolOp op, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                                DeviceSpan y, DeviceSpan dy, DeviceSpan dx);

}  // namespace rg::ocl
