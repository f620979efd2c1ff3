// Fixed-point products (fixed_point_gemm.h): the route to the int8 kernels, and the fake
// quantized form for the other formats, written plainly (its cost is the operands', O(m k + k n),
// beside the f32 GEMM's O(m n k)).
#include "ops/fixed_point_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "cpu/kernel_tables.h"
#include "ops/fixed_point_runs.h"

namespace rg {

ProductRoute product_route(const FixedPointFormat& a, const FixedPointFormat& b, ChannelAxis b_axis, Isa isa) {
  if (!a.quantized() || !b.quantized()) return ProductRoute::fake_quantized;
  if (b.per_channel && b_axis == ChannelAxis::rows) return ProductRoute::fake_quantized;
  const bool narrow = a.bits <= kMaxInt8TileBits && b.bits <= kMaxInt8TileBits;
  return narrow && !qs16_gemm_kernel(isa).serves_int8 ? ProductRoute::int8_tiles : ProductRoute::int16_tiles;
}

const char* product_route_name(ProductRoute route) {
  switch (route) {
    case ProductRoute::int8_tiles: return "int8 tiles";
    case ProductRoute::int16_tiles: return "int16 tiles";
    case ProductRoute::fake_quantized: return "fake quantized";
  }
  return "?";
}

namespace {

// The finite values of x[0, count): max|x|, min and max, and whether a NaN or an Inf is among them.
struct Scan {
  float max_abs = 0, min = 0, max = 0;
  bool nonfinite = false;
};
Scan scan(const float* x, int64_t count) {
  Scan s;
  for (int64_t t = 0; t < count; ++t) {
    if (!std::isfinite(x[t])) {
      s.nonfinite = true;
    } else {
      s.max_abs = std::max(s.max_abs, std::fabs(x[t]));
      s.min = std::min(s.min, x[t]);
      s.max = std::max(s.max, x[t]);
    }
  }
  return s;
}
Scan scan(const std::vector<float>& v) { return scan(v.data(), static_cast<int64_t>(v.size())); }

FixedPointGrid scanned_grid(const FixedPointFormat& f, const Scan& s) {
  return f.affine ? fixed_point_grid(f, s.min, s.max) : fixed_point_grid(f, -s.max_abs, s.max_abs);
}

// Element t's channel in a per-channel [rows x row_length] tensor: its column's (j % count), or
// with by_rows its row's (i % count); a parameter's is t % count (row_length = count).
struct Channels {
  int64_t count = 0;  // 0: one grid for the tensor
  int64_t row_length = 1;
  bool by_rows = false;
  int64_t of(int64_t t) const { return (by_rows ? t / row_length : t % row_length) % count; }
};

// One grid per channel of x[0, count) (its max|x|), or the tensor's.
std::vector<FixedPointGrid> grids_of(const float* x, int64_t count, const FixedPointFormat& f, const Scan& s,
                                     const Channels& channels) {
  if (!f.per_channel || channels.count == 0) return {scanned_grid(f, s)};
  std::vector<float> max_abs(static_cast<size_t>(channels.count), 0.0f);
  for (int64_t t = 0; t < count; ++t) {
    float& m = max_abs[static_cast<size_t>(channels.of(t))];
    m = std::max(m, std::fabs(x[t]));
  }
  std::vector<FixedPointGrid> grids;
  for (float m : max_abs) grids.push_back(fixed_point_grid(f, -m, m));
  return grids;
}

// Finite x[0, count) scanned as `s` onto the grids of `format` in place (index t in the
// stochastic stream of `key`, as int8_dynamic_gemm's); an f32 format leaves them.
void onto_grid(float* x, int64_t count, const Scan& s, const FixedPointFormat& format, const Channels& channels,
               uint64_t key, ThreadPool* pool) {
  if (!format.quantized()) return;
  const std::vector<FixedPointGrid> grids = grids_of(x, count, format, s, channels);
  const int32_t qmax = format.qmax();
  const bool stochastic = format.rounding == Rounding::stochastic;
  parallel_for(pool, count, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const FixedPointGrid& g = grids.size() == 1 ? grids[0] : grids[static_cast<size_t>(channels.of(t))];
      const int32_t q = stochastic ? fixed_point_quantize_stochastic(x[t], g.multiplier, qmax,
                                                                     int8_rounding_uniform(key, static_cast<uint64_t>(t)), g.zero)
                                   : fixed_point_quantize_nearest(x[t], g.multiplier, qmax, g.zero);
      x[t] = static_cast<float>((q - g.zero) * g.step);
    }
  });
}

