// A stride-1 convolution with few filters over channel planes (ops/conv_planar.h).
#include "ops/conv_planar.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/int_math.h"
#include "base/thread_scratch.h"
#include "cpu/kernel_tables.h"
#include "ops/float4.h"
#include "ops/gemm.h"

namespace rg {

namespace {

constexpr int64_t kFilterRows = 6;         // every level's shifted tile (kernel_tables.h)
constexpr int64_t kGatheredColumns = 16;   // the gathered GEMM's tile columns the cost model counts
constexpr int64_t kMaxPlaneFloats = 1 << 16;  // a sample's planes (256 KB) stay in L2 while read

// One sample's planes: [channels][padded_h * padded_w], then `slack` zeros that the last tiles'
// whole-vector reads reach (the taps' largest shift plus a vector, f32_gemm.h).
struct Planes {
  int64_t width, pixels, grid, slack;
  explicit Planes(const ConvGeometry& g)
      : width(g.padded_width()), pixels(g.padded_height() * g.padded_width()), grid(g.out_h * width),
        slack(g.kernel + 64) {}
  int64_t floats(int64_t channels) const { return channels * pixels + slack; }
};

// Each depth step's shift into the planes, in the weight's row order (kh, kw, c).
std::vector<int32_t> tap_shifts(const ConvGeometry& g, const Planes& planes) {
  std::vector<int32_t> shifts;
  shifts.reserve(static_cast<size_t>(g.patch_size()));
  for (int64_t kh = 0; kh < g.kernel; ++kh)
    for (int64_t kw = 0; kw < g.kernel; ++kw)
      for (int64_t c = 0; c < g.channels; ++c)
        shifts.push_back(static_cast<int32_t>(c * planes.pixels + kh * planes.width + kw));
  return shifts;
}

// The tiles' A: w's columns in groups of 6, group q at [q * depth * 6], panel[p * 6 + r] = filter
// 6q + r's weight at step p (0 past the last filter: summed, never stored).
std::vector<float> pack_filters(const float* w, int64_t depth, int64_t filters) {
  std::vector<float> panels(static_cast<size_t>(round_up(filters, kFilterRows) * depth), 0.0f);
  for (int64_t q = 0; q < ceil_div(filters, kFilterRows); ++q)
    for (int64_t p = 0; p < depth; ++p)
      for (int64_t r = 0; r < kFilterRows && q * kFilterRows + r < filters; ++r)
        panels[static_cast<size_t>((q * depth + p) * kFilterRows + r)] = w[p * filters + q * kFilterRows + r];
  return panels;
}

// One image row [width][channels] into its row of each plane (planes `pixels` apart): 4x4 blocks
// transposed in registers where the channels come in fours (a scalar loop over 16 channels cost
// ~4 cycles a value), else value by value.
void row_to_planes(int64_t width, int64_t channels, int64_t pixels, const float* row, float* out) {
  if (channels == 1) {
    std::memcpy(out, row, static_cast<size_t>(width) * sizeof(float));
    return;
  }
  int64_t x = 0;
  if (channels % 4 == 0)
    for (; x + 4 <= width; x += 4)
      for (int64_t c = 0; c < channels; c += 4) transpose_float4(row + x * channels + c, channels, out + c * pixels + x, pixels);
  for (; x < width; ++x)
    for (int64_t c = 0; c < channels; ++c) out[c * pixels + x] = row[x * channels + c];
}

// planes[c][(pad + i) * width + pad + j] = image[i][j][c] for one sample; the borders and the
// slack zero.
void to_planes(const ConvGeometry& g, const Planes& planes, const float* image, float* out) {
  std::fill(out, out + planes.floats(g.channels), 0.0f);
  for (int64_t i = 0; i < g.height; ++i)
    row_to_planes(g.width, g.channels, planes.pixels, image + i * g.width * g.channels,
                  out + (g.pad + i) * planes.width + g.pad);
}

// out [filters][grid] over one sample's planes, depth block by depth block as the gathered GEMM.
void planar_products(const F32ShiftedKernel& kernel, const Planes& planes, int64_t depth, int64_t filters,
                     const float* panels, const float* in, const int32_t* shifts, float* out) {
  for (int64_t p0 = 0; p0 < depth; p0 += kGatheredDepthBlock) {
    const int64_t steps = std::min(depth, p0 + kGatheredDepthBlock) - p0;
    for (int64_t j = 0; j < planes.grid; j += kernel.nr)
      for (int64_t f = 0; f < filters; f += kFilterRows)
        kernel.tile(steps, panels + (f * depth + p0 * kFilterRows), in + j, shifts + p0, 1.0f, p0 == 0 ? 0.0f : 1.0f,
                    out + f * planes.grid + j, planes.grid, std::min(kFilterRows, filters - f),
                    std::min<int64_t>(kernel.nr, planes.grid - j));
  }
}

// y [out_h, out_w, filters] = out's grid columns inside the image, a filter's row at a time (an
// inner loop over the few filters kept a pixel's pointers in memory: 3 cycles a value).
void from_grid(const ConvGeometry& g, const Planes& planes, int64_t filters, const float* out, float* y) {
  for (int64_t f = 0; f < filters; ++f)
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      const float* row = out + f * planes.grid + oh * planes.width;
      float* to = y + oh * g.out_w * filters + f;
      for (int64_t ow = 0; ow < g.out_w; ++ow) to[ow * filters] = row[ow];
    }
}

}  // namespace

