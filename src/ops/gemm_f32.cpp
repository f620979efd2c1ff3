// f32 GEMM driver: A and B packed into MR- and NR-wide panels, cache blocks KC deep,
// MC rows and NC columns, and the MR x NR tile kernel of the active ISA (kernel_tables.h).
// Every element of C is summed in the same order whatever the split across threads:
// the split only moves tile boundaries, and partial tiles compute like full ones.
#include <algorithm>
#include <vector>

#include "base/int_math.h"
#include "base/thread_scratch.h"
#include "cpu/kernel_tables.h"
#include "ops/gemm.h"

namespace rg {

// ops/gemm.h. A strip of op(A) (w = MR) and one of op(B) (w = NR) are both this, with the strides
// their transposes give; the loop order follows whichever stride is 1, so the source is read
// contiguously.
void f32_pack_panels(const float* src, int64_t stride_p, int64_t stride_r, int64_t depth, int64_t width, int64_t w,
                     float* out) {
  for (int64_t r0 = 0; r0 < width; r0 += w, out += depth * w) {
    const int64_t live = std::min(w, width - r0);
    const float* strip = src + r0 * stride_r;
    if (stride_r == 1) {
      for (int64_t p = 0; p < depth; ++p) {
        for (int64_t r = 0; r < live; ++r) out[p * w + r] = strip[p * stride_p + r];
        for (int64_t r = live; r < w; ++r) out[p * w + r] = 0.0f;
      }
    } else {
      for (int64_t r = 0; r < live; ++r)
        for (int64_t p = 0; p < depth; ++p) out[p * w + r] = strip[p * stride_p + r * stride_r];
      for (int64_t r = live; r < w; ++r)
        for (int64_t p = 0; p < depth; ++p) out[p * w + r] = 0.0f;
    }
  }
}

namespace {

constexpr int64_t kKC = 512;
constexpr int64_t kMCTarget = 96;    // rounded down to a multiple of MR
constexpr int64_t kNCTarget = 2048;  // rounded down to a multiple of NR

// op(A)[i0 : i0+rows, p0 : p0+depth] -> panels of mr rows.
void pack_a(const GemmShape& s, const float* a, int64_t i0, int64_t rows, int64_t p0, int64_t depth, int64_t mr,
            float* out) {
  if (s.trans_a == Trans::no) {
    f32_pack_panels(a + i0 * s.lda + p0, 1, s.lda, depth, rows, mr, out);
  } else {
    f32_pack_panels(a + p0 * s.lda + i0, s.lda, 1, depth, rows, mr, out);
  }
}

// op(B)[p0 : p0+depth, j0 : j0+cols] -> panels of nr columns.
void pack_b_panels(const GemmShape& s, const float* b, int64_t p0, int64_t depth, int64_t j0, int64_t cols, int64_t nr,
                   float* out) {
  if (s.trans_b == Trans::no) {
    f32_pack_panels(b + p0 * s.ldb + j0, s.ldb, 1, depth, cols, nr, out);
  } else {
    f32_pack_panels(b + j0 * s.ldb + p0, 1, s.ldb, depth, cols, nr, out);
  }
}

// Grows a thread's packing buffer to `floats` (never shrinks it): sized by the product at
// hand, not the largest block, so small models keep a few hundred KB per thread rather than
// the 4 MB of a full NC x KC panel block (memory the planner does not count).
float* packing_buffer(std::vector<float>& buffer, int64_t floats) {
  if (buffer.size() < static_cast<size_t>(floats)) buffer.resize(static_cast<size_t>(floats));
  return buffer.data();
}

// C[i0:i1, j0:j1] = alpha * op(A) op(B) + beta * C, on the calling thread: the first
// KC block applies beta, the later ones add to it. `a_packed`, where given, is all of op(A)
// packed already (gemm_shared_a's layout; then i0 = 0, i1 = m); else each MC block of it is
// packed here.
void gemm_region(const GemmShape& s, const F32GemmKernel& kernel, float alpha, const float* a, const float* b,
                 float beta, float* c, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
                 const float* a_packed = nullptr) {
  const int64_t mr = kernel.mr, nr = kernel.nr;
  const int64_t mc = std::max(mr, kMCTarget / mr * mr), nc = std::max(nr, kNCTarget / nr * nr);
  const bool b_in_place = s.trans_b == Trans::no && i1 - i0 <= kGemmMaxRowsForBInPlace;
  static const ThreadScratchKey a_key, b_key;  // at most (MC + NC) * KC floats per thread
  std::vector<float>& a_storage = thread_scratch<std::vector<float>>(a_key);
  std::vector<float>& b_storage = thread_scratch<std::vector<float>>(b_key);
  const int64_t depth_max = std::min(kKC, s.k);
  float* a_pack = a_packed ? nullptr : packing_buffer(a_storage, std::min(mc, round_up(i1 - i0, mr)) * depth_max);
  float* b_pack = packing_buffer(b_storage, std::min(nc, round_up(j1 - j0, nr)) * depth_max);
  for (int64_t p0 = 0; p0 < s.k; p0 += kKC) {
    const int64_t depth = std::min(kKC, s.k - p0);
    for (int64_t jc = j0; jc < j1; jc += nc) {
      const int64_t cols = std::min(nc, j1 - jc);
      // Columns [0, in_place) of this block are read from B itself; the rest is packed.
      const int64_t in_place = b_in_place ? cols / nr * nr : 0;
      if (in_place < cols) pack_b_panels(s, b, p0, depth, jc + in_place, cols - in_place, nr, b_pack);
      for (int64_t ic = i0; ic < i1; ic += mc) {
        const int64_t rows = std::min(mc, i1 - ic);
        const float* a_panels = a_packed ? a_packed + p0 * round_up(s.m, mr) + ic * depth : a_pack;
        if (!a_packed) pack_a(s, a, ic, rows, p0, depth, mr, a_pack);
        for (int64_t jr = 0; jr < cols; jr += nr) {
          const bool direct = jr < in_place;
          const float* b_panel = direct ? b + p0 * s.ldb + jc + jr : b_pack + (jr - in_place) * depth;
          const int64_t ldb = direct ? s.ldb : nr;
          for (int64_t ir = 0; ir < rows; ir += mr) {
            kernel.tile(depth, a_panels + ir * depth, b_panel, ldb, alpha, p0 == 0 ? beta : 1.0f,
                        c + (ic + ir) * s.ldc + jc + jr, s.ldc, std::min(mr, rows - ir), std::min(nr, cols - jr));
          }
        }
      }
    }
  }
}

// The threaded path for tall products: per (KC, NC) block the threads pack B together
// once (split by panels), then split C's rows, each packing its own A. Splitting rows with
// a private copy of packed B per thread would pack B once per thread and crowd the cache.
// Same loop order and block edges as gemm_region, so the same sums.
void gemm_shared_b(const GemmShape& s, const F32GemmKernel& kernel, float alpha, const float* a, const float* b,
                   float beta, float* c, ThreadPool& pool) {
  const int64_t mr = kernel.mr, nr = kernel.nr;
  const int64_t mc = std::max(mr, kMCTarget / mr * mr), nc = std::max(nr, kNCTarget / nr * nr);
  static const ThreadScratchKey shared_b_key;  // the caller's: at most NC * KC floats
  std::vector<float>& shared_b = thread_scratch<std::vector<float>>(shared_b_key);
  float* b_pack = packing_buffer(shared_b, std::min(nc, round_up(s.n, nr)) * std::min(kKC, s.k));
  for (int64_t p0 = 0; p0 < s.k; p0 += kKC) {
    const int64_t depth = std::min(kKC, s.k - p0);
    for (int64_t jc = 0; jc < s.n; jc += nc) {
      const int64_t cols = std::min(nc, s.n - jc);
      const int64_t panels = (cols + nr - 1) / nr;
      pool.parallel_for(panels, 1, [&](int64_t first, int64_t last) {
        const int64_t j = first * nr, width = std::min(cols, last * nr) - j;
        pack_b_panels(s, b, p0, depth, jc + j, width, nr, b_pack + j * depth);
      });
      pool.parallel_for(s.m, mr, [&](int64_t i0, int64_t i1) {
        static const ThreadScratchKey a_key;
        std::vector<float>& a_storage = thread_scratch<std::vector<float>>(a_key);
        float* a_pack = packing_buffer(a_storage, std::min(mc, round_up(i1 - i0, mr)) * depth);
        for (int64_t ic = i0; ic < i1; ic += mc) {
          const int64_t rows = std::min(mc, i1 - ic);
          pack_a(s, a, ic, rows, p0, depth, mr, a_pack);
          for (int64_t jr = 0; jr < cols; jr += nr) {
            for (int64_t ir = 0; ir < rows; ir += mr) {
              kernel.tile(depth, a_pack + ir * depth, b_pack + jr * depth, nr, alpha, p0 == 0 ? beta : 1.0f,
                          c + (ic + ir) * s.ldc + jc + jr, s.ldc, std::min(mr, rows - ir), std::min(nr, cols - jr));
            }
          }
        }
      });
    }
  }
}

// The threaded path for wide products (few rows, many columns: a dense layer's forward at a
// batch of 64). Split by columns, every thread packed all of op(A) for itself: at 8 parts of
// cnn's dense1 (64 x 3136) that was 8 copies of 800 KB, each beside a part of 12.8 MFLOP (its
// forward took 0.64 ms on 16 threads of the Xeon, 1.8 on one). Here the threads pack it once,
// together (a KC x MR panel a unit), then split the columns over it.
// The same tile calls as gemm_region, so the same sums.
void gemm_shared_a(const GemmShape& s, const F32GemmKernel& kernel, float alpha, const float* a, const float* b,
                   float beta, float* c, ThreadPool& pool) {
  const int64_t mr = kernel.mr, rows = round_up(s.m, mr), panels = rows / mr, blocks = (s.k + kKC - 1) / kKC;
  static const ThreadScratchKey shared_a_key;  // the caller's: [KC block][panel][depth x MR]
  std::vector<float>& shared_a = thread_scratch<std::vector<float>>(shared_a_key);
  float* a_packed = packing_buffer(shared_a, rows * s.k);
  pool.parallel_for(blocks * panels, 1, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t p0 = u / panels * kKC, i = u % panels * mr, depth = std::min(kKC, s.k - p0);
      pack_a(s, a, i, std::min(mr, s.m - i), p0, depth, mr, a_packed + p0 * rows + i * depth);
    }
  });
  pool.parallel_for(s.n, kernel.nr, [&](int64_t j0, int64_t j1) {
    gemm_region(s, kernel, alpha, a, b, beta, c, 0, s.m, j0, j1, a_packed);
  });
}

