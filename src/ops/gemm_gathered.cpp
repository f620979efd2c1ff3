// f32 GEMM with a gathered A (ops/gemm.h): the kernel table's gathered MR x NR tiles read A
// through row pointers, and B in place (a last, partial panel from a copy) or, beyond L2, from
// panels packed a depth block at a time (kMinPackedB). Blocks: MC rows of C, KC deep, so a block's
// slice of the image and of B stay in cache while every NR panel of B passes over it.
// Every element of C is summed in the same order whatever the split across threads: threads
// own whole rows of C, and each row's depth blocks run in order. The depth split for weight
// gradients (f32_gemm_gathered_depth_split) cuts the depth by the shape alone, and adds the
// blocks' partial products in block order.
#include <algorithm>
#include <vector>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "cpu/kernel_tables.h"
#include "ops/gemm.h"

namespace rg {

namespace {

constexpr int64_t kGatheredKC = 256;
constexpr int64_t kGatheredMCTarget = 96;  // rounded down to a multiple of MR

// Where the tiles read B. In place, rows of a B wider than one panel lie ldb apart, and a tile's
// depth steps read its panel's rows from wherever they are. Where B stays in L2 that costs nothing
// measurable: dcgan's discriminator conv2 on the Xeon, chunks of 20 samples, B (the weight, or a
// chunk's dy) at most 512 KB: packing B into contiguous panels made its forward, weight gradient
// and conv_transpose1's 5-7% slower (the copy each chunk is about what it saves; medians of 5
// interleaved runs). A larger B is re-read from L3 by every MC block of rows: 64 samples' dy, 1.6
// MB, ran that weight gradient at 71-100 GFLOP/s in place and 119-129 packed (a harness on the
// Xeon; AVX2 49-54 -> 72-75). So a B over kMinPackedB floats, with C's rows enough to repay the
// copy (a thread's share over kGemmMaxRowsForBInPlace) and at most kMaxPackedWidth columns (each
// thread's copy, KC x n floats, at most 2 MiB, as gemm_f32.cpp's panels), is packed a depth block
// at a time by each thread, and the rows pass depth block by depth block; any other is read in
// place, rows MC at a time across all the depth (a B one panel wide already is one). A last,
// partial panel is always copied, zero-padded: a full-width read there would reach past B's end
// in its last rows.
constexpr int64_t kMinPackedB = int64_t{1} << 18;
constexpr int64_t kMaxPackedWidth = 2048;

// The panels of B's depth block [p0, p0 + depth): panel jr (a multiple of NR) at panel(jr),
// its rows panel_ldb(jr) apart; from first_copied on, copies depth x NR each (f32_pack_panels).
struct BBlock {
  const float* in_place;  // B's row p0
  int64_t ldb, nr, depth;
  int64_t first_copied;
  const float* copied;
  const float* panel(int64_t jr) const { return jr < first_copied ? in_place + jr : copied + (jr - first_copied) * depth; }
  int64_t panel_ldb(int64_t jr) const { return jr < first_copied ? ldb : nr; }
};

// Rows [ic, ic_end) of C (at most MC) over depth block [p0, p0 + depth) of every panel. Each depth
// block of a panel is one tile call, so every element of C is the same FMA chain whatever NR is,
// where B is read from and in which order the blocks run: levels whose tiles differ only in shape
// give the same bits.
void gathered_block(const F32GemmKernel& kernel, int64_t n, int64_t p0, int64_t depth, float alpha,
                    const GatheredA<float>& a, const BBlock& block, float beta, float* c, int64_t ldc, int64_t ic,
                    int64_t ic_end) {
  const int64_t mr = kernel.mr, nr = kernel.nr;
  const float* rows[kF32GemmMaxMr];
  for (int64_t jr = 0; jr < n; jr += nr) {
    const float* b_panel = block.panel(jr);
    for (int64_t ir = ic; ir < ic_end; ir += mr) {
      const int64_t live = std::min(mr, ic_end - ir);
      for (int64_t r = 0; r < mr; ++r) rows[r] = a.base + a.row_offsets[ir + std::min(r, live - 1)];
      kernel.gathered_tile(depth, rows, a.depth_offsets + p0, b_panel, block.panel_ldb(jr), alpha, beta,
                           c + ir * ldc + jr, ldc, live, std::min(nr, n - jr));
    }
  }
}

// Rows [i0, i1) of C on the calling thread: B packed a depth block at a time, or in place.
void gathered_rows(const F32GemmKernel& kernel, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int64_t i0, int64_t i1) {
  const int64_t mr = kernel.mr, nr = kernel.nr, mc = std::max(mr, kGatheredMCTarget / mr * mr);
  const bool packed =
      ldb != nr && i1 - i0 > kGemmMaxRowsForBInPlace && k * n > kMinPackedB && n <= kMaxPackedWidth;
  const int64_t first_copied = packed ? 0 : n / nr * nr;
  static const ThreadScratchKey copy_key;  // [KC x n rounded up to NR] floats at most
  std::vector<float>& copy = thread_scratch<std::vector<float>>(copy_key);
  auto block_at = [&](int64_t p0, int64_t depth) {  // copies the panels from first_copied on
    copy.resize(static_cast<size_t>((n - first_copied + nr - 1) / nr * nr * depth));
    f32_pack_panels(b + p0 * ldb + first_copied, ldb, 1, depth, n - first_copied, nr, copy.data());
    return BBlock{b + p0 * ldb, ldb, nr, depth, first_copied, copy.data()};
  };
  if (packed) {
    for (int64_t p0 = 0; p0 < k; p0 += kGatheredKC) {
      const int64_t depth = std::min(k, p0 + kGatheredKC) - p0;
      const BBlock block = block_at(p0, depth);
      for (int64_t ic = i0; ic < i1; ic += mc)
        gathered_block(kernel, n, p0, depth, alpha, a, block, p0 == 0 ? beta : 1.0f, c, ldc, ic, std::min(i1, ic + mc));
    }
    return;
  }
  for (int64_t ic = i0; ic < i1; ic += mc)
    for (int64_t p0 = 0; p0 < k; p0 += kGatheredKC) {
      const int64_t depth = std::min(k, p0 + kGatheredKC) - p0;
      gathered_block(kernel, n, p0, depth, alpha, a, block_at(p0, depth), p0 == 0 ? beta : 1.0f, c, ldc, ic,
                     std::min(i1, ic + mc));
    }
}

// The depth split (ops/gemm.h). A weight gradient split by rows of C alone feeds few threads
// (cnn's conv1: 9 taps x 32 filters, one 12-row avx512 tile: one thread; its conv2: 288 rows,
// 24 tiles, 1 or 2 for each of 16 threads) and has each thread stream all of B (dy, up to MBs)
// for its rows; split by depth, each block reads only its slice of the image and of dy, and the
// blocks x row tiles feed any number of threads. The price is writing and adding back
// (blocks - 1) partial products of m x n. Hence:
// - only C of fewer than kRowsToFeedThreads rows is split: with that many, the row split gives
//   each of 16 threads 2 of the widest (avx512, 12-row) tiles, and the split measured no faster
//   there on 2 threads of the Zen 3 VM (cnn's conv4, 576 x 64: 4.4 ms row split, 4.6 split,
//   medians of 7 rounds on a loaded VM);
// - a block is about kMinBlockDepth deep or more (3 of the tiles' depth blocks, kGatheredKC, at
//   least, its edges rounded to them): its partial's one write and read are then under 0.3% of
//   its multiply-adds;
// - at most kMaxDepthBlocks: a block a thread on the 16-core machines the project measures,
//   4 a thread at 4 threads; more would only add partials;
// - the partials at most kMaxDepthPartials floats (1 MiB, a quarter of a conv layer's chunk
//   scratch), so the workspace stays bounded (288 taps x 512 filters: 2 blocks at most).
// The count depends on k, so a batch's last, smaller chunk may have fewer blocks: never more.
constexpr int64_t kRowsToFeedThreads = 16 * 2 * 12;
constexpr int64_t kMinBlockDepth = 1024;
constexpr int64_t kMaxDepthBlocks = 16;
constexpr int64_t kMaxDepthPartials = int64_t{1} << 18;

// Where depth block `block` of `blocks` starts (block == blocks: k): at an equal share of k
// rounded down to the tiles' depth blocks, so only the last block ends in a partial one.
int64_t block_start(int64_t k, int64_t blocks, int64_t block) {
  return block == blocks ? k : k * block / blocks / kGatheredKC * kGatheredKC;
}

// C[i0:i1) += the partials [blocks - 1][m x n], added in block order: each element's sum is
// the same chain whichever thread adds it.
void add_partials(int64_t n, int64_t blocks, const float* partials, int64_t cells, float* c, int64_t ldc, int64_t i0,
                  int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    float* row = c + i * ldc;
    for (int64_t block = 1; block < blocks; ++block) {
      const float* part = partials + (block - 1) * cells + i * n;
      for (int64_t j = 0; j < n; ++j) row[j] += part[j];
    }
  }
}

}  // namespace

