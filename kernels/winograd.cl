// f32 Winograd F(4x4, 3x3) of 3x3 stride-1 convolutions over NHWC batches: the transforms around
// batched products (launcher: src/opencl/winograd.cpp), the CPU's transforms (matrices in
// src/cpu/ukernels/f32_winograd.h, factored as f32_winograd_impl.h, the same operations in the
// same order) with the channels across work-items:
//   f32_winograd_weight: U [36][C][F] = G g G^T of each 3x3 filter g of W (ops/winograd_conv.cpp's
//                        sum over the 9 taps), or of W read flipped (a Conv2D's dx as a conv over dy)
//   f32_winograd_input:  V [36][T][C] = B^T d B of each tile's 6x6 input block d (0 past the image)
//   (gemm.cl, BATCHED:   M [36][T][F] = V[xi] [T x C] * U[xi] [C x F] for each of the 36 positions)
//   f32_winograd_output: y = A^T M A of each tile, its pixels inside the output only, then
//                        v + beta y_old and the GEMM's epilogue (bias, affine, activation)
// and the weight gradient, dW = G^T (sum over tiles of V (.) (A dy A^T)) G (ops/winograd_conv.h's):
//   f32_winograd_dy:     D [36][T][F] = A dy A^T of each tile's 4x4 block of dy (0 past the output)
//   (gemm.cl, BATCHED:   P = V[xi]^T [C x T] * D[xi] [T x F], each position's sum in S slices over T)
//   f32_winograd_weight_grad: dW [9][C][F] = beta dW + G^T (the slices' sum, in order) G
// T = images * tiles_h * tiles_w; tile t = (image, th, tw) row-major covers output rows
// 4 th .. 4 th + 3 and columns 4 tw .. 4 tw + 3, reading input rows 4 th - pad .. 4 th - pad + 5.
// One work-item per U value, per (tile, channel) of V, per (tile, filter) of y and of D, per
// (channel, filter) of dW; launched 1-D.
#pragma OPENCL FP_CONTRACT OFF
#include "fused_activation.h"

