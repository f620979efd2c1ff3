// Depthwise convolution of NHWC images, templated on float/double: each channel is convolved with
// its own k x k filter (multiplier 1), the building block of small mobile networks.
//   x [h, w, c], weight [k*k, c] (tap t = kh * k + kw, channels innermost), bias [c] -> y [oh, ow, c]
// Every pass is a sum over taps of rows of c values read through an indirection (XNNPACK's
// dwconv): rows[p * taps + t] points at the c values tap t of output pixel p reads, or at a row
// of zeros where it falls in the padding, built a row of the image at a time. The forward and the input gradient are the same sum
// (depthwise_rows: the input gradient's rows point into dy, its taps the weights unflipped); the
// weight gradient sums rows times dy over the pixels (depthwise_weight_grad_rows). These scalar
// loops are the math, the f64 path and the reference the kernel table's vector kernels
// (cpu/ukernels/f32_vector.h: depthwise, depthwise_weight_grad) are tested against.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/im2col.h"

namespace rg {

// out[p * c + ch] = (bias ? bias[ch] : 0) + sum over t in order of rows[p * taps + t][ch] * w[t * c + ch].
template <class T>
void depthwise_rows(int64_t c, int64_t pixels, int64_t taps, const T* const* rows, const T* w, const T* bias, T* out) {
  for (int64_t p = 0; p < pixels; ++p, rows += taps, out += c)
    for (int64_t ch = 0; ch < c; ++ch) {
      T acc = bias != nullptr ? bias[ch] : T(0);
      for (int64_t t = 0; t < taps; ++t) acc += rows[t][ch] * w[t * c + ch];
      out[ch] = acc;
    }
}

// dw[t * c + ch] += sum over p in order of rows[p * taps + t][ch] * dy[p * c + ch].
template <class T>
void depthwise_weight_grad_rows(int64_t c, int64_t pixels, int64_t taps, const T* const* rows, const T* dy, T* dw) {
  for (int64_t t = 0; t < taps; ++t)
    for (int64_t ch = 0; ch < c; ++ch) {
      T acc = dw[t * c + ch];
      for (int64_t p = 0; p < pixels; ++p) acc += rows[p * taps + t][ch] * dy[p * c + ch];
      dw[t * c + ch] = acc;
    }
}

// One row of an image's indirection, built from the geometry as it is needed (an image's would be
// out_h * out_w * k*k pointers: 1.5 GiB for a 64x64 kernel over a 128x128 image; a row's is
// out_w * k*k). The forward's (and the weight gradient's): for each pixel of output row oh, its
// taps' rows in x, or `padding`.
template <class T>
void depthwise_forward_row(const ConvGeometry& g, int64_t oh, const T* image, const T* padding, const T** rows) {
  for (int64_t ow = 0; ow < g.out_w; ++ow)
    for (int64_t kh = 0; kh < g.kernel; ++kh)
      for (int64_t kw = 0; kw < g.kernel; ++kw) {
        const int64_t ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
        const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
        *rows++ = inside ? image + (ih * g.width + iw) * g.channels : padding;
      }
}

// The input gradient's: for each pixel (ih, iw) of input row ih, at tap (kh, kw), the dy row of
// the output pixel whose window put that tap on it (oh * stride - pad + kh = ih), if there is one.
template <class T>
void depthwise_input_grad_row(const ConvGeometry& g, int64_t ih, const T* dy, const T* padding, const T** rows) {
  const auto source = [&](int64_t i, int64_t k, int64_t out) {  // the output index reading i at tap k, or -1
    const int64_t o = i + g.pad - k;
    return o >= 0 && o % g.stride == 0 && o / g.stride < out ? o / g.stride : -1;
  };
  for (int64_t iw = 0; iw < g.width; ++iw)
    for (int64_t kh = 0; kh < g.kernel; ++kh)
      for (int64_t kw = 0; kw < g.kernel; ++kw) {
        const int64_t oh = source(ih, kh, g.out_h), ow = source(iw, kw, g.out_w);
        *rows++ = oh >= 0 && ow >= 0 ? dy + (oh * g.out_w + ow) * g.channels : padding;
      }
}

// fn(s, r, rows) for each row r < row_count of each image s < n (over the pool by images; null:
// in order), rows that row's indirection as row(s, r, padding, rows) builds it, `padding` a row of
// c values `pad` (zeros; the int8 engine's zero point). Per thread: one row's `pointers` and the
// padding row.
template <class T, class Row, class Fn>
void depthwise_each_row(ThreadPool* pool, int64_t n, int64_t row_count, int64_t pointers, int64_t c, T pad, Row row,
                        Fn fn) {
  parallel_for(pool, n, 1, [&](int64_t b, int64_t e) {
    std::vector<const T*> rows(static_cast<size_t>(pointers));
    const std::vector<T> padding(static_cast<size_t>(c), pad);
    for (int64_t s = b; s < e; ++s)
      for (int64_t r = 0; r < row_count; ++r) {
        row(s, r, padding.data(), rows.data());
        fn(s, r, static_cast<const T* const*>(rows.data()));
      }
  });
}

}  // namespace rg
