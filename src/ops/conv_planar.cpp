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

// The planes of a stride-1 convolution whose shifts fit the tiles' int32 offsets (`what` names
// the caller in the check's message).
Planes checked_planes(const ConvGeometry& g, const char* what) {
  RG_CHECK(g.stride == 1, "" << what << ": stride " << g.stride);
  const Planes planes(g);
  RG_CHECK(planes.floats(g.channels) < (int64_t{1} << 31), "" << what << ": planes of " << g.channels << " x "
                                                                  << planes.pixels);
  return planes;
}

// The first 64-byte boundary at or after p (within 15 floats of it).
float* aligned_64(float* p) {
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 63) & ~static_cast<uintptr_t>(63));
}

// A thread's buffers for one sample at a time, kept between calls (base/thread_scratch.h): its
// planes, and a grid of `grid_floats` on 64-byte lines (a whole-vector load of a row whose floats
// are a multiple of 16 never splits a line).
struct SampleBuffers {
  float* planes;
  float* grid;
};
SampleBuffers sample_buffers(const Planes& planes, int64_t channels, int64_t grid_floats) {
  static const ThreadScratchKey planes_key, grid_key;
  std::vector<float>& in = thread_scratch<std::vector<float>>(planes_key);
  std::vector<float>& grid = thread_scratch<std::vector<float>>(grid_key);
  in.resize(static_cast<size_t>(planes.floats(channels)));
  grid.resize(static_cast<size_t>(grid_floats + 16));
  return SampleBuffers{in.data(), aligned_64(grid.data())};
}

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
// transposed in registers for the channels in whole fours (a scalar loop over 16 channels cost
// ~4 cycles a value), the rest value by value.
void row_to_planes(int64_t width, int64_t channels, int64_t pixels, const float* row, float* out) {
  if (channels == 1) {
    std::memcpy(out, row, static_cast<size_t>(width) * sizeof(float));
    return;
  }
  const int64_t fours = channels / 4 * 4;
  int64_t x = 0;
  for (; x + 4 <= width; x += 4) {
    for (int64_t c = 0; c < fours; c += 4) transpose_float4(row + x * channels + c, channels, out + c * pixels + x, pixels);
    for (int64_t c = fours; c < channels; ++c)
      for (int64_t i = 0; i < 4; ++i) out[c * pixels + x + i] = row[(x + i) * channels + c];
  }
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

// One sample's dy [out_h, out_w, filters] as planes [filters][depth] over the padded-width grid
// (row oh at oh * planes.width), zeros past out_w in each row and past the grid (depth: the grid
// rounded up to the dot tiles' lanes), so the columns the forward dropped add nothing.
void dy_to_grid(const ConvGeometry& g, const Planes& planes, int64_t filters, int64_t depth, const float* dy,
                float* out) {
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    row_to_planes(g.out_w, filters, depth, dy + oh * g.out_w * filters, out + oh * planes.width);
    for (int64_t f = 0; f < filters; ++f) {
      float* row = out + f * depth + oh * planes.width;
      std::fill(row + g.out_w, row + planes.width, 0.0f);
    }
  }
  for (int64_t f = 0; f < filters; ++f) std::fill(out + f * depth + planes.grid, out + (f + 1) * depth, 0.0f);
}

// c [taps][filters] = beta c + one sample's X Y^T: X its planes at each tap's shift, Y dy's.
void planar_dot_products(const F32DotKernel& kernel, const int32_t* shifts, int64_t taps, int64_t filters,
                         int64_t depth, const float* in, const float* grid, float beta, float* c) {
  for (int64_t t = 0; t < taps; t += kernel.mr)
    for (int64_t f = 0; f < filters; f += kernel.nr)
      kernel.tile(depth, in, shifts + t, grid + f * depth, depth, beta, c + t * filters + f, filters,
                  std::min<int64_t>(kernel.mr, taps - t), std::min<int64_t>(kernel.nr, filters - f));
}

}  // namespace

int64_t planar_conv_lanes(const ConvGeometry& g, int64_t filters) {
  return round_up(filters, kFilterRows) * g.out_h * g.padded_width() * g.patch_size();
}

int64_t planar_weight_grad_lanes(const ConvGeometry& g, int64_t filters) {
  return g.patch_size() * filters * round_up(g.out_h * g.padded_width(), int64_t{kF32DotLanes});
}

