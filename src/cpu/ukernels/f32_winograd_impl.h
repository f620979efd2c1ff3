// The f32 Winograd F(4x4, 3x3) transforms written once with xsimd batches (contracts and
// matrices: f32_winograd.h). Include ONLY from an isa/*.cpp file (see f32_gemm_impl.h for why);
// RG_DEFINE_F32_WINOGRAD_KERNELS defines one ISA's kernels.
// B^T and A^T factored (Lavin and Gray's operation counts): per 1-D pass of six values,
//   B^T: r0 = 4 d0 - 5 d2 + d4,  r5 = 4 d1 - 5 d3 + d5,  a = d4 - 4 d2, b = d3 - 4 d1: r1 = a + b,
//        r2 = a - b,  c = d4 - d2, e = 2 (d3 - d1): r3 = c + e, r4 = c - e
//   A^T: s = m1 + m2, t = m1 - m2, p = m3 + m4, q = m3 - m4:
//        y0 = m0 + s + p, y1 = t + 2 q, y2 = s + 4 p, y3 = t + 8 q + m5
//   A (four values to six): s = y0 + y2, t = y1 + y3, p = y0 + 4 y2, q = 2 y1 + 8 y3:
//        r0 = y0, r1 = s + t, r2 = s - t, r3 = p + q, r4 = p - q, r5 = y3
#pragma once

#include <cstdint>
#include <cstring>
#include <xsimd/xsimd.hpp>

#include "cpu/ukernels/f32_winograd.h"

namespace rg {
namespace ukernel {

// Six values at in[0], in[step], ... through B^T into out[0], out[ostep], ...
template <class B>
inline void winograd_bt(const B* in, int step, B* out, int ostep) {
  const B four(4.0f), five(5.0f), two(2.0f);
  const B d0 = in[0], d1 = in[step], d2 = in[2 * step], d3 = in[3 * step], d4 = in[4 * step], d5 = in[5 * step];
  const B a = d4 - four * d2, b = d3 - four * d1, c = d4 - d2, e = two * (d3 - d1);
  out[0] = four * d0 - five * d2 + d4;
  out[ostep] = a + b;
  out[2 * ostep] = a - b;
  out[3 * ostep] = c + e;
  out[4 * ostep] = c - e;
  out[5 * ostep] = four * d1 - five * d3 + d5;
}

// Six values through A^T into four.
template <class B>
inline void winograd_at(const B* in, int step, B* out, int ostep) {
  const B two(2.0f), four(4.0f), eight(8.0f);
  const B s = in[step] + in[2 * step], t = in[step] - in[2 * step];
  const B p = in[3 * step] + in[4 * step], q = in[3 * step] - in[4 * step];
  out[0] = in[0] + s + p;
  out[ostep] = t + two * q;
  out[2 * ostep] = s + four * p;
  out[3 * ostep] = t + eight * q + in[5 * step];
}

// Four values through A (A^T's transpose) into six.
template <class B>
inline void winograd_a(const B* in, int step, B* out, int ostep) {
  const B two(2.0f), four(4.0f), eight(8.0f);
  const B y0 = in[0], y1 = in[step], y2 = in[2 * step], y3 = in[3 * step];
  const B s = y0 + y2, t = y1 + y3, p = y0 + four * y2, q = two * y1 + eight * y3;
  out[0] = y0;
  out[ostep] = s + t;
  out[2 * ostep] = s - t;
  out[3 * ostep] = p + q;
  out[4 * ostep] = p - q;
  out[5 * ostep] = y3;
}

// One batch of lanes (channels at..at+W) of one tile, in and out.
template <class B>
inline void winograd_input_lanes(const float* const* d, int64_t at, float* v, int64_t v_stride) {
  B t[36], r[6];
  for (int j = 0; j < 6; ++j) {  // columns: t = B^T d, each column loaded as it is transformed
    B column[6];
    for (int i = 0; i < 6; ++i) column[i] = B::load_unaligned(d[i * 6 + j] + at);
    winograd_bt(column, 1, t + j, 6);
  }
  for (int i = 0; i < 6; ++i) {                                   // rows: v = t B
    winograd_bt(t + i * 6, 1, r, 1);
    for (int j = 0; j < 6; ++j) r[j].store_unaligned(v + (i * 6 + j) * v_stride + at);
  }
}

template <class B>
inline void winograd_output_lanes(const float* m, int64_t m_stride, int64_t at, float* const* out, int64_t out_at) {
  B t[24], r[4];
  for (int j = 0; j < 6; ++j) {  // columns: t [4 x 6] = A^T M, each column loaded as it is transformed
    B column[6];
    for (int i = 0; i < 6; ++i) column[i] = B::load_unaligned(m + (i * 6 + j) * m_stride + at);
    winograd_at(column, 1, t + j, 6);
  }
  for (int i = 0; i < 4; ++i) {                                   // rows: y = t A
    winograd_at(t + i * 6, 1, r, 1);
    for (int j = 0; j < 4; ++j) {
      if (out[i * 4 + j] != nullptr) r[j].store_unaligned(out[i * 4 + j] + out_at);
    }
  }
}

template <class B>
inline void winograd_grad_lanes(const float* const* dy, int64_t at, float* v, int64_t v_stride) {
  B t[24], r[6];
  for (int j = 0; j < 4; ++j) {  // columns: t [6 x 4] = A dy, each column loaded as it is transformed
    B column[4];
    for (int i = 0; i < 4; ++i) column[i] = dy[i * 4 + j] != nullptr ? B::load_unaligned(dy[i * 4 + j] + at) : B(0.0f);
    winograd_a(column, 1, t + j, 4);
  }
  for (int i = 0; i < 6; ++i) {                                  // rows: v = t A^T
    winograd_a(t + i * 4, 1, r, 1);
    for (int j = 0; j < 6; ++j) r[j].store_unaligned(v + (i * 6 + j) * v_stride + at);
  }
}

// Whole batches in place; the last c % W lanes through zero-padded copies, so every lane takes
// the same vector code.
template <class Arch>
void winograd_input(int64_t c, const float* const* d, float* v, int64_t v_stride) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  int64_t at = 0;
  for (; at + W <= c; at += W) winograd_input_lanes<B>(d, at, v, v_stride);
  if (at == c) return;
  alignas(64) float in[36][W] = {}, out[36][W];
  const float* rows[36];
  for (int k = 0; k < 36; ++k) {
    std::memcpy(in[k], d[k] + at, static_cast<size_t>(c - at) * sizeof(float));
    rows[k] = in[k];
  }
  winograd_input_lanes<B>(rows, 0, out[0], W);
  for (int k = 0; k < 36; ++k) std::memcpy(v + k * v_stride + at, out[k], static_cast<size_t>(c - at) * sizeof(float));
}

template <class Arch>
void winograd_output(int64_t f, const float* m, int64_t m_stride, float* const* out) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  int64_t at = 0;
  for (; at + W <= f; at += W) winograd_output_lanes<B>(m, m_stride, at, out, at);
  if (at == f) return;
  alignas(64) float in[36][W] = {}, tail[16][W];
  float* rows[16];
  for (int k = 0; k < 36; ++k) std::memcpy(in[k], m + k * m_stride + at, static_cast<size_t>(f - at) * sizeof(float));
  for (int k = 0; k < 16; ++k) rows[k] = out[k] != nullptr ? tail[k] : nullptr;
  winograd_output_lanes<B>(in[0], W, 0, rows, 0);
  for (int k = 0; k < 16; ++k) {
    if (out[k] != nullptr) std::memcpy(out[k] + at, tail[k], static_cast<size_t>(f - at) * sizeof(float));
  }
}

