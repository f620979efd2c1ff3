// The dynamic integer GEMM's reference (ops/int8_dynamic_gemm.h's int8_dynamic_gemm_ref and
// int8_dynamic_gemm_gathered_ref): plain loops over whole operands, each value quantized on its
// grid by the scalar definitions (ops/fixed_point_format.h) and the products summed in int64, that the
// tiled drivers in int8_dynamic_gemm.cpp must equal bit for bit.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/fixed_point_format.h"
#include "ops/int8_dynamic_gemm.h"

namespace rg {

namespace {

struct RefOperand {
  std::vector<float> values;  // row-major
  float max_abs = 0, min = 0, max = 0;
  bool nonfinite = false;
};

void ref_scan(RefOperand* x) {
  for (float v : x->values) {
    if (!std::isfinite(v)) {
      x->nonfinite = true;
    } else {
      x->max_abs = std::max(x->max_abs, std::fabs(v));
      x->min = std::min(x->min, v);
      x->max = std::max(x->max, v);
    }
  }
}

FixedPointGrid ref_grid(const RefOperand& x, const FixedPointFormat& format) {
  return format.affine ? fixed_point_grid(format, x.min, x.max) : fixed_point_grid(format, -x.max_abs, x.max_abs);
}

// Each element's grid: the operand's, or (a per-channel B [k x n]) its column's channel's.
std::vector<FixedPointGrid> ref_element_grids(const RefOperand& x, const FixedPointFormat& format, int64_t n,
                                              int64_t channels) {
  if (!format.per_channel) return std::vector<FixedPointGrid>(x.values.size(), ref_grid(x, format));
  std::vector<float> channel_max(static_cast<size_t>(channels), 0.0f);
  for (size_t t = 0; t < x.values.size(); ++t) {
    float& m = channel_max[static_cast<size_t>((static_cast<int64_t>(t) % n) % channels)];
    m = std::max(m, std::fabs(x.values[t]));
  }
  std::vector<FixedPointGrid> grids;
  for (size_t t = 0; t < x.values.size(); ++t) {
    const float m = channel_max[static_cast<size_t>((static_cast<int64_t>(t) % n) % channels)];
    grids.push_back(fixed_point_grid(format, -m, m));
  }
  return grids;
}

std::vector<int32_t> ref_quantize(const RefOperand& x, const FixedPointFormat& format,
                                  const std::vector<FixedPointGrid>& grids, uint64_t key) {
  std::vector<int32_t> q(x.values.size());
  for (size_t t = 0; t < q.size(); ++t) {
    const FixedPointGrid& g = grids[t];
    q[t] = format.rounding == Rounding::stochastic
               ? fixed_point_quantize_stochastic(x.values[t], g.multiplier, format.qmax(), int8_rounding_uniform(key, t),
                                                 g.zero)
               : fixed_point_quantize_nearest(x.values[t], g.multiplier, format.qmax(), g.zero);
  }
  return q;
}

// acc[i][j] = sum_p (qa[i][p] - zero_a) (qb[p][j] - zero_b) in int64, then C with column j's step of B.
void ref_multiply(int64_t m, int64_t n, int64_t k, const std::vector<int32_t>& qa, const std::vector<int32_t>& qb,
                  int32_t zero_a, int32_t zero_b, float alpha, double step_a, const std::vector<FixedPointGrid>& grids_b,
                  float beta, float* c, int64_t ldc, Int8GemmTrace* trace) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        acc += (int64_t{qa[static_cast<size_t>(i * k + p)]} - zero_a) * (int64_t{qb[static_cast<size_t>(p * n + j)]} - zero_b);
      }
      const double factor = static_cast<double>(alpha) * step_a * grids_b[static_cast<size_t>(j)].step;
      const float product = static_cast<float>(factor * static_cast<double>(acc));
      float& out = c[i * ldc + j];
      out = product + (beta == 0.0f ? 0.0f : beta * out);
      if (trace != nullptr && trace->want_sums) trace->sums[static_cast<size_t>(i * n + j)] = acc;
    }
}