// Operand `operand` (1: A, 2: B) of values `v`, scanned as `s`, onto its format's grid with the key
// int8_dynamic_gemm would use (its middle element v[middle]); a per-channel B [k x n] by channel.
void operand_onto_grid(std::vector<float>& v, const Scan& s, const Int8GemmOptions& o, int operand, int64_t m,
                       int64_t n, int64_t k, size_t middle, ThreadPool* pool) {
  const FixedPointFormat& f = operand == 1 ? o.a : o.b;
  const bool stochastic = f.quantized() && f.rounding == Rounding::stochastic;
  const uint64_t key = stochastic ? int8_rounding_key(o, operand, m, n, k, scanned_grid(f, s).half_range, v[middle]) : 0;
  Channels channels;
  if (operand == 2 && f.per_channel) {
    RG_CHECK(o.b_channels > 0, "fixed-point GEMM: a per-channel B without its channel count");
    channels = Channels{o.b_channels, n, o.b_channel_axis == ChannelAxis::rows};
  }
  RG_CHECK(operand == 2 || !f.per_channel, "fixed-point GEMM: per-channel scales are B's (the weights')");
  onto_grid(v.data(), static_cast<int64_t>(v.size()), s, f, channels, key, pool);
}

void nan_product(int64_t m, int64_t n, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, std::numeric_limits<float>::quiet_NaN());
}

// op(X) [rows x cols] from X stored with row stride ld (transposed when trans).
void copy_op(const float* x, int64_t rows, int64_t cols, int64_t ld, bool trans, std::vector<float>& out) {
  out.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[static_cast<size_t>(i * cols + j)] = trans ? x[j * ld + i] : x[i * ld + j];
}

}  // namespace

void fixed_point_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                      ThreadPool* pool, const Int8GemmOptions& o) {
  const ProductRoute route = product_route(o.a, o.b, o.b_channel_axis, o.isa);
  if (route == ProductRoute::int8_tiles) return int8_dynamic_gemm(s, alpha, a, b, beta, c, pool, o);
  if (route == ProductRoute::int16_tiles) return int16_dynamic_gemm(s, alpha, a, b, beta, c, pool, o);
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0 || alpha == 0.0f) return f32_gemm_scale_c(s.m, s.n, beta, c, s.ldc);
  static const ThreadScratchKey a_key, b_key;
  std::vector<float>& grid_a = thread_scratch<std::vector<float>>(a_key);
  std::vector<float>& grid_b = thread_scratch<std::vector<float>>(b_key);
  copy_op(a, s.m, s.k, s.lda, s.trans_a == Trans::yes, grid_a);
  copy_op(b, s.k, s.n, s.ldb, s.trans_b == Trans::yes, grid_b);
  const Scan scan_a = scan(grid_a), scan_b = scan(grid_b);
  if (scan_a.nonfinite || scan_b.nonfinite) return nan_product(s.m, s.n, c, s.ldc);
  operand_onto_grid(grid_a, scan_a, o, 1, s.m, s.n, s.k, static_cast<size_t>((s.m / 2) * s.k + s.k / 2), pool);
  operand_onto_grid(grid_b, scan_b, o, 2, s.m, s.n, s.k, static_cast<size_t>((s.k / 2) * s.n + s.n / 2), pool);
  f32_gemm(GemmShape{Trans::no, Trans::no, s.m, s.n, s.k, s.k, s.n, s.ldc}, alpha, grid_a.data(), grid_b.data(), beta,
           c, pool);
}

