// fp16 and bf16 <-> f32 array conversion kernels: bit-exact against the scalar converters of
// base/fp16.h (round to nearest even; NaN comes out quiet with its payload's top bits; Inf,
// subnormals both ways). Contract: raw pointers, element counts, no allocation, nothing
// outside [0, n) touched; a tail shorter than a vector runs the vector code on a padded copy.
// Declarations only (isa/*.cpp include this with their ISA flags).
#pragma once

#include <cstdint>

namespace rg {

using F16ToF32 = void (*)(int64_t n, const uint16_t* half, float* out);
using F32ToF16 = void (*)(int64_t n, const float* value, uint16_t* out);

#define RG_DECLARE_F16_CONVERT_KERNELS(isa)                      \
  void f16_to_f32__##isa(int64_t, const uint16_t*, float*);      \
  void f32_to_f16__##isa(int64_t, const float*, uint16_t*);

RG_DECLARE_F16_CONVERT_KERNELS(reference)  // the scalar converters in a loop
RG_DECLARE_F16_CONVERT_KERNELS(sse2)       // integer bit manipulation on 4 lanes
RG_DECLARE_F16_CONVERT_KERNELS(f16c)       // vcvtph2ps / vcvtps2ph on 8 lanes (needs AVX and F16C)

// bf16 <-> f32, bit-exact against base/fp16.h's bf16_to_f32 and f32_to_bf16 (the same types:
// a bf16 value's 16 bits in a uint16_t).
#define RG_DECLARE_BF16_CONVERT_KERNELS(isa)                     \
  void bf16_to_f32__##isa(int64_t, const uint16_t*, float*);     \
  void f32_to_bf16__##isa(int64_t, const float*, uint16_t*);

RG_DECLARE_BF16_CONVERT_KERNELS(reference)  // the scalar converters in a loop
RG_DECLARE_BF16_CONVERT_KERNELS(sse2)       // shifts, adds and packs on 8 (bf16_convert_sse2.h; every later level runs these)

}  // namespace rg
