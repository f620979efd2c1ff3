// Launcher of kernels/dropout.cl: inverted dropout's mask applied on the device, bit-exact with
// Dropout::apply_mask (nn/dropout.cpp), forward (x -> y) and backward (dy -> dx) alike, and the
// host-side constants it takes, computed as the CPU layer computes them.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "ops/dropout_mask.h"  // the mask's constants and streams, the CPU layer's too

namespace rg::ocl {

// to [rows, row_size] = from with each row's mask: value i of row r draws
// dropout_draw(dropout_state(step_seed), (row_offset + r) row_size + i), dropped (+0) below
// threshold, else from * scale; one work-item per value. from may equal to (in place). rows or
// row_size 0 enqueues nothing.
Result<Event> f32_dropout_apply(Device& device, int64_t rows, int64_t row_size, uint64_t step_seed, int64_t row_offset,
                                uint64_t threshold, float scale, DeviceSpan from, DeviceSpan to);

}  // namespace rg::ocl