// Wide products share one packed op(A) when it is at most this many floats (4 MiB, as much as
// a thread's own packing buffers may reach); a larger one is packed per thread as before.
constexpr int64_t kMaxSharedA = int64_t{1} << 20;

// Products with one row or one column of C (a dense layer of one unit, one sample's forward):
// the tile would spend all but one of its NR lanes (or MR rows) on nothing. Written as y[j] = sum
// over p of x[p] M[p][j], lanes the outputs (the vector kernels' rows_combine), with M[p][j] =
// base[p * step_p + j * step_j]: read in place where step_j is 1, else packed a block of lanes at a
// time. Each element is one chain a KC block in order, the blocks joined as gemm_region joins
// them, so it gets the tile path's bits; lanes are split over the pool only where M is large
// (its flops are few but its bytes are not: dcgan's one-logit layer reads 1.6 MB a pass).
struct VectorProduct {
  const float* base;
  int64_t step_p, step_j, lanes;
  std::vector<float> x;  // op(A)'s row or op(B)'s column, contiguous
};

// The kLanesBlock lanes [j0, j1) of y over all of x, `pack` a KC x kLanesBlock buffer.
constexpr int64_t kLanesBlock = 64;
void vector_product_lanes(const VectorProduct& v, const F32RowsCombine combine, float alpha, float beta, float* y,
                          int64_t j0, int64_t j1, float* pack) {
  const int64_t k = static_cast<int64_t>(v.x.size());
  for (int64_t p0 = 0; p0 < k; p0 += kKC) {
    const int64_t depth = std::min(kKC, k - p0);
    const float keep = p0 == 0 ? beta : 1.0f;
    if (v.step_j == 1) {
      combine(depth, j1 - j0, v.base + p0 * v.step_p + j0, v.step_p, v.x.data() + p0, alpha, keep, y + j0);
      continue;
    }
    for (int64_t b0 = j0; b0 < j1; b0 += kLanesBlock) {
      const int64_t width = std::min(kLanesBlock, j1 - b0);
      // 8 lanes at a time, each lane's row read along p: 8 streams the prefetcher follows (all 64
      // at once were 64 streams: 1.2-1.4 ms a pass over dcgan's 64 x 6272 input just written,
      // against 0.33 with it in cache), 8 neighbouring floats of the pack written a step
      const float* src = v.base + b0 * v.step_j + p0 * v.step_p;
      for (int64_t g = 0; g < width; g += 8) {
        const int64_t g1 = std::min(width, g + 8);
        for (int64_t p = 0; p < depth; ++p)
          for (int64_t j = g; j < g1; ++j) pack[p * width + j] = src[j * v.step_j + p * v.step_p];
      }
      combine(depth, width, pack, width, v.x.data() + p0, alpha, keep, y + b0);
    }
  }
}

