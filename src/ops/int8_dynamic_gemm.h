// Int8 training's matrix products: a drop-in for the f32 GEMMs of Dense and Conv layers that
// quantizes op(A) and op(B) on the fly (dynamic scales per tensor, or per column of a per-channel
// B; symmetric, or with a zero point) to each operand's fixed-point format of 2 to 8 bits
// (ops/fixed_point_format.h), multiplies them on the kernel
// table's qs8 tiles in exact integers and dequantizes into f32 C. Int8 training's own products
// are 8 bits both, real scales, a gradient operand rounded stochastically and the other to
// nearest. docs/quantization.md ("Int8 training") has the arithmetic; the plain-loop
// references here define it bit for bit.
//
//   scale    max|X| over the whole operand (op(A), op(B); a gathered A: the image under it),
//            computed over the finite values in float bits; the multiplier and step from it by
//            the operand's scale rule (8 bits, real: 127 / max|X| in float, max|X| / 127).
//            An affine format (a zero point) takes min X and max X too, a per-channel B each
//            channel's max|X| (fixed_point_grid: multiplier, step, zero).
//   values   t = clamp(x * multiplier, -qmax - zero, qmax - zero) in float
//            nearest:    q = round_half_even(t) + zero
//            stochastic: q = floor(t) + (u < t - floor(t)) + zero, u = int8_rounding_uniform(key,
//            index) in [0, 1) with 24 bits: E[q] = t + zero within 2^-24; q stays in
//            [-qmax, qmax]. Each stochastic operand has its own key (int8_rounding_key, its
//            operand number).
//   sums     acc = sum_p (qa[i][p] - zero_a) (qb[p][j] - zero_b): the tiles sum qa qb, int32 per
//            slice of at most kInt8GemmDepthSlice depth (cannot overflow), added in int64, and
//            the zero points' terms (zero_a * column sums of qb, zero_b * row sums of qa,
//            k zero_a zero_b) in int64: exact for any k.
//   output   C = float(double(alpha) * step_a * step_b[j] * acc) + beta * C,
//            in double then rounded once (beta 0 ignores what C held, as f32_gemm).
//   special  an operand whose max|X| (affine: half range R) < 2^-100 (all zeros included)
//            quantizes to its zero point, so the product term is 0; an operand holding a NaN or an Inf makes the whole C NaN (the f32
//            product would be non-finite where it touches them; a NaN everywhere is what a
//            trainer notices), never a crash or a clipped value.
// Results are the same on every ISA level and thread count (integer sums; fixed partition).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "ops/fixed_point_format.h"
#include "ops/gemm.h"

