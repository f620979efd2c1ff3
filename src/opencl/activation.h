// Host launchers of kernels/activation.cl: activations and their gradients, the row softmax,
// the bias add over rows and the column sum, as the CPU's f32 functions compute them
// (ops/elementwise.h). Spans are f32 elements and must hold what the shape needs; nothing to
// do enqueues nothing. The returned Event is the kernel's (timed while profiling or in a
// Device::KeepEvents scope; device.h).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "cpu/ukernels/unary_op.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/fused_activation.h"

namespace rg::ocl {

// The elementwise activations of cpu/ukernels/unary_op.h's list by name, as rg::unary /
// rg::unary_grad: the kernels f32_<op>_forward and f32_<op>_backward of kernels/activation.cl.
// `xy` is the forward's x or y as the list says; `slope` is leaky_relu's. Bit-exact with the
// CPU but for sigmoid and tanh's forward, within a few ulp (the device's exp and tanh).
Result<Event> f32_unary_forward(Device& device, UnaryOp op, int64_t n, float slope, DeviceSpan x, DeviceSpan y);
Result<Event> f32_unary_backward(Device& device, UnaryOp op, int64_t n, float slope, DeviceSpan xy, DeviceSpan dy,
                                 DeviceSpan dx);

// dx = the backward of `activation` (relu or leaky relu, fused into the kernel before it) from
// its output y and dy: f32_relu_backward's and f32_leaky_relu_backward's values; `add`: dx += them
// (f32_add's bits).
Result<Event> f32_fused_activation_backward(Device& device, int64_t n, FusedActivation activation, DeviceSpan y,
                                            DeviceSpan dy, DeviceSpan dx, bool add);

// Row-wise softmax of x [rows x cols] into y (in place allowed), max-subtracted; within a
// tolerance of the CPU (the device's exp, and the sum in column order, not vector lanes)
Result<Event> f32_softmax_rows_forward(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan y);
// dx = y (dy - sum_k dy_k y_k) per row, y the forward's output (bit-exact with softmax_backward)
Result<Event> f32_softmax_rows_backward(Device& device, int64_t rows, int64_t cols, DeviceSpan y, DeviceSpan dy,
                                        DeviceSpan dx);

// y[r][c] += bias[c] for y [rows x cols] (bit-exact with rg::add_bias)
Result<Event> f32_add_bias(Device& device, int64_t rows, int64_t cols, DeviceSpan bias, DeviceSpan y);
// sums[c] += sum over rows of x[r][c] for x [rows x cols], bit-exact with rg::column_sum: the
// same blocks of rows_per_block(cols) rows, summed in the same order. One block: one item per
// column; at least kColumnSumPartialItems (block, column) pairs, where the device's GEMM scratch
// (gemm.h) holds their partials: an item each, then the partials added per column in block order
// (two launches); fewer: a work-group per column walks its blocks in rounds (one launch).
constexpr int64_t kColumnSumPartialItems = 2048;
Result<Event> f32_column_sum(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan sums);

}  // namespace rg::ocl