int64_t planar_conv_lanes(const ConvGeometry& g, int64_t filters) {
  return round_up(filters, kFilterRows) * g.out_h * g.padded_width() * g.patch_size();
}

bool planar_conv_wins(const ConvGeometry& g, int64_t filters) {
  if (g.stride != 1 || filters > kFilterRows || g.channels * g.padded_height() * g.padded_width() > kMaxPlaneFloats)
    return false;
  return planar_conv_lanes(g, filters) < g.patches() * round_up(filters, kGatheredColumns) * g.patch_size();
}

void f32_conv_planar(ThreadPool* pool, const ConvGeometry& g, int64_t count, const float* images, const float* w,
                     int64_t filters, float* y) {
  RG_CHECK(g.stride == 1, "planar convolution: stride " << g.stride);
  const Planes planes(g);
  RG_CHECK(planes.floats(g.channels) < (int64_t{1} << 31), "planar convolution: planes of " << g.channels << " x "
                                                                                            << planes.pixels);
  const F32ShiftedKernel& kernel = f32_gemm_shifted_kernel(active_isa());
  RG_CHECK(kernel.mr == kFilterRows && kernel.nr <= 64, "planar convolution: a " << kernel.name << " tile");
  const int64_t depth = g.patch_size(), in_size = g.height * g.width * g.channels, out_size = g.patches() * filters;
  const std::vector<int32_t> shifts = tap_shifts(g, planes);
  const std::vector<float> panels = pack_filters(w, depth, filters);
  parallel_for(pool, count, 1, [&](int64_t n0, int64_t n1) {
    static const ThreadScratchKey planes_key, grid_key;
    std::vector<float>& in = thread_scratch<std::vector<float>>(planes_key);
    std::vector<float>& out = thread_scratch<std::vector<float>>(grid_key);
    in.resize(static_cast<size_t>(planes.floats(g.channels)));
    out.resize(static_cast<size_t>(round_up(filters, kFilterRows) * planes.grid));
    for (int64_t n = n0; n < n1; ++n) {
      to_planes(g, planes, images + n * in_size, in.data());
      planar_products(kernel, planes, depth, filters, panels.data(), in.data(), shifts.data(), out.data());
      from_grid(g, planes, filters, out.data(), y + n * out_size);
    }
  });
}

}  // namespace rg
