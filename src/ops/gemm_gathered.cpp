// f32 GEMM with a gathered A (ops/gemm.h): the kernel table's gathered MR x NR tiles read A
// through row pointers, B in place. Blocks: MC rows of C, KC deep, so a block's slice of the
// image and of B stay in cache while every NR panel of B passes over it.
// Every element of C is summed in the same order whatever the split across threads: threads
// own whole rows of C, and each row's depth blocks run in order.
#include <algorithm>
#include <vector>

#include "base/check.h"
#include "cpu/kernel_tables.h"
#include "ops/gemm.h"

namespace rg {

namespace {

constexpr int64_t kKC = 256;
constexpr int64_t kMCTarget = 96;  // rounded down to a multiple of MR
constexpr int kMaxMR = 8;

// Rows [i0, i1) of C on the calling thread.
void gathered_rows(const F32GemmKernel& kernel, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int64_t i0, int64_t i1) {
  const int64_t mr = kernel.mr, nr = kernel.nr, mc = std::max(mr, kMCTarget / mr * mr);
  const int64_t full_cols = n / nr * nr;  // B's columns [full_cols, n) go through a zero-padded copy
  thread_local std::vector<float> tail;   // [KC x NR]
  tail.assign(static_cast<size_t>(kKC * nr), 0.0f);
  const float* rows[kMaxMR];
  for (int64_t ic = i0; ic < i1; ic += mc) {
    const int64_t ic_end = std::min(i1, ic + mc);
    for (int64_t p0 = 0; p0 < k; p0 += kKC) {
      const int64_t depth = std::min(kKC, k - p0);
      if (full_cols < n) {
        const int64_t width = n - full_cols;  // < NR: a loop, not a memmove call per row
        for (int64_t p = 0; p < depth; ++p) {
          const float* row = b + (p0 + p) * ldb + full_cols;
          for (int64_t j = 0; j < width; ++j) tail[static_cast<size_t>(p * nr + j)] = row[j];
        }
      }
      for (int64_t jr = 0; jr < n; jr += nr) {
        const bool in_place = jr < full_cols;
        const float* panel = in_place ? b + p0 * ldb + jr : tail.data();
        for (int64_t ir = ic; ir < ic_end; ir += mr) {
          const int64_t live = std::min(mr, ic_end - ir);
          for (int64_t r = 0; r < mr; ++r) rows[r] = a.base + a.row_offsets[ir + std::min(r, live - 1)];
          kernel.gathered_tile(depth, rows, a.depth_offsets + p0, panel, in_place ? ldb : nr, alpha,
                               p0 == 0 ? beta : 1.0f, c + ir * ldc + jr, ldc, live, std::min(nr, n - jr));
        }
      }
    }
  }
}

}  // namespace

void f32_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a, const float* b,
                       int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) {  // no product: C = beta * C (beta 0 ignores what C held)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  const F32GemmKernel& kernel = f32_gemm_kernel_for(active_isa(), n);
  RG_CHECK(kernel.mr <= kMaxMR, "gathered GEMM: tile of " << kernel.mr << " rows");
  auto run = [&](int64_t i0, int64_t i1) { gathered_rows(kernel, n, k, alpha, a, b, ldb, beta, c, ldc, i0, i1); };
  if (pool == nullptr || pool->threads() == 1 || 2 * m * n * k < (int64_t{1} << 21)) {
    run(0, m);
  } else {
    pool->parallel_for(m, kernel.mr, run);
  }
}

}  // namespace rg