// Everything after op(A) and op(B) are read: scan, key, quantize, multiply.
// opa is op(A) [m x k], or, with gather_index, the image A's elements are gathered from
// (A[i][p] = image[gather_index[i * k + p]]). middle_a: the element the key takes.
void ref_finish(int64_t m, int64_t n, int64_t k, float alpha, RefOperand& opa, RefOperand& opb, float middle_a,
                float beta, float* c, int64_t ldc, const Int8GemmOptions& o, const std::vector<int32_t>* gather_index) {
  ref_scan(&opa);
  ref_scan(&opb);
  if (opa.nonfinite || opb.nonfinite) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = std::numeric_limits<float>::quiet_NaN();
    if (o.trace != nullptr) {
      o.trace->nonfinite = true;
      o.trace->key_a = o.trace->key_b = 0;
      o.trace->sums.assign(o.trace->want_sums ? static_cast<size_t>(m * n) : 0, 0);
    }
    return;
  }
  const FixedPointGrid grid_a = ref_grid(opa, o.a), grid_b = ref_grid(opb, o.b);
  const uint64_t key_a = o.a.rounding == Rounding::stochastic
                             ? int8_rounding_key(o, 1, m, n, k, grid_a.half_range, middle_a) : 0;
  const uint64_t key_b = o.b.rounding == Rounding::stochastic
                             ? int8_rounding_key(o, 2, m, n, k, grid_b.half_range,
                                                 opb.values[static_cast<size_t>((k / 2) * n + n / 2)])
                             : 0;
  if (o.trace != nullptr) {
    o.trace->max_abs_a = grid_a.half_range;
    o.trace->max_abs_b = grid_b.half_range;
    o.trace->nonfinite = false;
    o.trace->key_a = key_a;
    o.trace->key_b = key_b;
    o.trace->sums.assign(o.trace->want_sums ? static_cast<size_t>(m * n) : 0, 0);
  }
  const std::vector<FixedPointGrid> grids_b = ref_element_grids(opb, o.b, n, o.b_channels);
  std::vector<int32_t> qa = ref_quantize(opa, o.a, std::vector<FixedPointGrid>(opa.values.size(), grid_a), key_a);
  const std::vector<int32_t> qb = ref_quantize(opb, o.b, grids_b, key_b);
  if (gather_index != nullptr) {  // opa was the image: gather A's bytes from its quantized copy
    std::vector<int32_t> gathered(gather_index->size());
    for (size_t t = 0; t < gathered.size(); ++t) gathered[t] = qa[static_cast<size_t>((*gather_index)[t])];
    qa.swap(gathered);
  }
  ref_multiply(m, n, k, qa, qb, grid_a.zero, grid_b.zero, alpha, grid_a.step, grids_b, beta, c, ldc, o.trace);
}

}  // namespace

void int8_dynamic_gemm_ref(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                           const Int8GemmOptions& o) {
  if (int8_gemm_without_products(s.m, s.n, s.k, alpha, beta, c, s.ldc, o)) return;
  RefOperand opa, opb;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t p = 0; p < s.k; ++p) opa.values.push_back(s.trans_a == Trans::yes ? a[p * s.lda + i] : a[i * s.lda + p]);
  for (int64_t p = 0; p < s.k; ++p)
    for (int64_t j = 0; j < s.n; ++j) opb.values.push_back(s.trans_b == Trans::yes ? b[j * s.ldb + p] : b[p * s.ldb + j]);
  const float middle_a = opa.values[static_cast<size_t>((s.m / 2) * s.k + s.k / 2)];
  ref_finish(s.m, s.n, s.k, alpha, opa, opb, middle_a, beta, c, s.ldc, o, nullptr);
}

void int8_dynamic_gemm_gathered_ref(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                                    const Int8GemmOptions& o) {
  if (int8_gemm_without_products(m, n, k, alpha, beta, c, ldc, o)) return;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const int64_t offset = int64_t{a.row_offsets[i]} + a.depth_offsets[p];
      lo = std::min(lo, offset);
      hi = std::max(hi, offset);
    }
  RefOperand image, opb;
  for (int64_t t = lo; t <= hi; ++t) image.values.push_back(a.base[t]);
  std::vector<int32_t> index;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) index.push_back(static_cast<int32_t>(int64_t{a.row_offsets[i]} + a.depth_offsets[p] - lo));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) opb.values.push_back(b[p * ldb + j]);
  const float middle_a = image.values[image.values.size() / 2];
  ref_finish(m, n, k, alpha, image, opb, middle_a, beta, c, ldc, o, &index);
}

}  // namespace rg