template <class Arch>
void winograd_grad(int64_t f, const float* const* dy, float* v, int64_t v_stride) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  int64_t at = 0;
  for (; at + W <= f; at += W) winograd_grad_lanes<B>(dy, at, v, v_stride);
  if (at == f) return;
  alignas(64) float in[16][W] = {}, out[36][W];
  const float* rows[16];
  for (int k = 0; k < 16; ++k) {
    if (dy[k] != nullptr) std::memcpy(in[k], dy[k] + at, static_cast<size_t>(f - at) * sizeof(float));
    rows[k] = dy[k] != nullptr ? in[k] : nullptr;
  }
  winograd_grad_lanes<B>(rows, 0, out[0], W);
  for (int k = 0; k < 36; ++k) std::memcpy(v + k * v_stride + at, out[k], static_cast<size_t>(f - at) * sizeof(float));
}

}  // namespace ukernel
}  // namespace rg

#define RG_DEFINE_F32_WINOGRAD_KERNELS(isa, Arch)                                                   \
  void f32_winograd_input__##isa(int64_t c, const float* const* d, float* v, int64_t v_stride) {    \
    ukernel::winograd_input<Arch>(c, d, v, v_stride);                                               \
  }                                                                                                 \
  void f32_winograd_output__##isa(int64_t f, const float* m, int64_t m_stride, float* const* out) { \
    ukernel::winograd_output<Arch>(f, m, m_stride, out);                                            \
  }                                                                                                 \
  void f32_winograd_grad__##isa(int64_t f, const float* const* dy, float* v, int64_t v_stride) {    \
    ukernel::winograd_grad<Arch>(f, dy, v, v_stride);                                               \
  }
