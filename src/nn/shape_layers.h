// Layers that move values without arithmetic on them.
//   Flatten:  x [n, ...] -> y [n, prod(...)] (a copy: each layer owns its output buffer)
//   Reshape:  x [n, ...] -> y [n, shape...] with the same number of values
//   Upsample: x [n, h, w, c] -> y [n, h*s, w*s, c], nearest neighbour; backward sums the
//             s*s copies of each value
#pragma once

#include "nn/layer.h"

namespace rg {

class CfgSection;

class Reshape : public Layer {
 public:
  // An empty target flattens.
  explicit Reshape(Shape target) : target_(target) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return target_.rank() == 0 ? "flatten" : "reshape"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::string describe() const override { return input_.str() + " -> " + output_.str(); }
  LayerTraffic traffic(double in, double out) const override { return moving_traffic(in, out); }

 private:
  Shape target_, input_, output_;
};

class Upsample : public Layer {
 public:
  explicit Upsample(int64_t scale) : scale_(scale) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "upsample"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::string describe() const override { return "nearest x" + std::to_string(scale_); }
  LayerTraffic traffic(double in, double out) const override { return moving_traffic(in, out); }

  int64_t scale() const { return scale_; }

 private:
  int64_t scale_;
  Shape input_;
};

}  // namespace rg
