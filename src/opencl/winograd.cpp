// Launchers of kernels/winograd.cl and its 36 products (f32_gemm_batched): one work-item per
// value of the weight's transform, per (tile, channel) of the input's, per (tile, filter) of the
// output's and of dy's, per (channel, filter) of the weight gradient's last step; the geometry as
// uints (one program for every layer).
#include "opencl/winograd.h"

#include "base/int_math.h"
#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace {

constexpr const char* kWinogradProgram = "winograd.cl";
constexpr int64_t kPoints = 36;  // positions of a 6x6 tile's transforms
using detail::check_u32;
using detail::launch_1d;
using detail::u32;

int64_t tiles_h(const ConvGeometry& g) { return ceil_div(g.out_h, int64_t{4}); }
int64_t tiles_w(const ConvGeometry& g) { return ceil_div(g.out_w, int64_t{4}); }

// V [36][tiles][c] = B^T d B of every tile of x (the convolution's and its weight gradient's).
Status input_transform(Device& device, const ConvGeometry& g, int64_t tiles, DeviceSpan x, DeviceSpan v) {
  return launch_1d(device, kWinogradProgram, "f32_winograd_input", "", tiles * g.channels, u32(tiles), u32(g.height),
                   u32(g.width), u32(g.channels), u32(g.pad), u32(tiles_h(g)), u32(tiles_w(g)), x.mem, u32(x.offset),
                   v.mem, u32(v.offset))
      .status();
}

}  // namespace

bool cl_winograd_fits(const ConvGeometry& g) { return g.kernel == 3 && g.stride == 1 && g.pad <= 2; }

WinogradWorkspace winograd_workspace(const ConvGeometry& g, int64_t filters) {
  return {kPoints * g.channels * filters, kPoints * tiles_h(g) * tiles_w(g) * (g.channels + filters)};
}

Result<Event> f32_winograd_weight(Device& device, const ConvGeometry& g, int64_t filters, DeviceSpan weight,
                                  ConvWeight weight_read, DeviceSpan u) {
  RG_CHECK(cl_winograd_fits(g) && filters > 0 && weight_read != ConvWeight::transposed,
           "Winograd weight of a " << g.kernel << "x" << g.kernel << " stride " << g.stride << " conv");
  const int64_t c = g.channels, pairs = c * filters;
  RG_TRY(check_u32("f32_winograd_weight", 9 * pairs, {weight}));
  RG_TRY(check_u32("f32_winograd_weight", kPoints * pairs, {u}));
  return launch_1d(device, kWinogradProgram, "f32_winograd_weight", "", kPoints * pairs, u32(c), u32(filters),
                   cl_uint{weight_read == ConvWeight::flipped ? 1u : 0u}, weight.mem, u32(weight.offset), u.mem,
                   u32(u.offset));
}

// V = B^T d B of every tile; M[xi] = V[xi] U[xi] (36 products); y = A^T M A (+ beta y, epilogue).
Result<Event> f32_winograd_conv(Device& device, const ConvGeometry& g, int64_t images, DeviceSpan x, DeviceSpan u,
                                int64_t filters, DeviceSpan y, DeviceSpan scratch, const GemmEpilogue& epilogue,
                                float beta) {
  detail::check_geometry("Winograd convolution of", g, images);
  RG_CHECK(cl_winograd_fits(g) && filters > 0, "Winograd convolution of a " << g.kernel << "x" << g.kernel << " stride "
                                                                            << g.stride << " pad " << g.pad << " conv");
  const int64_t c = g.channels, tiles = images * tiles_h(g) * tiles_w(g);
  const int64_t v_floats = kPoints * tiles * c, m_floats = kPoints * tiles * filters;
  RG_TRY(check_u32("f32_winograd_conv", images * g.height * g.width * c, {x}));
  RG_TRY(check_u32("f32_winograd_conv", images * g.patches() * filters, {y}));
  RG_TRY(check_u32("f32_winograd_conv", v_floats + m_floats, {scratch}));
  RG_TRY(detail::check_epilogue(epilogue, filters));
  if (images == 0) return Event();
  const DeviceSpan v{scratch.mem, scratch.offset, v_floats}, m{scratch.mem, scratch.offset + v_floats, m_floats};
  RG_TRY(input_transform(device, g, tiles, x, v));
  // M[xi] [tiles x filters] = V[xi] [tiles x c] * U[xi] [c x filters], xi < 36
  GemmLaunch whole;
  whole.k_slices = 1;
  RG_TRY(f32_gemm_batched(device, GemmShape{Trans::no, Trans::no, tiles, filters, c, c, filters, filters}, kPoints,
                          1.0f, v, u, 0.0f, m, whole)
             .status());
  const detail::EpilogueArgs e = detail::epilogue_args(epilogue, y);
  return launch_1d(device, kWinogradProgram, "f32_winograd_output", "", tiles * filters, u32(tiles), u32(g.out_h),
                   u32(g.out_w), u32(filters), u32(tiles_h(g)), u32(tiles_w(g)), m.mem, u32(m.offset), beta, y.mem,
                   u32(y.offset), e.has_bias, e.bias, e.bias_offset, e.has_affine, e.affine, e.affine_offset, e.act,
                   e.slope);
}

