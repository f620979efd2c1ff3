// BatchNorm on the device: the layer's statistics kept in `saved` from forward to backward.
#include "opencl/model/cl_batch_norm.h"

#include "nn/layer_profile.h"
#include "opencl/batch_norm.h"
#include "opencl/loss.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

ClBatchNorm::ClBatchNorm(Device& device, const BatchNorm& host, const Shape& input)
    : device_(device), channels_(host.channels()), row_(input.numel()), momentum_(host.momentum()), eps_(host.eps()) {}

Result<std::unique_ptr<ClBatchNorm>> ClBatchNorm::create(BatchNorm& host, const Shape& input, Device& device) {
  std::unique_ptr<ClBatchNorm> cl(new ClBatchNorm(device, host, input));
  const std::vector<Param*> p = host.params(), b = host.buffers();
  RG_ASSIGN(cl->gamma_, upload_param(device, *p[0], true));
  RG_ASSIGN(cl->beta_, upload_param(device, *p[1], true));
  RG_ASSIGN(cl->running_mean_, upload_param(device, *b[0], false));
  RG_ASSIGN(cl->running_var_, upload_param(device, *b[1], false));
  return cl;
}

int64_t ClBatchNorm::state_bytes(int64_t batch) const {
  return batch_norm_saved_count(channels_, batch * row_ / channels_) * 8 + 2 * channels_ * 4;
}

Status ClBatchNorm::reserve(int64_t batch) {
  const int64_t saved_bytes = state_bytes(batch) - 2 * channels_ * 4;
  if (saved_.bytes() < saved_bytes) {
    saved_.reset();  // the smaller one's bytes back first
    RG_ASSIGN(saved_, Buffer::allocate(device_, saved_bytes, "the batch norm statistics"));
  }
  if (affine_.mem() == nullptr) {
    RG_ASSIGN(affine_, Buffer::allocate(device_, 2 * channels_ * 4, "the batch norm inference affine"));
  }
  return Status();
}

Status ClBatchNorm::forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) {
  return forward_fused(n, x, y, ctx, ClEpilogue{});
}

Status ClBatchNorm::forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx,
                                  const ClEpilogue& epilogue) {
  RG_CHECK(epilogue.affine.mem == nullptr, "a batch norm applies no second affine");
  RG_TRY(reserve(n));  // a layer used without a model's reserve()
  return f32_batch_norm_forward(device_, n * row_ / channels_, channels_, ctx.host.training, momentum_, eps_, x,
                                gamma_.value.f32(), beta_.value.f32(), running_mean_.value.f32(),
                                running_var_.value.f32(), element_span(saved_, 8), y, epilogue.activation)
      .status();
}

Result<DeviceSpan> ClBatchNorm::write_inference_affine() {
  RG_CHECK(affine_.mem() != nullptr, "batch norm inference affine before reserve()");
  RG_TRY(f32_batch_norm_inference_affine(device_, channels_, eps_, gamma_.value.f32(), beta_.value.f32(),
                                         running_mean_.value.f32(), running_var_.value.f32(), affine_.f32())
             .status());
  return affine_.f32();
}

Status ClBatchNorm::backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx,
                             const ClContext& ctx) {
  (void)y;
  return backward_with(n, x, dy, dx, ctx, {});
}

Status ClBatchNorm::backward_fused(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx,
                                   const ClContext& ctx, const ClBackwardFusion& fusion) {
  (void)y;
  RG_CHECK(!fusion.add_to_dx, "a batch norm's dx is not added onto");
  return backward_with(n, x, dy, dx, ctx, BatchNormBackwardFusion{fusion.activation, fusion.activation_output, {}});
}

Status ClBatchNorm::backward_with(int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx,
                                  const BatchNormBackwardFusion& fused) {
  RG_CHECK(saved_.mem() != nullptr, "batch norm backward before its forward");
  const int64_t rows = n * row_ / channels_;
  RG_TRY(f32_batch_norm_backward(device_, rows, channels_, ctx.host.training, ctx.host.accumulate_grads, x, dy,
                                 gamma_.value.f32(), element_span(saved_, 8), gamma_.grad.f32(), beta_.grad.f32(),
                                 DeviceSpan{}, fused)
             .status());
  if (dx.mem == nullptr) return Status();
  const InputGradScope timed(ctx.host);  // --profile-device: dx's kernel as the input gradient
  return f32_batch_norm_input_grad(device_, rows, channels_, x, dy, element_span(saved_, 8), dx, fused).status();
}

namespace {

Result<std::unique_ptr<ClLayer>> make_cl_batch_norm(Layer& layer, const Shape& input, Device& device) {
  RG_ASSIGN(std::unique_ptr<ClBatchNorm> cl, ClBatchNorm::create(dynamic_cast<BatchNorm&>(layer), input, device));
  return std::unique_ptr<ClLayer>(std::move(cl));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kBatchNormMakerRegistered = register_cl_layer_makers({"batchnorm"}, make_cl_batch_norm);

}  // namespace

}  // namespace rg::ocl
