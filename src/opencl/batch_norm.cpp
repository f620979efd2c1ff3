// Launchers of kernels/batch_norm.cl: per-block sums and per-channel kernels (statistics, or the
// gradient sums; a work-group per channel) then a per-element one (y, or dx), all launch_1d.h, on
// the device's in-order queue.
#include "opencl/batch_norm.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kBatchNormProgram = "batch_norm.cl";
// Every kernel of the program is built with the CPU's block and group sizes (one build).
const std::string& batch_norm_options() {
  static const std::string options = "-DROW_BLOCK=" + std::to_string(kStatsRowBlock) +
                                     "u -DBLOCK_GROUP=" + std::to_string(kStatsBlockGroup) +
                                     "u -DCONSTANTS=" + std::to_string(kBatchNormConstants) + "u";
  return options;
}
using detail::check_u32;
using detail::launch_1d;
using detail::need_fp64;
using detail::u32;

// kernel_args.h takes no double: momentum and eps go as their bits (as_double in the kernel).
cl_ulong double_bits(double value) {
  cl_ulong bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

int64_t batch_norm_elements(int64_t rows, int64_t channels) {
  RG_CHECK(rows >= 0 && channels >= 1, "batch norm over " << rows << " x " << channels);
  return rows * channels;
}

// The block sums' float view of `saved` (after its doubles and the constants), and the block pass.
struct BlockSums {
  cl_mem mem;
  cl_uint offset;
};
BlockSums block_sums_of(DeviceSpan saved, int64_t channels) {
  return {saved.mem, u32((saved.offset + 4 * channels + batch_norm_constants_doubles(channels)) * 2)};
}

// The activation the kernels take the backward of and its output, or none with dy standing in
// for the output (the block sums read it in its place; FUSED_NONE's gradient is dy whatever it holds).
struct ActivationArgs {
  cl_uint act;
  float slope;
  cl_mem mem;
  cl_uint offset;
};
ActivationArgs activation_args(const BatchNormBackwardFusion& fused, DeviceSpan dy) {
  const bool none = fused.activation.kind == FusedActivation::none;
  const DeviceSpan out = none ? dy : fused.activation_output;
  return {cl_uint{fused.activation.kind}, fused.activation.slope, out.mem, u32(out.offset)};
}

Status check_activation(const char* name, int64_t n, const BatchNormBackwardFusion& fused) {
  if (fused.activation.kind == FusedActivation::none) return Status();
  RG_CHECK(fused.activation_output.mem != nullptr, "the fused activation of " << name << " without its output");
  return check_u32(name, n, {fused.activation_output});
}

Result<Event> block_pass(Device& device, int64_t rows, int64_t channels, cl_uint pass, DeviceSpan x, DeviceSpan dy,
                         DeviceSpan saved, const BatchNormBackwardFusion& fused = {}) {
  const BlockSums blocks = block_sums_of(saved, channels);
  const int64_t items = stats_blocks(rows) * channels;
  const ActivationArgs r = activation_args(fused, dy);
  return launch_1d(device, kBatchNormProgram, "f32_batch_norm_block_sums", batch_norm_options(), items, u32(rows),
                   u32(channels), pass, x.mem, u32(x.offset), dy.mem, u32(dy.offset), r.act, r.slope, r.mem, r.offset,
                   saved.mem, u32(saved.offset), blocks.mem, blocks.offset);
}

// A finish kernel (variance, grad_sums): a work-group per channel, an item per group of row
// blocks (up to 256), `args` after rows, channels and the local tile's capacity in floats.
template <class... Args>
Result<Event> per_channel(Device& device, const char* name, int64_t rows, int64_t channels, const Args&... args) {
  const int64_t capacity = detail::local_tile_floats(device);
  const int64_t groups = std::max<int64_t>(1, stats_groups(rows));
  return detail::launch_groups(device, kBatchNormProgram, name, batch_norm_options(), channels, groups, u32(rows),
                               u32(channels), u32(capacity), args...,
                               LocalBytes{static_cast<size_t>(capacity) * sizeof(float)});
}

Status check_saved(const char* name, int64_t rows, int64_t channels, DeviceSpan saved) {
  RG_TRY(check_u32(name, batch_norm_saved_count(channels, rows), {saved}));
  return check_u32(name, 2 * batch_norm_saved_count(channels, rows), {DeviceSpan{saved.mem, 2 * saved.offset, 2 * saved.count}});
}

}  // namespace

