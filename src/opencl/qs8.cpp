// Launchers of kernels/qs8.cl: the GEMM on a 2-D grid of square tiles, the stages one work-item
// per element (launch_1d.h).
#include "opencl/qs8.h"

#include <string>

#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kQs8Program = "qs8.cl";
static_assert(kQs8AddLeftShift == 20, "kernels/qs8.cl's qs8_add shifts by 20");
using detail::check_u32;
using detail::launch_1d;
using detail::matrix_extent;
using detail::u32;

// The GEMM kernel with the largest tile (16, else 8, 4, 2, 1) whose tile^2 work-items fit a group.
Result<const Kernel*> qs8_gemm_kernel(Device& device, size_t* tile) {
  for (size_t t = 16;; t /= 2) {
    RG_ASSIGN(const Kernel* kernel, device.kernel(kQs8Program, "qs8_gemm", "-DQS8_TILE=" + std::to_string(t)));
    if (kernel->max_work_group_size >= t * t || t == 1) {
      *tile = t;
      return kernel;
    }
  }
}

}  // namespace

Result<Event> qs8_gemm(Device& device, int64_t m, int64_t n, int64_t k, DeviceSpan a, int64_t lda, DeviceSpan b,
                       DeviceSpan bias, DeviceSpan multiplier, DeviceSpan shift, int32_t zero_point, int32_t lo,
                       int32_t hi, DeviceSpan c, int64_t ldc) {
  RG_CHECK(m >= 0 && n >= 0 && k >= 0 && lda >= k && ldc >= n && lo <= hi && lo >= -128 && hi <= 127,
           "qs8_gemm " << m << " x " << n << " x " << k << ", lda " << lda << ", ldc " << ldc << ", clamp [" << lo
                       << ", " << hi << "]");
  RG_TRY(check_u32("qs8_gemm", matrix_extent(m, k, lda), {a}));
  RG_TRY(check_u32("qs8_gemm", k * n, {b}));
  RG_TRY(check_u32("qs8_gemm", n, {bias, multiplier, shift}));
  RG_TRY(check_u32("qs8_gemm", matrix_extent(m, n, ldc), {c}));
  if (m == 0 || n == 0) return Event();
  size_t tile = 0;
  RG_ASSIGN(const Kernel* kernel, qs8_gemm_kernel(device, &tile));
  RG_TRY(set_kernel_args(device, *kernel, u32(m), u32(n), u32(k), a.mem, u32(a.offset), u32(lda), b.mem,
                         u32(b.offset), bias.mem, u32(bias.offset), multiplier.mem, u32(multiplier.offset), shift.mem,
                         u32(shift.offset), cl_int{zero_point}, cl_int{lo}, cl_int{hi}, c.mem, u32(c.offset),
                         u32(ldc)));
  const size_t local[2] = {tile, tile};
  const size_t global[2] = {(static_cast<size_t>(n) + tile - 1) / tile * tile,
                            (static_cast<size_t>(m) + tile - 1) / tile * tile};
  return device.run(*kernel, 2, global, local);
}

Result<Event> qs8_quantize(Device& device, int64_t n, QuantParams p, DeviceSpan x, DeviceSpan q) {
  RG_TRY(check_u32("qs8_quantize", n, {x, q}));
  const float inverse = 1.0f / p.scale;  // quantize_s8's, on the host: no device division
  return launch_1d(device, kQs8Program, "qs8_quantize", "", n, u32(n), inverse, cl_int{p.zero_point}, x.mem,
                   u32(x.offset), q.mem, u32(q.offset));
}

Result<Event> qs8_add(Device& device, int64_t n, const Qs8AddParams& p, DeviceSpan a, DeviceSpan b, DeviceSpan y) {
  RG_TRY(check_u32("qs8_add", n, {a, b, y}));
  return launch_1d(device, kQs8Program, "qs8_add", "", n, u32(n), a.mem, u32(a.offset), b.mem, u32(b.offset),
                   cl_int{p.zero_point[0]}, cl_int{p.input[0].multiplier}, cl_int{p.input[0].shift},
                   cl_int{p.zero_point[1]}, cl_int{p.input[1].multiplier}, cl_int{p.input[1].shift},
                   cl_int{p.output.multiplier}, cl_int{p.output.shift}, cl_int{p.out_zero_point}, cl_int{p.lo},
                   cl_int{p.hi}, y.mem, u32(y.offset));
}

Result<Event> qs8_dequantize(Device& device, int64_t n, QuantParams p, DeviceSpan q, DeviceSpan x) {
  RG_TRY(check_u32("qs8_dequantize", n, {q, x}));
  return launch_1d(device, kQs8Program, "qs8_dequantize", "", n, u32(n), cl_float{p.scale}, cl_int{p.zero_point}, q.mem,
                   u32(q.offset), x.mem, u32(x.offset));
}

Result<Event> qs8_max_pool(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x, DeviceSpan y) {
  detail::check_geometry("int8 max pooling", g, batch);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.out_h * g.out_w * g.channels;
  RG_TRY(check_u32("qs8_max_pool", in, {x}));
  RG_TRY(check_u32("qs8_max_pool", out, {y}));
  return launch_1d(device, kQs8Program, "qs8_max_pool", "", out, u32(out), u32(g.height), u32(g.width), u32(g.channels),
                   u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w), x.mem, u32(x.offset), y.mem,
                   u32(y.offset));
}

Result<Event> qs8_im2col(Device& device, const ConvGeometry& g, int64_t batch, int32_t zero_point, DeviceSpan x,
                         DeviceSpan cols) {
  detail::check_geometry("int8 im2col", g, batch);
  RG_CHECK(zero_point >= -128 && zero_point <= 127, "int8 im2col zero point " << zero_point);
  const int64_t in = batch * g.height * g.width * g.channels, out = batch * g.patches() * g.patch_size();
  RG_TRY(check_u32("qs8_im2col", in, {x}));
  RG_TRY(check_u32("qs8_im2col", out, {cols}));
  return launch_1d(device, kQs8Program, "qs8_im2col", "", out, u32(out), u32(g.height), u32(g.width), u32(g.channels),
                   u32(g.kernel), u32(g.stride), u32(g.pad), u32(g.out_h), u32(g.out_w), cl_int{zero_point}, x.mem,
                   u32(x.offset), cols.mem, u32(cols.offset));
}

}  // namespace rg::ocl
