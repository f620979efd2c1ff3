// Depthwise convolution of NHWC images, templated on float/double: each channel is convolved with
// its own k x k filter (multiplier 1), the building block of small mobile networks.
//   x [h, w, c], weight [k*k, c] (tap t = kh * k + kw, channels innermost), bias [c] -> y [oh, ow, c]
// Every pass is a sum over taps of rows of c values read through an indirection (XNNPACK's
// dwconv): rows[p * taps + t] points at the c values tap t of output pixel p reads, or at a row
// of zeros where it falls in the padding. The forward and the input gradient are the same sum
// (depthwise_rows: the input gradient's rows point into dy, its taps the weights unflipped); the
// weight gradient sums rows times dy over the pixels (depthwise_weight_grad_rows). These scalar
// loops are the math, the f64 path and the reference the kernel table's vector kernels
// (cpu/ukernels/f32_vector.h: depthwise, depthwise_weight_grad) are tested against.
#pragma once

#include <cstdint>
#include <vector>

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

// Where the rows of one image's passes start, in elements from the image's first value; -1 is
// the zero row. The forward's (and the weight gradient's): [out_h * out_w * k*k] into x. The
// input gradient's: [height * width * k*k] into dy, dx pixel (ih, iw) reading at tap (kh, kw) the
// output pixel whose window put that tap on it (oh * stride - pad + kh = ih), if there is one.
inline std::vector<int64_t> depthwise_forward_offsets(const ConvGeometry& g) {
  std::vector<int64_t> at;
  at.reserve(static_cast<size_t>(g.patches() * g.kernel * g.kernel));
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow)
      for (int64_t kh = 0; kh < g.kernel; ++kh)
        for (int64_t kw = 0; kw < g.kernel; ++kw) {
          const int64_t ih = oh * g.stride - g.pad + kh, iw = ow * g.stride - g.pad + kw;
          const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
          at.push_back(inside ? (ih * g.width + iw) * g.channels : -1);
        }
  return at;
}

inline std::vector<int64_t> depthwise_input_grad_offsets(const ConvGeometry& g) {
  std::vector<int64_t> at;
  at.reserve(static_cast<size_t>(g.height * g.width * g.kernel * g.kernel));
  const auto source = [&](int64_t i, int64_t k, int64_t out) {  // the output index reading i at tap k, or -1
    const int64_t o = i + g.pad - k;
    return o >= 0 && o % g.stride == 0 && o / g.stride < out ? o / g.stride : -1;
  };
  for (int64_t ih = 0; ih < g.height; ++ih)
    for (int64_t iw = 0; iw < g.width; ++iw)
      for (int64_t kh = 0; kh < g.kernel; ++kh)
        for (int64_t kw = 0; kw < g.kernel; ++kw) {
          const int64_t oh = source(ih, kh, g.out_h), ow = source(iw, kw, g.out_w);
          at.push_back(oh >= 0 && ow >= 0 ? (oh * g.out_w + ow) * g.channels : -1);
        }
  return at;
}

// rows[i] = image + at[i], or `zeros` where at[i] is -1: one image's indirection.
template <class T>
void depthwise_indirection(const std::vector<int64_t>& at, const T* image, const T* zeros, const T** rows) {
  for (size_t i = 0; i < at.size(); ++i) rows[i] = at[i] < 0 ? zeros : image + at[i];
}

}  // namespace rg
