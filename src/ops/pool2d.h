// Max and average pooling of one NHWC sample, templated on float/double (Pool2D runs them per
// sample; tests call them directly): x [height, width, channels] -> y [out_h, out_w, channels],
// square window, stride and zero padding from ConvGeometry. Every output element takes its
// window's positions row by row; channels run innermost (contiguous: the compiler vectorises).
// Float max pools' backwards over tiling windows run on the kernel table's (f32_vector.h), bit for
// bit the same.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu/kernel_tables.h"
#include "ops/im2col.h"

namespace rg {

// The part of window (oh, ow) inside the image: rows [h0, h1), columns [w0, w1).
struct PoolWindow {
  int64_t h0, h1, w0, w1;
};
inline PoolWindow pool_window(const ConvGeometry& g, int64_t oh, int64_t ow) {
  const int64_t top = oh * g.stride - g.pad, left = ow * g.stride - g.pad;
  return {std::max<int64_t>(top, 0), std::min(top + g.kernel, g.height), std::max<int64_t>(left, 0),
          std::min(left + g.kernel, g.width)};
}

// The forwards sweep one output row at a time: for each window position (kh, kw) in order, every
// window of the row takes its pixel at that position (if inside the image). Each output element
// sees its positions in the same order as a window-by-window loop, but its updates lie a whole
// row apart, so none waits on the store of the one before.
template <class T, class Step>
void pool_forward_rows(const ConvGeometry& g, const T* x, T* y, T start, Step step) {
  const int64_t c = g.channels, row = g.out_w * c;
  for (int64_t oh = 0; oh < g.out_h; ++oh, y += row) {
    std::fill(y, y + row, start);
    for (int64_t kh = 0; kh < g.kernel; ++kh) {
      const int64_t ih = oh * g.stride - g.pad + kh;
      if (ih < 0 || ih >= g.height) continue;
      for (int64_t kw = 0; kw < g.kernel; ++kw)
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t iw = ow * g.stride - g.pad + kw;
          if (iw < 0 || iw >= g.width) continue;
          step(c, x + (ih * g.width + iw) * c, y + ow * c);
        }
    }
  }
}

// A pool of at most this many channels runs with_few_channels' loops, more the kernel table's.
constexpr int64_t kFewChannels = 8;

// Calls f(std::integral_constant<int, C>) with C = channels and returns true for 1 to 8
// channels; false for more. Loops over a few channels known at compile time unroll into
// registers; over a run-time 6 they cost ~2 cycles a value (lenet's max pool forward 2.6x
// faster so). The backward's choices stay on the sweep's vectorised masks: unrolled per channel
// they were branches, mispredicted on the ties of a relu's zeros.
template <class F>
bool with_few_channels(int64_t channels, F&& f) {
  switch (channels) {
    case 1: f(std::integral_constant<int, 1>()); return true;
    case 2: f(std::integral_constant<int, 2>()); return true;
    case 3: f(std::integral_constant<int, 3>()); return true;
    case 4: f(std::integral_constant<int, 4>()); return true;
    case 5: f(std::integral_constant<int, 5>()); return true;
    case 6: f(std::integral_constant<int, 6>()); return true;
    case 7: f(std::integral_constant<int, 7>()); return true;
    case 8: f(std::integral_constant<int, 8>()); return true;
    default: return false;
  }
}

// Whether the windows tile the image from its corner (stride == kernel, no padding: every pool
// of the presets): window (oh, ow) is pixels [oh k, oh k + k) x [ow k, ow k + k), all inside.
inline bool pool_windows_tile(const ConvGeometry& g) { return g.stride == g.kernel && g.pad == 0; }

// The max pool of tiling windows with C channels: each output's window in the same order as
// below (row by row), its running maxima in registers.
template <class T, int C>
void max_pool_forward_tiled(const ConvGeometry& g, const T* x, T* y) {
  const int64_t k = g.kernel, w = g.width;
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, y += C) {
      const T* window = x + (oh * k * w + ow * k) * C;
      T m[C];
      for (int ch = 0; ch < C; ++ch) m[ch] = -std::numeric_limits<T>::infinity();
      for (int64_t kh = 0; kh < k; ++kh)
        for (int64_t kw = 0; kw < k; ++kw)
          for (int ch = 0; ch < C; ++ch) m[ch] = std::max(m[ch], window[(kh * w + kw) * C + ch]);
      for (int ch = 0; ch < C; ++ch) y[ch] = m[ch];
    }
}

