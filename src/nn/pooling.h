// Pooling over NHWC images, threaded over samples (the per-sample math: ops/pool2d.h).
//   Pool2D (max or average): x [n, h, w, c] -> y [n, oh, ow, c], square window, stride, zero
//     padding. Max ignores padded positions (PyTorch's -inf padding); average divides by the
//     whole window, padding included (PyTorch's count_include_pad = True default).
//     Max's backward finds the window's first position equal to y: no argmax is stored.
//   GlobalAvgPool: x [n, h, w, c] -> y [n, c], the mean of each channel.
#pragma once

#include "nn/layer.h"
#include "ops/im2col.h"

namespace rg {

class CfgSection;

enum class PoolKind { max, average };

class Pool2D : public Layer {
 public:
  Pool2D(PoolKind kind, int64_t size, int64_t stride, int64_t pad)
      : kind_(kind), size_(size), stride_(stride), pad_(pad) {}
  // [maxpool] or [avgpool]: size, stride (default: size), pad (default 0).
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return kind_ == PoolKind::max ? "maxpool" : "avgpool"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::string describe() const override;
  LayerTraffic traffic(double in, double out) const override {
    LayerTraffic t = moving_traffic(in, out);
    // Max pooling's backward finds each window's maximum again: x and y read too.
    if (kind_ == PoolKind::max) t.input_grad += in + out;
    return t;
  }

  PoolKind pool_kind() const { return kind_; }
  // The window as a convolution's geometry over the input (kernel = size).
  const ConvGeometry& geometry() const { return geometry_; }

 private:
  PoolKind kind_;
  int64_t size_, stride_, pad_;
  ConvGeometry geometry_;
};

class GlobalAvgPool : public Layer {
 public:
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "global_avgpool"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  LayerTraffic traffic(double in, double out) const override { return moving_traffic(in, out); }

 private:
  int64_t pixels_ = 0, channels_ = 0;
};

}  // namespace rg
