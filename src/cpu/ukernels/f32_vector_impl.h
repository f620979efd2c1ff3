// The f32 elementwise kernels written once with xsimd batches. Include ONLY from an isa/*.cpp file (see f32_gemm_impl.h for why); the
// RG_DEFINE_F32_VECTOR_KERNELS macro at the end defines the named kernels of one ISA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <xsimd/xsimd.hpp>

#include "cpu/ukernels/f32_vector.h"
#include "cpu/ukernels/xsimd_fma.h"

namespace rg {
namespace ukernel {

// Runs `fn` on W-wide chunks of up to three inputs, writing one output; the tail is copied
// into zero-padded buffers so it takes the same vector path.
template <class Batch, class Fn>
inline void map1(int64_t n, const float* x, float* y, Fn fn) {
  constexpr int64_t W = static_cast<int64_t>(Batch::size);
  int64_t i = 0;
  for (; i + W <= n; i += W) fn(Batch::load_unaligned(x + i)).store_unaligned(y + i);
  if (i < n) {
    alignas(64) float in[W] = {}, out[W];
    std::memcpy(in, x + i, static_cast<size_t>(n - i) * sizeof(float));
    fn(Batch::load_unaligned(in)).store_unaligned(out);
    std::memcpy(y + i, out, static_cast<size_t>(n - i) * sizeof(float));
  }
}

template <class Batch, class Fn>
inline void map2(int64_t n, const float* x, const float* z, float* y, Fn fn) {
  constexpr int64_t W = static_cast<int64_t>(Batch::size);
  int64_t i = 0;
  for (; i + W <= n; i += W) fn(Batch::load_unaligned(x + i), Batch::load_unaligned(z + i)).store_unaligned(y + i);
  if (i < n) {
    alignas(64) float a[W] = {}, b[W] = {}, out[W];
    std::memcpy(a, x + i, static_cast<size_t>(n - i) * sizeof(float));
    std::memcpy(b, z + i, static_cast<size_t>(n - i) * sizeof(float));
    fn(Batch::load_unaligned(a), Batch::load_unaligned(b)).store_unaligned(out);
    std::memcpy(y + i, out, static_cast<size_t>(n - i) * sizeof(float));
  }
}

// Updates arrays in place in W-wide chunks: fn(at) loads at[k] and stores into the first
// Outputs of them; at[k] points into the arrays, or into zero-padded copies for the tail,
// of which only the outputs are copied back (the inputs may be const).
template <class Batch, int Outputs, int Arrays, class Fn>
inline void update_chunks(int64_t n, float* const (&arrays)[Arrays], Fn fn) {
  constexpr int64_t W = static_cast<int64_t>(Batch::size);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    float* at[Arrays];
    for (int k = 0; k < Arrays; ++k) at[k] = arrays[k] + i;
    fn(at);
  }
  if (i < n) {
    alignas(64) float tail[Arrays][W] = {};
    float* at[Arrays];
    for (int k = 0; k < Arrays; ++k) {
      std::memcpy(tail[k], arrays[k] + i, static_cast<size_t>(n - i) * sizeof(float));
      at[k] = tail[k];
    }
    fn(at);
    for (int k = 0; k < Outputs; ++k) std::memcpy(arrays[k] + i, tail[k], static_cast<size_t>(n - i) * sizeof(float));
  }
}

template <class Arch>
void vunary(UnaryOp op, int64_t n, float slope, const float* x, float* y) {
  using B = xsimd::batch<float, Arch>;
  const B zero(0.0f), one(1.0f), six(6.0f), k(slope);
  switch (op) {
    case UnaryOp::relu: map1<B>(n, x, y, [&](B v) { return xsimd::max(v, zero); }); break;
    case UnaryOp::leaky_relu: map1<B>(n, x, y, [&](B v) { return xsimd::select(v > zero, v, k * v); }); break;
    case UnaryOp::relu6:  // compares, not min/max, so a NaN gives 0 as in the reference
      map1<B>(n, x, y, [&](B v) { return xsimd::select(v > zero, xsimd::select(v < six, v, six), zero); });
      break;
    case UnaryOp::sigmoid:
      map1<B>(n, x, y, [&](B v) {
        const B e = xsimd::exp(-xsimd::abs(v));
        const B s = one / (one + e);
        return xsimd::select(v >= zero, s, e * s);
      });
      break;
    case UnaryOp::tanh: map1<B>(n, x, y, [&](B v) { return xsimd::tanh(v); }); break;
  }
}

template <class Arch>
void vunary_grad(UnaryOp op, int64_t n, float slope, const float* xy, const float* dy, float* dx) {
  using B = xsimd::batch<float, Arch>;
  const B zero(0.0f), one(1.0f), six(6.0f), k(slope);
  switch (op) {
    case UnaryOp::relu: map2<B>(n, xy, dy, dx, [&](B x, B g) { return xsimd::select(x > zero, g, zero); }); break;
    case UnaryOp::relu6:
      map2<B>(n, xy, dy, dx, [&](B x, B g) { return xsimd::select(x > zero && x < six, g, zero); });
      break;
    case UnaryOp::leaky_relu: map2<B>(n, xy, dy, dx, [&](B x, B g) { return xsimd::select(x > zero, g, k * g); }); break;
    case UnaryOp::sigmoid: map2<B>(n, xy, dy, dx, [&](B y, B g) { return g * y * (one - y); }); break;
    case UnaryOp::tanh: map2<B>(n, xy, dy, dx, [&](B y, B g) { return g * (one - y * y); }); break;
  }
}

// Dropout by blocks of 64 values: the block's draws into keep words (all ones where the value is
// kept), a plain loop over 64-bit integers that the compiler vectorises at this level's flags
// (xsimd 8 has no 64-bit multiply below AVX-512; GCC's emulation of one on AVX2 does), then the
// block's x * scale masked by them in float batches; a short last block through padded copies.
template <class Arch>
void dropout(int64_t n, uint64_t state, uint64_t counter, uint32_t threshold, float scale, const float* x, float* y) {
  using B = xsimd::batch<float, Arch>;
  using U = xsimd::batch<uint32_t, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size), kBlock = 64;  // a multiple of every width
  alignas(64) uint32_t keep[kBlock];
  alignas(64) float in[kBlock] = {}, out[kBlock];
  const B s(scale);
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    for (int64_t k = 0; k < kBlock; ++k) {
      const uint64_t draw = splitmix64_at(state, counter + static_cast<uint64_t>(i0 + k)) >> 32;
      keep[k] = draw < threshold ? 0u : ~0u;
    }
    const int64_t m = n - i0 < kBlock ? n - i0 : kBlock;
    const float* from = x + i0;
    float* to = y + i0;
    if (m < kBlock) {
      std::memcpy(in, from, static_cast<size_t>(m) * sizeof(float));
      from = in;
      to = out;
    }
    for (int64_t k = 0; k < kBlock; k += W) {
      const B kept = B::load_unaligned(from + k) * s;
      xsimd::bitwise_and(kept, xsimd::bitwise_cast<B>(U::load_aligned(keep + k))).store_unaligned(to + k);
    }
    if (m < kBlock) std::memcpy(y + i0, out, static_cast<size_t>(m) * sizeof(float));
  }
}

