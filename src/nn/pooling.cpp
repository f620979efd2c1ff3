// Max, average and global average pooling; each sample's output has one owner thread and a
// fixed order of summation, so results do not depend on the thread count.
#include "nn/pooling.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "nn/cfg.h"

namespace rg {

namespace {
// The part of window (oh, ow) inside the image: rows [h0, h1), columns [w0, w1).
struct Window {
  int64_t h0, h1, w0, w1;
};
Window window_at(const ConvGeometry& g, int64_t oh, int64_t ow) {
  const int64_t top = oh * g.stride - g.pad, left = ow * g.stride - g.pad;
  return {std::max<int64_t>(top, 0), std::min(top + g.kernel, g.height), std::max<int64_t>(left, 0),
          std::min(left + g.kernel, g.width)};
}

template <class T>
void max_forward(const ConvGeometry& g, const T* x, T* y) {
  const int64_t c = g.channels;
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, y += c) {
      const Window w = window_at(g, oh, ow);
      std::fill(y, y + c, -std::numeric_limits<T>::infinity());
      for (int64_t ih = w.h0; ih < w.h1; ++ih)
        for (int64_t iw = w.w0; iw < w.w1; ++iw) {
          const T* px = x + (ih * g.width + iw) * c;
          for (int64_t ch = 0; ch < c; ++ch) y[ch] = std::max(y[ch], px[ch]);
        }
    }
}

// dx must be zero; `taken` has room for one flag per channel.
template <class T>
void max_backward(const ConvGeometry& g, const T* x, const T* y, const T* dy, T* dx, std::vector<char>& taken) {
  const int64_t c = g.channels;
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, y += c, dy += c) {
      const Window w = window_at(g, oh, ow);
      std::fill(taken.begin(), taken.end(), 0);
      for (int64_t ih = w.h0; ih < w.h1; ++ih)
        for (int64_t iw = w.w0; iw < w.w1; ++iw) {
          const int64_t at = (ih * g.width + iw) * c;
          for (int64_t ch = 0; ch < c; ++ch) {
            if (taken[static_cast<size_t>(ch)] || x[at + ch] != y[ch]) continue;
            taken[static_cast<size_t>(ch)] = 1;
            dx[at + ch] += dy[ch];
          }
        }
    }
}

template <class T>
void avg_forward(const ConvGeometry& g, const T* x, T* y) {
  const int64_t c = g.channels;
  const T scale = T(1) / static_cast<T>(g.kernel * g.kernel);
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, y += c) {
      const Window w = window_at(g, oh, ow);
      std::fill(y, y + c, T(0));
      for (int64_t ih = w.h0; ih < w.h1; ++ih)
        for (int64_t iw = w.w0; iw < w.w1; ++iw) {
          const T* px = x + (ih * g.width + iw) * c;
          for (int64_t ch = 0; ch < c; ++ch) y[ch] += px[ch];
        }
      for (int64_t ch = 0; ch < c; ++ch) y[ch] *= scale;
    }
}

// dx must be zero.
template <class T>
void avg_backward(const ConvGeometry& g, const T* dy, T* dx) {
  const int64_t c = g.channels;
  const T scale = T(1) / static_cast<T>(g.kernel * g.kernel);
  for (int64_t oh = 0; oh < g.out_h; ++oh)
    for (int64_t ow = 0; ow < g.out_w; ++ow, dy += c) {
      const Window w = window_at(g, oh, ow);
      for (int64_t ih = w.h0; ih < w.h1; ++ih)
        for (int64_t iw = w.w0; iw < w.w1; ++iw) {
          T* px = dx + (ih * g.width + iw) * c;
          for (int64_t ch = 0; ch < c; ++ch) px[ch] += dy[ch] * scale;
        }
    }
}
}  // namespace

// ---------------------------------------------------------------- Pool2D

