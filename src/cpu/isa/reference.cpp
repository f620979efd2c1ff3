// The reference level: plain scalar C++ (built with -fno-tree-vectorize so it stays scalar).
// It is what every vector kernel is tested against and what RETROGRAD_ISA=reference runs.
#include "cpu/ukernels/f32_gemm.h"

namespace rg {

void f32_gemm_6x8__reference(int64_t depth, const float* a_panel, const float* b_panel, float alpha, float* c,
                             int64_t ldc, int64_t rows, int64_t cols) {
  constexpr int MR = 6, NR = 8;
  float acc[MR][NR] = {};
  for (int64_t p = 0; p < depth; ++p)
    for (int r = 0; r < MR; ++r)
      for (int col = 0; col < NR; ++col) acc[r][col] += a_panel[p * MR + r] * b_panel[p * NR + col];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) c[r * ldc + col] += alpha * acc[r][col];
}

}  // namespace rg
