// f32 GEMM with a gathered A (ops/gemm.h): the kernel table's gathered MR x NR tiles read A
// through row pointers, and B in place (a last, partial panel from a copy) or, beyond L2, from
// panels packed a depth block at a time (kMinPackedB). Blocks: MC rows of C, KC deep, so a block's
// slice of the image and of B stay in cache while every NR panel of B passes over it.
// Every element of C is summed in the same order whatever the split across threads: threads
// own whole rows of C, and each row's depth blocks run in order. The depth split for weight
// gradients (f32_gemm_gathered_depth_split) cuts the depth by the shape alone, and adds the
// blocks' partial products in block order; its products read A from MR-row panels packed a block
// at a time where that pays (packs_a), through the kernel table's packed tiles.
#include <algorithm>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "base/thread_scratch.h"
#include "cpu/kernel_tables.h"
#include "ops/gemm.h"

namespace rg {

namespace {

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

// Weight gradients read A along the pixels (rows = taps, depth = pixels): each depth step of a
// tile reads its MR floats from another cache line, and the gathered tile reads them again for
// every panel of B. There each MC x KC block of A is packed once into MR-row panels (panel[p * MR
// + r], the packed tile's layout) that every panel's tiles read in order, where that pays
// (packs_a). dcgan's discriminator conv2 (1024 taps x 128 filters over 980 pixels; harness,
// medians of 7): 1.24-1.5x at avx2 on the Zen 3 VM, 1.03-1.17x at avx512 on the Xeon; the whole
// of dcgan 1.10x on the Xeon at 1 thread. Both tiles are one template over how they read A: the
// same bits packed or not.

// Whether a product packs A: the depth split's (weight gradients) do where B has more than one
// panel (one panel reads A once anyway) and the first tile's rows lie side by side (a tap's
// channels: copied MR floats a step). Rows apart (one input channel: the taps lie in different
// pixels) cost a scalar copy each; cnn's conv1 dW at avx2 measured slower packed (1.7-1.9 ->
// 2.2-2.3 ms a step). The forward's A (rows = pixels, depth = taps: a pixel's channels in a row)
// measured slower packed on the Xeon (0.85x) and no faster on the VM: never packed.
bool packs_a(const GatheredA<float>& a, int64_t m, int64_t n, const F32GemmKernel& kernel) {
  if (n <= kernel.nr || m < kernel.mr) return false;
  for (int64_t r = 1; r < kernel.mr; ++r)
    if (a.row_offsets[r] != a.row_offsets[0] + r) return false;
  return true;
}

// MR floats at each depth step's offset: a tile whose rows lie side by side (one tap's channels).
template <int MR>
void pack_adjacent_rows(const float* row0, const int32_t* offsets, int64_t depth, float* out) {
  for (int64_t p = 0; p < depth; ++p) std::memcpy(out + p * MR, row0 + offsets[p], MR * sizeof(float));
}

// One tile's rows over `depth` steps of `offsets` into out[p * mr + r].
void pack_gathered_tile(const float* const* rows, int64_t mr, const int32_t* offsets, int64_t depth, float* out) {
  bool adjacent = true;
  for (int64_t r = 1; r < mr; ++r) adjacent = adjacent && rows[r] == rows[0] + r;
  if (adjacent && mr == 6) return pack_adjacent_rows<6>(rows[0], offsets, depth, out);
  if (adjacent && mr == 8) return pack_adjacent_rows<8>(rows[0], offsets, depth, out);
  if (adjacent && mr == 12) return pack_adjacent_rows<12>(rows[0], offsets, depth, out);
  if (adjacent && mr == 16) return pack_adjacent_rows<16>(rows[0], offsets, depth, out);
  for (int64_t p = 0; p < depth; ++p)
    for (int64_t r = 0; r < mr; ++r) out[p * mr + r] = rows[r][offsets[p]];
}

// Tile ir's MR row pointers into A, the last live row repeated below the block's end (rows past
// `live` are summed, never stored).
void tile_rows(const GatheredA<float>& a, int64_t mr, int64_t ir, int64_t ic_end, const float** rows) {
  const int64_t live = std::min(mr, ic_end - ir);
  for (int64_t r = 0; r < mr; ++r) rows[r] = a.base + a.row_offsets[ir + std::min(r, live - 1)];
}

// Rows [ic, ic_end) of A over depth block [p0, p0 + depth), tile by tile, into `out`.
void pack_gathered_block(const GatheredA<float>& a, int64_t mr, int64_t ic, int64_t ic_end, int64_t p0,
                         int64_t depth, float* out) {
  const float* rows[kF32GemmMaxMr];
  for (int64_t ir = ic; ir < ic_end; ir += mr) {
    tile_rows(a, mr, ir, ic_end, rows);
    pack_gathered_tile(rows, mr, a.depth_offsets + p0, depth, out + (ir - ic) * depth);
  }
}

// Rows [ic, ic_end) of C (at most MC) over depth block [p0, p0 + depth) of every panel, A read
// gathered or, where a_panels is not null, from pack_gathered_block's panels of these rows. Each
// depth block of a panel is one tile call, so every element of C is the same FMA chain whatever
// NR is, where A and B are read from and in which order the blocks run: levels whose tiles differ
// only in shape give the same bits.
void gathered_block(const F32GemmKernel& kernel, int64_t n, int64_t p0, int64_t depth, float alpha,
                    const GatheredA<float>& a, const float* a_panels, const BBlock& block, float beta, float* c,
                    int64_t ldc, int64_t ic, int64_t ic_end) {
  const int64_t mr = kernel.mr, nr = kernel.nr;
  const float* rows[kF32GemmMaxMr];
  for (int64_t jr = 0; jr < n; jr += nr) {
    const float* b_panel = block.panel(jr);
    const int64_t ldb = block.panel_ldb(jr), cols = std::min(nr, n - jr);
    for (int64_t ir = ic; ir < ic_end; ir += mr) {
      const int64_t live = std::min(mr, ic_end - ir);
      float* c_tile = c + ir * ldc + jr;
      if (a_panels != nullptr) {
        kernel.tile(depth, a_panels + (ir - ic) * depth, b_panel, ldb, alpha, beta, c_tile, ldc, live, cols);
        continue;
      }
      tile_rows(a, mr, ir, ic_end, rows);
      kernel.gathered_tile(depth, rows, a.depth_offsets + p0, b_panel, ldb, alpha, beta, c_tile, ldc, live, cols);
    }
  }
}

// Rows [i0, i1) of C on the calling thread: B packed a depth block at a time, or in place; A
// gathered, or (pack_a) packed a block at a time.
void gathered_rows(const F32GemmKernel& kernel, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                   bool pack_a, const float* b, int64_t ldb, float beta, float* c, int64_t ldc, int64_t i0,
                   int64_t i1) {
  const int64_t mr = kernel.mr, nr = kernel.nr, mc = std::max(mr, kGatheredMCTarget / mr * mr);
  const bool packed =
      ldb != nr && i1 - i0 > kGemmMaxRowsForBInPlace && k * n > kMinPackedB && n <= kMaxPackedWidth;
  const int64_t first_copied = packed ? 0 : n / nr * nr;
  static const ThreadScratchKey copy_key;  // [KC x n rounded up to NR] floats at most
  static const ThreadScratchKey a_key;     // [MC x KC] floats
  std::vector<float>& copy = thread_scratch<std::vector<float>>(copy_key);
  std::vector<float>& a_copy = thread_scratch<std::vector<float>>(a_key);
  auto block_at = [&](int64_t p0, int64_t depth) {  // copies the panels from first_copied on
    copy.resize(static_cast<size_t>((n - first_copied + nr - 1) / nr * nr * depth));
    f32_pack_panels(b + p0 * ldb + first_copied, ldb, 1, depth, n - first_copied, nr, copy.data());
    return BBlock{b + p0 * ldb, ldb, nr, depth, first_copied, copy.data()};
  };
  auto rows_over = [&](int64_t p0, int64_t depth, const BBlock& block, int64_t ic) {
    const int64_t ic_end = std::min(i1, ic + mc);
    const float* a_panels = nullptr;
    if (pack_a) {
      a_copy.resize(static_cast<size_t>((ic_end - ic + mr - 1) / mr * mr * depth));
      pack_gathered_block(a, mr, ic, ic_end, p0, depth, a_copy.data());
      a_panels = a_copy.data();
    }
    gathered_block(kernel, n, p0, depth, alpha, a, a_panels, block, p0 == 0 ? beta : 1.0f, c, ldc, ic, ic_end);
  };
  if (packed) {
    for (int64_t p0 = 0; p0 < k; p0 += kGatheredDepthBlock) {
      const int64_t depth = std::min(k, p0 + kGatheredDepthBlock) - p0;
      const BBlock block = block_at(p0, depth);
      for (int64_t ic = i0; ic < i1; ic += mc) rows_over(p0, depth, block, ic);
    }
    return;
  }
  for (int64_t ic = i0; ic < i1; ic += mc)
    for (int64_t p0 = 0; p0 < k; p0 += kGatheredDepthBlock) {
      const int64_t depth = std::min(k, p0 + kGatheredDepthBlock) - p0;
      rows_over(p0, depth, block_at(p0, depth), ic);
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
// - a block is about kMinBlockDepth deep or more (3 of the tiles' depth blocks, kGatheredDepthBlock, at
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
  return block == blocks ? k : k * block / blocks / kGatheredDepthBlock * kGatheredDepthBlock;
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

// The product over rows of C split among the pool's threads, A packed where may_pack_a and packs_a.
void gathered_product(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a, bool may_pack_a,
                      const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == 0.0f) {  // no product
    f32_gemm_scale_c(m, n, beta, c, ldc);
    return;
  }
  const F32GemmKernel& kernel = f32_gemm_kernel_for(active_isa(), n);
  RG_CHECK(kernel.mr <= kF32GemmMaxMr, "gathered GEMM: tile of " << kernel.mr << " rows");
  const bool pack_a = may_pack_a && packs_a(a, m, n, kernel);
  auto run = [&](int64_t i0, int64_t i1) {
    gathered_rows(kernel, n, k, alpha, a, pack_a, b, ldb, beta, c, ldc, i0, i1);
  };
  if (pool == nullptr || pool->threads() == 1 || 2 * m * n * k < kGemmMinFlopsToSplit) {
    run(0, m);
  } else {
    pool->parallel_for(m, kernel.mr, run);
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
    gathered_product(m, n, k, alpha, a, true, b, ldb, beta, c, ldc, pool);
    return;
  }
  RG_CHECK(partials != nullptr, "gathered GEMM: a depth split of " << blocks << " blocks without its partials");
  const F32GemmKernel& kernel = f32_gemm_kernel_for(active_isa(), n);
  RG_CHECK(kernel.mr <= kF32GemmMaxMr, "gathered GEMM: tile of " << kernel.mr << " rows");
  const int64_t tiles = (m + kernel.mr - 1) / kernel.mr, cells = m * n;
  const bool pack_a = packs_a(a, m, n, kernel);
  // Unit u: tile row u % tiles of block u / tiles; a thread's run of units, block by block.
  auto run = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1;) {
      const int64_t block = u / tiles, t0 = u % tiles, t1 = std::min(tiles, t0 + (u1 - u));
      const int64_t p0 = block_start(k, blocks, block), p1 = block_start(k, blocks, block + 1);
      const GatheredA<float> slice{a.base, a.row_offsets, a.depth_offsets + p0};
      float* out = block == 0 ? c : partials + (block - 1) * cells;
      gathered_rows(kernel, n, p1 - p0, alpha, slice, pack_a, b + p0 * ldb, ldb, block == 0 ? beta : 0.0f, out,
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
  gathered_product(m, n, k, alpha, a, false, b, ldb, beta, c, ldc, pool);
}

}  // namespace rg