// y = the max over the window's positions inside the image (padding never wins), starting from
// -inf: y = max(y, x) keeps y when x is NaN or equal (so of +0 and -0, the first wins).
// `general`: the row sweep even where the windows tile (for tests to compare).
template <class T>
void max_pool_forward(const ConvGeometry& g, const T* x, T* y, bool general = false) {
  if (!general && pool_windows_tile(g) &&
      with_few_channels(g.channels, [&](auto c) { max_pool_forward_tiled<T, decltype(c)::value>(g, x, y); }))
    return;
  pool_forward_rows(g, x, y, -std::numeric_limits<T>::infinity(), [](int64_t c, const T* px, T* py) {
    for (int64_t ch = 0; ch < c; ++ch) py[ch] = std::max(py[ch], px[ch]);
  });
}

// y = the sum over the window's positions inside the image / kernel^2 (padding counts as 0).
template <class T>
void avg_pool_forward(const ConvGeometry& g, const T* x, T* y) {
  pool_forward_rows(g, x, y, T(0), [](int64_t c, const T* px, T* py) {
    for (int64_t ch = 0; ch < c; ++ch) py[ch] += px[ch];
  });
  const T scale = T(1) / static_cast<T>(g.kernel * g.kernel);
  for (int64_t i = 0; i < g.out_h * g.out_w * g.channels; ++i) y[i] *= scale;
}

// The backwards overwrite dx [height, width, channels], window by window, each window's
// positions getting their share of its dy. Where windows cannot overlap (stride >= kernel),
// each element is in at most one window and is written once, as 0 + share: the same bits as
// adding the share to a zeroed dx; only what no window covers is zeroed first. Where they
// overlap (or with `general`, for tests to compare) dx is zeroed and the shares are added.
// Returns true where the shares are written.
template <class T>
bool pool_backward_prepare(const ConvGeometry& g, T* dx, bool general) {
  const bool disjoint = !general && g.stride >= g.kernel;
  // Windows of stride == kernel tile a dimension when the last one reaches its end.
  const auto tiled = [&](int64_t out, int64_t size) {
    return g.stride == g.kernel && (out - 1) * g.stride - g.pad + g.kernel >= size;
  };
  if (!disjoint || !tiled(g.out_h, g.height) || !tiled(g.out_w, g.width))
    std::fill(dx, dx + g.height * g.width * g.channels, T(0));
  return disjoint;
}

// Max: per channel, the window's dy goes to its first position (row by row) whose x equals y;
// no argmax is stored. rem [channels] (scratch) holds the dy not yet given, 0 once given. Float
// windows that tile the image with more than a few channels: the kernel table's (rem in a
// register; this loop keeps it in memory: cnn's 28x28x32 at avx512 1.07 -> 0.81-0.88 ms).
template <class T>
void max_pool_backward(const ConvGeometry& g, const T* x, const T* y, const T* dy, T* dx, T* rem,
                       bool general = false) {
  const int64_t c = g.channels;
  const bool write = pool_backward_prepare(g, dx, general);
  if constexpr (std::is_same_v<T, float>) {
    if (!general && pool_windows_tile(g) && c > kFewChannels) {  // written: 0 + share, as below
      f32_vector().max_pool_tiled_grad(g.out_h, g.out_w, g.kernel, g.width, c, x, y, dy, dx);
      return;
    }
  }
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, y += c, dy += c) {
      const PoolWindow w = pool_window(g, oh, ow);
      for (int64_t ch = 0; ch < c; ++ch) rem[ch] = dy[ch];
      for (int64_t ih = w.h0; ih < w.h1; ++ih)
        for (int64_t iw = w.w0; iw < w.w1; ++iw) {
          const int64_t at = (ih * g.width + iw) * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            const bool hit = x[at + ch] == y[ch];
            const T share = hit ? rem[ch] : T(0);
            rem[ch] = hit ? T(0) : rem[ch];
            dx[at + ch] = (write ? T(0) : dx[at + ch]) + share;
          }
        }
    }
}

// Average: every position of the window gets dy / kernel^2 (padded positions' shares are dropped).
template <class T>
void avg_pool_backward(const ConvGeometry& g, const T* dy, T* dx, bool general = false) {
  const int64_t c = g.channels;
  const T scale = T(1) / static_cast<T>(g.kernel * g.kernel);
  const bool write = pool_backward_prepare(g, dx, general);
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, dy += c) {
      const PoolWindow w = pool_window(g, oh, ow);
      for (int64_t ih = w.h0; ih < w.h1; ++ih)
        for (int64_t iw = w.w0; iw < w.w1; ++iw) {
          T* px = dx + (ih * g.width + iw) * c;
          for (int64_t ch = 0; ch < c; ++ch) px[ch] = (write ? T(0) : px[ch]) + dy[ch] * scale;
        }
    }
}

}  // namespace rg
