// The int8 matrix product of quantized layers: C_s8[m x n] = requantize(A_s8[m x k] * B_s8[k x n]
// + bias), on the kernel table's qs8 tiles (cpu/ukernels/qs8_gemm.h has the arithmetic).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "tensor/tensor.h"

namespace rg {

// k rounded up to whole groups of 4: the row length A must provide (bytes past k are read and
// multiplied by B's zero padding, so their values do not matter, but they must be readable).
inline int64_t qs8_padded_depth(int64_t k) { return (k + 3) / 4 * 4; }

// B [k x n] int8 in [-127, 127], packed in panels of `nr` columns for one ISA's tile. bits 8: one
// value a byte; bits 4 (weights of 2 to 4 bits, in [-8, 7]): two a byte, the 8-bit layout's value
// i in byte i / 2 (the low nibble for even i), widened to int8 a panel at a time as the product
// runs (widen_s4): the payload is half the 8-bit one, exactly (a panel's values are a multiple of 4).
struct Qs8PackedWeights {
  int64_t k = 0, n = 0, nr = 0;
  int bits = 8;
  Tensor data;  // i8 [panels * panel_values() * bits / 8]
  int64_t kgroups() const { return qs8_padded_depth(k) / 4; }
  int64_t panel_values() const { return kgroups() * nr * 4; }
};
Result<Qs8PackedWeights> pack_qs8_weights(int64_t k, int64_t n, const int8_t* b, int64_t nr, const std::string& what,
                                          int bits = 8);

// n 4-bit values, two a byte as Qs8PackedWeights holds them, -> n int8 values (n even); the
// reference in plain shifts beside it (the tests compare the two).
void widen_s4(int64_t n, const uint8_t* packed, int8_t* out);
void widen_s4_ref(int64_t n, const uint8_t* packed, int8_t* out);

// Per output column: int32 bias (zero points folded in), fixed-point multiplier and shift;
// one output zero point and clamp range (a fused ReLU raises lo to the zero point).
struct Qs8OutputStage {
  // n each, then zeros up to a multiple of 32 (pad_columns, the widest tile's columns): every
  // tile's requantization then runs on whole vectors, and only its live columns are stored.
  std::vector<int32_t> bias, multiplier, shift;
  int32_t zero_point = 0, lo = -128, hi = 127;
};

// Appends the zero columns Qs8OutputStage needs after its n live ones.
void pad_columns(Qs8OutputStage* out);

// The kernel (qs8_gemm_kernel or its narrow one) whose tile weights packed for `nr` need.
struct Qs8GemmKernel;
const Qs8GemmKernel& qs8_kernel_for_packing(Isa isa, int64_t nr);

// A rows have stride lda >= qs8_padded_depth(k); C rows stride ldc >= n. `isa` picks the tile
// (weights must have been packed for its nr, or its narrow kernel's). Results do not depend on the
// pool, nor on b.bits (4-bit weights give the bits of the same values packed in 8).
void qs8_gemm(Isa isa, int64_t m, const int8_t* a, int64_t lda, const Qs8PackedWeights& b,
              const Qs8OutputStage& out, int8_t* c, int64_t ldc, ThreadPool* pool);

// The same product in plain loops over the unpacked B: the reference the tests compare with.
void qs8_gemm_ref(int64_t m, int64_t n, int64_t k, const int8_t* a, int64_t lda, const int8_t* b,
                  const Qs8OutputStage& out, int8_t* c, int64_t ldc);

}  // namespace rg
