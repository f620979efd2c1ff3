// The int8 add (ops/qs8_add.h): its constants and the scalar loop every engine matches.
#include "ops/qs8_add.h"

#include <algorithm>

namespace rg {

Result<Qs8AddParams> qs8_add_params(QuantParams a, QuantParams b, QuantParams out, Qs8Clamp clamp,
                                         const std::string& name) {
  const double twice_max = 2.0 * std::max(a.scale, b.scale);
  const double output = twice_max / (static_cast<double>(int64_t{1} << kQs8AddLeftShift) * out.scale);
  if (!(output < 1.0)) {
    return Status::error(name + ": the int8 add's output multiplier " + std::to_string(output) + " is not below 1");
  }
  Qs8AddParams p;
  p.zero_point[0] = a.zero_point;
  p.zero_point[1] = b.zero_point;
  p.input[0] = quantize_multiplier(a.scale / twice_max);  // <= 0.5
  p.input[1] = quantize_multiplier(b.scale / twice_max);
  p.output = quantize_multiplier(output);
  p.out_zero_point = out.zero_point;
  p.lo = clamp.lo;
  p.hi = clamp.hi;
  return p;
}

void qs8_add(int64_t n, const int8_t* a, const int8_t* b, const Qs8AddParams& p, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    const int32_t xa = (static_cast<int32_t>(a[i]) - p.zero_point[0]) * (1 << kQs8AddLeftShift);
    const int32_t xb = (static_cast<int32_t>(b[i]) - p.zero_point[1]) * (1 << kQs8AddLeftShift);
    const int32_t sum =
        rounding_divide_by_pot(saturating_rounding_doubling_high_mul(xa, p.input[0].multiplier), p.input[0].shift) +
        rounding_divide_by_pot(saturating_rounding_doubling_high_mul(xb, p.input[1].multiplier), p.input[1].shift);
    y[i] = static_cast<int8_t>(requantize(sum, p.output, p.out_zero_point, p.lo, p.hi));
  }
}

}  // namespace rg