// Batch norm (f32_vector.h) over x [rows, channels]: vec(i, c) for each whole vector of a row's
// channels (flat index i, channels c ..), one(i, c) for each channel after them; both run the
// same operations, in vector and scalar form. Where whole vectors fill a row, one flat loop (a
// row of few vectors would spend as much on its own loop's entry and exit as on its work).
template <class B, class Vec, class One>
inline void over_rows_channels(int64_t rows, int64_t channels, const Vec& vec, const One& one) {
  constexpr int64_t W = static_cast<int64_t>(B::size);
  if (channels % W == 0) {
    for (int64_t i = 0, c = 0, n = rows * channels; i < n; i += W) {
      vec(i, c);
      c = c + W == channels ? 0 : c + W;
    }
    return;
  }
  for (int64_t r = 0, i = 0; r < rows; ++r, i += channels) {
    int64_t c = 0;
    for (; c + W <= channels; c += W) vec(i + c, c);
    for (; c < channels; ++c) one(i + c, c);
  }
}

// The gradient at the batch norm's output: dy, or with a fused relu dy where x scale + shift > 0.
template <class V>
inline V batch_norm_grad_at(bool relu, V x, V dy, V scale, V shift) {
  if (!relu) return dy;
  return xsimd::select(x * scale + shift > V(0.0f), dy, V(0.0f));
}
inline float batch_norm_grad_at(bool relu, float x, float dy, float scale, float shift) {
  return !relu || x * scale + shift > 0.0f ? dy : 0.0f;
}
// dy's vector loaded on its own: given the select, GCC folds the load into one masked by x's
// comparison (avx512), which waits on x's load; from memory, the two misses then go one after
// the other (batch norm's dx pass 0.42 -> 0.75 ms at avx512 on 6.4 MB in DRAM, this VM).
template <class B>
inline B load_dy(const float* dy) {
  B v = B::load_unaligned(dy);
  __asm__("" : "+v"(v.data));
  return v;
}
// The same at channels c.. of a row (scale and shift are null without the relu), x loaded into *xv.
template <class B>
inline B batch_norm_grad_at(bool relu, const float* x, const float* dy, const float* scale, const float* shift,
                            int64_t c, B* xv) {
  *xv = B::load_unaligned(x + c);
  const B s = relu ? B::load_unaligned(scale + c) : B(0.0f), h = relu ? B::load_unaligned(shift + c) : B(0.0f);
  return batch_norm_grad_at(relu, *xv, load_dy<B>(dy + c), s, h);
}

// The sums of G whole vectors of channels (x, dy, the constants and the sums from their first
// channel), held in registers down the rows: each channel still adds its rows in order, and
// no row waits on the last row's sums passing through memory (a store-to-load chain per row,
// 2.2x slower at avx512 in cnn's training).
template <class B, int G, bool kRelu>
inline void batch_norm_grad_sums_group(int64_t rows, int64_t channels, const float* x, const float* dy,
                                       const float* mean, const float* inv_std, const float* scale,
                                       const float* shift, float* g_sums, float* gx_sums) {
  constexpr int64_t W = static_cast<int64_t>(B::size);
  B g[G], gx[G];
  for (int k = 0; k < G; ++k) g[k] = B::load_unaligned(g_sums + k * W), gx[k] = B::load_unaligned(gx_sums + k * W);
  for (int64_t r = 0; r < rows; ++r, x += channels, dy += channels)
    for (int k = 0; k < G; ++k) {
      B xv;
      const B gk = batch_norm_grad_at(kRelu, x, dy, scale, shift, k * W, &xv);
      g[k] = g[k] + gk;
      gx[k] = gx[k] + gk * (xv - B::load_unaligned(mean + k * W)) * B::load_unaligned(inv_std + k * W);
    }
  for (int k = 0; k < G; ++k) g[k].store_unaligned(g_sums + k * W), gx[k].store_unaligned(gx_sums + k * W);
}

