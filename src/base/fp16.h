// Scalar IEEE binary16 <-> binary32 conversion, bit-exact: round to nearest even,
// NaN kept quiet with its payload's top bits, Inf, subnormals both ways.
// The vectorised converters of later issues are tested against these.
#pragma once

#include <cstdint>

namespace rg {

float f16_to_f32(uint16_t half);
uint16_t f32_to_f16(float value);

}  // namespace rg
