// Launchers of kernels/activation.cl: elementwise kernels get one item per element, the
// softmax one per row (launch_1d.h), the column sum one per column or a work-group per column.
#include "opencl/activation.h"

#include <algorithm>
#include <string>

#include "opencl/launch_1d.h"
#include "ops/elementwise.h"

namespace rg::ocl {

namespace {

constexpr const char* kActivationProgram = "activation.cl";
using detail::check_u32;
using detail::launch_1d;
using detail::u32;

// rows x cols as one count of elements for the span checks.
int64_t matrix_elements(int64_t rows, int64_t cols) {
  RG_CHECK(rows >= 0 && cols >= 0, "a matrix of " << rows << " x " << cols);
  return rows * cols;
}

}  // namespace

// Every kernel of the list builds with the correctly rounded division (sigmoid's 1 / (1 + e) as
// the CPU's); those that do not divide are the same with it or without.
Result<Event> f32_unary_forward(Device& device, UnaryOp op, int64_t n, float slope, DeviceSpan x, DeviceSpan y) {
  const std::string name = std::string("f32_") + unary_op_name(op) + "_forward";
  RG_TRY(check_u32(name.c_str(), n, {x, y}));
  return launch_1d(device, kActivationProgram, name.c_str(), detail::division_options(device), n, u32(n), slope,
                   x.mem, u32(x.offset), y.mem, u32(y.offset));
}

Result<Event> f32_unary_backward(Device& device, UnaryOp op, int64_t n, float slope, DeviceSpan xy, DeviceSpan dy,
                                 DeviceSpan dx) {
  const std::string name = std::string("f32_") + unary_op_name(op) + "_backward";
  RG_TRY(check_u32(name.c_str(), n, {xy, dy, dx}));
  return launch_1d(device, kActivationProgram, name.c_str(), detail::division_options(device), n, u32(n), slope,
                   xy.mem, u32(xy.offset), dy.mem, u32(dy.offset), dx.mem, u32(dx.offset));
}

Result<Event> f32_fused_activation_backward(Device& device, int64_t n, FusedActivation activation, DeviceSpan y,
                                            DeviceSpan dy, DeviceSpan dx, bool add) {
  RG_CHECK(activation.kind != FusedActivation::none, "a fused activation's backward with no activation");
  RG_TRY(check_u32("f32_fused_activation_backward", n, {y, dy, dx}));
  return launch_1d(device, kActivationProgram, "f32_fused_activation_backward", detail::division_options(device), n,
                   u32(n), cl_uint{activation.kind}, activation.slope, y.mem, u32(y.offset), dy.mem, u32(dy.offset),
                   dx.mem, u32(dx.offset), cl_uint{add ? 1u : 0u});
}

Result<Event> f32_softmax_rows_forward(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan y) {
  RG_TRY(check_u32("f32_softmax_rows_forward", matrix_elements(rows, cols), {x, y}));
  if (cols == 0) return Event();
  return launch_1d(device, kActivationProgram, "f32_softmax_rows_forward", detail::division_options(device), rows,
                   u32(rows), u32(cols), x.mem, u32(x.offset), y.mem, u32(y.offset));
}

Result<Event> f32_softmax_rows_backward(Device& device, int64_t rows, int64_t cols, DeviceSpan y, DeviceSpan dy,
                                        DeviceSpan dx) {
  RG_TRY(check_u32("f32_softmax_rows_backward", matrix_elements(rows, cols), {y, dy, dx}));
  if (cols == 0) return Event();
  return launch_1d(device, kActivationProgram, "f32_softmax_rows_backward", "", rows, u32(rows), u32(cols), y.mem,
                   u32(y.offset), dy.mem, u32(dy.offset), dx.mem, u32(dx.offset));
}

Result<Event> f32_add_bias(Device& device, int64_t rows, int64_t cols, DeviceSpan bias, DeviceSpan y) {
  const int64_t n = matrix_elements(rows, cols);
  RG_TRY(check_u32("f32_add_bias", cols, {bias}));
  RG_TRY(check_u32("f32_add_bias", n, {y}));
  return launch_1d(device, kActivationProgram, "f32_add_bias", "", n, u32(n), u32(cols), bias.mem, u32(bias.offset),
                   y.mem, u32(y.offset));
}

Result<Event> f32_column_sum(Device& device, int64_t rows, int64_t cols, DeviceSpan x, DeviceSpan sums) {
  RG_TRY(check_u32("f32_column_sum", matrix_elements(rows, cols), {x}));
  RG_TRY(check_u32("f32_column_sum", cols, {sums}));
  if (rows == 0 || cols == 0) return Event();
  const int64_t block_rows = rows_per_block(cols), blocks = (rows + block_rows - 1) / block_rows;  // the CPU's split
  if (blocks == 1) {
    return launch_1d(device, kActivationProgram, "f32_column_sum", "", cols, u32(rows), u32(cols), x.mem, u32(x.offset),
                     sums.mem, u32(sums.offset));
  }
  // Enough blocks to fill the device: an item each, the partials in the GEMM's scratch, then added in
  // block order (dcgan's conv1 bias gradient: 98 blocks x 64 columns of 512 rows).
  const std::unique_ptr<Buffer>& scratch = device.gemm_scratch_slot();
  if (blocks * cols >= kColumnSumPartialItems && scratch && scratch->bytes() / 4 >= blocks * cols) {
    RG_TRY(launch_1d(device, kActivationProgram, "f32_column_sum_block_partials", "", blocks * cols, u32(rows),
                     u32(cols), u32(block_rows), x.mem, u32(x.offset), scratch->mem())
               .status());
    return launch_1d(device, kActivationProgram, "f32_column_sum", "", cols, u32(blocks), u32(cols), scratch->mem(),
                     u32(0), sums.mem, u32(sums.offset));
  }
  // A work-group of 256 items per column (they load the tiles; up to 256 blocks a round)
  const int64_t tile = detail::local_tile_floats(device);
  return detail::launch_groups(device, kActivationProgram, "f32_column_sum_blocks", "", cols, 256, u32(rows), u32(cols),
                               u32(block_rows), u32(tile), x.mem, u32(x.offset), sums.mem, u32(sums.offset),
                               LocalBytes{static_cast<size_t>(tile) * sizeof(float)}, LocalBytes{256 * sizeof(float)});
}

}  // namespace rg::ocl