// A batch norm kernel sums a block's rows (in L1) for up to 8 vectors of channels at once, two
// sums a vector: one pass down the rows where there are at most 8 vectors. Measured in cnn's
// training at avx2 (16 registers: some sums spill), grad sums of 64-row blocks, 64 channels: 8
// at once 0.18 ms, 4 at once 0.35 ms, 2 at once 0.52 ms (more passes, each over part of a row).
constexpr int kBatchNormGroupVectors = 8;

// Calls group(c, integral_constant<int, G>) for channels [c, c + G W) with c from 0, in groups
// of kBatchNormGroupVectors vectors, then the 1 to 7 vectors left in one group; returns the
// first channel after the last whole vector.
template <class B, class Group>
int64_t over_channel_groups(int64_t channels, const Group& group) {
  constexpr int64_t W = static_cast<int64_t>(B::size), kMost = kBatchNormGroupVectors;
  int64_t c = 0;
  for (; c + kMost * W <= channels; c += kMost * W) group(c, std::integral_constant<int, kMost>());
  const int64_t left = (channels - c) / W;
  switch (left) {
    case 7: group(c, std::integral_constant<int, 7>()); break;
    case 6: group(c, std::integral_constant<int, 6>()); break;
    case 5: group(c, std::integral_constant<int, 5>()); break;
    case 4: group(c, std::integral_constant<int, 4>()); break;
    case 3: group(c, std::integral_constant<int, 3>()); break;
    case 2: group(c, std::integral_constant<int, 2>()); break;
    case 1: group(c, std::integral_constant<int, 1>()); break;
    default: break;
  }
  return c + left * W;
}

// Channels in groups of whole vectors held in registers, then one channel at a time.
template <class B, bool kRelu>
void batch_norm_grad_sums_as(int64_t rows, int64_t channels, const float* x, const float* dy, const float* mean,
                             const float* inv_std, const float* scale, const float* shift, float* sums) {
  float* g_sums = sums;
  float* gx_sums = sums + channels;
  int64_t c = over_channel_groups<B>(channels, [&](int64_t c0, auto vectors) {
    batch_norm_grad_sums_group<B, decltype(vectors)::value, kRelu>(
        rows, channels, x + c0, dy + c0, mean + c0, inv_std + c0, kRelu ? scale + c0 : nullptr,
        kRelu ? shift + c0 : nullptr, g_sums + c0, gx_sums + c0);
  });
  for (; c < channels; ++c)
    for (int64_t r = 0; r < rows; ++r) {
      const float xr = x[r * channels + c];
      const float g = batch_norm_grad_at(kRelu, xr, dy[r * channels + c], kRelu ? scale[c] : 0.0f, kRelu ? shift[c] : 0.0f);
      g_sums[c] += g;
      gx_sums[c] += g * (xr - mean[c]) * inv_std[c];
    }
}

template <class Arch>
void batch_norm_grad_sums(int64_t rows, int64_t channels, const float* x, const float* dy, const float* mean,
                          const float* inv_std, const float* scale, const float* shift, float* sums) {
  using B = xsimd::batch<float, Arch>;
  if (scale != nullptr)
    batch_norm_grad_sums_as<B, true>(rows, channels, x, dy, mean, inv_std, scale, shift, sums);
  else
    batch_norm_grad_sums_as<B, false>(rows, channels, x, dy, mean, inv_std, scale, shift, sums);
}

// A block's means and M2s for G whole vectors of channels from x's first, in registers down the rows.
template <class B, int G>
inline void batch_norm_stats_group(int64_t rows, int64_t channels, const float* x, float* mean, float* m2) {
  constexpr int64_t W = static_cast<int64_t>(B::size);
  B sum[G], squares[G];
  for (int k = 0; k < G; ++k) sum[k] = B(0.0f), squares[k] = B(0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int k = 0; k < G; ++k) sum[k] = sum[k] + B::load_unaligned(x + r * channels + k * W);
  for (int k = 0; k < G; ++k) sum[k] = sum[k] / B(static_cast<float>(rows));
  for (int64_t r = 0; r < rows; ++r)
    for (int k = 0; k < G; ++k) {
      const B d = B::load_unaligned(x + r * channels + k * W) - sum[k];
      squares[k] = squares[k] + d * d;
    }
  for (int k = 0; k < G; ++k) sum[k].store_unaligned(mean + k * W), squares[k].store_unaligned(m2 + k * W);
}

// Channels in groups of whole vectors held in registers, then one at a time (the reference's loop).
template <class Arch>
void batch_norm_block_stats(int64_t rows, int64_t channels, const float* x, float* mean, float* m2) {
  using B = xsimd::batch<float, Arch>;
  int64_t c = over_channel_groups<B>(channels, [&](int64_t c0, auto vectors) {
    batch_norm_stats_group<B, decltype(vectors)::value>(rows, channels, x + c0, mean + c0, m2 + c0);
  });
  for (; c < channels; ++c) {
    float sum = 0.0f, squares = 0.0f;
    for (int64_t r = 0; r < rows; ++r) sum += x[r * channels + c];
    mean[c] = sum / static_cast<float>(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const float d = x[r * channels + c] - mean[c];
      squares += d * d;
    }
    m2[c] = squares;
  }
}

