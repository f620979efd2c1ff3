// Convolutions over NHWC images, as im2col + GEMM on the kernel table's f32 GEMM.
//   Conv2D:          x [n, h, w, c] -> y [n, oh, ow, filters];  weight [k*k*c, filters]
//   ConvTranspose2D: x [n, h, w, c] -> y [n, oh, ow, filters];  weight [c, k*k*filters]
// A transposed convolution is the adjoint of a convolution: its forward is a convolution's
// backward-data (GEMM, then col2im), its backward-data a convolution's forward.
// The batch runs in chunks of whole samples whose patch matrices fit kChunkElements, so the
// workspace stays a few MB whatever the batch; the chunking depends only on the batch size,
// never on the thread count, so results do not either.
#pragma once

#include "nn/init.h"
#include "nn/layer.h"
#include "ops/im2col.h"

namespace rg {

class CfgSection;

struct ConvOptions {
  int64_t filters = 1;
  int64_t kernel = 3, stride = 1, pad = 0;
  int64_t output_pad = 0;  // transposed only: extra rows/columns at the bottom/right, < stride
  Init init = Init::he_uniform;
  bool bias = true;
};

class ConvLayer : public Layer {
 public:
  explicit ConvLayer(const ConvOptions& options) : options_(options) {}

  Status init(Rng& rng, DType dtype) override;
  std::vector<Param*> params() override;
  int64_t parameter_count() const override;
  int64_t workspace_elements(int64_t batch) const override;
  std::string describe() const override;

 protected:
  // Samples per chunk for a batch of n: as many as keep the patch matrix under the limit.
  int64_t chunk_samples(int64_t n) const;
  // The patch matrix's rows and columns for one sample.
  int64_t patch_rows() const { return geometry_.patches(); }
  int64_t patch_cols() const { return geometry_.patch_size(); }
  // After configure(): the weight's shape and its fans for the initialiser.
  void set_weight_shape(const Shape& shape, int64_t fan_in, int64_t fan_out);

  ConvOptions options_;
  ConvGeometry geometry_;  // Conv2D: over the input; ConvTranspose2D: over the output
  Shape weight_shape_;
  int64_t fan_in_ = 0, fan_out_ = 0;
  Param weight_, bias_;
};

class Conv2D : public ConvLayer {
 public:
  explicit Conv2D(const ConvOptions& options) : ConvLayer(options) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "conv"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
};

class ConvTranspose2D : public ConvLayer {
 public:
  explicit ConvTranspose2D(const ConvOptions& options) : ConvLayer(options) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "conv_transpose"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
};

}  // namespace rg
