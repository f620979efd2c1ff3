// The int8 add of a graph model's residual sum (TensorFlow Lite's int8 Add): two int8 inputs,
// each of its own scale and zero point, summed into the output's. Each input, less its zero
// point and shifted left by kQs8AddLeftShift bits, is scaled by (its scale / twice the larger
// input scale) in gemmlowp fixed point (ops/fixed_point.h); the sum is requantized by (twice
// that scale / (2^20 x the output's scale)) and clamped (a relu or relu6 after the add fused as
// the clamp). Integer arithmetic throughout: qs8_add is the scalar reference, and
// kernels/qs8.cl's qs8_add gives its bits.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "ops/fixed_point.h"
#include "ops/quant_params.h"

namespace rg {

constexpr int kQs8AddLeftShift = 20;  // |q - zero_point| <= 255 < 2^8: 2^28 leaves int32 room for the sum

struct Qs8AddParams {
  int32_t zero_point[2] = {0, 0};  // the inputs'
  QuantMultiplier input[2];        // scale_k / (2 max(scale_0, scale_1))
  QuantMultiplier output;          // 2 max(scale_0, scale_1) / (2^20 scale_out)
  int32_t out_zero_point = 0, lo = -128, hi = 127;
};

// The add's constants for inputs a and b and the output `out`, clamped to `clamp` (a fused relu's
// or relu6's, qs8_clamp). The error (naming `name`) says why it cannot run in int8: its output multiplier
// reaches 1 (an output scale below 2^-19 of the inputs').
Result<Qs8AddParams> qs8_add_params(QuantParams a, QuantParams b, QuantParams out, Qs8Clamp clamp, const std::string& name);

// y[i] = the int8 sum of a[i] and b[i], n values.
void qs8_add(int64_t n, const int8_t* a, const int8_t* b, const Qs8AddParams& p, int8_t* y);

}  // namespace rg
