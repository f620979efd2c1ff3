// Device convolutions (Conv2D, ConvTranspose2D) as im2col + GEMM, shared by make_cl_conv and
// the device RCL (cl_rcl.cpp), which composes them.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/conv.h"
#include "opencl/gemm.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

// Conv2D:          x [n, h, w, c] -> y [n, oh, ow, filters], W [k*k*c, filters]
// ConvTranspose2D: x [n, h, w, c] -> y [n, oh, ow, filters], W [c, k*k*filters] (its adjoint)
// Samples run in chunks whose patch matrix [chunk * patches, patch_size] fits chunk_elements
// floats of the workspace (one sample at least); a pointwise conv needs none.
// Conv2D's forward is im2col + GEMM or the implicit GEMM (f32_conv_gemm), whichever ran faster
// when the layer first ran (both timed on that chunk; the same bits either way);
// RETROGRAD_CL_CONV=im2col|implicit|auto (default auto) fixes the choice.
class ClConv : public ClLayer {
 public:
  static constexpr int64_t kChunkElements = int64_t{8} << 20;  // 32 MiB of f32

  // `host` (a Conv2D or a ConvTranspose2D) after its init(): its params are uploaded.
  static Result<std::unique_ptr<ClConv>> create(ConvLayer& host, Device& device,
                                                int64_t chunk_elements = kChunkElements);

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override;
  // Conv2D: the fused layers' epilogue in its GEMM's last step, either path. ConvTranspose2D
  // ends in col2im and its bias add, not a GEMM: no fusion head.
  FusionHead fusion_head() const override { return {!transposed_, !transposed_}; }
  Status forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx, const ClEpilogue& epilogue) override;
  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override;
  std::vector<ClParam*> params() override;
  int64_t workspace_elements(int64_t n) const override;
  int64_t chunk_samples(int64_t n) const;  // samples per chunk for a batch of n

  enum class ForwardPath { unmeasured, im2col, implicit };
  ForwardPath forward_path() const { return path_; }

 private:
  ClConv(Device& device, const ConvLayer& host, bool transposed, int64_t chunk_elements);
  // `epilogue`: the bias, then the fused layers' affine and activation.
  Status conv_forward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue);
  // One chunk of `count` samples by `path`: x and y the chunk's.
  Status conv_forward_chunk(ForwardPath path, int64_t count, DeviceSpan x, DeviceSpan y, DeviceSpan ws,
                            const GemmEpilogue& epilogue);
  // The first chunk: the path RETROGRAD_CL_CONV names, or both timed and the faster kept.
  Status choose_forward_path(int64_t count, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue);
  Status conv_backward(int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep, DeviceSpan ws);
  Status transposed_forward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws);
  Status transposed_backward(int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep, DeviceSpan ws);

  Device& device_;
  bool transposed_;
  ConvGeometry g_;  // Conv2D: over x; transposed: over y (its patches are x's pixels)
  int64_t filters_, in_sample_, out_sample_, chunk_elements_;
  bool has_bias_ = false;
  ClParam weight_, bias_;
  ForwardPath path_ = ForwardPath::unmeasured;
};

}  // namespace rg::ocl