bool planar_conv_wins(const ConvGeometry& g, int64_t filters) {
  if (g.stride != 1 || filters > kFilterRows || g.channels * g.padded_height() * g.padded_width() > kMaxPlaneFloats)
    return false;
  return planar_conv_lanes(g, filters) < g.patches() * round_up(filters, kGatheredColumns) * g.patch_size();
}

void f32_conv_planar(ThreadPool* pool, const ConvGeometry& g, int64_t count, const float* images, const float* w,
                     int64_t filters, float* y) {
  const Planes planes = checked_planes(g, "planar convolution");
  const F32ShiftedKernel& kernel = f32_gemm_shifted_kernel(active_isa());
  RG_CHECK(kernel.mr == kFilterRows && kernel.nr <= 64, "planar convolution: a " << kernel.name << " tile");
  const int64_t depth = g.patch_size(), in_size = g.height * g.width * g.channels, out_size = g.patches() * filters;
  const std::vector<int32_t> shifts = tap_shifts(g, planes);
  const std::vector<float> panels = pack_filters(w, depth, filters);
  parallel_for(pool, count, 1, [&](int64_t n0, int64_t n1) {
    const SampleBuffers buffers = sample_buffers(planes, g.channels, round_up(filters, kFilterRows) * planes.grid);
    for (int64_t n = n0; n < n1; ++n) {
      to_planes(g, planes, images + n * in_size, buffers.planes);
      planar_products(kernel, planes, depth, filters, panels.data(), buffers.planes, shifts.data(), buffers.grid);
      from_grid(g, planes, filters, buffers.grid, y + n * out_size);
    }
  });
}

namespace {
int64_t planar_weight_grad_blocks(const ConvGeometry& g, int64_t filters, int64_t count) {
  return std::min(count, gemm_depth_blocks(g.patch_size(), filters, count * g.patches()));
}
}  // namespace

int64_t planar_weight_grad_partials(const ConvGeometry& g, int64_t filters, int64_t count) {
  return (planar_weight_grad_blocks(g, filters, count) - 1) * g.patch_size() * filters;
}

// Sample blocks by the shape alone (at most the gathered GEMM's depth blocks, whose partials the
// layer keeps), each block's samples on one thread in order, then the blocks added in order.
void f32_conv_planar_weight_grad(ThreadPool* pool, const ConvGeometry& g, int64_t count, const float* images,
                                 const float* dy, int64_t filters, float keep, float* dw, float* partials) {
  RG_CHECK(count >= 1, "planar weight gradient: " << count << " samples");
  const Planes planes = checked_planes(g, "planar weight gradient");
  const F32DotKernel& kernel = f32_gemm_dot_kernel(active_isa());
  const int64_t taps = g.patch_size(), depth = round_up(planes.grid, int64_t{kF32DotLanes}), cells = taps * filters;
  const int64_t blocks = planar_weight_grad_blocks(g, filters, count);
  RG_CHECK(blocks == 1 || partials != nullptr, "planar weight gradient: " << blocks << " blocks without partials");
  const int64_t in_size = g.height * g.width * g.channels, out_size = g.patches() * filters;
  const std::vector<int32_t> shifts = tap_shifts(g, planes);
  parallel_for(pool, blocks, 1, [&](int64_t b0, int64_t b1) {
    const SampleBuffers buffers = sample_buffers(planes, g.channels, filters * depth);
    for (int64_t b = b0; b < b1; ++b) {
      float* c = b == 0 ? dw : partials + (b - 1) * cells;
      for (int64_t n = count * b / blocks; n < count * (b + 1) / blocks; ++n) {
        to_planes(g, planes, images + n * in_size, buffers.planes);
        dy_to_grid(g, planes, filters, depth, dy + n * out_size, buffers.grid);
        const float beta = n > count * b / blocks ? 1.0f : b == 0 ? keep : 0.0f;
        planar_dot_products(kernel, shifts.data(), taps, filters, depth, buffers.planes, buffers.grid, beta, c);
      }
    }
  });
  for (int64_t b = 1; b < blocks; ++b)
    for (int64_t i = 0; i < cells; ++i) dw[i] += partials[(b - 1) * cells + i];
}

}  // namespace rg
