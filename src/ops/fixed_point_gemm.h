// A layer's products in fixed point (GemmPrecision::fixed_point): each operand in its own
// format (ops/fixed_point_format.h), on the int8 tiles where both have 2 to 8 bits
// (int8_dynamic_gemm; at sse2 and sse3 the int16 tile: Qs16GemmKernel::serves_int8), on the
// int16 tiles where both have up to 16 (int16_dynamic_gemm), in exact
// integer sums; else (an f32 operand, or per-channel weights whose channels are the summed axis:
// a layer's input gradient) fake quantized: the f32 GEMM on copies of the operands put onto
// their grids (the f32 one as it is). All forms round the same values to the same grid
// points (the same scales, keys and stream indices), so they differ only in how the products are
// summed.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/gemm.h"
#include "ops/int8_dynamic_gemm.h"

namespace rg {

enum class ProductRoute : uint8_t { int8_tiles, int16_tiles, fake_quantized };
// The integer tiles where both operands are quantized and a per-channel B's channels are its
// columns (up to 8 bits the int8 tiles, unless the level's int16 tile serves int8 better:
// Qs16GemmKernel::serves_int8); fake quantized otherwise.
ProductRoute product_route(const FixedPointFormat& a, const FixedPointFormat& b,
                           ChannelAxis b_axis = ChannelAxis::columns, Isa isa = active_isa());
const char* product_route_name(ProductRoute route);  // "int8 tiles", "int16 tiles", "fake quantized"

// C[m x n] = alpha * op(A) op(B) + beta * C (shapes and strides as f32_gemm's), routed as above.
// An operand holding a NaN or an Inf makes the whole C NaN, as int8_dynamic_gemm does.
void fixed_point_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                      ThreadPool* pool, const Int8GemmOptions& options);
void fixed_point_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                               const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                               const Int8GemmOptions& options);

// x[0, count) onto its grid in place: one dynamic scale over the whole tensor (a per-channel
// format with `channels`: one a channel, element t's channel t % channels), rounded by the
// format (stochastic: u = int8_rounding_uniform(key, index)). A tensor holding a NaN or an Inf
// is left as it is (the update then shows it). For a weight gradient before its update, and
// stored weights after it.
void fixed_point_round_in_place(float* x, int64_t count, const FixedPointFormat& format, uint64_t key,
                                ThreadPool* pool, int64_t channels = 0);

}  // namespace rg
