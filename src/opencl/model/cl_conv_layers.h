// Device convolutions (Conv2D, ConvTranspose2D) as im2col + GEMM, implicit GEMMs or Winograd,
// shared by make_cl_conv and the device RCL (cl_rcl.cpp), which composes them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "nn/conv.h"
#include "opencl/gemm.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

// Conv2D:          x [n, h, w, c] -> y [n, oh, ow, filters], W [k*k*c, filters]
// ConvTranspose2D: x [n, h, w, c] -> y [n, oh, ow, filters], W [c, k*k*filters] (its adjoint)
// Samples run in chunks whose patch matrix [chunk * patches, patch_size] fits chunk_elements
// floats of the workspace (one sample at least); a pointwise conv needs none.
// Conv2D's forward is im2col + GEMM or the implicit GEMM (f32_conv_gemm), whichever ran faster
// when the layer first ran (both timed on that chunk; the same bits either way). Its backward is
// the implicit weight gradient over the whole batch (f32_conv_gemm_weight_grad) with dx at stride
// 1 as the implicit convolution of dy with the flipped weight (nn/conv.cpp's direct dx; col2im in
// chunks at larger strides), or where that does not build, im2col + GEMMs + col2im in chunks: not
// timed (other bits: a run's must not depend on a measurement made anew; Winograd's dx and weight
// gradient, on the implicit path only, are timed once and kept). ConvTranspose2D's backward has
// both paths (implicit: its two products over the batch reading dy's patches), auto keeping
// im2col until the implicit one is measured on a GPU.
// Winograd F(4x4, 3x3) (opencl/winograd.h; other bits, within the CPU Winograd's tolerance) may
// run a Conv2D's forward and, apart, its stride-1 dx and its weight gradient where it fits (3x3,
// stride 1, pad <= 2): as
// the cfg's `algorithm` says where it names one (winograd always, gemm never); else always under
// RETROGRAD_CL_CONV=winograd; else under auto, on a tuned device (gemm_tuning.h) and with at
// least 8 input channels (the CPU's rule: fewer save too little), where it ran faster than the
// GEMM path when first timed on this device, shape and first call's batch, a choice the
// tuning's cache file keeps (GemmTuning::conv_winograd), so later runs there compute the same
// bits without timing (a Winograd that does not build or run leaves the GEMM; a weight gradient
// is timed at a call that overwrites dW). Its chunks: as many samples as their V and M (or V and
// D) fit beside the transformed weight (the slices' partial sums) in a 32nd of the device's
// memory (its budget where one is set), at least one
// patch-matrix chunk and at most kWinogradChunkFactor of them: a 512 MiB card's workspace stays
// the GEMM's, a large card runs a batch of 256 in one chunk.
// RETROGRAD_CL_CONV=im2col|implicit|winograd|auto (default auto) fixes the GEMM paths' choices
// (winograd: auto's where it does not fit), the cfg's Winograd apart; read when the layer is made.
class ClConv : public ClLayer {
 public:
  static constexpr int64_t kChunkElements = int64_t{8} << 20;  // 32 MiB of f32
  static constexpr int64_t kWinogradChunkFactor = 4;  // 128 MiB: a batch of 256 28x28x32 -> 32 in one chunk

