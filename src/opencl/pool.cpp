// Launchers of kernels/pool.cl: one work-item per output element (forward) or per input element
// (backward), launch_1d.h; the geometry goes as nine uints.
#include "opencl/pool.h"

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kPoolProgram = "pool.cl";
using detail::check_u32;
using detail::launch_1d;
using detail::u32;

// avg_pool_forward/backward's T(1) / T(kernel^2), in float.
float pool_average_scale(const ConvGeometry& g) { return 1.0f / static_cast<float>(g.kernel * g.kernel); }

}  // namespace

Result<Event> f32_pool_forward(Device& device, PoolOp op, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                               DeviceSpan y) {
  detail::check_geometry("pooling", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.out_h * g.out_w * g.channels;
  RG_TRY(check_u32("f32_pool_forward", in, {x}));
  RG_TRY(check_u32("f32_pool_forward", out, {y}));
  return launch_1d(device, kPoolProgram, "f32_pool_forward", "", out, u32(out), u32(batch), u32(g.height), u32(g.width),
                   u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w),
                   cl_uint{op == PoolOp::max ? 1u : 0u}, pool_average_scale(g), x.mem, u32(x.offset), y.mem,
                   u32(y.offset));
}

Result<Event> f32_pool_backward(Device& device, PoolOp op, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                                DeviceSpan y, DeviceSpan dy, DeviceSpan dx) {
  detail::check_geometry("pooling", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.out_h * g.out_w * g.channels;
  const bool max = op == PoolOp::max;
  if (max) {
    RG_TRY(check_u32("f32_pool_backward", in, {x}));
    RG_TRY(check_u32("f32_pool_backward", out, {y}));
  } else {  // not read: the kernel still gets buffers there (dy's)
    x = dy, y = dy;
  }
  RG_TRY(check_u32("f32_pool_backward", out, {dy}));
  RG_TRY(check_u32("f32_pool_backward", in, {dx}));
  return launch_1d(device, kPoolProgram, "f32_pool_backward", "", in, u32(in), u32(batch), u32(g.height), u32(g.width),
                   u32(g.channels), u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w),
                   cl_uint{max ? 1u : 0u}, pool_average_scale(g), x.mem, u32(x.offset), y.mem, u32(y.offset), dy.mem,
                   u32(dy.offset), dx.mem, u32(dx.offset));
}

}  // namespace rg::ocl