namespace rg {

// How a layer's float GEMMs run (LayerContext::gemm).
enum class GemmPrecision : uint8_t {
  f32,          // f32_gemm / f32_gemm_gathered
  fixed_point,  // each operand in its fixed-point format (LayerContext::formats; ops/fixed_point_gemm.h)
};
const char* gemm_precision_name(GemmPrecision precision);  // "f32", "fixed_point"

// Depth per int32 slice: 127 * 127 * 131072 = 2,114,060,288 < 2^31 - 1, whatever the values.
constexpr int64_t kInt8GemmDepthSlice = 131072;

// What the tests read back: the scales and (when `want_sums`) every integer sum.
struct Int8GemmTrace {
  bool want_sums = false;
  float max_abs_a = 0, max_abs_b = 0;  // max|op(A)|, max|op(B)| over finite values (affine: R)
  bool nonfinite = false;              // an operand held a NaN or an Inf
  uint64_t key_a = 0, key_b = 0;       // each operand's stochastic stream's key (0: rounded to nearest)
  std::vector<int64_t> sums;           // [m x n] row-major, when want_sums
  int64_t depth_slices = 1;            // the slices its depth was cut in (1: not cut; the reference: 1)
};

// Where a per-channel B's channels lie in op(B) [k x n].
enum class ChannelAxis : uint8_t { columns, rows };

struct Int8GemmOptions {
  // Each operand's format: 2 to 8 bits for int8_dynamic_gemm, up to 16 for int16_dynamic_gemm,
  // its scale rule (per tensor; per column for a per-channel B), zero point and rounding.
  FixedPointFormat a = int8_format(), b = int8_format();
  // The stochastic streams: an operand's key mixes seed, stream, the product's m, n, k, the
  // operand's number (1: A, 2: B), its max|X| and middle element (so two products of one step
  // draw different u). The same inputs give the same key, run to run.
  uint64_t seed = 0;
  uint64_t stream = 0;
  // A per-channel B (b.per_channel: a layer's weights): op(B)[p][j] is of channel
  // (b_channel_axis == columns ? j : p) % b_channels. The integer products take columns (each
  // column's step factors out of its sums); on rows (a step that varies along the summed
  // axis) only the fake-quantized product can run (ops/fixed_point_gemm.h routes it there).
  int64_t b_channels = 0;
  ChannelAxis b_channel_axis = ChannelAxis::columns;
  Isa isa = active_isa();           // whose qs8 or qs16 tile runs, and the route (the references ignore it)
  Int8GemmTrace* trace = nullptr;   // tests
  // Depth of the cache blocks the tiles run over (a multiple of 4, at most
  // kInt8GemmDepthSlice); tests shrink it to exercise the slicing on small products.
  int64_t depth_block = 1024;
};

// C[m x n] = alpha * op(A) op(B) + beta * C, shapes and strides as f32_gemm's (ops/gemm.h).
void int8_dynamic_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                       ThreadPool* pool, const Int8GemmOptions& options);
// The gathered form (a convolution's patch matrix): the image range the offsets reach,
// [min row + min depth offset, max row + max depth offset], is quantized as one tensor (u drawn
// at the offset from that range's start) and A's bytes are gathered from it.
void int8_dynamic_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                                const Int8GemmOptions& options);

// The same on the int16 tiles (ukernels/qs16_gemm.h) for formats of up to 16 bits: depth blocks
// short enough that no int32 tile sum overflows (pairs * 2 * qmax_a * qmax_b <= 2^31 - 1), and
// where that leaves blocks under 128 pairs (qmax_a * qmax_b > 2^23: 16 x 10 bits, 14 x 12, 13 x 13
// and wider) B split into its high byte (q >> 8, signed) and low byte (q & 255) and multiplied
// twice: acc = 256 A B_hi + A B_lo, exact. Same results as the reference, bit for bit.
void int16_dynamic_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                        ThreadPool* pool, const Int8GemmOptions& options);
void int16_dynamic_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                                 const Int8GemmOptions& options);

// The same in plain loops: quantize into vectors, multiply in int64, dequantize. Any format of
// 2 to 16 bits: the reference of both the int8 and the int16 products.
void int8_dynamic_gemm_ref(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                           const Int8GemmOptions& options);
void int8_dynamic_gemm_gathered_ref(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                                    const Int8GemmOptions& options);

// The pieces, for tests and the references.
// u in [0, 1) with 24 random bits, a pure function of (key, index) (a counter-based stream).
float int8_rounding_uniform(uint64_t key, uint64_t index);

// A product with no terms to multiply (m, n or k 0, or alpha 0): C = beta * C (as f32_gemm does)
// and the trace zeroed, returning true; false: there is work (the drivers' and the reference's
// first step).
bool int8_gemm_without_products(int64_t m, int64_t n, int64_t k, float alpha, float beta, float* c, int64_t ldc,
                                const Int8GemmOptions& o);
// The key of an operand's stochastic stream (see Int8GemmOptions): operand 1 is A, 2 is B.
uint64_t int8_rounding_key(const Int8GemmOptions& options, int operand, int64_t m, int64_t n, int64_t k,
                           float max_abs, float middle);
// 8 bits, real scale (fixed_point_format.h's functions at qmax 127): 127 / max_abs in float, or 0
// when max_abs < 2^-100 (the operand quantizes to zeros); the roundings onto [-127, 127].
float int8_quant_multiplier(float max_abs);
int8_t int8_quantize_nearest(float x, float multiplier);
int8_t int8_quantize_stochastic(float x, float multiplier, float u);

// The integer products keep one growing scratch block per calling thread (packed B, the
// gathered image, per-part accumulators), through the counted allocator; this frees the caller's.
void release_int8_gemm_scratch();
int64_t int8_gemm_scratch_bytes();  // the caller's, now

}  // namespace rg