// Splits the lanes over the pool where M has at least this many elements (512 KB); f32_gemm
// splits a product whose C has as many.
constexpr int64_t kMinElementsToSplitLanes = int64_t{1} << 17;

void gemm_vector_product(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                         ThreadPool* pool) {
  const bool one_row = s.m == 1;  // y = C's row, M = op(B); else y = C's column, M = op(A)^T
  std::vector<float> x(static_cast<size_t>(s.k));
  for (int64_t p = 0; p < s.k; ++p)
    x[static_cast<size_t>(p)] = one_row ? (s.trans_a == Trans::no ? a[p] : a[p * s.lda])
                                        : (s.trans_b == Trans::no ? b[p * s.ldb] : b[p]);
  const bool b_rows = s.trans_b == Trans::no, a_columns = s.trans_a == Trans::yes;  // M's rows along p in place
  const VectorProduct v = one_row ? VectorProduct{b, b_rows ? s.ldb : 1, b_rows ? 1 : s.ldb, s.n, std::move(x)}
                                  : VectorProduct{a, a_columns ? s.lda : 1, a_columns ? 1 : s.lda, s.m, std::move(x)};
  // C's column is y in place only at ldc 1; else a copy (read first where beta reads it).
  const bool strided_y = !one_row && s.ldc != 1;
  std::vector<float> y_copy(strided_y ? static_cast<size_t>(s.m) : 0);
  if (strided_y && beta != 0.0f)
    for (int64_t i = 0; i < s.m; ++i) y_copy[static_cast<size_t>(i)] = c[i * s.ldc];
  float* y = strided_y ? y_copy.data() : c;
  const F32RowsCombine combine = f32_vector().rows_combine;
  const auto run = [&](int64_t j0, int64_t j1) {
    static const ThreadScratchKey pack_key;
    std::vector<float>& pack = thread_scratch<std::vector<float>>(pack_key);
    vector_product_lanes(v, combine, alpha, beta, y, j0, j1, packing_buffer(pack, kKC * kLanesBlock));
  };
  if (pool != nullptr && pool->threads() > 1 && v.lanes * s.k >= kMinElementsToSplitLanes) {
    pool->parallel_for(v.lanes, v.step_j == 1 ? kLanesBlock : 16, run);  // packed: few lanes, long rows
  } else {
    run(0, v.lanes);
  }
  if (strided_y)
    for (int64_t i = 0; i < s.m; ++i) c[i * s.ldc] = y_copy[static_cast<size_t>(i)];
}

}  // namespace

