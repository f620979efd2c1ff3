// Four floats in one register through GCC's (and clang's) vector extension: SSE2's registers on
// the baseline x86 build, scalar code elsewhere (the 32-bit builds without SSE). Each lane's
// arithmetic is IEEE's, so the bits are those of the scalar code it stands for. For baseline code
// (ops/) that wants a few vector moves without the kernel table's per-level builds.
#pragma once

#include <cstdint>
#include <cstring>

namespace rg {

typedef float Float4 __attribute__((vector_size(16)));

inline Float4 load_float4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store_float4(float* p, Float4 v) { std::memcpy(p, &v, sizeof v); }

// to[j * to_step + i] = from[i * from_step + j] for i, j < 4: a 4x4 block transposed.
inline void transpose_float4(const float* from, int64_t from_step, float* to, int64_t to_step) {
  const Float4 a0 = load_float4(from), a1 = load_float4(from + from_step);
  const Float4 a2 = load_float4(from + 2 * from_step), a3 = load_float4(from + 3 * from_step);
  const Float4 lo01 = __builtin_shufflevector(a0, a1, 0, 4, 1, 5), lo23 = __builtin_shufflevector(a2, a3, 0, 4, 1, 5);
  const Float4 hi01 = __builtin_shufflevector(a0, a1, 2, 6, 3, 7), hi23 = __builtin_shufflevector(a2, a3, 2, 6, 3, 7);
  store_float4(to, __builtin_shufflevector(lo01, lo23, 0, 1, 4, 5));
  store_float4(to + to_step, __builtin_shufflevector(lo01, lo23, 2, 3, 6, 7));
  store_float4(to + 2 * to_step, __builtin_shufflevector(hi01, hi23, 0, 1, 4, 5));
  store_float4(to + 3 * to_step, __builtin_shufflevector(hi01, hi23, 2, 3, 6, 7));
}

}  // namespace rg
