// f32 GEMM with a gathered A (ops/gemm.h): the kernel table's gathered MR x NR tiles read A
// through row pointers, B in place (a last, partial panel from a copy). Blocks: MC rows of C, KC
// deep, so a block's slice of the image and of B stay in cache while every NR panel of B passes
// over it.
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

// Rows [i0, i1) of C on the calling thread. Full NR-wide panels of B are read in place; a last,
// partial panel (n not a multiple of NR) from a zero-padded copy of the depth block's rows,
// since a full-width read there would reach past B's end in its last rows. (A copy of all k rows
// at once was a 3 MB buffer per thread for a weight gradient, whose depth is the batch's pixels.)
// Each depth block of a panel is one tile call, so every element of C is the same FMA chain
// whatever NR is: levels whose tiles differ only in shape give the same bits.
void gathered_rows(const F32GemmKernel& kernel, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int64_t i0, int64_t i1) {
  const int64_t mr = kernel.mr, nr = kernel.nr, mc = std::max(mr, kGatheredMCTarget / mr * mr);
  const int64_t full_cols = n / nr * nr;
  thread_local std::vector<float> last_panel;  // [kGatheredKC, NR]: columns [full_cols, n), zero-padded
  last_panel.assign(static_cast<size_t>(full_cols == n ? 0 : kGatheredKC * nr), 0.0f);
  const float* rows[kF32GemmMaxMr];
  for (int64_t ic = i0; ic < i1; ic += mc) {
    const int64_t ic_end = std::min(i1, ic + mc);
    for (int64_t p0 = 0; p0 < k; p0 += kGatheredKC) {
      const int64_t depth = std::min(k, p0 + kGatheredKC) - p0;
      const float first_beta = p0 == 0 ? beta : 1.0f;
      for (int64_t p = 0; p < depth && full_cols < n; ++p)  // the columns past n stay 0
        std::copy(b + (p0 + p) * ldb + full_cols, b + (p0 + p) * ldb + n, last_panel.begin() + p * nr);
      for (int64_t jr = 0; jr < n; jr += nr) {
        const int64_t cols = std::min(nr, n - jr);
        const bool in_place = jr < full_cols;
        const float* b_panel = in_place ? b + p0 * ldb + jr : last_panel.data();
        for (int64_t ir = ic; ir < ic_end; ir += mr) {
          const int64_t live = std::min(mr, ic_end - ir);
          for (int64_t r = 0; r < mr; ++r) rows[r] = a.base + a.row_offsets[ir + std::min(r, live - 1)];
          kernel.gathered_tile(depth, rows, a.depth_offsets + p0, b_panel, in_place ? ldb : nr, alpha, first_beta,
                               c + ir * ldc + jr, ldc, live, cols);
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
  RG_CHECK(kernel.mr <= kF32GemmMaxMr, "gathered GEMM: tile of " << kernel.mr << " rows");
  auto run = [&](int64_t i0, int64_t i1) { gathered_rows(kernel, n, k, alpha, a, b, ldb, beta, c, ldc, i0, i1); };
  if (pool == nullptr || pool->threads() == 1 || 2 * m * n * k < kGemmMinFlopsToSplit) {
    run(0, m);
  } else {
    pool->parallel_for(m, kernel.mr, run);
  }
}

}  // namespace rg