void f32_gemm_scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
  }
}

void f32_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
              ThreadPool* pool) {
  if (s.m == 0 || s.n == 0) return;
  if (s.k == 0 || alpha == 0.0f) {  // no product
    f32_gemm_scale_c(s.m, s.n, beta, c, s.ldc);
    return;
  }
  if (s.m == 1 || s.n == 1) return gemm_vector_product(s, alpha, a, b, beta, c, pool);
  const F32GemmKernel& kernel = f32_gemm_kernel_for(active_isa(), s.n);
  // Small products stay on one thread; tall ones share one packed B across threads, wide ones
  // one packed A; the rest split the larger of m and n into tile-aligned ranges, one per thread.
  // A shallow product (a dense layer's input gradient from one unit: k = 1) has few flops but
  // writes all of C: C's elements count too.
  const int64_t flops = 2 * s.m * s.n * s.k;
  const bool few = flops < kGemmMinFlopsToSplit && s.m * s.n < kMinElementsToSplitLanes;
  if (pool == nullptr || pool->threads() == 1 || few) {
    gemm_region(s, kernel, alpha, a, b, beta, c, 0, s.m, 0, s.n);
  } else if (s.m >= s.n && s.m > kGemmMaxRowsForBInPlace) {
    gemm_shared_b(s, kernel, alpha, a, b, beta, c, *pool);
  } else if (s.m >= s.n) {
    pool->parallel_for(s.m, kernel.mr,
                       [&](int64_t i0, int64_t i1) { gemm_region(s, kernel, alpha, a, b, beta, c, i0, i1, 0, s.n); });
  } else if (round_up(s.m, kernel.mr) * s.k <= kMaxSharedA) {
    gemm_shared_a(s, kernel, alpha, a, b, beta, c, *pool);
  } else {
    pool->parallel_for(s.n, kernel.nr,
                       [&](int64_t j0, int64_t j1) { gemm_region(s, kernel, alpha, a, b, beta, c, 0, s.m, j0, j1); });
  }
}

}  // namespace rg
