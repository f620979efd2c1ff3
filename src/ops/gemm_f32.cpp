// f32 GEMM in portable C++: A and B packed into MR- and NR-wide panels, an MR x NR tile
// of C accumulated in locals that the compiler keeps in vector registers (SSE2 baseline:
// 6x8 = 12 xmm accumulators). Cache blocks: KC deep, MC rows, NC columns.
// Every element of C is summed in the same order whatever the split across threads.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/gemm.h"

namespace rg {

namespace {

constexpr int64_t kMR = 6;
constexpr int64_t kNR = 8;
constexpr int64_t kKC = 256;
constexpr int64_t kMC = 72;   // multiple of MR
constexpr int64_t kNC = 512;  // multiple of NR

// op(A)[i0 : i0+rows, p0 : p0+depth] -> panels of MR rows, panel[p * MR + r]; rows past `rows` are 0.
void pack_a(const GemmShape& s, const float* a, int64_t i0, int64_t rows, int64_t p0, int64_t depth, float* out) {
  for (int64_t ir = 0; ir < rows; ir += kMR) {
    for (int64_t p = 0; p < depth; ++p) {
      for (int64_t r = 0; r < kMR; ++r) {
        const int64_t i = i0 + ir + r, pk = p0 + p;
        float v = 0.0f;
        if (ir + r < rows) v = s.trans_a == Trans::yes ? a[pk * s.lda + i] : a[i * s.lda + pk];
        *out++ = v;
      }
    }
  }
}

// op(B)[p0 : p0+depth, j0 : j0+cols] -> panels of NR columns, panel[p * NR + c]; columns past `cols` are 0.
void pack_b(const GemmShape& s, const float* b, int64_t p0, int64_t depth, int64_t j0, int64_t cols, float* out) {
  for (int64_t jr = 0; jr < cols; jr += kNR) {
    for (int64_t p = 0; p < depth; ++p) {
      const int64_t pk = p0 + p;
      for (int64_t c = 0; c < kNR; ++c) {
        const int64_t j = j0 + jr + c;
        float v = 0.0f;
        if (jr + c < cols) v = s.trans_b == Trans::yes ? b[j * s.ldb + pk] : b[pk * s.ldb + j];
        *out++ = v;
      }
    }
  }
}

// Four floats in one SSE2 register (GCC/Clang vector extension: baseline code, no intrinsics).
typedef float Float4 __attribute__((vector_size(16)));

Float4 load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// C[rows x cols tile] += alpha * Apanel[depth x MR]^T * Bpanel[depth x NR]: 6 x 2 accumulators.
void micro_tile(int64_t depth, const float* ap, const float* bp, float alpha, float* c, int64_t ldc, int64_t rows,
                int64_t cols) {
  static_assert(kNR == 8 && kMR == 6, "the tile below is written for 6 x 8");
  Float4 acc[kMR][2] = {};
  for (int64_t p = 0; p < depth; ++p) {
    const Float4 b0 = load4(bp + p * kNR), b1 = load4(bp + p * kNR + 4);
    for (int64_t r = 0; r < kMR; ++r) {
      const float a = ap[p * kMR + r];
      acc[r][0] += a * b0;
      acc[r][1] += a * b1;
    }
  }
  float tile[kMR][kNR];
  std::memcpy(tile, acc, sizeof tile);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t col = 0; col < cols; ++col) c[r * ldc + col] += alpha * tile[r][col];
}

// C[i0:i1, j0:j1] (already scaled by beta) += alpha * op(A) op(B), on the calling thread.
void gemm_region(const GemmShape& s, float alpha, const float* a, const float* b, float* c, int64_t i0, int64_t i1,
                 int64_t j0, int64_t j1) {
  thread_local std::vector<float> a_pack, b_pack;  // workspace: (MC + NC) * KC floats per thread
  a_pack.resize(static_cast<size_t>(kMC * kKC));
  b_pack.resize(static_cast<size_t>(kNC * kKC));
  for (int64_t p0 = 0; p0 < s.k; p0 += kKC) {
    const int64_t depth = std::min(kKC, s.k - p0);
    for (int64_t jc = j0; jc < j1; jc += kNC) {
      const int64_t cols = std::min(kNC, j1 - jc);
      pack_b(s, b, p0, depth, jc, cols, b_pack.data());
      for (int64_t ic = i0; ic < i1; ic += kMC) {
        const int64_t rows = std::min(kMC, i1 - ic);
        pack_a(s, a, ic, rows, p0, depth, a_pack.data());
        for (int64_t jr = 0; jr < cols; jr += kNR) {
          for (int64_t ir = 0; ir < rows; ir += kMR) {
            micro_tile(depth, a_pack.data() + ir * depth, b_pack.data() + jr * depth, alpha,
                       c + (ic + ir) * s.ldc + jc + jr, s.ldc, std::min(kMR, rows - ir), std::min(kNR, cols - jr));
          }
        }
      }
    }
  }
}

}  // namespace

void f32_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
              ThreadPool* pool) {
  for (int64_t i = 0; i < s.m; ++i) {
    float* row = c + i * s.ldc;
    if (beta == 0.0f) {
      std::fill(row, row + s.n, 0.0f);
    } else if (beta != 1.0f) {
      for (int64_t j = 0; j < s.n; ++j) row[j] *= beta;
    }
  }
  if (s.k == 0 || alpha == 0.0f) return;
  // Split the larger of m and n into tile-aligned ranges, one per thread; tiny products stay on one thread.
  const int64_t flops = 2 * s.m * s.n * s.k;
  if (pool == nullptr || pool->threads() == 1 || flops < (int64_t{1} << 21)) {
    gemm_region(s, alpha, a, b, c, 0, s.m, 0, s.n);
  } else if (s.m >= s.n) {
    pool->parallel_for(s.m, kMR, [&](int64_t i0, int64_t i1) { gemm_region(s, alpha, a, b, c, i0, i1, 0, s.n); });
  } else {
    pool->parallel_for(s.n, kNR, [&](int64_t j0, int64_t j1) { gemm_region(s, alpha, a, b, c, 0, s.m, j0, j1); });
  }
}

}  // namespace rg
