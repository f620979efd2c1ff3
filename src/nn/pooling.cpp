// Max, average and global average pooling; each sample's output has one owner thread and a
// fixed order of summation, so results do not depend on the thread count.
#include "nn/pooling.h"

#include <algorithm>
#include <vector>

#include "nn/cfg.h"
#include "ops/pool2d.h"

namespace rg {

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
          max_pool_forward(geometry_, xi, yi);
        } else {
          avg_pool_forward(geometry_, xi, yi);
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
      std::vector<T> rem(static_cast<size_t>(geometry_.channels));
      for (int64_t i = b; i < e; ++i) {
        T* dxi = dx.data<T>() + i * in_sample;
        const T* dyi = dy.data<T>() + i * out_sample;
        if (kind_ == PoolKind::max) {
          max_pool_backward(geometry_, x.data<T>() + i * in_sample, y.data<T>() + i * out_sample, dyi, dxi, rem.data());
        } else {
          avg_pool_backward(geometry_, dyi, dxi);
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
