// Convolutions over NHWC images on the kernel table's f32 GEMM tiles.
//   Conv2D:          x [n, h, w, c] -> y [n, oh, ow, filters];  weight [k*k*c, filters]
//   ConvTranspose2D: x [n, h, w, c] -> y [n, oh, ow, filters];  weight [c, k*k*filters]
//   DepthwiseConv2D: x [n, h, w, c] -> y [n, oh, ow, c];        weight [k*k, c]
// Conv2D is direct: its forward and weight gradient read the patch matrix straight from a
// zero-padded copy of the input (a gathered GEMM, ops/gemm.h), and at stride 1 its input
// gradient is the same kind of convolution of the padded dy with the flipped weights, where
// that costs less than im2col's route (dy * W^T, then col2im).
// A depthwise convolution convolves each channel with its own k x k filter (ops/depthwise.h):
// no GEMM, a sum over taps of channel rows read through an indirection, on the kernel table's
// depthwise kernels in f32.
// A transposed convolution is the adjoint of a convolution: its forward is a convolution's
// backward-data (GEMM, then col2im), its backward-data a convolution's forward (im2col, GEMM).
// The batch runs in chunks of whole samples whose scratch fits kChunkElements, so the
// workspace stays a few MB whatever the batch; the chunking depends only on the batch size,
// never on the thread count, so results do not either.
#pragma once

#include <optional>

#include "nn/init.h"
#include "nn/layer.h"
#include "ops/conv_phases.h"
#include "ops/im2col.h"
#include "ops/winograd_conv.h"

namespace rg {

class CfgSection;

// How a Conv2D computes its forward and (at stride 1) its input gradient: the gathered GEMM over
// the padded image, or Winograd F(4x4, 3x3) (3x3 at stride 1; f32 only: f64 and int8 training
// products stay on the GEMM). The weight gradient follows the forward (WinogradConv::weight_grad).
enum class ConvAlgorithm : uint8_t { gemm, winograd };
const char* conv_algorithm_name(ConvAlgorithm a);  // "gemm", "winograd"

struct ConvOptions {
  int64_t filters = 1;  // depthwise: the input's channels (set by configure)
  int64_t kernel = 3, stride = 1, pad = 0;
  int64_t output_pad = 0;  // transposed only: extra rows/columns at the bottom/right, < stride
  Init init = Init::he_uniform;
  bool bias = true;
  // Conv2D only: cfg `algorithm = gemm | winograd` forces one; unset (`auto`, the default) lets
  // the trainer choose by measuring (nn/conv_tuning.h), the GEMM until it does.
  std::optional<ConvAlgorithm> algorithm;
};

class ConvLayer : public Layer {
 public:
  explicit ConvLayer(const ConvOptions& options) : options_(options) {}

  Status init(Rng& rng, DType dtype) override;
  std::vector<Param*> params() override;
  int64_t parameter_count() const override;
  // Each weight meets each of geometry_'s patches once (a transposed conv: each input pixel).
  int64_t forward_flops_per_sample() const override { return 2 * weight_shape_.numel() * geometry_.patches(); }
  LayerTraffic traffic(double in, double out) const override {
    return product_traffic(in, out, static_cast<double>(parameter_count()));
  }
  int64_t workspace_elements(int64_t batch) const override;
  std::string describe() const override;
  // A relu after any convolution runs inside it in training (LayerContext::fused_relu): with the
  // bias as each chunk of y is written, and its gradient in place over dy before the products.
  bool fuses_relu() const override { return true; }

  // For inference engines that rebuild the layer (quant/): its settings and trained values.
  const ConvOptions& options() const { return options_; }
  const ConvGeometry& geometry() const { return geometry_; }
  const Tensor& weight() const { return weight_.value; }
  const Tensor& bias() const { return bias_.value; }  // undefined without a bias
  // After configure(): whether the f32 adjoint (Conv2D's dx, ConvTranspose2D's forward) runs by phases.
  bool adjoint_by_phases() const { return has_phases_; }

 protected:
  // Scratch elements per sample of a chunk, and once per call for chunks of per_chunk samples
  // (weights reordered or transformed, Winograd's lanes).
  virtual int64_t scratch_per_sample() const = 0;
  virtual int64_t scratch_fixed(int64_t per_chunk) const {
    (void)per_chunk;
    return 0;
  }
  // describe()'s last part: how the layer computes (Conv2D: ", winograd" under Winograd).
  virtual std::string describe_algorithm() const { return ""; }
  // Samples per chunk for a batch of n: as many as keep the scratch under the limit.
  int64_t chunk_samples(int64_t n) const;
  // The weight gradient's partial products (a depth split, ops/gemm.h: C is the weight, the depth
  // a chunk's pixels) for a batch of n, last in the scratch; where they start in `space`.
  virtual int64_t weight_grad_partials(int64_t n) const;
  template <class T>
  T* weight_grad_partials_in(const Tensor& space, int64_t n) const {
    return space.data<T>() + workspace_elements(n) - weight_grad_partials(n);
  }
  // The patch matrix's rows and columns for one sample.
  int64_t patch_rows() const { return geometry_.patches(); }
  int64_t patch_cols() const { return geometry_.patch_size(); }
  // After configure(): the weight's shape and its fans for the initialiser.
  void set_weight_shape(const Shape& shape, int64_t fan_in, int64_t fan_out);
  // offsets_ for chunks of `count` samples (kept: rebuilt only when count changes).
  virtual void prepare_offsets(int64_t count);