// G [6][3] (f32_winograd.h's kWinogradG).
__constant float kG[6][3] = {{1.0f / 4, 0.0f, 0.0f},
                             {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                             {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                             {1.0f / 24, 1.0f / 12, 1.0f / 6},
                             {1.0f / 24, -1.0f / 12, 1.0f / 6},
                             {0.0f, 0.0f, 1.0f}};

// Six values at in[0], in[step], ... through B^T into out[0], out[ostep], ... (f32_winograd_impl.h).
inline void winograd_bt(const float* in, int step, float* out, int ostep) {
  const float d0 = in[0], d1 = in[step], d2 = in[2 * step], d3 = in[3 * step], d4 = in[4 * step], d5 = in[5 * step];
  const float a = d4 - 4.0f * d2, b = d3 - 4.0f * d1, c = d4 - d2, e = 2.0f * (d3 - d1);
  out[0] = 4.0f * d0 - 5.0f * d2 + d4;
  out[ostep] = a + b;
  out[2 * ostep] = a - b;
  out[3 * ostep] = c + e;
  out[4 * ostep] = c - e;
  out[5 * ostep] = 4.0f * d1 - 5.0f * d3 + d5;
}

// Four values through A (A^T's transpose) into six.
inline void winograd_a(const float* in, int step, float* out, int ostep) {
  const float y0 = in[0], y1 = in[step], y2 = in[2 * step], y3 = in[3 * step];
  const float s = y0 + y2, t = y1 + y3, p = y0 + 4.0f * y2, q = 2.0f * y1 + 8.0f * y3;
  out[0] = y0;
  out[ostep] = s + t;
  out[2 * ostep] = s - t;
  out[3 * ostep] = p + q;
  out[4 * ostep] = p - q;
  out[5 * ostep] = y3;
}

// Six values through A^T into four.
inline void winograd_at(const float* in, int step, float* out, int ostep) {
  const float s = in[step] + in[2 * step], t = in[step] - in[2 * step];
  const float p = in[3 * step] + in[4 * step], q = in[3 * step] - in[4 * step];
  out[0] = in[0] + s + p;
  out[ostep] = t + 2.0f * q;
  out[2 * ostep] = s + 4.0f * p;
  out[3 * ostep] = t + 8.0f * q + in[5 * step];
}

// Item e = (xi * C + ci) * F + fo: U[xi][ci][fo] = sum over taps of (G (x) G)[xi][tap] g[tap],
// the taps in order, g[tap] = W[tap][ci][fo] (W [9][C][F]), or flipped (W [9][F][C], a Conv2D's
// weight whose dx this is): W[8 - tap][fo][ci]. One item per value: 36 C F items, so even a
// 16 x 16 filter bank keeps the device busy.
__kernel void f32_winograd_weight(uint C, uint F, uint flipped, __global const float* W, uint w_offset,
                                  __global float* U, uint u_offset) {
  const uint e = get_global_id(0);
  if (e >= 36 * C * F) return;
  const uint fo = e % F, ci = e / F % C, xi = e / (F * C);
  W += w_offset;
  float u = 0.0f;
  for (uint tap = 0; tap < 9; ++tap) {
    const float g = flipped ? W[((8 - tap) * F + fo) * C + ci] : W[(tap * C + ci) * F + fo];
    u += kG[xi / 6][tap / 3] * kG[xi % 6][tap % 3] * g;
  }
  U[u_offset + e] = u;
}

// Item e = t * C + ci: V[xi][t][ci] = (B^T d B)[xi / 6][xi % 6], d the tile's 6x6 block of
// channel ci of x [images, H, W, C] (0 outside it): columns first, then rows, as the CPU.
__kernel void f32_winograd_input(uint tiles, uint H, uint W, uint C, uint pad, uint tiles_h, uint tiles_w,
                                 __global const float* x, uint x_offset, __global float* V, uint v_offset) {
  const uint e = get_global_id(0);
  if (e >= tiles * C) return;
  const uint t = e / C, ci = e % C;
  const uint tw = t % tiles_w, th = t / tiles_w % tiles_h, image = t / (tiles_w * tiles_h);
  const int ih0 = (int)(th * 4) - (int)pad, iw0 = (int)(tw * 4) - (int)pad;
  x += x_offset + image * H * W * C + ci;
  float d[36], col[6];
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) {
      const int ih = ih0 + i, iw = iw0 + j;
      d[i * 6 + j] = (ih >= 0 && ih < (int)H && iw >= 0 && iw < (int)W) ? x[((uint)ih * W + (uint)iw) * C] : 0.0f;
    }
  float tmp[36];
  for (int j = 0; j < 6; ++j) winograd_bt(d + j, 6, tmp + j, 6);  // tmp = B^T d
  V += v_offset + t * C + ci;
  for (int i = 0; i < 6; ++i) {  // v = tmp B
    winograd_bt(tmp + i * 6, 1, col, 1);
    for (int j = 0; j < 6; ++j) V[(uint)(i * 6 + j) * tiles * C] = col[j];
  }
}

// Item e = t * F + fo: the tile's 4x4 outputs (A^T M A, columns first, then rows) of filter fo
// into y [images, OH, OW, F] at the pixels inside it: v + beta y (beta 0: y not read), then the
// epilogue (fused_activation.h's gemm_epilogue, the GEMM's).
__kernel void f32_winograd_output(uint tiles, uint OH, uint OW, uint F, uint tiles_h, uint tiles_w,
                                  __global const float* M, uint m_offset, float beta, __global float* y,
                                  uint y_offset, EPILOGUE_PARAMS) {
  const uint e = get_global_id(0);
  if (e >= tiles * F) return;
  const uint t = e / F, fo = e % F;
  const uint tw = t % tiles_w, th = t / tiles_w % tiles_h, image = t / (tiles_w * tiles_h);
  M += m_offset + t * F + fo;
  float m[36], tmp[24], out[4];
  for (uint xi = 0; xi < 36; ++xi) m[xi] = M[xi * tiles * F];
  for (int j = 0; j < 6; ++j) winograd_at(m + j, 6, tmp + j, 6);  // tmp [4 x 6] = A^T M
  y += y_offset + image * OH * OW * F + fo;
  for (uint i = 0; i < 4 && th * 4 + i < OH; ++i) {  // rows: tmp A
    winograd_at(tmp + i * 6, 1, out, 1);
    for (uint j = 0; j < 4 && tw * 4 + j < OW; ++j) {
      __global float* at = y + ((th * 4 + i) * OW + tw * 4 + j) * F;
      const float v = beta == 0.0f ? out[j] : out[j] + beta * *at;
      *at = gemm_epilogue(v, fo, F, EPILOGUE_ARGS);
    }
  }
}

// Item e = t * F + fo: D[xi][t][fo] = (A d A^T)[xi / 6][xi % 6], d the tile's 4x4 block of filter fo
// of dy [images, OH, OW, F] (0 past the output): columns first, then rows, as the CPU.
__kernel void f32_winograd_dy(uint tiles, uint OH, uint OW, uint F, uint tiles_h, uint tiles_w,
                              __global const float* dy, uint dy_offset, __global float* D, uint d_offset) {
  const uint e = get_global_id(0);
  if (e >= tiles * F) return;
  const uint t = e / F, fo = e % F;
  const uint tw = t % tiles_w, th = t / tiles_w % tiles_h, image = t / (tiles_w * tiles_h);
  dy += dy_offset + image * OH * OW * F + fo;
  float d[16], tmp[24], row[6];
  for (uint i = 0; i < 4; ++i)
    for (uint j = 0; j < 4; ++j) {
      const uint oh = th * 4 + i, ow = tw * 4 + j;
      d[i * 4 + j] = oh < OH && ow < OW ? dy[(oh * OW + ow) * F] : 0.0f;
    }
  for (int j = 0; j < 4; ++j) winograd_a(d + j, 4, tmp + j, 4);  // tmp [6 x 4] = A d
  D += d_offset + t * F + fo;
  for (int i = 0; i < 6; ++i) {  // v = tmp A^T
    winograd_a(tmp + i * 4, 1, row, 1);
    for (int j = 0; j < 6; ++j) D[(uint)(i * 6 + j) * tiles * F] = row[j];
  }
}

// Item e = ci * F + fo: m[xi] = the sum of position xi's `slices` partials P[xi * slices + s][ci][fo]
// in slice order; dW[tap][ci][fo] = beta dW (beta 0: not read) + sum over xi, in order, of
// (G (x) G)[xi][tap] m[xi], for each of the 9 taps (the transpose of f32_winograd_weight's sum).
__kernel void f32_winograd_weight_grad(uint C, uint F, uint slices, __global const float* P, uint p_offset,
                                       float beta, __global float* dW, uint dw_offset) {
  const uint e = get_global_id(0);
  if (e >= C * F) return;
  P += p_offset + e;
  float m[36];
  for (uint xi = 0; xi < 36; ++xi) {
    float sum = 0.0f;
    for (uint s = 0; s < slices; ++s) sum += P[(xi * slices + s) * C * F];
    m[xi] = sum;
  }
  dW += dw_offset + e;
  for (uint tap = 0; tap < 9; ++tap) {
    float v = beta == 0.0f ? 0.0f : beta * dW[tap * C * F];
    for (uint xi = 0; xi < 36; ++xi) v += kG[xi / 6][tap / 3] * kG[xi % 6][tap % 3] * m[xi];
    dW[tap * C * F] = v;
  }
}
