// Launchers of kernels/im2col.cl: one work-item per patch-matrix element (im2col) or per image
// element (col2im_add), launch_1d.h; the geometry goes as eight uints. The depthwise passes: one
// per output, dx or dW element.
#include "opencl/im2col.h"

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kIm2colProgram = "im2col.cl";
using detail::check_u32;
using detail::launch_1d;
using detail::u32;

}  // namespace

Result<Event> f32_im2col(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan image, DeviceSpan cols) {
  detail::check_geometry("patches of", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.patches() * g.patch_size();
  RG_TRY(check_u32("f32_im2col", in, {image}));
  RG_TRY(check_u32("f32_im2col", out, {cols}));
  return launch_1d(device, kIm2colProgram, "f32_im2col", "", out, u32(out), u32(g.height), u32(g.width),
                   u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w), image.mem,
                   u32(image.offset), cols.mem, u32(cols.offset));
}

Result<Event> f32_col2im_add(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan cols, DeviceSpan image,
                             bool accumulate) {
  detail::check_geometry("patches of", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.patches() * g.patch_size();
  RG_TRY(check_u32("f32_col2im_add", out, {cols}));
  RG_TRY(check_u32("f32_col2im_add", in, {image}));
  return launch_1d(device, kIm2colProgram, "f32_col2im_add", "", in, u32(in), u32(g.height), u32(g.width),
                   u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w),
                   cl_uint{accumulate ? 1u : 0u}, cols.mem, u32(cols.offset), image.mem, u32(image.offset));
}

Result<Event> f32_depthwise_forward(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x, DeviceSpan w,
                                    DeviceSpan bias, DeviceSpan y) {
  detail::check_geometry("depthwise patches of", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.patches() * g.channels;
  const bool has_bias = bias.mem != nullptr;
  RG_TRY(check_u32("f32_depthwise_forward", in, {x}));
  RG_TRY(check_u32("f32_depthwise_forward", g.kernel * g.kernel * g.channels, {w}));
  if (has_bias) RG_TRY(check_u32("f32_depthwise_forward", g.channels, {bias}));
  RG_TRY(check_u32("f32_depthwise_forward", out, {y}));
  const DeviceSpan b = has_bias ? bias : w;  // a buffer the kernel does not read without a bias
  return launch_1d(device, kIm2colProgram, "f32_depthwise_forward", "", out, u32(out), u32(g.height), u32(g.width),
                   u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w),
                   cl_uint{has_bias ? 1u : 0u}, x.mem, u32(x.offset), w.mem, u32(w.offset), b.mem, u32(b.offset),
                   y.mem, u32(y.offset));
}

Result<Event> f32_depthwise_input_grad(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan dy,
                                       DeviceSpan w, DeviceSpan dx) {
  detail::check_geometry("depthwise patches of", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.patches() * g.channels;
  RG_TRY(check_u32("f32_depthwise_input_grad", out, {dy}));
  RG_TRY(check_u32("f32_depthwise_input_grad", g.kernel * g.kernel * g.channels, {w}));
  RG_TRY(check_u32("f32_depthwise_input_grad", in, {dx}));
  return launch_1d(device, kIm2colProgram, "f32_depthwise_input_grad", "", in, u32(in), u32(g.height), u32(g.width),
                   u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w), dy.mem,
                   u32(dy.offset), w.mem, u32(w.offset), dx.mem, u32(dx.offset));
}

Result<Event> f32_depthwise_weight_grad(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                                        DeviceSpan dy, bool accumulate, DeviceSpan dw) {
  detail::check_geometry("depthwise patches of", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.patches() * g.channels;
  const int64_t taps = g.kernel * g.kernel * g.channels;
  RG_TRY(check_u32("f32_depthwise_weight_grad", in, {x}));
  RG_TRY(check_u32("f32_depthwise_weight_grad", out, {dy}));
  RG_TRY(check_u32("f32_depthwise_weight_grad", taps, {dw}));
  return launch_1d(device, kIm2colProgram, "f32_depthwise_weight_grad", "", taps, u32(taps), u32(g.height),
                   u32(g.width), u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w),
                   u32(batch), cl_uint{accumulate ? 1u : 0u}, x.mem, u32(x.offset), dy.mem, u32(dy.offset), dw.mem,
                   u32(dw.offset));
}

}  // namespace rg::ocl
