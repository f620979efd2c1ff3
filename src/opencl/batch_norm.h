// Launchers of kernels/batch_norm.cl: BatchNorm over the innermost dimension of x [rows, channels]
// (rows = n h w of NHWC images), forward (training with the batch's statistics and the running
// statistics update, or inference with the running statistics) and backward (dx, dgamma, dbeta),
// as nn/batch_norm.cpp's BatchNorm computes them: bit-exact on a device with IEEE double (the sums
// in its order, float blocks of 64 rows into double). Needs cl_khr_fp64 (an error without it).
// Statistics: one work-item per block of 64 rows and channel, then a work-group per channel over the
// blocks, which also leaves each channel's float constants for the elementwise kernel after it.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/fused_activation.h"
#include "ops/batch_norm_blocks.h"

namespace rg::ocl {

// The float constants a channel keeps in `saved` (kernels/batch_norm.cl's kScale ... kDxD): the
// forward's scale and shift, dx's three terms.
constexpr int64_t kBatchNormConstants = 5;
// The doubles of `saved` for batches of up to `rows` rows: mean and inv_std of the forward, the
// backward's two sums (4 channels doubles); the channels' float constants (kBatchNormConstants
// channels floats, rounded up to doubles); then two floats per channel and row block (the block
// partials).
inline int64_t batch_norm_constants_doubles(int64_t channels) { return (kBatchNormConstants * channels + 1) / 2; }
inline int64_t batch_norm_saved_count(int64_t channels, int64_t rows) {
  return 4 * channels + batch_norm_constants_doubles(channels) + stats_blocks(rows) * channels;
}

// y [rows, channels] = gamma (x - mean) inv_std + beta, per channel, as BatchNorm::forward. Training:
// mean, var of the batch; running_mean/var [channels] updated with momentum (var unbiased). Not:
// the running statistics. saved: double [batch_norm_saved_count(channels, rows)] (element_span of a
// buffer), for the backward. Three kernels in training, two in inference; the event is the last's.
// `activation` (relu, leaky relu) is applied to y as it is stored: the bits of its own kernel
// after this one, a launch less (its backward then reads y: ClModel's fusion). rows = 0: nothing enqueued.
Result<Event> f32_batch_norm_forward(Device& device, int64_t rows, int64_t channels, bool training, double momentum,
                                     double eps, DeviceSpan x, DeviceSpan gamma, DeviceSpan beta,
                                     DeviceSpan running_mean, DeviceSpan running_var, DeviceSpan saved, DeviceSpan y,
                                     FusedActivation activation = {});
// Inference's y = x * scale[c] + shift[c] as constants for a product's epilogue (GemmEpilogue::affine):
// affine [2 channels] = scale, then shift, the floats the inference forward computes from the
// running statistics (the same bits). One launch of one item per channel.
Result<Event> f32_batch_norm_inference_affine(Device& device, int64_t channels, double eps, DeviceSpan gamma,
                                              DeviceSpan beta, DeviceSpan running_mean, DeviceSpan running_var,
                                              DeviceSpan affine);
// What the backward fuses (each the bits of the launch it replaces, a launch and a pass less):
// `activation` (relu or leaky relu): dy is the gradient of its output `activation_output` [rows,
// channels] (a forward's with the activation fused), and its backward is taken as dy is read
// (f32_relu_backward's, f32_leaky_relu_backward's values); `sum` (mem set): dx is also added onto
// sum [rows, channels] (f32_add(sum, dx, sum)'s bits).
struct BatchNormBackwardFusion {
  FusedActivation activation;
  DeviceSpan activation_output;
  DeviceSpan sum;
};
// dgamma, dbeta [channels] (accumulate: +=, else =) and dx [rows, channels] (null dx.mem: skipped)
// from dy, as BatchNorm::backward after the forward that wrote `saved` (training: through the
// batch statistics; not: they are constants). rows = 0: nothing enqueued.
Result<Event> f32_batch_norm_backward(Device& device, int64_t rows, int64_t channels, bool training,
                                      bool accumulate, DeviceSpan x, DeviceSpan dy, DeviceSpan gamma, DeviceSpan saved,
                                      DeviceSpan dgamma, DeviceSpan dbeta, DeviceSpan dx,
                                      const BatchNormBackwardFusion& fused = {});
// Its last part alone: dx from the constants a backward without dx left in `saved` (computed there
// from its gamma and training).
Result<Event> f32_batch_norm_input_grad(Device& device, int64_t rows, int64_t channels, DeviceSpan x, DeviceSpan dy,
                                        DeviceSpan saved, DeviceSpan dx, const BatchNormBackwardFusion& fused = {});

}  // namespace rg::ocl