  // `host` (a Conv2D or a ConvTranspose2D) after its init(): its params are uploaded.
  static Result<std::unique_ptr<ClConv>> create(ConvLayer& host, Device& device,
                                                int64_t chunk_elements = kChunkElements);

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override;
  // Conv2D: the fused layers' epilogue in its GEMM's last step, either path. ConvTranspose2D
  // ends in col2im and its bias add, not a GEMM: no fusion head.
  // Backward: dx added onto in its product where that is one product (a Conv2D at stride 1 on the
  // implicit path, its GEMM or Winograd, once the first backward has chosen it).
  FusionHead fusion_head() const override {
    return {!transposed_, !transposed_, false, !transposed_ && direct_dx_ && backward_path_ == Path::implicit};
  }
  Status forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx, const ClEpilogue& epilogue) override;
  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override;
  Status backward_fused(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx,
                        const ClBackwardFusion& fusion) override;
  std::vector<ClParam*> params() override;
  int64_t workspace_elements(int64_t n) const override;
  int64_t chunk_samples(int64_t n) const;  // samples per chunk for a batch of n

  enum class Path { unmeasured, im2col, implicit, winograd };  // winograd: the forward only
  Path forward_path() const { return path_; }
  Path backward_path() const { return backward_path_; }

 private:
  ClConv(Device& device, const ConvLayer& host, bool transposed, int64_t chunk_elements);
  // `epilogue`: the bias, then the fused layers' affine and activation.
  Status conv_forward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue);
  Status conv_forward_gemm(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue);
  // One chunk of `count` samples by `path`: x and y the chunk's.
  Status conv_forward_chunk(Path path, int64_t count, DeviceSpan x, DeviceSpan y, DeviceSpan ws,
                            const GemmEpilogue& epilogue);
  // The first chunk: the path RETROGRAD_CL_CONV names, or both timed and the faster kept.
  Status choose_forward_path(int64_t count, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue);
  // The backward by `path` (both kinds), the conv's and the transposed conv's.
  // ctx: its workspace, and its host context's profile (the input gradient's part is marked).
  // add_dx: dx added onto (the implicit path's direct dx only: backward_fused checks fusion_head's add_to_dx).
  Status backward_by(Path path, int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                     const ClContext& ctx, bool add_dx = false);
  Status conv_backward_by(Path path, int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                          const ClContext& ctx, bool add_dx);
  Status transposed_backward_by(Path path, int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                                const ClContext& ctx);
  // The first call's path: RETROGRAD_CL_CONV's, else (auto) choose_backward_path's rule.
  Status choose_backward_path(int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep, const ClContext& ctx);
  // dx [n, h, w, c] = col2im(dy * W^T), in chunks of the workspace.
  Status dx_by_col2im(int64_t n, DeviceSpan dy, DeviceSpan dx, DeviceSpan ws);
  // out [n, ..., c_out] = beta out + the Winograd convolution of `in` by geometry g (g_, or
  // flipped_g_ for dx with the weight read flipped), then the epilogue: the weight transformed
  // once, then chunks of samples (winograd_chunk).
  Status winograd_conv(const ConvGeometry& g, int64_t c_out, ConvWeight read, int64_t n, DeviceSpan in,
                       DeviceSpan out, DeviceSpan ws, const GemmEpilogue& epilogue, float beta);
  int64_t winograd_chunk(const ConvGeometry& g, int64_t c_out, int64_t n) const;  // samples
  int64_t winograd_workspace_elements(const ConvGeometry& g, int64_t c_out, int64_t n) const;
  // A candidate's choice (winograd_fwd_ or winograd_dx_) under `key` (winograd_choice_key): the
  // cache's, else `gemm` and `winograd` each run twice and timed (their second runs), the faster
  // kept and remembered; a winograd that fails to build or run leaves the GEMM, unremembered.
  enum class Winograd { never, candidate, always };
  Status choose_winograd(Winograd& use, const std::string& key, const std::function<Status()>& gemm,
                         const std::function<Status()>& winograd);
  Status dx_direct(int64_t n, DeviceSpan dy, DeviceSpan dx, DeviceSpan ws, bool add_dx);  // the stride-1 dx
  // dW = beta dW + the weight gradient over the whole batch: the implicit GEMM or Winograd.
  Status weight_grad(int64_t n, DeviceSpan x, DeviceSpan dy, bool keep, DeviceSpan ws);
  Status winograd_weight_grad(int64_t n, DeviceSpan x, DeviceSpan dy, float beta, DeviceSpan ws);
  struct GradChunk {
    int64_t images;
    int slices;
  };
  GradChunk winograd_grad_chunk(int64_t n) const;  // Winograd's weight gradient: images a chunk, their slices
  Status transposed_forward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws);

  Device& device_;
  bool transposed_;
  ConvGeometry g_;  // Conv2D: over x; transposed: over y (its patches are x's pixels)
  int64_t filters_, in_sample_, out_sample_, chunk_elements_;
  bool has_bias_ = false;
  ClParam weight_, bias_;
  Path path_ = Path::unmeasured, backward_path_ = Path::unmeasured;
  std::string policy_;     // RETROGRAD_CL_CONV's, read when the layer is made ("winograd" where it fits only)
  Winograd winograd_fwd_ = Winograd::never, winograd_dx_ = Winograd::never, winograd_wgrad_ = Winograd::never;
  int64_t winograd_room_ = 0;  // floats a Winograd chunk may take (U, V and M; or P, V and D)
  // Conv2D at stride 1: dy's geometry as the convolution that gives dx (direct_dx_), else none.
  ConvGeometry flipped_g_;
  bool direct_dx_ = false;
};

}  // namespace rg::ocl
