// The GEMMs of Dense and Conv layers, routed by LayerContext::gemm: f32_gemm (the default,
// exactly what ops/gemm.h's gemm() runs), or int8 training's dynamic int8 product. `grad` names
// the operand that is a gradient (rounded stochastically, from the stream
// (ctx.gemm_seed, ctx.noise_stream)). The double instantiation (gradient checks) always runs
// the reference, whatever the context says.
#pragma once

#include "nn/layer.h"
#include "ops/gemm.h"
#include "ops/int8_dynamic_gemm.h"

namespace rg {

inline Int8GemmOptions int8_gemm_options(const LayerContext& ctx, GradOperand grad) {
  Int8GemmOptions o;
  o.grad = grad;
  o.seed = ctx.gemm_seed;
  o.stream = ctx.noise_stream;
  return o;
}

inline void layer_gemm(const LayerContext& ctx, GradOperand grad, const GemmShape& s, float alpha, const float* a,
                       const float* b, float beta, float* c) {
  if (ctx.gemm == GemmPrecision::int8_dynamic) {
    int8_dynamic_gemm(s, alpha, a, b, beta, c, ctx.pool, int8_gemm_options(ctx, grad));
  } else {
    f32_gemm(s, alpha, a, b, beta, c, ctx.pool);
  }
}
inline void layer_gemm(const LayerContext&, GradOperand, const GemmShape& s, double alpha, const double* a,
                       const double* b, double beta, double* c) {
  gemm_ref(s, alpha, a, b, beta, c);
}

inline void layer_gemm_gathered(const LayerContext& ctx, GradOperand grad, int64_t m, int64_t n, int64_t k, float alpha,
                                const GatheredA<float>& a, const float* b, int64_t ldb, float beta, float* c,
                                int64_t ldc) {
  if (ctx.gemm == GemmPrecision::int8_dynamic) {
    int8_dynamic_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, ctx.pool, int8_gemm_options(ctx, grad));
  } else {
    f32_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, ctx.pool);
  }
}
inline void layer_gemm_gathered(const LayerContext&, GradOperand, int64_t m, int64_t n, int64_t k, double alpha,
                                const GatheredA<double>& a, const double* b, int64_t ldb, double beta, double* c,
                                int64_t ldc) {
  gemm_gathered_ref(m, n, k, alpha, a, b, ldb, beta, c, ldc);
}

// A weight gradient's gathered product, split over its depth into `partials` (gemm_depth_partials(m, n, k)
// of them: ops/gemm.h's f32_gemm_gathered_depth_split); int8 training's product and the double
// reference do not split.
inline void layer_gemm_gathered_depth_split(const LayerContext& ctx, GradOperand grad, int64_t m, int64_t n, int64_t k,
                                            float alpha, const GatheredA<float>& a, const float* b, int64_t ldb,
                                            float beta, float* c, int64_t ldc, float* partials) {
  if (ctx.gemm == GemmPrecision::int8_dynamic) {
    int8_dynamic_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, ctx.pool, int8_gemm_options(ctx, grad));
  } else {
    f32_gemm_gathered_depth_split(m, n, k, alpha, a, b, ldb, beta, c, ldc, partials, ctx.pool);
  }
}
inline void layer_gemm_gathered_depth_split(const LayerContext&, GradOperand, int64_t m, int64_t n, int64_t k,
                                            double alpha, const GatheredA<double>& a, const double* b, int64_t ldb,
                                            double beta, double* c, int64_t ldc, double*) {
  gemm_gathered_ref(m, n, k, alpha, a, b, ldb, beta, c, ldc);
}

}  // namespace rg