template <class B, bool kRelu>
void batch_norm_apply_as(int64_t rows, int64_t channels, const float* x, const float* scale, const float* shift,
                         float* y) {
  over_rows_channels<B>(
      rows, channels,
      [&](int64_t i, int64_t c) {
        const B v = B::load_unaligned(x + i) * B::load_unaligned(scale + c) + B::load_unaligned(shift + c);
        (kRelu ? xsimd::select(v > B(0.0f), v, B(0.0f)) : v).store_unaligned(y + i);
      },
      [&](int64_t i, int64_t c) {
        const float v = x[i] * scale[c] + shift[c];
        y[i] = !kRelu || v > 0.0f ? v : 0.0f;
      });
}

template <class Arch>
void batch_norm_apply(int64_t rows, int64_t channels, const float* x, const float* scale, const float* shift, bool relu,
                      float* y) {
  using B = xsimd::batch<float, Arch>;
  if (relu)
    batch_norm_apply_as<B, true>(rows, channels, x, scale, shift, y);
  else
    batch_norm_apply_as<B, false>(rows, channels, x, scale, shift, y);
}

template <class B, bool kRelu>
void batch_norm_grad_as(int64_t rows, int64_t channels, const float* x, const float* dy, const float* a, const float* b,
                        const float* d, const float* scale, const float* shift, float* dx) {
  over_rows_channels<B>(
      rows, channels,
      [&](int64_t i, int64_t c) {
        const B xv = B::load_unaligned(x + i), dyv = load_dy<B>(dy + i);
        const B g = kRelu ? batch_norm_grad_at(true, xv, dyv, B::load_unaligned(scale + c), B::load_unaligned(shift + c))
                          : dyv;
        (B::load_unaligned(a + c) * g + B::load_unaligned(b + c) * xv + B::load_unaligned(d + c)).store_unaligned(dx + i);
      },
      [&](int64_t i, int64_t c) {
        const float g = batch_norm_grad_at(kRelu, x[i], dy[i], kRelu ? scale[c] : 0.0f, kRelu ? shift[c] : 0.0f);
        dx[i] = a[c] * g + b[c] * x[i] + d[c];
      });
}

// (At avx512 this pass ran faster on 256-bit batches from DRAM on this VM's Zen 5: 0.58 -> 0.38
// ms over 6.4 MB. Not taken: xsimd's 256-bit batch in the avx512 file makes template symbols of
// the same name as avx2's file's, one copy linked for both: tools/check_isa_leaks.py's hazard.
// Raw 256-bit intrinsics in a function templated on Arch would avoid it.)
template <class Arch>
void batch_norm_grad(int64_t rows, int64_t channels, const float* x, const float* dy, const float* a, const float* b,
                     const float* d, const float* scale, const float* shift, float* dx) {
  using B = xsimd::batch<float, Arch>;
  if (scale != nullptr)
    batch_norm_grad_as<B, true>(rows, channels, x, dy, a, b, d, scale, shift, dx);
  else
    batch_norm_grad_as<B, false>(rows, channels, x, dy, a, b, d, scale, shift, dx);
}

// y [rows x cols] += bias [cols] on every row. A row of few columns would be mostly a padded
// tail, so up to 64 columns the rows go in blocks of a multiple of W rows, added as one flat
// run to the bias repeated as often (`pattern`, [block_rows x cols]): whole vectors only.
template <class Arch>
void add_bias(int64_t rows, int64_t cols, const float* bias, float* y) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size), kPatternCols = 64;
  const auto add = [](B v, B b) { return v + b; };
  if (cols > kPatternCols) {
    for (int64_t r = 0; r < rows; ++r) map2<B>(cols, y + r * cols, bias, y + r * cols, add);
    return;
  }
  if (cols == 0) return;
  alignas(64) float pattern[kPatternCols * W];
  const int64_t block_rows = kPatternCols / cols * W, block = block_rows * cols;
  for (int64_t r = 0; r < block_rows; ++r) std::memcpy(pattern + r * cols, bias, static_cast<size_t>(cols) * sizeof(float));
  const int64_t n = rows * cols;  // the last block may be short: a prefix of the pattern
  for (int64_t i = 0; i < n; i += block) map2<B>(n - i < block ? n - i : block, y + i, pattern, y + i, add);
}

