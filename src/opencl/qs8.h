// Launchers of kernels/qs8.cl: the int8 inference kernels, bit-exact with the CPU's int8 engine
// (src/quant/): qs8_gemm as qs8_gemm_ref, and the per-element stages an Int8Model runs between
// layers (quantize, dequantize, int8 max pooling, a graph model's int8 add). int8 spans are in bytes (element_span(buffer,
// 1), opencl/loss.h), int32 spans in 4-byte elements (element_span(buffer, 4)).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "ops/im2col.h"
#include "ops/qs8_add.h"
#include "ops/quant_params.h"

namespace rg::ocl {

// c [m x n] (int8, row stride ldc >= n) = requantize(a [m x k] (int8, row stride lda >= k) *
// b [k x n] (int8, unpacked, row stride n) + bias[j]) with multiplier[j] and shift[j] (int32 [n]
// each; shift in [0, 31] as quantize_multiplier makes them), zero_point, clamp [lo, hi] in
// [-128, 127]: qs8_gemm_ref's bits, int32 sums wrapping as the CPU's do.
Result<Event> qs8_gemm(Device& device, int64_t m, int64_t n, int64_t k, DeviceSpan a, int64_t lda, DeviceSpan b,
                       DeviceSpan bias, DeviceSpan multiplier, DeviceSpan shift, int32_t zero_point, int32_t lo,
                       int32_t hi, DeviceSpan c, int64_t ldc);

// y (int8) [n] = the int8 sum of a and b (int8 [n] each) by p, as qs8_add (ops/qs8_add.h).
Result<Event> qs8_add(Device& device, int64_t n, const Qs8AddParams& p, DeviceSpan a, DeviceSpan b, DeviceSpan y);
// x (f32) [n] -> q (int8) [n] by p, as quantize_s8 / quantize_s8_rows (ties to even, NaN -> -128).
Result<Event> qs8_quantize(Device& device, int64_t n, QuantParams p, DeviceSpan x, DeviceSpan q);
// q (int8) [n] -> x (f32) [n] = scale * (q - zero_point), as dequantize_s8.
Result<Event> qs8_dequantize(Device& device, int64_t n, QuantParams p, DeviceSpan q, DeviceSpan x);
// int8 x [batch, g.height, g.width, g.channels] -> y [batch, g.out_h, g.out_w, g.channels]: the
// max over each window's positions inside the image, as make_max_pool_stage's stage.
Result<Event> qs8_max_pool(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x, DeviceSpan y);

// int8 x [batch, g.height, g.width, g.channels] -> cols [batch * g.patches(), g.patch_size()]
// (row stride patch_size), taps in the padding reading as zero_point: the GEMM stage's patch
// rows without its padding to whole groups of 4.
Result<Event> qs8_im2col(Device& device, const ConvGeometry& g, int64_t batch, int32_t zero_point, DeviceSpan x,
                         DeviceSpan cols);

}  // namespace rg::ocl
