// BatchNorm on the device (opencl/batch_norm.h's kernels, bit-exact with nn/batch_norm.cpp on a
// device with IEEE double): x [n, ..., channels] as rows [n * values per sample / channels,
// channels]. Shared with the device RCL, which keeps one per step.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/batch_norm.h"
#include "opencl/batch_norm.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

class ClBatchNorm : public ClLayer {
 public:
  // `host` after its init(): gamma, beta (trained) and the running statistics uploaded;
  // `input` its per-sample shape.
  static Result<std::unique_ptr<ClBatchNorm>> create(BatchNorm& host, const Shape& input, Device& device);

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override;
  // Fusion: an activation applied as y is stored, training or not, and its backward taken as dy is
  // read; in inference the layer can instead fold into the head before it as an affine.
  FusionHead fusion_head() const override { return {false, true, true, false}; }
  Status forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx, const ClEpilogue& epilogue) override;
  FusionTail fusion_tail() const override { return {FusedActivation{}, true}; }
  Result<DeviceSpan> write_inference_affine() override;
  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override;
  Status backward_fused(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx,
                        const ClBackwardFusion& fusion) override;
  // The backward with an activation's backward before it and/or dx added onto a sum as well
  // (opencl/batch_norm.h's BatchNormBackwardFusion: the activation's output is this layer's y
  // after a forward with the activation fused).
  Status backward_with(int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx,
                       const BatchNormBackwardFusion& fused);
  std::vector<ClParam*> params() override { return {&gamma_, &beta_}; }
  std::vector<ClParam*> buffers() override { return {&running_mean_, &running_var_}; }
  // The forward's mean and inv_std and the backward's sums, in double: not per sample; the
  // inference affine.
  int64_t state_bytes(int64_t batch) const override;
  Status reserve(int64_t batch) override;
  void release() override {
    saved_.reset();
    affine_.reset();
  }

 private:
  ClBatchNorm(Device& device, const BatchNorm& host, const Shape& input);

  Device& device_;
  int64_t channels_, row_;  // row_: values per sample
  double momentum_, eps_;
  ClParam gamma_, beta_, running_mean_, running_var_;
  Buffer saved_;   // double [batch_norm_saved_count(channels, rows of the reserved batch)]
  Buffer affine_;  // float [2, channels]: write_inference_affine's scale, then shift
};

}  // namespace rg::ocl
