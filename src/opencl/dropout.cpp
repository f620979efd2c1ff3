// Launcher of kernels/dropout.cl: one work-item per row, launch_1d.h.
#include "opencl/dropout.h"

#include <cmath>

#include "opencl/launch_1d.h"

namespace rg::ocl {

using detail::u32;

// These three must stay Dropout::apply_mask's own formulas (nn/dropout.cpp), or the device's
// masks and scale part from the CPU's.
uint64_t dropout_step_seed(uint64_t layer_seed, uint64_t noise_stream) {
  return layer_seed ^ (noise_stream * 0x9E3779B97F4A7C15ull);
}
uint64_t dropout_threshold(double rate) { return static_cast<uint64_t>(std::llround(rate * 4294967296.0)); }
float dropout_scale(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }

Result<Event> f32_dropout_apply(Device& device, int64_t rows, int64_t row_size, uint64_t step_seed, int64_t row_offset,
                                uint64_t threshold, float scale, DeviceSpan from, DeviceSpan to) {
  RG_CHECK(rows >= 0 && row_size >= 0, "dropout over " << rows << " rows of " << row_size);
  const int64_t n = rows * row_size;
  RG_TRY(detail::check_u32("f32_dropout_apply", n, {from, to}));
  return detail::launch_1d(device, "dropout.cl", "f32_dropout_apply", "", n == 0 ? 0 : rows, u32(rows), u32(row_size),
                           cl_ulong{step_seed}, static_cast<cl_ulong>(row_offset), cl_ulong{threshold}, scale,
                           from.mem, u32(from.offset), to.mem, u32(to.offset));
}

}  // namespace rg::ocl
