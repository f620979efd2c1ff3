// The GEMMs of Dense and Conv layers, routed by LayerContext::gemm: f32_gemm (the default,
// exactly what ops/gemm.h's gemm() runs), or the fixed-point product (ops/fixed_point_gemm.h)
// with each operand in the format of its role (LayerContext::formats): a call site says which
// operand holds the activations, the weights or the errors (dL/dy). Stochastic rounding draws
// from the stream (ctx.gemm_seed, ctx.noise_stream). The double instantiation (gradient checks)
// always runs the reference, whatever the context says.
#pragma once

#include "nn/layer.h"
#include "ops/fixed_point_gemm.h"
#include "ops/gemm.h"

namespace rg {

enum class OperandRole : uint8_t { activations, weights, errors };
struct GemmRoles {
  OperandRole a, b;
  ChannelAxis weight_channels = ChannelAxis::columns;  // where B's output channels lie, B being weights
};
// The three products of a layer with weights: y = x W, dW = x^T dy (or dy^T x), dx = dy W^T.
// The weights' output channels are op(B)'s columns forward and its rows (the summed axis) in dx.
constexpr GemmRoles kForwardProduct{OperandRole::activations, OperandRole::weights, ChannelAxis::columns};
constexpr GemmRoles kWeightGradProduct{OperandRole::activations, OperandRole::errors};
constexpr GemmRoles kWeightGradProductErrorsFirst{OperandRole::errors, OperandRole::activations};
constexpr GemmRoles kInputGradProduct{OperandRole::errors, OperandRole::weights, ChannelAxis::rows};

inline const FixedPointFormat& role_format(const FixedPointRoles& formats, OperandRole role) {
  return role == OperandRole::activations ? formats.activations
                                          : role == OperandRole::weights ? formats.weights : formats.errors;
}

// `weight_channels`: the layer's output channels (a weight's channel is its flat index mod this,
// for per-channel weight formats); 0 in products without weights.
inline Int8GemmOptions fixed_point_options(const LayerContext& ctx, GemmRoles roles, int64_t weight_channels) {
  Int8GemmOptions o;
  o.a = role_format(ctx.formats, roles.a);
  o.b = role_format(ctx.formats, roles.b);
  o.seed = ctx.gemm_seed;
  o.stream = ctx.noise_stream;
  o.b_channels = weight_channels;
  o.b_channel_axis = roles.weight_channels;
  return o;
}

inline void layer_gemm(const LayerContext& ctx, GemmRoles roles, int64_t weight_channels, const GemmShape& s,
                       float alpha, const float* a, const float* b, float beta, float* c) {
  if (ctx.gemm == GemmPrecision::fixed_point) {
    fixed_point_gemm(s, alpha, a, b, beta, c, ctx.pool, fixed_point_options(ctx, roles, weight_channels));
  } else {
    f32_gemm(s, alpha, a, b, beta, c, ctx.pool);
  }
}
inline void layer_gemm(const LayerContext&, GemmRoles, int64_t, const GemmShape& s, double alpha, const double* a,
                       const double* b, double beta, double* c) {
  gemm_ref(s, alpha, a, b, beta, c);
}

inline void layer_gemm_gathered(const LayerContext& ctx, GemmRoles roles, int64_t weight_channels, int64_t m, int64_t n,
                                int64_t k, float alpha, const GatheredA<float>& a, const float* b, int64_t ldb,
                                float beta, float* c, int64_t ldc) {
  if (ctx.gemm == GemmPrecision::fixed_point) {
    fixed_point_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, ctx.pool,
                              fixed_point_options(ctx, roles, weight_channels));
  } else {
    f32_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, ctx.pool);
  }
}
inline void layer_gemm_gathered(const LayerContext&, GemmRoles, int64_t, int64_t m, int64_t n, int64_t k, double alpha,
                                const GatheredA<double>& a, const double* b, int64_t ldb, double beta, double* c,
                                int64_t ldc) {
  gemm_gathered_ref(m, n, k, alpha, a, b, ldb, beta, c, ldc);
}

// A weight gradient's gathered product, split over its depth into `partials` (gemm_depth_partials(m, n, k)
// of them: ops/gemm.h's f32_gemm_gathered_depth_split); the fixed-point product and the double
// reference do not split.
inline void layer_gemm_gathered_depth_split(const LayerContext& ctx, GemmRoles roles, int64_t m, int64_t n, int64_t k,
                                            float alpha, const GatheredA<float>& a, const float* b, int64_t ldb,
                                            float beta, float* c, int64_t ldc, float* partials) {
  if (ctx.gemm == GemmPrecision::fixed_point) {
    fixed_point_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, ctx.pool, fixed_point_options(ctx, roles, 0));
  } else {
    f32_gemm_gathered_depth_split(m, n, k, alpha, a, b, ldb, beta, c, ldc, partials, ctx.pool);
  }
}
inline void layer_gemm_gathered_depth_split(const LayerContext&, GemmRoles, int64_t m, int64_t n, int64_t k,
                                            double alpha, const GatheredA<double>& a, const double* b, int64_t ldb,
                                            double beta, double* c, int64_t ldc, double*) {
  gemm_gathered_ref(m, n, k, alpha, a, b, ldb, beta, c, ldc);
}

}  // namespace rg