// Column sums of rows [r0, r1) for the G vectors of columns from c0 (G W >= the columns left >
// (G - 1) W): lanes are columns, each summed down the rows in order in a register. The last
// vector's loads may reach past the columns (into the next row): those lanes are masked to
// zero, and the rows where such a load would leave x [rows x cols] are read from a padded copy.
template <class B, int G>
void column_sum_group(int64_t rows, int64_t cols, int64_t r0, int64_t r1, int64_t c0, const float* x, float* sums) {
  constexpr int64_t W = static_cast<int64_t>(B::size);
  const int64_t width = cols - c0 < G * W ? cols - c0 : G * W;
  const size_t width_bytes = static_cast<size_t>(width) * sizeof(float);
  alignas(64) float lanes[G * W] = {};
  std::memcpy(lanes, sums + c0, width_bytes);
  B acc[G];
  for (int k = 0; k < G; ++k) acc[k] = B::load_aligned(lanes + k * W);
  alignas(64) float lane_index[W];
  for (int64_t i = 0; i < W; ++i) lane_index[i] = static_cast<float>(i);
  const auto live = B::load_aligned(lane_index) < B(static_cast<float>(width - (G - 1) * W));
  const auto add_row = [&](const float* row) {
    for (int k = 0; k < G - 1; ++k) acc[k] += B::load_unaligned(row + k * W);
    acc[G - 1] += xsimd::select(live, B::load_unaligned(row + (G - 1) * W), B(0.0f));
  };
  const int64_t room = rows * cols - c0 - G * W;  // rows r <= room / cols read x directly
  int64_t direct_end = room < 0 ? 0 : room / cols + 1;
  if (direct_end > r1) direct_end = r1;
  int64_t r = r0;
  for (; r < direct_end; ++r) add_row(x + r * cols + c0);
  for (; r < r1; ++r) {
    alignas(64) float row[G * W] = {};
    std::memcpy(row, x + r * cols + c0, width_bytes);
    add_row(row);
  }
  for (int k = 0; k < G; ++k) acc[k].store_aligned(lanes + k * W);
  std::memcpy(sums + c0, lanes, width_bytes);
}

// sums [cols] += the column sums of x [rows x cols], each column's rows in order (so
// bit-exact against the reference). Columns go in groups of up to 4 vectors (independent
// chains of adds); with more than one group, rows go in chunks of about 64 KiB of x (at least
// 256 rows), which stays in cache while each group is summed down it.
template <class Arch>
void column_sum(int64_t rows, int64_t cols, const float* x, float* sums) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size), kGroup = 4 * W;
  const int64_t chunk = cols <= kGroup ? rows : 16384 / cols > 256 ? 16384 / cols : 256;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
    for (int64_t c0 = 0; c0 < cols; c0 += kGroup) {
      switch (cols - c0 < kGroup ? (cols - c0 + W - 1) / W : 4) {
        case 1: column_sum_group<B, 1>(rows, cols, r0, r1, c0, x, sums); break;
        case 2: column_sum_group<B, 2>(rows, cols, r0, r1, c0, x, sums); break;
        case 3: column_sum_group<B, 3>(rows, cols, r0, r1, c0, x, sums); break;
        default: column_sum_group<B, 4>(rows, cols, r0, r1, c0, x, sums); break;
      }
    }
  }
}

// rows_combine (f32_vector.h) for the G vectors of outputs from j0 (G W >= the outputs left >
// (G - 1) W): one FMA chain a lane down the k rows in order, in registers; the last vector's
// lanes past n are read from a zero-padded copy of each row and never stored.
template <class B, int G>
void rows_combine_group(int64_t k, int64_t n, int64_t j0, const float* m, int64_t ldm, const float* x, float alpha,
                        float beta, float* y) {
  constexpr int64_t W = static_cast<int64_t>(B::size);
  const int64_t width = n - j0 < G * W ? n - j0 : G * W, whole = width / W;
  B acc[G];
  for (int g = 0; g < G; ++g) acc[g] = B(0.0f);
  alignas(64) float row_tail[W] = {};
  const size_t tail_bytes = static_cast<size_t>(width - whole * W) * sizeof(float);
  for (int64_t p = 0; p < k; ++p) {
    const float* row = m + p * ldm + j0;
    const B xp(x[p]);
    for (int g = 0; g < whole; ++g) acc[g] = fused_multiply_add(xp, B::load_unaligned(row + g * W), acc[g]);
    if (whole < G) {
      std::memcpy(row_tail, row + whole * W, tail_bytes);
      acc[whole] = fused_multiply_add(xp, B::load_aligned(row_tail), acc[whole]);
    }
  }
  const B scale(alpha), keep(beta);
  alignas(64) float out[G * W] = {};
  if (beta != 0.0f) std::memcpy(out, y + j0, static_cast<size_t>(width) * sizeof(float));
  for (int g = 0; g < G; ++g) {
    const B old = B::load_aligned(out + g * W);
    const B sum = beta == 0.0f   ? B(scale * acc[g])
                  : beta == 1.0f ? fused_multiply_add(scale, acc[g], old)
                                 : fused_multiply_add(scale, acc[g], keep * old);
    sum.store_aligned(out + g * W);
  }
  std::memcpy(y + j0, out, static_cast<size_t>(width) * sizeof(float));
}

template <class Arch>
void rows_combine(int64_t k, int64_t n, const float* m, int64_t ldm, const float* x, float alpha, float beta,
                  float* y) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size), kGroup = 4 * W;
  for (int64_t j0 = 0; j0 < n; j0 += kGroup) {
    switch (n - j0 < kGroup ? (n - j0 + W - 1) / W : 4) {
      case 1: rows_combine_group<B, 1>(k, n, j0, m, ldm, x, alpha, beta, y); break;
      case 2: rows_combine_group<B, 2>(k, n, j0, m, ldm, x, alpha, beta, y); break;
      case 3: rows_combine_group<B, 3>(k, n, j0, m, ldm, x, alpha, beta, y); break;
      default: rows_combine_group<B, 4>(k, n, j0, m, ldm, x, alpha, beta, y); break;
    }
  }
}

