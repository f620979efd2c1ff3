// Layers of a graph model that take two or more inputs (cfg `inputs = a, b`; nn/model.h).
//   Add:    y = x0 + x1 + ...; every input of one shape, no broadcasting (a residual sum)
//   Concat: y = [x0 | x1 | ...] along the last dimension (channels of an image); the other
//           dimensions equal
// The single-input Layer entry points are not theirs: the model calls the *_inputs ones.
#pragma once

#include "nn/layer.h"

namespace rg {

class CfgSection;

class MergeLayer : public Layer {
 public:
  // The inputs' per-sample shapes, with the names of the layers that give them (for messages)
  // -> the output's shape; the error names both shapes that disagree and the rule.
  virtual Result<Shape> configure_inputs(const std::vector<Shape>& inputs, const std::vector<std::string>& names) = 0;
  // xs[k] [n, inputs[k]...] -> y [n, out...].
  virtual void forward_inputs(const std::vector<Tensor>& xs, const Tensor& y, const LayerContext& ctx) = 0;
  // Given dy, writes each defined dxs[k] = dL/dxs[k], or adds it there where add_to[k] (the
  // input feeds other layers too, whose gradients are already in dxs[k]).
  virtual void backward_inputs(const Tensor& dy, const std::vector<Tensor>& dxs, const std::vector<bool>& add_to,
                               const LayerContext& ctx) = 0;

  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  LayerTraffic traffic(double in, double out) const override { return moving_traffic(in, out); }
};

class Add : public MergeLayer {
 public:
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);
  std::string kind() const override { return "add"; }
  Result<Shape> configure_inputs(const std::vector<Shape>& inputs, const std::vector<std::string>& names) override;
  void forward_inputs(const std::vector<Tensor>& xs, const Tensor& y, const LayerContext& ctx) override;
  void backward_inputs(const Tensor& dy, const std::vector<Tensor>& dxs, const std::vector<bool>& add_to,
                       const LayerContext& ctx) override;
  std::string describe() const override { return std::to_string(inputs_) + " inputs summed"; }

 private:
  size_t inputs_ = 0;
};

class Concat : public MergeLayer {
 public:
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);
  std::string kind() const override { return "concat"; }
  Result<Shape> configure_inputs(const std::vector<Shape>& inputs, const std::vector<std::string>& names) override;
  void forward_inputs(const std::vector<Tensor>& xs, const Tensor& y, const LayerContext& ctx) override;
  void backward_inputs(const Tensor& dy, const std::vector<Tensor>& dxs, const std::vector<bool>& add_to,
                       const LayerContext& ctx) override;
  std::string describe() const override;
  const std::vector<int64_t>& widths() const { return widths_; }  // after configure_inputs

 private:
  std::vector<int64_t> widths_;  // each input's last dimension
  int64_t width_ = 0;            // their sum: the output's last dimension
};

}  // namespace rg
