// Launcher of kernels/dropout.cl: one work-item per value, launch_1d.h.
#include "opencl/dropout.h"

#include <cmath>
#include <limits>

#include "opencl/launch_1d.h"

namespace rg::ocl {

using detail::u32;

Result<Event> f32_dropout_apply(Device& device, int64_t rows, int64_t row_size, uint64_t step_seed, int64_t row_offset,
                                uint64_t threshold, float scale, DeviceSpan from, DeviceSpan to) {
  RG_CHECK(rows >= 0 && row_size >= 0 && row_offset >= 0 &&
               (row_size == 0 || row_offset + rows <= std::numeric_limits<int64_t>::max() / row_size),
           "dropout over " << rows << " rows of " << row_size << " from sample " << row_offset);
  const int64_t n = rows * row_size;
  RG_TRY(detail::check_u32("f32_dropout_apply", n, {from, to}));
  return detail::launch_1d(device, "dropout.cl", "f32_dropout_apply", "", n, u32(n), cl_ulong{dropout_state(step_seed)},
                           static_cast<cl_ulong>(row_offset * row_size), cl_ulong{threshold}, scale, from.mem,
                           u32(from.offset), to.mem, u32(to.offset));
}

}  // namespace rg::ocl