// Lanes hold partial results; the tail's padding lanes get `pad` so they cannot win a max
// or add to a sum.
template <class Arch>
void softmax_rows(int64_t rows, int64_t cols, const float* x, float* y) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * cols;
    float* out = y + r * cols;
    const int64_t full = cols / W * W;
    B max_lanes(-HUGE_VALF);
    for (int64_t i = 0; i < full; i += W) max_lanes = xsimd::max(max_lanes, B::load_unaligned(in + i));
    alignas(64) float lanes[W];
    max_lanes.store_aligned(lanes);
    float max = lanes[0];
    for (int64_t i = 1; i < W; ++i) max = lanes[i] > max ? lanes[i] : max;
    for (int64_t i = full; i < cols; ++i) max = in[i] > max ? in[i] : max;
    const B shift(max);
    B sum_lanes(0.0f);
    for (int64_t i = 0; i < full; i += W) {
      const B e = xsimd::exp(B::load_unaligned(in + i) - shift);
      e.store_unaligned(out + i);
      sum_lanes += e;
    }
    if (full < cols) {  // the tail through the same vector exp, padding with -inf (exp = 0)
      alignas(64) float tail[W];
      for (int64_t i = 0; i < W; ++i) tail[i] = full + i < cols ? in[full + i] : -HUGE_VALF;
      const B e = xsimd::exp(B::load_unaligned(tail) - shift);
      e.store_unaligned(tail);
      sum_lanes += e;
      std::memcpy(out + full, tail, static_cast<size_t>(cols - full) * sizeof(float));
    }
    sum_lanes.store_aligned(lanes);
    float sum = 0.0f;
    for (int64_t i = 0; i < W; ++i) sum += lanes[i];  // lanes in order: one fixed summation order
    const B inverse_sum(1.0f / sum);
    map1<B>(cols, out, out, [&](B v) { return v * inverse_sum; });
  }
}

template <class Arch>
bool sgd(int64_t n, const SgdStep& step, float* w, const float* grad, float* v) {
  using B = xsimd::batch<float, Arch>;
  const B lr(step.lr), mu(step.momentum), wd(step.weight_decay);
  auto finite = B(0.0f) == B(0.0f);  // every lane true; the tail's padding is 0, finite
  if (v == nullptr) {
    float* const arrays[2] = {w, const_cast<float*>(grad)};  // grad is only read
    update_chunks<B, 1>(n, arrays, [&](float* const* at) {
      const B wv = B::load_unaligned(at[0]);
      const B raw = B::load_unaligned(at[1]);
      const B updated = wv - lr * (raw + wd * wv);
      finite = finite && xsimd::isfinite(raw) && xsimd::isfinite(updated);
      updated.store_unaligned(at[0]);
    });
    return xsimd::all(finite);
  }
  float* const arrays[3] = {w, v, const_cast<float*>(grad)};  // grad is only read
  update_chunks<B, 2>(n, arrays, [&](float* const* at) {
    const B wv = B::load_unaligned(at[0]);
    const B raw = B::load_unaligned(at[2]);
    const B g = raw + wd * wv;
    const B vel = mu * B::load_unaligned(at[1]) + g;
    vel.store_unaligned(at[1]);
    const B updated = wv - lr * (step.nesterov ? g + mu * vel : vel);
    finite = finite && xsimd::isfinite(raw) && xsimd::isfinite(updated);
    updated.store_unaligned(at[0]);
  });
  return xsimd::all(finite);
}

template <class Arch>
bool adam(int64_t n, const AdamStep& step, float* w, const float* grad, float* m, float* s) {
  using B = xsimd::batch<float, Arch>;
  const B b1(step.beta1), b2(step.beta2), c1(step.one_minus_beta1), c2(step.one_minus_beta2);
  const B size(step.step_size), corr(step.correction2_sqrt), eps(step.eps), wd(step.weight_decay);
  auto finite = B(0.0f) == B(0.0f);  // every lane true; the tail's padding is 0, finite
  float* const arrays[4] = {w, m, s, const_cast<float*>(grad)};  // grad is only read
  update_chunks<B, 3>(n, arrays, [&](float* const* at) {
    const B wv = B::load_unaligned(at[0]);
    const B raw = B::load_unaligned(at[3]);
    const B g = raw + wd * wv;
    const B mv = b1 * B::load_unaligned(at[1]) + c1 * g;
    const B sv = b2 * B::load_unaligned(at[2]) + c2 * g * g;
    mv.store_unaligned(at[1]);
    sv.store_unaligned(at[2]);
    const B updated = wv - size * mv / (xsimd::sqrt(sv) / corr + eps);
    finite = finite && xsimd::isfinite(raw) && xsimd::isfinite(updated);
    updated.store_unaligned(at[0]);
  });
  return xsimd::all(finite);
}

// Depthwise rows (f32_vector.h): W channels a vector; a tail of fewer channels goes through the
// same vector code on zero-padded copies. fused_multiply_add(x, w, acc) is one rounding where Arch
// has FMA, else x * w + acc (the scalar reference's two).

template <class Arch>
void depthwise(int64_t c, int64_t pixels, int64_t taps, const float* const* rows, const float* w, const float* bias,
               float* out) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  for (int64_t p = 0; p < pixels; ++p, rows += taps, out += c) {
    int64_t ch = 0;
    for (; ch + W <= c; ch += W) {
      B acc = bias != nullptr ? B::load_unaligned(bias + ch) : B(0.0f);
      for (int64_t t = 0; t < taps; ++t)
        acc = fused_multiply_add(B::load_unaligned(rows[t] + ch), B::load_unaligned(w + t * c + ch), acc);
      acc.store_unaligned(out + ch);
    }
    if (ch == c) continue;
    const size_t tail = static_cast<size_t>(c - ch) * sizeof(float);
    alignas(64) float xv[W] = {}, wv[W] = {}, acc_v[W] = {};
    if (bias != nullptr) std::memcpy(acc_v, bias + ch, tail);
    B acc = B::load_unaligned(acc_v);
    for (int64_t t = 0; t < taps; ++t) {
      std::memcpy(xv, rows[t] + ch, tail);
      std::memcpy(wv, w + t * c + ch, tail);
      acc = fused_multiply_add(B::load_unaligned(xv), B::load_unaligned(wv), acc);
    }
    acc.store_unaligned(acc_v);
    std::memcpy(out + ch, acc_v, tail);
  }
}

