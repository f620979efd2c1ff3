// Launcher of kernels/dropout.cl: one work-item per (row, block of kDropoutBlockValues values),
// launch_1d.h.
#include "opencl/dropout.h"

#include <cmath>

#include "opencl/launch_1d.h"

namespace rg::ocl {

using detail::u32;

Result<Event> f32_dropout_apply(Device& device, int64_t rows, int64_t row_size, uint64_t step_seed, int64_t row_offset,
                                uint64_t threshold, float scale, DeviceSpan from, DeviceSpan to) {
  RG_CHECK(rows >= 0 && row_size >= 0 && row_offset >= 0,
           "dropout over " << rows << " rows of " << row_size << " from sample " << row_offset);
  const int64_t n = rows * row_size;
  RG_TRY(detail::check_u32("f32_dropout_apply", n, {from, to}));
  // rows * blocks_per_row <= n < 2^32 items; the streams are nn/dropout.h's, which holds them
  // apart while (row_offset + rows) blocks_per_row stays within 2^64.
  const int64_t blocks_per_row = dropout_blocks_per_row(row_size);
  return detail::launch_1d(device, "dropout.cl", "f32_dropout_apply", "", n == 0 ? 0 : rows * blocks_per_row, u32(rows),
                           u32(row_size), u32(kDropoutBlockValues), u32(blocks_per_row), cl_ulong{step_seed},
                           static_cast<cl_ulong>(row_offset), cl_ulong{threshold}, scale, from.mem, u32(from.offset),
                           to.mem, u32(to.offset));
}

}  // namespace rg::ocl
