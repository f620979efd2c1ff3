// gemmlowp's fixed-point primitives, scalar and literal (docs/quantization.md): the reference
// every vector requantization kernel is tested against bit for bit.
#pragma once

#include <cstdint>

namespace rg {

// round(a * b / 2^31), ties toward +infinity (-0.5 -> 0); INT32_MAX for the one overflowing case (both INT32_MIN).
int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b);
// round(x / 2^exponent), ties away from zero; exponent in [0, 31].
int32_t rounding_divide_by_pot(int32_t x, int exponent);

// A real multiplier M in [0, 1) as M ~= multiplier * 2^(-31 - shift), multiplier in [2^30, 2^31),
// shift in [0, 31]. Below 2^-32 it is {0, 0}: the product rounds to zero anyway.
struct QuantMultiplier {
  int32_t multiplier = 0;
  int32_t shift = 0;
};
// `real` must lie in [0, 1); callers check that first (a layer whose M reaches 1 stays f32).
QuantMultiplier quantize_multiplier(double real);

// One output: clamp(zero_point + rdbpot(srdhm(acc, multiplier), shift), lo, hi).
int32_t requantize(int32_t acc, QuantMultiplier m, int32_t zero_point, int32_t lo, int32_t hi);

}  // namespace rg
