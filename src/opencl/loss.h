// Launchers of kernels/loss.cl: the losses of nn/loss.h (ops/loss.h's math and LossKind) on the
// device, one work-item per row, and count_correct's argmax hits. Per-row losses come back in
// double for the host to add in row order, the CPU's order, so a device needs cl_khr_fp64 (an
// error without it).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "ops/loss.h"

namespace rg::ocl {

// Elements [offset, offset + count) of a buffer of `element_bytes` elements (int32 labels, double
// losses: DeviceSpan's unit is the kernel's); count -1 runs to the end. Outside it is a bug.
DeviceSpan element_span(const Buffer& buffer, int64_t element_bytes, int64_t offset = 0, int64_t count = -1);

// Softmax cross-entropy on logits x [rows x cols] against labels (int32) [rows], as softmax_xent:
// row_loss (double) [rows] = -log p(label); dx [rows x cols] = (softmax - onehot) * grad_scale,
// skipped when dx.mem is null. Within exp/log's ulps of the CPU (double on both sides).
Result<Event> f32_softmax_cross_entropy(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan labels,
                                        float grad_scale, DeviceSpan dx, DeviceSpan row_loss);
// Mean squared error of x against target [rows x cols], as rg::mse: row_loss (double) [rows] the
// row's mean of (x - t)^2, dx = 2 (x - t) / cols * grad_scale (null: skipped). Bit-exact.
Result<Event> f32_mse(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan target, float grad_scale,
                      DeviceSpan dx, DeviceSpan row_loss);
// Binary cross-entropy with logits, as rg::bce_with_logits: row means of max(x,0) - x t + log1p(e^-|x|),
// dx = (sigmoid(x) - t) / cols * grad_scale (null: skipped). Within exp/log1p's ulps (double).
Result<Event> f32_bce_with_logits(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan target,
                                  float grad_scale, DeviceSpan dx, DeviceSpan row_loss);
// By LossKind (none is a bug): target is labels (int32) for softmax_cross_entropy, else f32 [rows x cols].
Result<Event> f32_loss(Device& device, LossKind kind, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan target,
                       float grad_scale, DeviceSpan dx, DeviceSpan row_loss);

// hits (int32) [rows] = 1 where the row's first largest of pred [rows x cols] is its label, as
// count_correct (ties: the first column; NaN never wins).
Result<Event> f32_argmax_hits(Device& device, int64_t rows, int64_t cols, DeviceSpan pred, DeviceSpan labels,
                              DeviceSpan hits);

// Host side, blocking: the sum of `rows` doubles of row_loss from rows 0 to rows - 1 (compute_loss's
// total, in its order), and the sum of `rows` hits (count_correct).
Result<double> sum_row_losses(const Buffer& row_loss, int64_t offset, int64_t rows);
Result<int64_t> sum_hits(const Buffer& hits, int64_t offset, int64_t rows);

}  // namespace rg::ocl
