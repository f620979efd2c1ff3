// Scalar IEEE binary16 <-> binary32 conversion, bit-exact: round to nearest even; a NaN
// comes out quiet (as F16C's instructions make it) with its payload's top bits; Inf,
// subnormals both ways. The vector converters (cpu/ukernels/f16_convert.h) match these bit
// for bit.
#pragma once

#include <cstdint>

namespace rg {

float f16_to_f32(uint16_t half);
uint16_t f32_to_f16(float value);

// bfloat16 (binary32's top 16 bits: its exponent range, 8 bits of precision) <-> binary32:
// widening exact (but on i386, where a float returned by value passes through x87, a signalling
// NaN comes back quiet); narrowing rounds to nearest even (a finite value past bf16's largest
// goes to Inf); a NaN comes out quiet (bit 6 set) with its sign and payload's top bits.
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_bf16(float value);

}  // namespace rg