template <class Arch>
void depthwise_weight_grad(int64_t c, int64_t pixels, int64_t taps, const float* const* rows, const float* dy,
                           float* dw) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  for (int64_t t = 0; t < taps; ++t, dw += c) {
    int64_t ch = 0;
    for (; ch + W <= c; ch += W) {
      B acc = B::load_unaligned(dw + ch);
      for (int64_t p = 0; p < pixels; ++p)
        acc = fused_multiply_add(B::load_unaligned(rows[p * taps + t] + ch), B::load_unaligned(dy + p * c + ch), acc);
      acc.store_unaligned(dw + ch);
    }
    if (ch == c) continue;
    const size_t tail = static_cast<size_t>(c - ch) * sizeof(float);
    alignas(64) float xv[W] = {}, gv[W] = {}, acc_v[W] = {};
    std::memcpy(acc_v, dw + ch, tail);
    B acc = B::load_unaligned(acc_v);
    for (int64_t p = 0; p < pixels; ++p) {
      std::memcpy(xv, rows[p * taps + t] + ch, tail);
      std::memcpy(gv, dy + p * c + ch, tail);
      acc = fused_multiply_add(B::load_unaligned(xv), B::load_unaligned(gv), acc);
    }
    acc.store_unaligned(acc_v);
    std::memcpy(dw + ch, acc_v, tail);
  }
}

// min_max (f32_vector.h): 4 vectors of running bounds (independent chains), each lane keeping its
// bound where the compare fails, so NaN never enters; then the lanes and the tail.
template <class Arch>
void min_max(int64_t n, const float* x, float* lo, float* hi) {
  using B = xsimd::batch<float, Arch>;
  constexpr int64_t W = static_cast<int64_t>(B::size);
  const float inf = std::numeric_limits<float>::infinity();
  B low[4] = {B(inf), B(inf), B(inf), B(inf)}, high[4] = {B(-inf), B(-inf), B(-inf), B(-inf)};
  int64_t i = 0;
  for (; i + 4 * W <= n; i += 4 * W)
    for (int k = 0; k < 4; ++k) {
      const B v = B::load_unaligned(x + i + k * W);
      low[k] = xsimd::select(v < low[k], v, low[k]);
      high[k] = xsimd::select(v > high[k], v, high[k]);
    }
  alignas(64) float lanes[2][4 * W];
  for (int k = 0; k < 4; ++k) {
    low[k].store_aligned(lanes[0] + k * W);
    high[k].store_aligned(lanes[1] + k * W);
  }
  float l = inf, h = -inf;
  for (int64_t j = 0; j < 4 * W; ++j) {
    l = lanes[0][j] < l ? lanes[0][j] : l;
    h = lanes[1][j] > h ? lanes[1][j] : h;
  }
  for (; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l;
  *hi = h;
}

// Max pooling's backward over tiling windows (f32_vector.h): window by window, its channels a
// vector at a time, the dy not yet given in a register while the window's pixels pass; the
// channels after the last whole vector one at a time, the same way. (The forward as such, window
// by window, was slower than ops/pool2d.h's row sweep: cnn's 28x28x32 0.27 -> 0.41 ms.)
template <class B, class Vec, class One>
inline void over_tiled_windows(int64_t out_h, int64_t out_w, int64_t kernel, int64_t width, int64_t channels,
                               const Vec& vec, const One& one) {
  constexpr int64_t W = static_cast<int64_t>(B::size);
  for (int64_t oh = 0; oh < out_h; ++oh)
    for (int64_t ow = 0; ow < out_w; ++ow) {
      const int64_t at = (oh * kernel * width + ow * kernel) * channels, o = (oh * out_w + ow) * channels;
      int64_t c = 0;
      for (; c + W <= channels; c += W) vec(at + c, o + c);
      for (; c < channels; ++c) one(at + c, o + c);
    }
}

template <class Arch>
void max_pool_tiled_grad(int64_t out_h, int64_t out_w, int64_t kernel, int64_t width, int64_t channels,
                         const float* x, const float* y, const float* dy, float* dx) {
  using B = xsimd::batch<float, Arch>;
  const int64_t row = width * channels;
  over_tiled_windows<B>(
      out_h, out_w, kernel, width, channels,
      [&](int64_t at, int64_t o) {
        const B top = B::load_unaligned(y + o), zero(0.0f);
        B rem = B::load_unaligned(dy + o);
        for (int64_t kh = 0; kh < kernel; ++kh)
          for (int64_t kw = 0; kw < kernel; ++kw) {
            const int64_t i = at + kh * row + kw * channels;
            const auto hit = B::load_unaligned(x + i) == top;
            (zero + xsimd::select(hit, rem, zero)).store_unaligned(dx + i);
            rem = xsimd::select(hit, zero, rem);
          }
      },
      [&](int64_t at, int64_t o) {
        float rem = dy[o];
        for (int64_t kh = 0; kh < kernel; ++kh)
          for (int64_t kw = 0; kw < kernel; ++kw) {
            const int64_t i = at + kh * row + kw * channels;
            const bool hit = x[i] == y[o];
            dx[i] = 0.0f + (hit ? rem : 0.0f);
            rem = hit ? 0.0f : rem;
          }
      });
}

}  // namespace ukernel
}  // namespace rg

