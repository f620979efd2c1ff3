// Launchers of kernels/im2col.cl: one work-item per patch-matrix element (im2col) or per image
// element (col2im_add), launch_1d.h; the geometry goes as eight uints.
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

}  // namespace rg::ocl