Result<Event> f32_batch_norm_forward(Device& device, int64_t rows, int64_t channels, bool training, double momentum,
                                     double eps, DeviceSpan x, DeviceSpan gamma, DeviceSpan beta,
                                     DeviceSpan running_mean, DeviceSpan running_var, DeviceSpan saved, DeviceSpan y,
                                     FusedActivation activation) {
  const char* name = "f32_batch_norm_forward";
  const int64_t n = batch_norm_elements(rows, channels);
  if (rows == 0) return Event();
  RG_TRY(need_fp64(device, name));
  RG_TRY(check_u32(name, n, {x, y}));
  RG_TRY(check_u32(name, channels, {gamma, beta, running_mean, running_var}));
  RG_TRY(check_saved(name, rows, channels, saved));
  const BlockSums blocks = block_sums_of(saved, channels);
  if (training) RG_TRY(block_pass(device, rows, channels, 0, x, x, saved).status());  // blocks' mean and M2
  RG_TRY(per_channel(device, "f32_batch_norm_variance", rows, channels, cl_uint{training ? 1u : 0u},
                     double_bits(momentum), double_bits(eps), blocks.mem, blocks.offset, running_mean.mem,
                     u32(running_mean.offset), running_var.mem, u32(running_var.offset), gamma.mem, u32(gamma.offset),
                     beta.mem, u32(beta.offset), saved.mem, u32(saved.offset))
             .status());
  return launch_1d(device, kBatchNormProgram, "f32_batch_norm_apply", batch_norm_options(), n, u32(n), u32(channels),
                   x.mem, u32(x.offset), saved.mem, u32(saved.offset), y.mem, u32(y.offset), cl_uint{activation.kind},
                   activation.slope);
}

Result<Event> f32_batch_norm_inference_affine(Device& device, int64_t channels, double eps, DeviceSpan gamma,
                                              DeviceSpan beta, DeviceSpan running_mean, DeviceSpan running_var,
                                              DeviceSpan affine) {
  const char* name = "f32_batch_norm_inference_affine";
  RG_CHECK(channels >= 1, "batch norm affine of " << channels << " channels");
  RG_TRY(need_fp64(device, name));
  RG_TRY(check_u32(name, channels, {gamma, beta, running_mean, running_var}));
  RG_TRY(check_u32(name, 2 * channels, {affine}));
  return launch_1d(device, kBatchNormProgram, name, batch_norm_options(), channels, u32(channels), double_bits(eps), gamma.mem,
                   u32(gamma.offset), beta.mem, u32(beta.offset), running_mean.mem, u32(running_mean.offset),
                   running_var.mem, u32(running_var.offset), affine.mem, u32(affine.offset));
}

Result<Event> f32_batch_norm_backward(Device& device, int64_t rows, int64_t channels, bool training,
                                      bool accumulate, DeviceSpan x, DeviceSpan dy, DeviceSpan gamma, DeviceSpan saved,
                                      DeviceSpan dgamma, DeviceSpan dbeta, DeviceSpan dx,
                                      const BatchNormBackwardFusion& fused) {
  const char* name = "f32_batch_norm_backward";
  const int64_t n = batch_norm_elements(rows, channels);
  if (rows == 0) return Event();
  RG_TRY(need_fp64(device, name));
  RG_TRY(check_u32(name, n, {x, dy}));
  RG_TRY(check_activation(name, n, fused));
  RG_TRY(check_u32(name, channels, {gamma, dgamma, dbeta}));
  RG_TRY(check_saved(name, rows, channels, saved));
  const BlockSums blocks = block_sums_of(saved, channels);
  RG_TRY(block_pass(device, rows, channels, 1, x, dy, saved, fused).status());
  RG_ASSIGN(Event sums, per_channel(device, "f32_batch_norm_grad_sums", rows, channels, cl_uint{accumulate ? 1u : 0u},
                                    cl_uint{training ? 1u : 0u}, blocks.mem, blocks.offset, gamma.mem,
                                    u32(gamma.offset), saved.mem, u32(saved.offset), dgamma.mem, u32(dgamma.offset),
                                    dbeta.mem, u32(dbeta.offset)));
  if (dx.mem == nullptr) return sums;
  return f32_batch_norm_input_grad(device, rows, channels, x, dy, saved, dx, fused);
}

Result<Event> f32_batch_norm_input_grad(Device& device, int64_t rows, int64_t channels, DeviceSpan x, DeviceSpan dy,
                                        DeviceSpan saved, DeviceSpan dx, const BatchNormBackwardFusion& fused) {
  const char* name = "f32_batch_norm_input_grad";
  const int64_t n = batch_norm_elements(rows, channels);
  if (rows == 0) return Event();
  RG_TRY(need_fp64(device, name));
  RG_TRY(check_u32(name, n, {x, dy, dx}));
  RG_TRY(check_activation(name, n, fused));
  if (fused.sum.mem != nullptr) RG_TRY(check_u32(name, n, {fused.sum}));
  RG_TRY(check_saved(name, rows, channels, saved));
  const ActivationArgs r = activation_args(fused, dy);
  return launch_1d(device, kBatchNormProgram, "f32_batch_norm_dx", batch_norm_options(), n, u32(n), u32(channels),
                   x.mem, u32(x.offset), dy.mem, u32(dy.offset), r.act, r.slope, r.mem, r.offset, saved.mem,
                   u32(saved.offset), dx.mem, u32(dx.offset), cl_uint{fused.sum.mem ? 1u : 0u},
                   fused.sum.mem ? fused.sum.mem : dx.mem, u32(fused.sum.offset));
}

}  // namespace rg::ocl
