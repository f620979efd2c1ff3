// Host launchers of kernels/activation.cl: activations and their gradients, the row softmax,
// the bias add over rows and the column sum, as the CPU's f32 functions compute them
// (ops/elementwise.h). Spans are f32 elements and must hold what the shape needs; nothing to
// do enqueues nothing. The returned Event times the kernel.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "cpu/ukernels/unary_op.h"
#include "opencl/buffer.h"
#include "opencl/device.h"

namespace rg::ocl {

// y = x > 0 ? x : slope x                 (bit-exact with the CPU)
Result<Event> f32_leaky_relu_forward(Device& device, int64_t n, float slope, DeviceSpan x, DeviceSpan y);
// dx = x > 0 ? dy : slope dy, x the forward's input (bit-exact)
Result<Event> f32_leaky_relu_backward(Device& device, int64_t n, float slope, DeviceSpan x, DeviceSpan dy,
                                      DeviceSpan dx);
// y = 1 / (1 + e^-x), overflow-free; within a few ulp of the CPU (the device's exp)
Result<Event> f32_sigmoid_forward(Device& device, int64_t n, DeviceSpan x, DeviceSpan y);
// dx = dy y (1 - y), y the forward's output (bit-exact)
Result<Event> f32_sigmoid_backward(Device& device, int64_t n, DeviceSpan y, DeviceSpan dy, DeviceSpan dx);
// y = tanh(x); within a few ulp of the CPU (the device's tanh)
Result<Event> f32_tanh_forward(Device& device, int64_t n, DeviceSpan x, DeviceSpan y);
// dx = dy (1 - y^2), y the forward's output (bit-exact)
Result<Event> f32_tanh_backward(Device& device, int64_t n, DeviceSpan y, DeviceSpan dy, DeviceSpan dx);

// The elementwise activations by name, as rg::unary / rg::unary_grad: `xy` is the forward's
// x (relu, leaky_relu) or y (sigmoid, tanh); `slope` is leaky_relu's.
Result<Event> f32_unary_forward(Device& device, UnaryOp op, int64_t n, float slope, DeviceSpan x, DeviceSpan y);
Result<Event> f32_unary_backward(Device& device, UnaryOp op, int64_t n, float slope, DeviceSpan xy, DeviceSpan dy,
                                 DeviceSpan dx);

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
// column; more: one item per (block, column), the block sums added per column in block order.
Result<Event> f32_column_sum(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan sums);

}  // namespace rg::ocl