  ConvOptions options_;
  ConvGeometry geometry_;  // Conv2D: over the input; ConvTranspose2D: over the output
  Shape weight_shape_;
  int64_t fan_in_ = 0, fan_out_ = 0;
  Param weight_, bias_;
  int64_t offsets_count_ = 0;
  PatchOffsets offsets_;  // reads geometry_'s patches from its padded image
  // The convolution's adjoint by output phases (ops/conv_phases.h) where it fits: Conv2D's dx at a
  // stride above 1, ConvTranspose2D's forward; run for f32 products (others keep im2col's route).
  bool has_phases_ = false;
  ConvPhases phases_;
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
  // Whether dx is computed as a direct convolution (else im2col's route); for tests.
  bool direct_input_grad() const { return direct_dx_; }
  ConvAlgorithm algorithm() const { return algorithm_; }
  // Under Winograd its products and transforms (forward and dW over the output's tiles, dx over
  // the input's: WinogradConv::executed_flops_per_sample).
  int64_t executed_flops_per_sample(int phase) const override;
  // Whether Winograd can compute this layer (set_algorithm's rule), and whether auto weighs it:
  // with fewer than 8 input channels its transforms cost about what the products save (per
  // output and filter 9c direct multiply-adds against 2.25c, plus ~6 for the output transform
  // and ~9c / filters for the input's), so auto keeps the GEMM without timing or reserving it.
  bool winograd_fits() const { return WinogradConv::fits(geometry_) && geometry_.pad <= 2; }
  bool winograd_candidate() const { return winograd_fits() && geometry_.channels >= 8; }
  // After configure(): Winograd needs a 3x3 kernel at stride 1 and a pad of at most 2 (dx is
  // then the same convolution over dy padded by 2 - pad); the error says which rule failed.
  Status set_algorithm(ConvAlgorithm a);

 private:
  int64_t scratch_per_sample() const override;
  int64_t scratch_fixed(int64_t per_chunk) const override;

  void prepare_offsets(int64_t count) override;  // and dx_offsets_
  // The gathered GEMM's, or the planar weight gradient's over a whole batch where larger.
  int64_t weight_grad_partials(int64_t n) const override;
  // At stride 1: whether the GEMM's direct dx costs less than im2col's route (set_algorithm).
  bool direct_dx_costs_less() const;
  std::string describe_algorithm() const override;
  // The forward's (or dx's) Winograd plan where the layer runs Winograd, else null.
  const WinogradConv* winograd(bool dx = false) const;

  bool direct_dx_ = false;       // dx as a direct convolution now
  bool gemm_direct_dx_ = false;  // ... as the GEMM would compute it (Winograd always does)
  ConvGeometry flipped_geometry_;  // that convolution, where either may run it
  ConvAlgorithm algorithm_ = ConvAlgorithm::gemm;
  bool reserves_winograd_ = false;       // Winograd forced or possible under auto: scratch for it
  WinogradConv winograd_, winograd_dx_;  // forward, dx: set where reserves_winograd_
  ConvGeometry dx_geometry_;  // direct dx: the convolution over dy padded by kernel - 1 - pad
  PatchOffsets dx_offsets_;   // reads dx_geometry_'s patches from the padded dy
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

 private:
  int64_t scratch_per_sample() const override;
  int64_t scratch_fixed(int64_t per_chunk) const override;
  void forward_by_phases(const Tensor& x, const Tensor& y, const LayerContext& ctx);
  template <class T>
  void forward_by_patches(const Tensor& x, const Tensor& y, const LayerContext& ctx);
};

// Each channel convolved with its own filter (multiplier 1). Forward and dx run over the pool by
// samples; dW sums sample after sample in order, so no result depends on the thread count.
class DepthwiseConv2D : public ConvLayer {
 public:
  explicit DepthwiseConv2D(const ConvOptions& options) : ConvLayer(options) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "depthwise_conv"; }
  Result<Shape> configure(const Shape& input) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;

 private:
  // No scratch: its indirection is built a row at a time (ops/depthwise.h), a row's pointers per
  // thread (width * k*k), like the GEMM's packing the process's own memory.
  int64_t scratch_per_sample() const override { return 0; }
  int64_t weight_grad_partials(int64_t) const override { return 0; }  // its dW is no GEMM
};

}  // namespace rg
