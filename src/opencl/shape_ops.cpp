// Launchers of kernels/shape.cl: one work-item per output element, launch_1d.h.
#include "opencl/shape_ops.h"

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kShapeOpsProgram = "shape.cl";
using detail::check_u32;
using detail::launch_1d;
using detail::u32;

void check_upsample(int64_t batch, int64_t height, int64_t width, int64_t channels, int64_t scale) {
  RG_CHECK(batch >= 0 && height > 0 && width > 0 && channels > 0 && scale > 0,
           "upsample " << batch << " x " << height << " x " << width << " x " << channels << " by " << scale);
}

// GlobalAvgPool's T(1) / T(pixels), in float.
float global_average_scale(int64_t batch, int64_t pixels, int64_t channels) {
  RG_CHECK(batch >= 0 && pixels > 0 && channels > 0,
           "global average pooling " << batch << " x " << pixels << " x " << channels);
  return 1.0f / static_cast<float>(pixels);
}

void check_columns(int64_t positions, int64_t slice, int64_t width, int64_t column) {
  RG_CHECK(positions >= 0 && slice > 0 && column >= 0 && column + slice <= width,
           "columns [" << column << ", " << column + slice << ") of " << width << " in " << positions << " rows");
}

}  // namespace

Result<Event> f32_upsample_forward(Device& device, int64_t batch, int64_t height, int64_t width, int64_t channels,
                                   int64_t scale, DeviceSpan x, DeviceSpan y) {
  check_upsample(batch, height, width, channels, scale);
  const int64_t in = batch * height * width * channels, out = in * scale * scale;
  RG_TRY(check_u32("f32_upsample_forward", in, {x}));
  RG_TRY(check_u32("f32_upsample_forward", out, {y}));
  return launch_1d(device, kShapeOpsProgram, "f32_upsample_forward", "", out, u32(out), u32(height), u32(width),
                   u32(channels), u32(scale), x.mem, u32(x.offset), y.mem, u32(y.offset));
}

Result<Event> f32_upsample_backward(Device& device, int64_t batch, int64_t height, int64_t width, int64_t channels,
                                    int64_t scale, DeviceSpan dy, DeviceSpan dx) {
  check_upsample(batch, height, width, channels, scale);
  const int64_t in = batch * height * width * channels, out = in * scale * scale;
  RG_TRY(check_u32("f32_upsample_backward", out, {dy}));
  RG_TRY(check_u32("f32_upsample_backward", in, {dx}));
  return launch_1d(device, kShapeOpsProgram, "f32_upsample_backward", "", in, u32(in), u32(height), u32(width),
                   u32(channels), u32(scale), dy.mem, u32(dy.offset), dx.mem, u32(dx.offset));
}

Result<Event> f32_global_avgpool_forward(Device& device, int64_t batch, int64_t pixels, int64_t channels, DeviceSpan x,
                                         DeviceSpan y) {
  const float scale = global_average_scale(batch, pixels, channels);
  const int64_t in = batch * pixels * channels, out = batch * channels;
  RG_TRY(check_u32("f32_global_avgpool_forward", in, {x}));
  RG_TRY(check_u32("f32_global_avgpool_forward", out, {y}));
  return launch_1d(device, kShapeOpsProgram, "f32_global_avgpool_forward", "", out, u32(out), u32(pixels),
                   u32(channels), scale, x.mem, u32(x.offset), y.mem, u32(y.offset));
}

Result<Event> f32_global_avgpool_backward(Device& device, int64_t batch, int64_t pixels, int64_t channels,
                                          DeviceSpan dy, DeviceSpan dx) {
  const float scale = global_average_scale(batch, pixels, channels);
  const int64_t in = batch * pixels * channels, out = batch * channels;
  RG_TRY(check_u32("f32_global_avgpool_backward", out, {dy}));
  RG_TRY(check_u32("f32_global_avgpool_backward", in, {dx}));
  return launch_1d(device, kShapeOpsProgram, "f32_global_avgpool_backward", "", in, u32(in), u32(pixels), u32(channels),
                   scale, dy.mem, u32(dy.offset), dx.mem, u32(dx.offset));
}

Result<Event> f32_columns_into(Device& device, int64_t positions, int64_t slice, int64_t width, int64_t column,
                               DeviceSpan x, DeviceSpan y) {
  check_columns(positions, slice, width, column);
  const int64_t n = positions * slice;
  RG_TRY(check_u32("f32_columns_into", n, {x}));
  RG_TRY(check_u32("f32_columns_into", positions * width, {y}));
  return launch_1d(device, kShapeOpsProgram, "f32_columns_into", "", n, u32(n), u32(slice), u32(width), u32(column),
                   x.mem, u32(x.offset), y.mem, u32(y.offset));
}

Result<Event> f32_columns_from(Device& device, int64_t positions, int64_t slice, int64_t width, int64_t column,
                               bool accumulate, DeviceSpan dy, DeviceSpan dx) {
  check_columns(positions, slice, width, column);
  const int64_t n = positions * slice;
  RG_TRY(check_u32("f32_columns_from", positions * width, {dy}));
  RG_TRY(check_u32("f32_columns_from", n, {dx}));
  return launch_1d(device, kShapeOpsProgram, "f32_columns_from", "", n, u32(n), u32(slice), u32(width), u32(column),
                   u32(accumulate ? 1 : 0), dy.mem, u32(dy.offset), dx.mem, u32(dx.offset));
}

}  // namespace rg::ocl
