// Fixed-point products (fixed_point_gemm.h): the route to the int8 kernels, and the fake
// quantized form for the other formats, written plainly (its cost is the operands', O(m k + k n),
// beside the f32 GEMM's O(m n k)).
#include "ops/fixed_point_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "base/thread_scratch.h"

namespace rg {

ProductRoute product_route(const FixedPointFormat& a, const FixedPointFormat& b) {
  if (!a.quantized() || !b.quantized()) return ProductRoute::fake_quantized;
  return a.bits <= kMaxInt8TileBits && b.bits <= kMaxInt8TileBits ? ProductRoute::int8_tiles : ProductRoute::int16_tiles;
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

// op(X) as a row-major [rows x cols] copy, its values on the grid of `format` (index i * cols + j
// in the stochastic stream, as int8_dynamic_gemm's), or as they are for an f32 operand.
struct GridOperand {
  std::vector<float>* out;
  float max_abs = 0;
  bool nonfinite = false;
};

float max_abs_of(const std::vector<float>& v, bool* nonfinite) {
  float m = 0;
  for (float x : v) {
    if (!std::isfinite(x)) {
      *nonfinite = true;
    } else {
      m = std::max(m, std::fabs(x));
    }
  }
  return m;
}

// The values of `v` onto the grid (a scan first: max|v|, or a NaN/Inf that stops it).
void onto_grid(std::vector<float>& v, const FixedPointFormat& format, uint64_t key, ThreadPool* pool) {
  bool nonfinite = false;
  const float max_abs = max_abs_of(v, &nonfinite);
  if (nonfinite || !format.quantized()) return;
  const float mult = fixed_point_multiplier(format, max_abs);
  const double step = fixed_point_step(format, max_abs);
  const int32_t qmax = format.qmax();
  const bool stochastic = format.rounding == Rounding::stochastic;
  parallel_for(pool, static_cast<int64_t>(v.size()), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float& x = v[static_cast<size_t>(t)];
      const int32_t q = stochastic ? fixed_point_quantize_stochastic(x, mult, qmax,
                                                                     int8_rounding_uniform(key, static_cast<uint64_t>(t)))
                                   : fixed_point_quantize_nearest(x, mult, qmax);
      x = static_cast<float>(q * step);
    }
  });
}

// The stochastic key int8_dynamic_gemm would use for operand `operand` (1: A, 2: B) of values `v`
// whose middle element is v[middle]; 0 for a format rounded to nearest or not quantized.
uint64_t grid_key(const Int8GemmOptions& o, int operand, int64_t m, int64_t n, int64_t k, const std::vector<float>& v,
                  size_t middle) {
  const FixedPointFormat& f = operand == 1 ? o.a : o.b;
  if (!f.quantized() || f.rounding != Rounding::stochastic) return 0;
  bool nonfinite = false;
  return int8_rounding_key(o, operand, m, n, k, max_abs_of(v, &nonfinite), v[middle]);
}

bool any_nonfinite(const std::vector<float>& v) {
  return std::any_of(v.begin(), v.end(), [](float x) { return !std::isfinite(x); });
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
  const ProductRoute route = product_route(o.a, o.b);
  if (route == ProductRoute::int8_tiles) return int8_dynamic_gemm(s, alpha, a, b, beta, c, pool, o);
  if (route == ProductRoute::int16_tiles) return int16_dynamic_gemm(s, alpha, a, b, beta, c, pool, o);
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0 || alpha == 0.0f) return f32_gemm_scale_c(s.m, s.n, beta, c, s.ldc);
  static const ThreadScratchKey a_key, b_key;
  std::vector<float>& grid_a = thread_scratch<std::vector<float>>(a_key);
  std::vector<float>& grid_b = thread_scratch<std::vector<float>>(b_key);
  copy_op(a, s.m, s.k, s.lda, s.trans_a == Trans::yes, grid_a);
  copy_op(b, s.k, s.n, s.ldb, s.trans_b == Trans::yes, grid_b);
  if (any_nonfinite(grid_a) || any_nonfinite(grid_b)) return nan_product(s.m, s.n, c, s.ldc);
  const uint64_t key_a = grid_key(o, 1, s.m, s.n, s.k, grid_a, static_cast<size_t>((s.m / 2) * s.k + s.k / 2));
  const uint64_t key_b = grid_key(o, 2, s.m, s.n, s.k, grid_b, static_cast<size_t>((s.k / 2) * s.n + s.n / 2));
  onto_grid(grid_a, o.a, key_a, pool);
  onto_grid(grid_b, o.b, key_b, pool);
  f32_gemm(GemmShape{Trans::no, Trans::no, s.m, s.n, s.k, s.k, s.n, s.ldc}, alpha, grid_a.data(), grid_b.data(), beta,
           c, pool);
}

void fixed_point_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                               const Int8GemmOptions& o) {
  const ProductRoute route = product_route(o.a, o.b);
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
  if (any_nonfinite(image) || any_nonfinite(grid_b)) return nan_product(m, n, c, ldc);
  const uint64_t key_a = grid_key(o, 1, m, n, k, image, image.size() / 2);
  const uint64_t key_b = grid_key(o, 2, m, n, k, grid_b, static_cast<size_t>((k / 2) * n + n / 2));
  onto_grid(image, o.a, key_a, pool);
  onto_grid(grid_b, o.b, key_b, pool);
  image.insert(image.begin(), static_cast<size_t>(lo), 0.0f);
  f32_gemm_gathered(m, n, k, alpha, GatheredA<float>{image.data(), a.row_offsets, a.depth_offsets}, grid_b.data(), n,
                    beta, c, ldc, pool);
}

void fixed_point_round_in_place(float* x, int64_t count, const FixedPointFormat& format, uint64_t key,
                                ThreadPool* pool) {
  if (!format.quantized() || count <= 0) return;
  static const ThreadScratchKey copy_key;
  std::vector<float>& copy = thread_scratch<std::vector<float>>(copy_key);
  copy.assign(x, x + count);
  onto_grid(copy, format, key, pool);
  std::copy(copy.begin(), copy.end(), x);
}

}  // namespace rg
