// Fixed-point formats (fixed_point_format.h): the scale rules and the scalar roundings every
// vectorized quantizer is tested against.
#include "ops/fixed_point_format.h"

#include <algorithm>
#include <cmath>

namespace rg {

std::string describe(const FixedPointFormat& format) {
  if (!format.quantized()) return "f32";
  const std::string scale = format.scale == ScaleRule::real           ? "real scale, "
                            : format.scale == ScaleRule::power_of_two ? "power-of-two scale, "
                                                                      : std::to_string(format.fraction_bits) + " fraction bits, ";
  return std::to_string(format.bits) + " bits, " + scale +
         (format.rounding == Rounding::nearest ? "nearest" : "stochastic") +
         (format.per_channel ? ", per channel" : "") + (format.affine ? ", zero point" : "");
}

namespace {
// The least e with 2^e * qmax >= max_abs (max_abs > 0), held to [-126, 126] so that 2^-e is a
// normal float (a larger max_abs then saturates at qmax: no finite float reaches that).
int power_of_two_exponent(float max_abs, int32_t qmax) {
  int exponent = 0;
  const double mantissa = std::frexp(static_cast<double>(max_abs) / qmax, &exponent);  // [0.5, 1) * 2^exponent
  if (mantissa == 0.5) --exponent;  // an exact power of two
  return std::min(126, std::max(-126, exponent));
}
}  // namespace

float fixed_point_multiplier(const FixedPointFormat& format, float max_abs) {
  if (format.scale == ScaleRule::fixed) return std::ldexp(1.0f, format.fraction_bits);
  if (!(max_abs >= 0x1p-100f)) return 0.0f;  // zero, tiny, or NaN
  if (format.scale == ScaleRule::real) return static_cast<float>(format.qmax()) / max_abs;
  return std::ldexp(1.0f, -power_of_two_exponent(max_abs, format.qmax()));
}

double fixed_point_step(const FixedPointFormat& format, float max_abs) {
  if (format.scale == ScaleRule::fixed) return std::ldexp(1.0, -format.fraction_bits);
  if (format.scale == ScaleRule::real) return static_cast<double>(max_abs) / format.qmax();
  if (!(max_abs >= 0x1p-100f)) return 0.0;
  return std::ldexp(1.0, power_of_two_exponent(max_abs, format.qmax()));
}

namespace {
// The zero point of an affine grid over [lo, hi] (lo <= 0 <= hi) in steps of 1 / mult: the grid
// starts at lo (q = -qmax there); a static (fixed) step whose 2 qmax steps cannot span the range
// centres the grid on it instead, saturating both ends alike.
int32_t zero_point(const FixedPointFormat& format, float lo, float hi, float mult) {
  const int32_t qmax = format.qmax();
  const float below = lo * mult, above = hi * mult;  // in [-2 qmax, 0] and [0, 2 qmax] unless fixed
  const bool centred = format.scale == ScaleRule::fixed && above - below > static_cast<float>(2 * qmax);
  const float mid = 0.5f * below + 0.5f * above;  // NaN or infinite only past float's range: centred on 0
  const float zero = !centred ? -static_cast<float>(qmax) - std::nearbyint(below) : std::isfinite(mid) ? -std::nearbyint(mid) : 0.0f;
  return static_cast<int32_t>(std::min(static_cast<float>(qmax), std::max(static_cast<float>(-qmax), zero)));
}
}  // namespace

FixedPointGrid fixed_point_grid(const FixedPointFormat& format, float min, float max) {
  FixedPointGrid grid;
  if (!format.affine) {
    grid.half_range = std::max(std::fabs(min), std::fabs(max));
  } else {
    const float lo = std::min(0.0f, min), hi = std::max(0.0f, max);
    grid.half_range = 0.5f * hi - 0.5f * lo;  // halves first: no overflow for any finite pair
  }
  grid.multiplier = fixed_point_multiplier(format, grid.half_range);
  grid.step = fixed_point_step(format, grid.half_range);
  if (format.affine) grid.zero = zero_point(format, std::min(0.0f, min), std::max(0.0f, max), grid.multiplier);
  return grid;
}

int32_t fixed_point_quantize_nearest(float x, float multiplier, int32_t qmax, int32_t zero) {
  float v = x * multiplier;
  if (v != v) return zero;
  v = std::min(static_cast<float>(qmax - zero), std::max(static_cast<float>(-qmax - zero), v));
  return static_cast<int32_t>(std::nearbyint(v)) + zero;
}

int32_t fixed_point_quantize_stochastic(float x, float multiplier, int32_t qmax, float u, int32_t zero) {
  float v = x * multiplier;
  if (v != v) return zero;
  v = std::min(static_cast<float>(qmax - zero), std::max(static_cast<float>(-qmax - zero), v));
  const float floor_v = std::floor(v);
  return static_cast<int32_t>(floor_v) + (u < v - floor_v ? 1 : 0) + zero;
}

}  // namespace rg