// Defines the named kernels of one ISA from the templates above.
#define RG_DEFINE_F32_VECTOR_KERNELS(isa, Arch)                                                            \
  void f32_vunary__##isa(UnaryOp op, int64_t n, float slope, const float* x, float* y) {                   \
    ukernel::vunary<Arch>(op, n, slope, x, y);                                                             \
  }                                                                                                        \
  void f32_vunary_grad__##isa(UnaryOp op, int64_t n, float slope, const float* xy, const float* dy,        \
                              float* dx) {                                                                 \
    ukernel::vunary_grad<Arch>(op, n, slope, xy, dy, dx);                                                  \
  }                                                                                                        \
  void f32_add_bias__##isa(int64_t rows, int64_t cols, const float* bias, float* y) {                     \
    ukernel::add_bias<Arch>(rows, cols, bias, y);                                                          \
  }                                                                                                        \
  void f32_column_sum__##isa(int64_t rows, int64_t cols, const float* x, float* sums) {                   \
    ukernel::column_sum<Arch>(rows, cols, x, sums);                                                        \
  }                                                                                                        \
  void f32_min_max__##isa(int64_t n, const float* x, float* lo, float* hi) {                              \
    ukernel::min_max<Arch>(n, x, lo, hi);                                                                  \
  }                                                                                                        \
  void f32_rows_combine__##isa(int64_t k, int64_t n, const float* m, int64_t ldm, const float* x, float alpha, \
                              float beta, float* y) {                                                      \
    ukernel::rows_combine<Arch>(k, n, m, ldm, x, alpha, beta, y);                                          \
  }                                                                                                        \
  void f32_softmax_rows__##isa(int64_t rows, int64_t cols, const float* x, float* y) {                  \
    ukernel::softmax_rows<Arch>(rows, cols, x, y);                                                         \
  }                                                                                                        \
  void f32_dropout__##isa(int64_t n, uint64_t state, uint64_t counter, uint32_t threshold, float scale,    \
                          const float* x, float* y) {                                                      \
    ukernel::dropout<Arch>(n, state, counter, threshold, scale, x, y);                                     \
  }                                                                                                        \
  void f32_batch_norm_grad_sums__##isa(int64_t rows, int64_t channels, const float* x, const float* dy,     \
                                       const float* mean, const float* inv_std, const float* scale,        \
                                       const float* shift, float* sums) {                                  \
    ukernel::batch_norm_grad_sums<Arch>(rows, channels, x, dy, mean, inv_std, scale, shift, sums);         \
  }                                                                                                        \
  void f32_batch_norm_block_stats__##isa(int64_t rows, int64_t channels, const float* x, float* mean,       \
                                         float* m2) {                                                      \
    ukernel::batch_norm_block_stats<Arch>(rows, channels, x, mean, m2);                                    \
  }                                                                                                        \
  void f32_batch_norm_apply__##isa(int64_t rows, int64_t channels, const float* x, const float* scale,      \
                                   const float* shift, bool relu, float* y) {                              \
    ukernel::batch_norm_apply<Arch>(rows, channels, x, scale, shift, relu, y);                             \
  }                                                                                                        \
  void f32_batch_norm_grad__##isa(int64_t rows, int64_t channels, const float* x, const float* dy,          \
                                  const float* a, const float* b, const float* d, const float* scale,      \
                                  const float* shift, float* dx) {                                         \
    ukernel::batch_norm_grad<Arch>(rows, channels, x, dy, a, b, d, scale, shift, dx);                      \
  }                                                                                                        \
  bool f32_sgd__##isa(int64_t n, const SgdStep& step, float* w, const float* grad, float* v) {            \
    return ukernel::sgd<Arch>(n, step, w, grad, v);                                                        \
  }                                                                                                        \
  bool f32_adam__##isa(int64_t n, const AdamStep& step, float* w, const float* grad, float* m, float* s) { \
    return ukernel::adam<Arch>(n, step, w, grad, m, s);                                                    \
  }                                                                                                        \
  void f32_depthwise__##isa(int64_t c, int64_t pixels, int64_t taps, const float* const* rows, const float* w, \
                            const float* bias, float* out) {                                               \
    ukernel::depthwise<Arch>(c, pixels, taps, rows, w, bias, out);                                         \
  }                                                                                                        \
  void f32_max_pool_tiled_grad__##isa(int64_t out_h, int64_t out_w, int64_t kernel, int64_t width,            \
                                      int64_t channels, const float* x, const float* y, const float* dy,   \
                                      float* dx) {                                                         \
    ukernel::max_pool_tiled_grad<Arch>(out_h, out_w, kernel, width, channels, x, y, dy, dx);               \
  }                                                                                                        \
  void f32_depthwise_weight_grad__##isa(int64_t c, int64_t pixels, int64_t taps, const float* const* rows,  \
                                        const float* dy, float* dw) {                                      \
    ukernel::depthwise_weight_grad<Arch>(c, pixels, taps, rows, dy, dw);                                   \
  }
