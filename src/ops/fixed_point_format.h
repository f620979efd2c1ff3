// A fixed-point number format as data (issue 34): how many bits a tensor's values keep, how
// its scale is chosen, and how values round onto the grid. Int8 training's products
// (ops/int8_dynamic_gemm.h) read one format per operand; ops/fixed_point_precision.h maps
// the command line's names (w4a8, w16a16g16-sr, int8-train) onto a format per tensor role.
//
//   grid     q in [-qmax, qmax], qmax = 2^(bits-1) - 1 (symmetric: -2^(bits-1) is never used,
//            so negation stays on the grid), value = q * step
//   step     real:          max|X| / qmax (the whole range used; multiplier qmax / max|X| in float)
//            power_of_two:  the least 2^e >= max|X| / qmax (dynamic fixed point: a shift)
//            fixed:         2^-fraction_bits whatever the values (static fixed point <IL, FL>, as
//                           Gupta et al. 2015 train in; values past qmax * step saturate)
//   rounding nearest (half to even) or stochastic (floor(t) + (u < frac(t)), u from the run's
//            seed: unbiased, E[q] = t)
//   per_channel  one scale per output channel instead of one per tensor (weights and weight
//            gradients, -pc): the channel of a weight is its flat index mod the layer's output
//            channels (the fastest axis of every weight layout here); a bias keeps one scale
//   affine   a zero point (-zp: the activations; -zp<roles>: any): value = (q - zero) * step,
//            the grid spread over [lo, hi] = [min(0, min X), max(0, max X)] instead of
//            [-max|X|, max|X|] (a ReLU's output gains a bit); the step is the symmetric rule's
//            for the half range R = (hi - lo) / 2, and zero = clamp(-qmax - round(lo / step)), so
//            0 is a grid point (q = zero); a fixed step too short for [lo, hi] centres the grid
//            on it (zero = clamp(-round((lo + hi) / 2 / step)))
// Products whose operands both have 2 to 8 bits run on the int8 tiles (at the sse2 and sse3
// levels on the int16 tile, faster there), up to 16 bits on the int16 tiles, exactly
// (ops/fixed_point_gemm.h); a product with an f32 operand, or per-channel weights along its
// summed axis, runs fake quantized (the f32 GEMM of the grid values; the report says so).
#pragma once

#include <cstdint>
#include <string>

namespace rg {

enum class Rounding : uint8_t { nearest, stochastic };
enum class ScaleRule : uint8_t { real, power_of_two, fixed };

constexpr int kMinFixedPointBits = 2, kMaxFixedPointBits = 16;
constexpr int kMaxInt8TileBits = 8;  // wider formats run on the int16 tiles
constexpr int kMaxFractionBits = 24;

struct FixedPointFormat {
  int bits = 0;  // 2..16; 0: not quantized (f32)
  ScaleRule scale = ScaleRule::real;
  Rounding rounding = Rounding::nearest;
  int fraction_bits = 0;  // ScaleRule::fixed's: step 2^-fraction_bits (0 to kMaxFractionBits)
  bool per_channel = false;
  bool affine = false;

  bool quantized() const { return bits != 0; }
  int32_t qmax() const { return (int32_t{1} << (bits - 1)) - 1; }
  bool operator==(const FixedPointFormat& o) const {
    if (bits != o.bits) return false;
    return bits == 0 || (scale == o.scale && rounding == o.rounding && per_channel == o.per_channel &&
                         affine == o.affine && (scale != ScaleRule::fixed || fraction_bits == o.fraction_bits));
  }
  bool operator!=(const FixedPointFormat& o) const { return !(*this == o); }
};

// The formats of a layer's tensors in fixed-point training, by role: the weights and the
// activations (a product's inputs forward), the errors (dL/dy, the backward products' input),
// the weight gradients (rounded before the update). Int8 training: 8, 8, 8 stochastic, f32.
// stored_weights: every parameter itself rounded onto the weights' grid after each update (no
// f32 master copy: an update under half a step is lost to rounding to nearest, kept in
// expectation by stochastic rounding; Gupta et al.'s setting).
struct FixedPointRoles {
  FixedPointFormat weights, activations, errors, gradients;
  bool stored_weights = false;
  bool operator==(const FixedPointRoles& o) const {
    return weights == o.weights && activations == o.activations && errors == o.errors && gradients == o.gradients &&
           stored_weights == o.stored_weights;
  }
};

// Int8 training's operands: 8 bits, real scale, nearest (stochastic for the errors).
inline FixedPointFormat int8_format(Rounding rounding = Rounding::nearest) {
  return FixedPointFormat{8, ScaleRule::real, rounding};
}
// Int8 training's roles (int8-train, w8a8e8): weights and activations 8 bits to nearest, the
// errors 8 bits stochastic, the weight gradients f32.
inline FixedPointRoles int8_training_roles() {
  FixedPointRoles roles;
  roles.weights = roles.activations = int8_format(Rounding::nearest);
  roles.errors = int8_format(Rounding::stochastic);
  return roles;
}

// "f32", or e.g. "8 bits, real scale, nearest", "16 bits, power-of-two scale, stochastic".
std::string describe(const FixedPointFormat& format);

// The step's reciprocal for a tensor whose largest magnitude is max_abs, in float: 0 when
// max_abs < 2^-100 (zeros, or a step so small that qmax / max_abs would overflow) or NaN.
// real: qmax / max_abs (for 8 bits the int8 training's 127 / max_abs, bit for bit);
// power_of_two: 2^-e for the least e with 2^e * qmax >= max_abs; fixed: 2^fraction_bits always.
float fixed_point_multiplier(const FixedPointFormat& format, float max_abs);
// The step, in double, that the multiplier stands for: max_abs / qmax, 2^e, or 2^-fraction_bits.
double fixed_point_step(const FixedPointFormat& format, float max_abs);

// The grid of a tensor (or of one channel) whose finite values lie in [min, max]:
// value = (q - zero) * step, q in [-qmax, qmax]. Symmetric formats: the rules above for
// max_abs = max(|min|, |max|), zero 0; affine ones: for the half range R, zero as above.
struct FixedPointGrid {
  float multiplier = 0;  // 1 / step in float (0: every value quantizes to zero)
  double step = 0;
  int32_t zero = 0;
  float half_range = 0;  // max_abs, or R: what the stochastic keys and the traces take
};
FixedPointGrid fixed_point_grid(const FixedPointFormat& format, float min, float max);

// One value onto the grid: t = clamp(x * multiplier, -qmax - zero, qmax - zero), rounded, plus
// zero (in [-qmax, qmax]). NaN gives zero.
int32_t fixed_point_quantize_nearest(float x, float multiplier, int32_t qmax, int32_t zero = 0);
int32_t fixed_point_quantize_stochastic(float x, float multiplier, int32_t qmax, float u, int32_t zero = 0);

}  // namespace rg