Result<std::unique_ptr<Layer>> Pool2D::from_cfg(const CfgSection& section) {
  const PoolKind kind = section.kind() == "maxpool" ? PoolKind::max : PoolKind::average;
  RG_ASSIGN(const int64_t size, section.get_int("size", 1, 64));
  RG_ASSIGN(const int64_t stride, section.get_int_or("stride", size, 1, 64));
  RG_ASSIGN(const int64_t pad, section.get_int_or("pad", 0, 0, 63));
  return std::unique_ptr<Layer>(new Pool2D(kind, size, stride, pad));
}

Result<Shape> Pool2D::configure(const Shape& input) {
  if (input.rank() != 3) return Status::error("pooling takes images (height x width x channels), not " + input.str());
  RG_ASSIGN(geometry_, conv_geometry(input[0], input[1], input[2], size_, stride_, pad_));
  return Shape{geometry_.out_h, geometry_.out_w, input[2]};
}

void Pool2D::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0], in_sample = x.numel() / n, out_sample = y.numel() / n;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    parallel_for(ctx.pool, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* xi = x.data<T>() + i * in_sample;
        T* yi = y.data<T>() + i * out_sample;
        if (kind_ == PoolKind::max) {
          max_forward(geometry_, xi, yi);
        } else {
          avg_forward(geometry_, xi, yi);
        }
      }
    });
  });
}

void Pool2D::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  if (!dx.defined()) return;
  const int64_t n = x.shape()[0], in_sample = x.numel() / n, out_sample = y.numel() / n;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    parallel_for(ctx.pool, n, 1, [&](int64_t b, int64_t e) {
      std::vector<char> taken(static_cast<size_t>(geometry_.channels));
      for (int64_t i = b; i < e; ++i) {
        T* dxi = dx.data<T>() + i * in_sample;
        std::fill(dxi, dxi + in_sample, T(0));
        const T* dyi = dy.data<T>() + i * out_sample;
        if (kind_ == PoolKind::max) {
          max_backward(geometry_, x.data<T>() + i * in_sample, y.data<T>() + i * out_sample, dyi, dxi, taken);
        } else {
          avg_backward(geometry_, dyi, dxi);
        }
      }
    });
  });
}

std::string Pool2D::describe() const {
  return std::to_string(size_) + "x" + std::to_string(size_) + " stride " + std::to_string(stride_) +
         (pad_ > 0 ? " pad " + std::to_string(pad_) : "");
}

// ---------------------------------------------------------------- GlobalAvgPool

Result<std::unique_ptr<Layer>> GlobalAvgPool::from_cfg(const CfgSection& section) {
  (void)section;
  return std::unique_ptr<Layer>(new GlobalAvgPool());
}

Result<Shape> GlobalAvgPool::configure(const Shape& input) {
  if (input.rank() != 3) return Status::error("global_avgpool takes images (height x width x channels), not " + input.str());
  pixels_ = input[0] * input[1];
  channels_ = input[2];
  return Shape{channels_};
}

void GlobalAvgPool::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0], c = channels_;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = T(1) / static_cast<T>(pixels_);
    parallel_for(ctx.pool, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* xi = x.data<T>() + i * pixels_ * c;
        T* yi = y.data<T>() + i * c;
        std::fill(yi, yi + c, T(0));
        for (int64_t p = 0; p < pixels_; ++p)
          for (int64_t ch = 0; ch < c; ++ch) yi[ch] += xi[p * c + ch];
        for (int64_t ch = 0; ch < c; ++ch) yi[ch] *= scale;
      }
    });
  });
}

void GlobalAvgPool::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                             const LayerContext& ctx) {
  (void)x;
  (void)y;
  if (!dx.defined()) return;
  const int64_t n = dy.shape()[0], c = channels_;
  dispatch_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = T(1) / static_cast<T>(pixels_);
    parallel_for(ctx.pool, n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const T* dyi = dy.data<T>() + i * c;
        T* dxi = dx.data<T>() + i * pixels_ * c;
        for (int64_t p = 0; p < pixels_; ++p)
          for (int64_t ch = 0; ch < c; ++ch) dxi[p * c + ch] = dyi[ch] * scale;
      }
    });
  });
}

}  // namespace rg
