// Elementwise ops over n elements, one work-item per element: the host rounds the global
// size up to the work-group size and items at or past n do nothing. Each buffer comes with
// an element offset so a kernel can work on part of one. f32 arithmetic throughout; the
// f16 kernels keep half in memory (vload_half / vstore_half_rte: any OpenCL 1.2 device, no
// cl_khr_fp16) and compute in f32. Built with -DRG_HALF_ARITHMETIC=1 (only where the device's
// fp16_arithmetic test passed: PoCL 3.1 refuses to build half arithmetic at all) the file adds
// the `__half` kernels, which compute in half, each operation rounded to half.
// Launchers: src/opencl/elementwise.cpp.
#pragma OPENCL FP_CONTRACT OFF  // a * x + y stays two roundings, as in the CPU reference
#include "fused_activation.h"
#ifdef RG_HALF_ARITHMETIC
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#endif

// y = a * x + y
__kernel void f32_axpy(uint n, float a, __global const float* x, uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  y[y_offset + i] = a * x[x_offset + i] + y[y_offset + i];
}

// x = a * x
__kernel void f32_scale(uint n, float a, __global float* x, uint x_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  x[x_offset + i] = a * x[x_offset + i];
}

// Loss scaling's unscale: g = factor * g, and flags[flag] = 1 when a g was Inf or NaN (its exponent
// all ones) before (train/loss_scale.cpp's scale_and_check; every item that finds one writes 1).
__kernel void f32_scale_and_flag_non_finite(uint n, float factor, __global float* g, uint g_offset,
                                            __global int* flags, uint flag) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = g[g_offset + i];
  if ((as_uint(v) & 0x7f800000u) == 0x7f800000u) flags[flag] = 1;
  g[g_offset + i] = factor * v;
}

// out = a + b (out may be a or b)
__kernel void f32_add(uint n, __global const float* a, uint a_offset, __global const float* b, uint b_offset,
                      __global float* out, uint out_offset, uint act, float slope) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  out[out_offset + i] = fused_activation(a[a_offset + i] + b[b_offset + i], act, slope);
}

// y (half) = x (float) rounded to nearest even, as base/fp16.h's f32_to_f16
__kernel void f16_from_f32(uint n, __global const float* x, uint x_offset, __global half* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  vstore_half_rte(x[x_offset + i], y_offset + i, y);
}

// y (float) = x (half), exact
__kernel void f32_from_f16(uint n, __global const half* x, uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  y[y_offset + i] = vload_half(x_offset + i, x);
}

// y = a * x + y with x and y stored as half: f32 arithmetic, one rounding to half at the end
__kernel void f16_axpy(uint n, float a, __global const half* x, uint x_offset, __global half* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float sum = a * vload_half(x_offset + i, x) + vload_half(y_offset + i, y);
  vstore_half_rte(sum, y_offset + i, y);
}

// x = a * x with x stored as half: f32 arithmetic, one rounding to half at the end
__kernel void f16_scale(uint n, float a, __global half* x, uint x_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  vstore_half_rte(a * vload_half(x_offset + i, x), x_offset + i, x);
}

#ifdef RG_HALF_ARITHMETIC
// The same in half: a is already a half value (the launcher rounds it), so (half)a is exact.
// Each result goes through a half variable, which drops any wider precision the compiler kept.

// y = a * x + y: the product rounded to half, then the sum (no fused multiply-add)
__kernel void f16_axpy__half(uint n, float a, __global const half* x, uint x_offset, __global half* y,
                             uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const half product = (half)a * x[x_offset + i];
  const half sum = product + y[y_offset + i];
  y[y_offset + i] = sum;
}

// x = a * x, rounded to half
__kernel void f16_scale__half(uint n, float a, __global half* x, uint x_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const half product = (half)a * x[x_offset + i];
  x[x_offset + i] = product;
}
#endif
