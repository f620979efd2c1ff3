// gemmlowp's fixed-point arithmetic (fixedpoint.h there), transcribed.
#include "ops/fixed_point.h"

#include <cmath>
#include <limits>

#include "base/check.h"

namespace rg {

int32_t saturating_rounding_doubling_high_mul(int32_t a, int32_t b) {
  const bool overflow = a == b && a == std::numeric_limits<int32_t>::min();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int64_t nudge = ab >= 0 ? (int64_t{1} << 30) : (1 - (int64_t{1} << 30));
  // C++ division truncates toward zero, as gemmlowp's does.
  const int32_t high = static_cast<int32_t>((ab + nudge) / (int64_t{1} << 31));
  return overflow ? std::numeric_limits<int32_t>::max() : high;
}

int32_t rounding_divide_by_pot(int32_t x, int exponent) {
  RG_CHECK(exponent >= 0 && exponent <= 31, "rounding_divide_by_pot: exponent " << exponent);
  const int32_t mask = static_cast<int32_t>((int64_t{1} << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

QuantMultiplier quantize_multiplier(double real) {
  RG_CHECK(real >= 0 && real < 1, "quantize_multiplier: " << real << " is outside [0, 1)");
  if (real < std::ldexp(1.0, -32)) return {};
  int exponent = 0;
  const double fraction = std::frexp(real, &exponent);  // real = fraction * 2^exponent, fraction in [0.5, 1)
  int64_t q = std::llround(fraction * static_cast<double>(int64_t{1} << 31));
  if (q == (int64_t{1} << 31)) {  // the fraction rounded up to 1.0
    if (exponent == 0) {
      q -= 1;  // real within 2^-32 of 1: the largest multiplier below 1
    } else {
      q /= 2;
      ++exponent;
    }
  }
  const int shift = -exponent;  // exponent <= 0 since real < 1
  if (shift > 31) return {};
  return {static_cast<int32_t>(q), shift};
}

int32_t requantize(int32_t acc, QuantMultiplier m, int32_t zero_point, int32_t lo, int32_t hi) {
  const int32_t scaled = rounding_divide_by_pot(saturating_rounding_doubling_high_mul(acc, m.multiplier), m.shift);
  const int64_t out = static_cast<int64_t>(zero_point) + scaled;
  return static_cast<int32_t>(out < lo ? lo : (out > hi ? hi : out));
}

}  // namespace rg
