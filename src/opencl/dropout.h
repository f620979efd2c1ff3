// Launcher of kernels/dropout.cl: inverted dropout's mask applied on the device, bit-exact with
// Dropout::apply_mask (nn/dropout.cpp), forward (x -> y) and backward (dy -> dx) alike, and the
// host-side constants it takes, computed as the CPU layer computes them.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "nn/dropout.h"  // dropout_step_seed, dropout_threshold, dropout_scale: the CPU's constants
#include "opencl/device.h"

namespace rg::ocl {

// to [rows, row_size] = from with each row's mask: row r draws from Rng(step_seed, row_offset + r),
// one next_u32() per value in order, dropped (+0) below threshold, else from * scale. from may
// equal to (in place). rows or row_size 0 enqueues nothing.
Result<Event> f32_dropout_apply(Device& device, int64_t rows, int64_t row_size, uint64_t step_seed, int64_t row_offset,
                                uint64_t threshold, float scale, DeviceSpan from, DeviceSpan to);

}  // namespace rg::ocl
