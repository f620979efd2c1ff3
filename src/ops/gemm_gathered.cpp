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

constexpr int64_t kGatheredKC = 256;
constexpr int64_t kGatheredMCTarget = 96;  // rounded down to a multiple of MR
constexpr int kMaxMR = 8;

// Rows [i0, i1) of C on the calling thread. B is read in place, NR columns at a time; the
// last, partial panel too (its lanes past n read the next row and are never stored), except
// in the last rows of B, where a full NR-wide read would run past B's end: those few rows go
// through a zero-padded copy, in a second call of the tile.
void gathered_rows(const F32GemmKernel& kernel, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int64_t i0, int64_t i1) {
  const int64_t mr = kernel.mr, nr = kernel.nr, mc = std::max(mr, kGatheredMCTarget / mr * mr);
  const int64_t full_cols = n / nr * nr;
  // Rows [0, safe_rows) of B can be read NR wide from column full_cols: p*ldb + full_cols + NR
  // stays within B's (k - 1) * ldb + n values.
  const int64_t reach = (k - 1) * ldb + n - full_cols - nr;
  const int64_t safe_rows = full_cols == n ? k : (reach < 0 ? 0 : std::min(k, reach / ldb + 1));
  thread_local std::vector<float> tail;  // [rows past safe_rows, NR]
  tail.assign(static_cast<size_t>((k - safe_rows) * nr), 0.0f);
  for (int64_t p = safe_rows; p < k; ++p)
    for (int64_t j = full_cols; j < n; ++j) tail[static_cast<size_t>((p - safe_rows) * nr + j - full_cols)] = b[p * ldb + j];
  const float* rows[kMaxMR];
  for (int64_t ic = i0; ic < i1; ic += mc) {
    const int64_t ic_end = std::min(i1, ic + mc);
    for (int64_t p0 = 0; p0 < k; p0 += kGatheredKC) {
      const int64_t p1 = std::min(k, p0 + kGatheredKC), split = std::max(p0, std::min(p1, safe_rows));
      const float first_beta = p0 == 0 ? beta : 1.0f;
      for (int64_t jr = 0; jr < n; jr += nr) {
        const int64_t cols = std::min(nr, n - jr);
        const int64_t in_place_end = jr < full_cols ? p1 : split;  // full panels: every row
        for (int64_t ir = ic; ir < ic_end; ir += mr) {
          const int64_t live = std::min(mr, ic_end - ir);
          for (int64_t r = 0; r < mr; ++r) rows[r] = a.base + a.row_offsets[ir + std::min(r, live - 1)];
          float* c_tile = c + ir * ldc + jr;
          if (in_place_end > p0) {
            kernel.gathered_tile(in_place_end - p0, rows, a.depth_offsets + p0, b + p0 * ldb + jr, ldb, alpha,
                                 first_beta, c_tile, ldc, live, cols);
          }
          if (in_place_end < p1) {
            kernel.gathered_tile(p1 - in_place_end, rows, a.depth_offsets + in_place_end,
                                 tail.data() + (in_place_end - safe_rows) * nr, nr, alpha,
                                 in_place_end > p0 ? 1.0f : first_beta, c_tile, ldc, live, cols);
          }
        }
      }
    }
  }
}

}  // namespace

void f32_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a, const float* b,
                       int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) {  // no product
    f32_gemm_scale_c(m, n, beta, c, ldc);
    return;
  }
  const F32GemmKernel& kernel = f32_gemm_kernel_for(active_isa(), n);
  RG_CHECK(kernel.mr <= kMaxMR, "gathered GEMM: tile of " << kernel.mr << " rows");
  auto run = [&](int64_t i0, int64_t i1) { gathered_rows(kernel, n, k, alpha, a, b, ldb, beta, c, ldc, i0, i1); };
  if (pool == nullptr || pool->threads() == 1 || 2 * m * n * k < kGemmMinFlopsToSplit) {
    run(0, m);
  } else {
    pool->parallel_for(m, kernel.mr, run);
  }
}

}  // namespace rg
