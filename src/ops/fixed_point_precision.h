// Fixed-point training precisions by name (issue 34): the shorthand grammar, its defaults, and
// the canonical name a run records (checkpoints, reports, JSON).
//
//   name     := "int8-train" | roles suffix*
//   roles    := [w BITS] [a BITS] [g BITS] [e BITS]    (in this order; at least one; BITS 2..16)
//               w weights, a activations, g weight gradients, e errors (dL/dy). g without e
//               sets the errors too (w16a16g16: every tensor in 16 bits); a role not named
//               stays f32 (a product with an f32 operand runs fake quantized).
//   suffix   := -sr   every named role rounded stochastically
//             | -rn   every named role rounded to nearest
//             | -p2   power-of-two scales (dynamic fixed point) instead of max|X| / qmax
//             | -flN  a static step 2^-N for every role (fixed point <IL, FL>, N 0..24; values
//                     past the range saturate)
//             | -pc   the weights and weight gradients with a scale per output channel (a
//                     dense layer's unit, a conv's filter; not with -fl); a bias keeps one. Forward runs on
//                     the integer tiles (each column's step factors out); dx sums along the
//                     channels, so it runs fake quantized (f32 sums of the same grid values)
//             | -zp   the activations with a zero point (affine: the grid spread over
//                     [min(0, min), max(0, max)]; a ReLU's output gains a bit), exact on the
//                     integer tiles (the zero point's terms from row and column sums);
//                     -zp<roles> names the roles (-zpae: activations and errors; not w or g
//                     beside -pc)
//             | -sw   the weights stored in their format: every parameter rounded onto the
//                     weights' grid after each update, no f32 master (Gupta et al.'s setting:
//                     w16a16g16-fl14-sw with -rn against -sr)
//   default  weights and activations to nearest, gradients and errors stochastically (unbiased
//            updates, as int8 training does; Gupta et al. 2015), real per-tensor scales.
//
// int8-train is w8a8e8: weights, activations and errors in 8 bits, the weight gradients f32.
//
// The int8 engine's forms (inference on quant/int8_model.h, weights per output channel):
//   export   := "int8" | "int8-qat" | w BITS a BITS ("-ptq" | "-qat")     (BITS 2..8)
//               -ptq post-training quantization of the fp32 model, -qat quantization-aware
//               training through fake B-bit weights and values; w8a8-ptq is int8, w8a8-qat
//               int8-qat; weights of 4 bits or fewer held two a byte; activations of fewer than
//               8 bits on a grid of 2^bits levels inside int8 (the model's output keeps 8).
#pragma once

#include <string>

#include "base/status.h"
#include "ops/fixed_point_format.h"

namespace rg {

struct FixedPointPrecision {
  std::string name;  // canonical: "int8-train", "w16a16g16-sr", "w4a8e8"
  FixedPointRoles roles;
};

// Int8 training's precision (int8-train).
FixedPointPrecision int8_training_precision();

// Whether a name is meant as a fixed-point shorthand (it starts with a role letter or is
// int8-train): its errors are the parser's, others are "unknown precision".
bool names_fixed_point(const std::string& text);
// The precision a name gives; an error names the rule the text breaks.
Result<FixedPointPrecision> parse_fixed_point_precision(const std::string& text);

// A name of the int8 engine's forms (above): its canonical name, the weights' bits, QAT or PTQ.
struct Int8ExportPrecision {
  std::string name;  // "int8", "int8-qat", "w4a8-qat", "w6a8-ptq", "w4a4-qat"
  int weight_bits = 8;
  bool qat = false;
  int activation_bits = 8;
};
// The canonical name of the form of those bits: "int8", "int8-qat", "w4a8-qat", "w4a4-ptq".
std::string int8_export_name(int weight_bits, int activation_bits, bool qat);
// Whether a name is meant as one (int8, int8-qat, or a shorthand ending in -qat or -ptq).
bool names_int8_export(const std::string& text);
Result<Int8ExportPrecision> parse_int8_export_precision(const std::string& text);

// The canonical name of `roles` (int8-train for its formats; parse(name) gives them back).
std::string fixed_point_precision_name(const FixedPointRoles& roles);

// One line for a report: "w4 a8 g f32 e8 (wa nearest, e stochastic); real scales per tensor;
// int8 kernels" (or that the products run fake quantized).
std::string describe_fixed_point(const FixedPointRoles& roles);

}  // namespace rg
