// The int8 inference kernels, bit-exact with the CPU's int8 engine (src/quant/): the qs8 GEMM
// with its gemmlowp requantization (qs8_gemm_ref, fixed_point.cpp), and the per-element stages
// an Int8Model runs between layers: quantize f32 -> int8, dequantize int8 -> f32 (quant_params.cpp),
// int8 max pooling (int8_stages.cpp) and a graph model's int8 add (ops/qs8_add.cpp). int8 is OpenCL's (signed) char. Launchers:
// src/opencl/qs8.cpp.
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two

// ---------------------------------------------------------------- requantization (fixed_point.cpp)

// round(a * b / 2^31), ties toward +infinity; INT_MAX for a == b == INT_MIN, the one overflow.
int srdhm(int a, int b) {
  const long ab = (long)a * (long)b;
  const long nudge = ab >= 0 ? (1L << 30) : (1L - (1L << 30));
  const int high = (int)((ab + nudge) / (1L << 31));  // OpenCL C's division truncates, as C++'s
  return a == b && a == INT_MIN ? INT_MAX : high;
}

// round(x / 2^exponent), ties away from zero; exponent in [0, 31] (the launcher's callers' contract).
int rdbpot(int x, int exponent) {
  const int mask = (int)((1L << exponent) - 1);
  const int remainder = x & mask;
  const int threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

// clamp(zero_point + rdbpot(srdhm(acc, multiplier), shift), lo, hi), in 64 bits as the CPU.
int requantize(int acc, int multiplier, int shift, int zero_point, int lo, int hi) {
  const long out = (long)zero_point + rdbpot(srdhm(acc, multiplier), shift);
  return (int)(out < lo ? lo : (out > hi ? hi : out));
}

// ---------------------------------------------------------------- GEMM

// C [m x n] (row stride ldc) = requantize(A [m x k] (stride lda) * B [k x n] (stride n) +
// bias[j]) with multiplier[j], shift[j] per column j. Tiles of QS8_TILE x QS8_TILE outputs, one
// per work-item (dim 0: columns, dim 1: rows), the A and B tiles staged in local memory; the
// global size is rounded up to whole tiles and items outside C only help load. The sums wrap
// modulo 2^32 as the CPU's int32 additions do (uint: no undefined overflow). Speed: a plain
// scalar kernel, k multiply-adds per output with two local reads each; no vector dot products.
#ifndef QS8_TILE
#define QS8_TILE 16
#endif
__kernel void qs8_gemm(uint m, uint n, uint k, __global const char* a, uint a_offset, uint lda,
                       __global const char* b, uint b_offset, __global const int* bias, uint bias_offset,
                       __global const int* multiplier, uint multiplier_offset, __global const int* shift,
                       uint shift_offset, int zero_point, int lo, int hi, __global char* c, uint c_offset, uint ldc) {
  __local char a_tile[QS8_TILE][QS8_TILE];  // [row][p]
  __local char b_tile[QS8_TILE][QS8_TILE];  // [p][column]
  const uint tj = get_local_id(0), ti = get_local_id(1);
  const uint j = get_global_id(0), i = get_global_id(1);
  uint acc = 0;
  for (uint p0 = 0; p0 < k; p0 += QS8_TILE) {
    // Outside A or B reads as 0, which adds nothing.
    const uint ap = p0 + tj, bp = p0 + ti;
    a_tile[ti][tj] = i < m && ap < k ? a[a_offset + i * lda + ap] : 0;
    b_tile[ti][tj] = bp < k && j < n ? b[b_offset + bp * n + j] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint p = 0; p < QS8_TILE; ++p) acc += (uint)((int)a_tile[ti][p] * (int)b_tile[p][tj]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (i >= m || j >= n) return;
  const int sum = (int)(acc + (uint)bias[bias_offset + j]);
  c[c_offset + i * ldc + j] = (char)requantize(sum, multiplier[multiplier_offset + j], shift[shift_offset + j],
                                               zero_point, lo, hi);
}

// ---------------------------------------------------------------- per-element stages

// q = clamp(rint(x * inverse) + zero_point, -128, 127) as quantize_s8: inverse = 1 / scale in
// float (the host's), rint rounds ties to even as nearbyint does, NaN -> -128, +-inf saturate.
// A device flushing subnormals differs only for scales below 2^-125 (a subnormal x then matters).
__kernel void qs8_quantize(uint n, float inverse, int zero_point, __global const float* x, uint x_offset,
                           __global char* q, uint q_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = rint(x[x_offset + i] * inverse) + (float)zero_point;
  q[q_offset + i] = (char)(int)(v > 127.0f ? 127.0f : (v >= -128.0f ? v : -128.0f));
}

// A graph model's int8 add as qs8_add (src/ops/qs8_add.cpp): each input less its zero point,
// shifted left 20 bits, scaled by its fixed-point multiplier; the sum requantized and clamped.
__kernel void qs8_add(uint n, __global const char* a, uint a_offset, __global const char* b, uint b_offset,
                      int a_zero_point, int a_multiplier, int a_shift, int b_zero_point, int b_multiplier,
                      int b_shift, int multiplier, int shift, int zero_point, int lo, int hi, __global char* y,
                      uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const int xa = ((int)a[a_offset + i] - a_zero_point) * (1 << 20);  // kQs8AddLeftShift
  const int xb = ((int)b[b_offset + i] - b_zero_point) * (1 << 20);
  const int sum = rdbpot(srdhm(xa, a_multiplier), a_shift) + rdbpot(srdhm(xb, b_multiplier), b_shift);
  y[y_offset + i] = (char)requantize(sum, multiplier, shift, zero_point, lo, hi);
}

// x = scale * (q - zero_point) as dequantize_s8 (the difference is exact in float).
__kernel void qs8_dequantize(uint n, float scale, int zero_point, __global const char* q, uint q_offset,
                             __global float* x, uint x_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  x[x_offset + i] = scale * (float)((int)q[q_offset + i] - zero_point);
}

// int8 max pooling as MaxPoolStage: x [batch, height, width, channels] -> y [batch, out_h, out_w,
// channels], the max over the window's positions inside the image from -128 (padding never wins;
// integers, so the order does not matter). One work-item per output; n = batch out_h out_w channels.
__kernel void qs8_max_pool(uint n, uint height, uint width, uint channels, uint kernel_size, uint stride, uint pad,
                           uint out_h, uint out_w, __global const char* x, uint x_offset, __global char* y,
                           uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, ow = i / channels % out_w, oh = i / channels / out_w % out_h;
  const uint b = i / channels / out_w / out_h;
  __global const char* image = x + x_offset + b * height * width * channels + ch;
  char acc = -128;
  for (uint kh = 0; kh < kernel_size; ++kh) {
    const int ih = (int)(oh * stride + kh) - (int)pad;
    if (ih < 0 || ih >= (int)height) continue;
    for (uint kw = 0; kw < kernel_size; ++kw) {
      const int iw = (int)(ow * stride + kw) - (int)pad;
      if (iw < 0 || iw >= (int)width) continue;
      acc = max(acc, image[((uint)ih * width + (uint)iw) * channels]);
    }
  }
  y[y_offset + i] = acc;
}

// int8 im2col as the GEMM stage's (int8_stages.cpp): x [batch, height, width, channels] ->
// cols [batch * out_h * out_w, k] (row stride k = kernel^2 channels, tap order kh, kw, channel);
// taps in the padding read as zero_point (the real value 0). One work-item per element of cols;
// n = batch out_h out_w k.
__kernel void qs8_im2col(uint n, uint height, uint width, uint channels, uint kernel_size, uint stride, uint pad,
                         uint out_h, uint out_w, int zero_point, __global const char* x, uint x_offset,
                         __global char* cols, uint cols_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint k = kernel_size * kernel_size * channels;
  const uint t = i % k, patch = i / k;
  const uint ch = t % channels, kw = t / channels % kernel_size, kh = t / channels / kernel_size;
  const uint ow = patch % out_w, oh = patch / out_w % out_h, b = patch / out_w / out_h;
  const int ih = (int)(oh * stride + kh) - (int)pad, iw = (int)(ow * stride + kw) - (int)pad;
  const bool inside = ih >= 0 && ih < (int)height && iw >= 0 && iw < (int)width;
  cols[cols_offset + i] =
      inside ? x[x_offset + ((b * height + (uint)ih) * width + (uint)iw) * channels + ch] : (char)zero_point;
}