void fixed_point_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                               const Int8GemmOptions& o) {
  const ProductRoute route = product_route(o.a, o.b, o.b_channel_axis, o.isa);
  if (route == ProductRoute::int8_tiles) return int8_dynamic_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, pool, o);
  if (route == ProductRoute::int16_tiles) {
    return int16_dynamic_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, pool, o);
  }
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) return f32_gemm_scale_c(m, n, beta, c, ldc);
  // The image range the offsets reach is one tensor (as int8_dynamic_gemm_gathered quantizes it),
  // its grid copy kept at the same offsets: [0, lo) unused.
  const auto rows = std::minmax_element(a.row_offsets, a.row_offsets + m);
  const auto depth = std::minmax_element(a.depth_offsets, a.depth_offsets + k);
  const int64_t lo = int64_t{*rows.first} + *depth.first, hi = int64_t{*rows.second} + *depth.second;
  static const ThreadScratchKey image_key, b_key;
  std::vector<float>& image = thread_scratch<std::vector<float>>(image_key);
  std::vector<float>& grid_b = thread_scratch<std::vector<float>>(b_key);
  image.assign(a.base + lo, a.base + hi + 1);
  copy_op(b, k, n, ldb, false, grid_b);
  const Scan scan_a = scan(image), scan_b = scan(grid_b);
  if (scan_a.nonfinite || scan_b.nonfinite) return nan_product(m, n, c, ldc);
  operand_onto_grid(image, scan_a, o, 1, m, n, k, image.size() / 2, pool);
  operand_onto_grid(grid_b, scan_b, o, 2, m, n, k, static_cast<size_t>((k / 2) * n + n / 2), pool);
  image.insert(image.begin(), static_cast<size_t>(lo), 0.0f);
  f32_gemm_gathered(m, n, k, alpha, GatheredA<float>{image.data(), a.row_offsets, a.depth_offsets}, grid_b.data(), n,
                    beta, c, ldc, pool);
}

namespace {
// fixed_point_round_in_place for one symmetric, non-saturating grid (a weight gradient's usual
// format) on the vectorized loops: the same values as onto_grid's scalar definitions.
void round_one_grid_in_place(float* x, int64_t count, const FixedPointFormat& format, uint64_t key, ThreadPool* pool) {
  namespace runs = fixed_point_runs;
  const int32_t bits = runs::max_abs_bits(x, count);
  if (bits >= runs::kInfBits) return;  // a NaN or an Inf: left as it is
  float max_abs;
  std::memcpy(&max_abs, &bits, sizeof max_abs);
  const FixedPointGrid grid = fixed_point_grid(format, -max_abs, max_abs);
  const bool stochastic = format.rounding == Rounding::stochastic;
  constexpr int64_t kChunk = 256;
  parallel_for(pool, (count + kChunk - 1) / kChunk, 16, [&](int64_t begin, int64_t end) {
    int32_t q[kChunk];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t t0 = chunk * kChunk, n = std::min(kChunk, count - t0);
      if (stochastic) {
        runs::quantize_run_stochastic(x + t0, n, runs::UniformMult{grid.multiplier}, 0, format.qmax(), key,
                                      static_cast<uint64_t>(t0), 1, q);
      } else {
        runs::quantize_run_nearest(x + t0, n, runs::UniformMult{grid.multiplier}, 0, format.qmax(), q);
      }
      for (int64_t t = 0; t < n; ++t) x[t0 + t] = static_cast<float>(q[t] * grid.step);
    }
  });
}
}  // namespace

void fixed_point_round_in_place(float* x, int64_t count, const FixedPointFormat& format, uint64_t key,
                                ThreadPool* pool, int64_t channels) {
  if (!format.quantized() || count <= 0) return;
  if (!format.affine && !(format.per_channel && channels > 0) && format.scale != ScaleRule::fixed) {
    return round_one_grid_in_place(x, count, format, key, pool);
  }
  const Scan s = scan(x, count);
  if (!s.nonfinite) onto_grid(x, count, s, format, Channels{format.per_channel ? channels : 0, std::max<int64_t>(channels, 1), false}, key, pool);
}

}  // namespace rg