int winograd_grad_most_slices(const ConvGeometry& g, int64_t filters, int compute_units) {
  const int64_t groups = kPoints * ceil_div(g.channels, int64_t{64}) * ceil_div(filters, int64_t{64});
  const int64_t want = ceil_div(kGemmSplitGroupsPerUnit * std::max(1, compute_units), groups);
  return static_cast<int>(std::clamp<int64_t>(want, 1, 1024));
}

int winograd_grad_slices(const ConvGeometry& g, int64_t filters, int64_t images, int compute_units) {
  constexpr int64_t kMinSliceTiles = 256;
  const int64_t by_tiles = images * tiles_h(g) * tiles_w(g) / kMinSliceTiles;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(winograd_grad_most_slices(g, filters, compute_units),
                                                                  by_tiles)));
}

WinogradWorkspace winograd_grad_workspace(const ConvGeometry& g, int64_t filters, int slices) {
  return {kPoints * slices * g.channels * filters, winograd_workspace(g, filters).per_image};
}

// V = B^T x B and D = A dy A^T of every tile; P[xi] = V[xi]^T D[xi] in slices over the tiles;
// dW = beta dW + G^T (sum of P) G.
Result<Event> f32_winograd_weight_grad(Device& device, const ConvGeometry& g, int64_t images, DeviceSpan x,
                                       DeviceSpan dy, int64_t filters, int slices, float beta, DeviceSpan dw,
                                       DeviceSpan scratch) {
  detail::check_geometry("Winograd weight gradient of", g, images);
  RG_CHECK(cl_winograd_fits(g) && filters > 0 && slices >= 1, "Winograd weight gradient of a " << g.kernel << "x"
                                                                   << g.kernel << " stride " << g.stride << " conv");
  const int64_t c = g.channels, tiles = images * tiles_h(g) * tiles_w(g);
  const WinogradWorkspace parts = winograd_grad_workspace(g, filters, slices);
  const int64_t v_floats = kPoints * tiles * c, d_floats = kPoints * tiles * filters;
  RG_TRY(check_u32("f32_winograd_weight_grad", images * g.height * g.width * c, {x}));
  RG_TRY(check_u32("f32_winograd_weight_grad", images * g.patches() * filters, {dy}));
  RG_TRY(check_u32("f32_winograd_weight_grad", 9 * c * filters, {dw}));
  RG_TRY(check_u32("f32_winograd_weight_grad", parts.floats(images), {scratch}));
  const DeviceSpan p{scratch.mem, scratch.offset, parts.weight};
  const DeviceSpan v{scratch.mem, scratch.offset + parts.weight, v_floats};
  const DeviceSpan d{scratch.mem, v.offset + v_floats, d_floats};
  if (tiles > 0) {
    RG_TRY(input_transform(device, g, tiles, x, v));
    RG_TRY(launch_1d(device, kWinogradProgram, "f32_winograd_dy", "", tiles * filters, u32(tiles), u32(g.out_h),
                     u32(g.out_w), u32(filters), u32(tiles_h(g)), u32(tiles_w(g)), dy.mem, u32(dy.offset), d.mem,
                     u32(d.offset))
               .status());
  }
  // P[xi * S + s] [c x filters] = V[xi]^T [c x tiles] * D[xi] [tiles x filters] over slice s's tiles
  GemmLaunch split;
  split.k_slices = slices;
  RG_TRY(f32_gemm_batched(device, GemmShape{Trans::yes, Trans::no, c, filters, tiles, c, filters, filters}, kPoints,
                          1.0f, v, d, 0.0f, p, split)
             .status());
  const int64_t made = gemm_slices_made(tiles, slices);  // P's slices a position
  return launch_1d(device, kWinogradProgram, "f32_winograd_weight_grad", "", c * filters, u32(c), u32(filters),
                   u32(made), p.mem, u32(p.offset), beta, dw.mem, u32(dw.offset));
}

}  // namespace rg::ocl