int64_t gemm_depth_blocks(int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || m >= kRowsToFeedThreads) return 1;
  return std::max<int64_t>(1, std::min({kMaxDepthBlocks, k / kMinBlockDepth, 1 + kMaxDepthPartials / (m * n)}));
}

int64_t gemm_depth_partials(int64_t m, int64_t n, int64_t k) { return (gemm_depth_blocks(m, n, k) - 1) * m * n; }

void f32_gemm_gathered_depth_split(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, float* partials,
                                   ThreadPool* pool) {
  const int64_t blocks = gemm_depth_blocks(m, n, k);
  if (blocks == 1 || m == 0 || n == 0 || alpha == 0.0f) {  // alpha 0: no product, C = beta C
    f32_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, pool);
    return;
  }
  RG_CHECK(partials != nullptr, "gathered GEMM: a depth split of " << blocks << " blocks without its partials");
  const F32GemmKernel& kernel = f32_gemm_kernel_for(active_isa(), n);
  RG_CHECK(kernel.mr <= kF32GemmMaxMr, "gathered GEMM: tile of " << kernel.mr << " rows");
  const int64_t tiles = (m + kernel.mr - 1) / kernel.mr, cells = m * n;
  // Unit u: tile row u % tiles of block u / tiles; a thread's run of units, block by block.
  auto run = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1;) {
      const int64_t block = u / tiles, t0 = u % tiles, t1 = std::min(tiles, t0 + (u1 - u));
      const int64_t p0 = block_start(k, blocks, block), p1 = block_start(k, blocks, block + 1);
      const GatheredA<float> slice{a.base, a.row_offsets, a.depth_offsets + p0};
      float* out = block == 0 ? c : partials + (block - 1) * cells;
      gathered_rows(kernel, n, p1 - p0, alpha, slice, b + p0 * ldb, ldb, block == 0 ? beta : 0.0f, out,
                    block == 0 ? ldc : n, t0 * kernel.mr, std::min(m, t1 * kernel.mr));
      u += t1 - t0;
    }
  };
  auto add = [&](int64_t i0, int64_t i1) { add_partials(n, blocks, partials, cells, c, ldc, i0, i1); };
  if (pool == nullptr || pool->threads() == 1 || 2 * m * n * k < kGemmMinFlopsToSplit) {
    run(0, blocks * tiles);
    add(0, m);
    return;
  }
  pool->parallel_for(blocks * tiles, 1, run);
  // Rows of at least ~16K adds a thread: the sum is small beside the product.
  pool->parallel_for(m, std::max<int64_t>(1, (int64_t{1} << 14) / ((blocks - 1) * n)), add);
}

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
