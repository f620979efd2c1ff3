// Scalar IEEE binary16 <-> binary32 conversion, bit-exact: round to nearest even; a NaN
// comes out quiet (as F16C's instructions make it) with its payload's top bits; Inf,
// subnormals both ways. The vector converters (cpu/ukernels/f16_convert.h) match these bit
// for bit.
#pragma once

#include <cstdint>

namespace rg {

float f16_to_f32(uint16_t half);
uint16_t f32_to_f16(float value);

}  // namespace rg
