// Int8 training's products: max passes, quantization (written so that the compiler vectorizes
// it at the baseline: float multiply, clamp, rounding by the 1.5 * 2^23 trick, 32-bit hashing),
// B packed once per product, row blocks of A quantized (or gathered) per depth block into a
// per-part buffer, the qs8 or qs16 tiles, int64 accumulation across depth blocks, f32 output
// (straight from the tiles' int32 sums where the product is one depth block deep). Products of
// few row blocks are cut over their depth for the threads, the slices' integer sums added after.
#include "ops/int8_dynamic_gemm.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/check.h"
#include "base/int_math.h"
#include "base/thread_scratch.h"
#include "base/rng.h"
#include "cpu/kernel_tables.h"
#include "ops/fixed_point_runs.h"
#include "tensor/tensor.h"

namespace rg {

// Integer products under this many operations stay on one thread (an int8 operation costs a
// fraction of an f32 flop's time: twice ops/gemm.h's f32 threshold, as it was for both).
constexpr int64_t kInt8GemmMinOpsToSplit = int64_t{1} << 21;

namespace {

using fixed_point_runs::EachMult;
using fixed_point_runs::fmix32;
using fixed_point_runs::kIndexMul;
using fixed_point_runs::kInfBits;
using fixed_point_runs::kTwoToMinus24;
using fixed_point_runs::max_abs_bits;
using fixed_point_runs::quantize_run_nearest;
using fixed_point_runs::quantize_run_stochastic;
using fixed_point_runs::UniformMult;

constexpr int64_t kQuantRowBlock = 32;    // rows of A per block (a multiple of every tile's mr)
constexpr int64_t kRunElements = 256;     // a stack buffer's worth of one operand row
constexpr int64_t kNarrowB = 16;          // B rows this short are quantized many at a time (pack_b_narrow)
constexpr uint32_t kHighMul = 0x85EBCA77u;
constexpr int64_t kCopyBytes = 16;        // GatheredQ's pieces (and the slack they need)

float bits_to_float(int32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

uint32_t float_to_bits(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// SplitMix64's finalizer (base/rng.h).
uint64_t mix64(uint64_t z) { return splitmix64_mix(z); }

void atomic_max(std::atomic<int32_t>& target, int32_t v) {
  int32_t current = target.load();
  while (v > current && !target.compare_exchange_weak(current, v)) {
  }
}

// How one operand quantizes: its multiplier, zero point, grid bound and rounding (with its
// stream's key); a per-channel B has each column's multiplier in `column_mults` instead.
struct OperandQuant {
  float mult;
  int32_t zero;
  int32_t qmax;  // at most 127 (int8 tiles) or 32767 (int16)
  bool stochastic;
  uint64_t key;
  bool saturates;  // a fixed scale: |x * mult| may pass qmax (the vector loops assume it cannot)
  const float* column_mults;  // [n], or null

  // The quantizer of one column of B (its own multiplier where per channel).
  OperandQuant column(int64_t j) const {
    OperandQuant q = *this;
    if (column_mults != nullptr) q.mult = column_mults[j];
    q.column_mults = nullptr;
    return q;
  }
};

// A run whose elements have indices index0 + t * stride in the operand's stream, with the
// multipliers `mult` (UniformMult or EachMult).
template <class Q, class Mult>
void quantize_run_with(const OperandQuant& q, const float* x, int64_t count, uint64_t index0, uint64_t stride,
                       Mult mult, Q* out) {
  if (q.saturates) {  // clamped in float first, by the scalar definitions
    for (int64_t t = 0; t < count; ++t) {
      out[t] = static_cast<Q>(
          q.stochastic ? fixed_point_quantize_stochastic(x[t], mult[t], q.qmax,
                                                         int8_rounding_uniform(q.key, index0 + static_cast<uint64_t>(t) * stride),
                                                         q.zero)
                       : fixed_point_quantize_nearest(x[t], mult[t], q.qmax, q.zero));
    }
  } else if (q.stochastic) {
    quantize_run_stochastic(x, count, mult, q.zero, q.qmax, q.key, index0, stride, out);
  } else {
    quantize_run_nearest(x, count, mult, q.zero, q.qmax, out);
  }
}

// A run of one multiplier (q.mult), or, for a per-channel B, a row run from column j0.
template <class Q>
void quantize_run(const OperandQuant& q, const float* x, int64_t count, uint64_t index0, uint64_t stride, Q* out,
                  int64_t j0 = 0) {
  if (q.column_mults != nullptr) return quantize_run_with(q, x, count, index0, stride, EachMult{q.column_mults + j0}, out);
  quantize_run_with(q, x, count, index0, stride, UniformMult{q.mult}, out);
}

// One thread's growing scratch, through the counted allocator.
Tensor& thread_scratch_block() {
  static const ThreadScratchKey key;
  return thread_scratch<Tensor>(key);
}

int8_t* scratch_bytes(int64_t bytes) {
  Tensor& block = thread_scratch_block();
  if (!block.defined() || block.numel() < bytes) {
    block = Tensor();  // the old block goes back first
    auto grown = Tensor::zeros(Shape{bytes + bytes / 4 + 64}, DType::i8, "int8 training GEMM scratch");
    RG_CHECK(grown.ok(), "" << grown.status().message());
    block = grown.take();
  }
  return block.data<int8_t>();
}

int64_t align64(int64_t bytes) { return round_up(bytes, 64); }

// The tiles of each element type: int8 (qs8, k in groups of 4) for formats up to 8 bits, int16
// (qs16, k in pairs) up to 16; a group is 4 bytes either way.
template <class Q>
struct TileKind;
template <>
struct TileKind<int8_t> {
  static constexpr int64_t kGroup = 4;
  using Tile = Qs8GemmTile;
  static Tile tile(Isa isa, int* mr, int* nr, const char** name) {
    const Qs8GemmKernel& k = qs8_gemm_kernel(isa);
    *mr = k.mr, *nr = k.nr, *name = k.name;
    return k.tile;
  }
  static Qs16SplitTile split_tile(Isa, int* mr) { return *mr = 0, nullptr; }
};
template <>
struct TileKind<int16_t> {
  static constexpr int64_t kGroup = 2;
  using Tile = Qs16GemmTile;
  static Tile tile(Isa isa, int* mr, int* nr, const char** name) {
    const Qs16GemmKernel& k = qs16_gemm_kernel(isa);
    *mr = k.mr, *nr = k.nr, *name = k.name;
    return k.tile;
  }
  // The level's fused tile for a split B, or null (the tile twice).
  static Qs16SplitTile split_tile(Isa isa, int* mr) {
    const Qs16GemmKernel& k = qs16_gemm_kernel(isa);
    *mr = k.split_mr;
    return k.split;
  }
};

// The most pairs of an int16 block whose int32 sums cannot overflow: pairs * 2 * qa * qb <= 2^31 - 1.
int64_t int16_pairs_bound(int64_t qmax_a, int64_t qmax_b) {
  return (int64_t{2147483647} / (2 * qmax_a * qmax_b));
}
// Below this many pairs a block, B is split into its high byte (signed, |hi| <= 128) and low
// byte (0 to 255) and multiplied twice: C = 256 A B_hi + A B_lo, each in blocks of 128 pairs at
// least (for |A| <= 32767: 2^31 / (2 * 32767 * 255) = 128).
constexpr int64_t kMinPairsUnsplit = 128;

// Product-wide facts shared by the plain and gathered entry points.
template <class Q>
struct Plan {
  typename TileKind<Q>::Tile tile;
  int64_t mr;
  int64_t m, n, k;
  int64_t nr, panels, npad, kgroups;
  int64_t depth_block, depth_block_padded;
  bool split_b;      // int16: B's high and low bytes multiplied apart
  Qs16SplitTile split_tile;  // split_b: both on one tile of split_mr rows, or null: the tile twice
  int64_t split_mr;
  ThreadPool* pool;  // null: one thread
  int64_t blocks;    // row blocks of kQuantRowBlock
  int64_t slices;    // depth slices of a row block, each an item with its own sums (1: none)
  int parts;         // the threads' shares of the items (blocks x slices), each with its A block
};

// The depth of a block: the option's (a cache size), for int16 held under the int32 bound.
template <class Q>
int64_t block_depth(const Int8GemmOptions& o, bool* split_b) {
  *split_b = false;
  if (sizeof(Q) == 1) return o.depth_block;
  int64_t pairs = int16_pairs_bound(o.a.qmax(), o.b.qmax());
  if (pairs < kMinPairsUnsplit) {
    *split_b = true;
    pairs = int16_pairs_bound(o.a.qmax(), 255);
  }
  return std::min(o.depth_block, 2 * pairs);  // depth in elements: a pair is 2
}

// A part's A block: kQuantRowBlock rows of depth_block_padded values, and GatheredQ's slack.
template <class Q>
int64_t a_block_bytes(const Plan<Q>& p) {
  return align64(kQuantRowBlock * p.depth_block_padded * static_cast<int64_t>(sizeof(Q)) + kCopyBytes);
}
// One set of a row block's sums: int64 [kQuantRowBlock x npad] (acc_bytes), then the rows' sums of qa.
template <class Q>
int64_t acc_bytes(const Plan<Q>& p) {
  return align64(kQuantRowBlock * p.npad * 8);
}
template <class Q>
int64_t sums_bytes(const Plan<Q>& p) {
  return acc_bytes(p) + align64(kQuantRowBlock * 8);
}
// The sets of sums: a part's (written out after each block), or with slices an item's (added up
// after all items).
template <class Q>
int64_t sums_sets(const Plan<Q>& p) {
  return p.slices > 1 ? p.blocks * p.slices : p.parts;
}
// What run_tiles uses after B: the parts' A blocks, then the sets of sums.
template <class Q>
int64_t tiles_bytes(const Plan<Q>& p) {
  return p.parts * a_block_bytes(p) + sums_sets(p) * sums_bytes(p);
}

// Depth slices where the row blocks are fewer than a few per thread and do not divide among
// them (a weight gradient's: lenet's conv1 has 25 rows and 50176 deep): a thread each, as far as
// the depth blocks go. The integer sums do not depend on the cut.
int64_t depth_slices(int64_t blocks, int64_t threads, int64_t depth_blocks) {
  const bool uneven = threads > 1 && blocks % threads != 0 && blocks < 4 * threads;
  return uneven ? std::min(threads, depth_blocks) : 1;
}

template <class Q>
Plan<Q> make_plan(int64_t m, int64_t n, int64_t k, ThreadPool* pool, const Int8GemmOptions& o) {
  const int max_bits = sizeof(Q) == 1 ? kMaxInt8TileBits : kMaxFixedPointBits;
  for (const FixedPointFormat* f : {&o.a, &o.b}) {
    RG_CHECK(f->bits >= kMinFixedPointBits && f->bits <= max_bits,
             "dynamic integer GEMM: an operand of " << f->bits << " bits (these tiles take 2 to " << max_bits << ")");
  }
  constexpr int64_t G = TileKind<Q>::kGroup;
  Plan<Q> p;
  int mr = 0, nr = 0;
  const char* name = "";
  p.tile = TileKind<Q>::tile(o.isa, &mr, &nr, &name);
  RG_CHECK(mr <= kQs8MaxMr && nr <= 16 && kQuantRowBlock % mr == 0,
           "dynamic integer GEMM: tile " << name << " larger than " << kQs8MaxMr << "x16");
  RG_CHECK(o.depth_block >= 4 && o.depth_block % 4 == 0 && o.depth_block <= kInt8GemmDepthSlice,
           "dynamic integer GEMM: depth block " << o.depth_block);
  p.mr = mr;
  p.m = m;
  p.n = n;
  p.k = k;
  p.nr = nr;
  p.panels = (n + p.nr - 1) / p.nr;
  p.npad = p.panels * p.nr;
  p.kgroups = (k + G - 1) / G;
  p.depth_block = std::min(block_depth<Q>(o, &p.split_b), round_up(k, G));
  p.depth_block_padded = p.depth_block;
  int split_mr = 0;
  p.split_tile = p.split_b ? TileKind<Q>::split_tile(o.isa, &split_mr) : nullptr;
  p.split_mr = split_mr;
  RG_CHECK(p.split_tile == nullptr || (split_mr <= mr && kQuantRowBlock % split_mr == 0),
           "dynamic integer GEMM: split tile of " << split_mr << " rows");
  const int64_t flops = 2 * m * n * k * (p.split_b ? 2 : 1);
  const bool threaded = pool != nullptr && pool->threads() > 1 && flops >= kInt8GemmMinOpsToSplit;
  p.pool = threaded ? pool : nullptr;
  const int64_t threads = threaded ? pool->threads() : 1;
  p.blocks = (m + kQuantRowBlock - 1) / kQuantRowBlock;
  p.slices = depth_slices(p.blocks, threads, (k + p.depth_block - 1) / p.depth_block);
  p.parts = static_cast<int>(std::max<int64_t>(1, std::min(threads, p.blocks * p.slices)));
  if (o.trace != nullptr) o.trace->depth_slices = p.slices;
  return p;
}

// Groups [g0, g1) of a narrow B stored whole (row stride n <= kNarrowB, one multiplier):
// many rows quantized in one run (the stochastic loop vectorizes over them, where over a row of 6
// it would not: a convolution's dy, dW's B, has a row per pixel), then interleaved into the
// panels as pack_b_quantized lays them out.
template <class Q>
void pack_b_narrow(const Plan<Q>& plan, const float* b, const OperandQuant& quant, Q* packed, int64_t g0, int64_t g1) {
  constexpr int64_t G = TileKind<Q>::kGroup, kChunk = 4096;
  const int64_t k = plan.k, n = plan.n, nr = plan.nr, kgroups = plan.kgroups;
  Q values[kChunk];
  const int64_t groups_per_chunk = kChunk / (G * n);
  for (int64_t c0 = g0; c0 < g1; c0 += groups_per_chunk) {
    const int64_t c1 = std::min(g1, c0 + groups_per_chunk), p0 = G * c0, p1 = std::min(k, G * c1);
    quantize_run(quant, b + p0 * n, (p1 - p0) * n, static_cast<uint64_t>(p0 * n), 1, values);
    for (int64_t g = c0; g < c1; ++g)
      for (int64_t panel = 0; panel < plan.panels; ++panel) {
        Q* out = packed + (panel * kgroups + g) * nr * G;
        const int64_t live_rows = std::min(G, k - G * g), live_columns = std::min(nr, n - panel * nr);
        const Q* v = values + (G * g - p0) * n + panel * nr;
        for (int64_t jj = 0; jj < live_columns; ++jj)
          for (int64_t q = 0; q < G; ++q) out[jj * G + q] = q < live_rows ? v[q * n + jj] : Q{0};
        std::fill(out + live_columns * G, out + nr * G, Q{0});
      }
  }
}

// op(B) [k x n] (b row stride ldb, transposed when trans) quantized into the tile's panels, k in
// groups of G (4 int8 or 2 int16): packed[((panel * kgroups + p / G) * nr + j % nr) * G + p % G],
// zeros past k and n.
template <class Q>
void pack_b_quantized(const Plan<Q>& plan, const float* b, int64_t ldb, bool trans, const OperandQuant& quant,
                      Q* packed) {
  constexpr int64_t G = TileKind<Q>::kGroup;
  const int64_t k = plan.k, n = plan.n, nr = plan.nr, kgroups = plan.kgroups;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, 4 * n));
  parallel_for(plan.pool, kgroups, grain, [&](int64_t g0, int64_t g1) {
    const int64_t p_begin = G * g0, p_end = std::min(k, G * g1);
    if (!trans && ldb == n && n <= kNarrowB && quant.column_mults == nullptr) {
      return pack_b_narrow(plan, b, quant, packed, g0, g1);
    }
    if (!trans) {
      // A group of G rows at a time, in column runs of kRunElements (a multiple of nr): the
      // group's quantized rows are interleaved into each panel's 4-byte groups.
      Q rows[G][kRunElements];
      for (int64_t g = g0; g < g1; ++g) {
        const int64_t p0 = G * g, live = std::min<int64_t>(G, k - p0);
        for (int64_t j0 = 0; j0 < plan.npad; j0 += kRunElements) {
          const int64_t count = std::min(kRunElements, n - j0), width = std::min(kRunElements, plan.npad - j0);
          for (int64_t q = 0; q < G; ++q) {
            if (q < live && count > 0) {
              quantize_run(quant, b + (p0 + q) * ldb + j0, count, static_cast<uint64_t>((p0 + q) * n + j0), 1,
                           rows[q], j0);
            }
            const int64_t from = q < live ? std::max<int64_t>(count, 0) : 0;
            std::fill(rows[q] + from, rows[q] + width, Q{0});
          }
          for (int64_t pj = 0; pj < width; pj += nr) {
            Q* out = packed + (((j0 + pj) / nr) * kgroups + g) * nr * G;
            for (int64_t jj = 0; jj < nr; ++jj)
              for (int64_t q = 0; q < G; ++q) out[jj * G + q] = rows[q][pj + jj];
          }
        }
      }
      return;
    }
    for (int64_t panel = 0; panel < plan.panels; ++panel) {
      std::fill_n(packed + (panel * kgroups + g0) * nr * G, (g1 - g0) * nr * G, Q{0});
    }
    Q run[kRunElements];
    for (int64_t j = 0; j < n; ++j) {
      Q* column = packed + (j / nr) * kgroups * nr * G + (j % nr) * G;
      const OperandQuant column_quant = quant.column(j);
      for (int64_t p0 = p_begin; p0 < p_end; p0 += kRunElements) {
        const int64_t count = std::min(kRunElements, p_end - p0);
        quantize_run(column_quant, b + j * ldb + p0, count, static_cast<uint64_t>(p0 * n + j), static_cast<uint64_t>(n),
                     run);
        for (int64_t t = 0; t < count; ++t) {
          const int64_t p = p0 + t;
          column[(p / G) * nr * G + p % G] = run[t];
        }
      }
    }
  });
}

// A split B (Plan::split_b): the packed int16 values q = 256 hi + lo become hi (q >> 8, in
// [-128, 127]) in place and lo (q & 255) in `low`.
void split_packed_b(int16_t* packed, int64_t count, int16_t* low, ThreadPool* pool) {
  parallel_for(pool, count, 65536, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int32_t q = packed[t];
      low[t] = static_cast<int16_t>(q & 255);
      packed[t] = static_cast<int16_t>(q >> 8);  // arithmetic: floor(q / 256)
    }
  });
}

// Rows [i0, i0 + rows) and depth [p0, p0 + kc) of op(A), quantized from f32.
struct PlainA {
  const float* a;
  int64_t lda, k;
  bool trans;
  OperandQuant quant;
  template <class Q>
  void fill(int64_t i0, int64_t rows, int64_t p0, int64_t kc, Q* out, int64_t ld) const {
    if (!trans) {
      for (int64_t r = 0; r < rows; ++r) {
        quantize_run(quant, a + (i0 + r) * lda + p0, kc, static_cast<uint64_t>((i0 + r) * k + p0), 1, out + r * ld);
      }
      return;
    }
    Q column[kQuantRowBlock];
    for (int64_t p = p0; p < p0 + kc; ++p) {
      quantize_run(quant, a + p * lda + i0, rows, static_cast<uint64_t>(i0 * k + p), static_cast<uint64_t>(k), column);
      for (int64_t r = 0; r < rows; ++r) out[r * ld + (p - p0)] = column[r];
    }
  }
};

// row[p] = base[depth[p]] for p < kc, four at a time (GCC's loop of one a time kept base on the
// stack and reloaded it for every value: lenet's conv2 weight gradient gathers 960k values a step).
template <class Q>
void gather_values(const Q* base, const int32_t* depth, int64_t kc, Q* row) {
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    const Q v0 = base[depth[p]], v1 = base[depth[p + 1]], v2 = base[depth[p + 2]], v3 = base[depth[p + 3]];
    row[p] = v0, row[p + 1] = v1, row[p + 2] = v2, row[p + 3] = v3;
  }
  for (; p < kc; ++p) row[p] = base[depth[p]];
}

// The same block gathered from the quantized image (q = the image range from offset `lo`).
// When `runs` is set, runs[p] is the length of the run of consecutive depth offsets starting at
// p (not crossing a depth block), and the runs are copied whole (a conv's patch rows: a kernel
// row's taps are kernel * channels consecutive values) in pieces of kCopyBytes: a run's last
// piece reads and writes up to kCopyBytes past its end (the image and the A block have that
// slack; the next run, the next row or the zero padding overwrites what it wrote). A memcpy of
// the run's length is a library call: lenet's conv1 has runs of 5 values.
template <class Q>
struct GatheredQ {
  const Q* q;
  const int32_t* row_offsets;
  const int32_t* depth_offsets;
  int64_t lo;
  const int32_t* runs;  // null: gather value by value
  void fill(int64_t i0, int64_t rows, int64_t p0, int64_t kc, Q* out, int64_t ld) const {
    const int32_t* depth = depth_offsets + p0;
    for (int64_t r = 0; r < rows; ++r) {
      const Q* base = q + (row_offsets[i0 + r] - lo);
      Q* row = out + r * ld;
      if (runs == nullptr) {
        gather_values(base, depth, kc, row);
        continue;
      }
      constexpr int64_t kPiece = kCopyBytes / static_cast<int64_t>(sizeof(Q));
      for (int64_t p = 0; p < kc;) {
        const int64_t length = runs[p0 + p];
        const Q* from = base + depth[p];
        for (int64_t t = 0; t < length; t += kPiece) std::memcpy(row + p + t, from + t, kCopyBytes);
        p += length;
      }
    }
  }
};

// runs[p] for GatheredQ, or null when the runs average under 2 values (a value loop is faster).
const int32_t* depth_runs(const int32_t* depth, int64_t k, int64_t depth_block, int32_t* runs) {
  int64_t count = 0;
  for (int64_t p = k - 1; p >= 0; --p) {
    const bool joins = p + 1 < k && (p + 1) % depth_block != 0 && depth[p + 1] == depth[p] + 1;
    runs[p] = joins ? runs[p + 1] + 1 : 1;
    count += joins ? 0 : 1;
  }
  return k >= 2 * count ? runs : nullptr;
}

// What turns a row block's int64 sums of qa qb into C (the header's "sums" and "output").
struct Dequant {
  const double* factor;          // [n]: alpha * step_a * step_b of the column
  float beta;
  int64_t zero_a, zero_b, k;
  const int64_t* column_sums_b;  // [n]: sum_p qb[p][j], where zero_a != 0
  bool small_sums;               // every |sum| < 2^51: k (2 qmax_a) (2 qmax_b) < 2^51
};

// A tile row's sums added into its int64 sums: out[j] += in[j], or with a split B's low bytes'
// sums, out[j] += 256 in[j] + low[j] (the shift written on uint64 so that the loop vectorizes:
// SSE2 has no 64-bit multiply).
void add_tile_row(const int32_t* in, const int32_t* low, int64_t nr, int64_t* out) {
  if (low == nullptr) {
    for (int64_t j = 0; j < nr; ++j) out[j] += in[j];
    return;
  }
  for (int64_t j = 0; j < nr; ++j) {
    out[j] += static_cast<int64_t>(static_cast<uint64_t>(int64_t{in[j]}) << 8) + low[j];
  }
}

// Where a row block's tile sums go: added into its int64 sums `acc` [rows x npad]; or, where C
// is written straight from the tiles (`factor` set: writes_direct), into C's rows from `c`.
struct TileOut {
  int64_t* acc;
  const double* factor;  // [n]: Dequant::factor, or null
  float* c;              // row i0 of the row block (row stride ldc)
  int64_t ldc, n;
  int64_t* sums;         // the trace's sums from row i0 (row stride n), or null
};

// Whether C is written straight from the tiles: a product one depth block deep (each tile's
// sums are whole) without zero points, beta 0 and every |sum| < 2^51, where write_rows' value is
// factor[j] * sum in double, and the int32 sums give the sum in double exactly (256 hi + lo).
// Spares the int64 sums' zeroing, adding and reading for shallow products (lenet's conv1: 25
// multiply-adds a sum).
template <class Q>
bool writes_direct(const Plan<Q>& plan, const Dequant& d) {
  return plan.k <= plan.depth_block && d.zero_a == 0 && d.zero_b == 0 && d.small_sums && d.beta == 0.0f;
}

// Sums of rows r0.. and columns j0.. (up to n) straight into C (and the trace's sums).
void write_tile(const TileOut& out, const int32_t* in, const int32_t* low, int64_t tile_rows, int64_t nr, int64_t r0,
                int64_t j0) {
  const int64_t width = std::min(nr, out.n - j0);
  const double* factor = out.factor + j0;
  for (int64_t r = 0; r < tile_rows; ++r) {
    const int32_t* hi_row = in + r * nr;
    float* c_row = out.c + (r0 + r) * out.ldc + j0;
    if (low == nullptr) {
      for (int64_t j = 0; j < width; ++j) c_row[j] = static_cast<float>(factor[j] * static_cast<double>(hi_row[j]));
    } else {
      const int32_t* low_row = low + r * nr;
      for (int64_t j = 0; j < width; ++j) {
        c_row[j] = static_cast<float>(factor[j] * (static_cast<double>(hi_row[j]) * 256.0 + static_cast<double>(low_row[j])));
      }
    }
    if (out.sums == nullptr) continue;
    int64_t* sums_row = out.sums + (r0 + r) * out.n + j0;
    std::fill(sums_row, sums_row + width, int64_t{0});
    add_tile_row(hi_row, low == nullptr ? nullptr : low + r * nr, width, sums_row);
  }
}

// One tile's sums into `acc`, and a split B's low bytes' sums into `low_acc` (the fused split
// tile where the level has one, else the tile twice); returns low_acc, or null without a split.
template <class Q>
const int32_t* run_tile(const Plan<Q>& plan, int64_t rows, int64_t groups, const Q* a, const Q* packed,
                        const Q* packed_low, int32_t* acc, int32_t* low_acc) {
  const int64_t ld = plan.depth_block_padded;
  if constexpr (sizeof(Q) == 2) {
    if (packed_low != nullptr && plan.split_tile != nullptr) {
      plan.split_tile(rows, groups, a, ld, packed, packed_low, acc, low_acc);
      return low_acc;
    }
  }
  plan.tile(rows, groups, a, ld, packed, acc);
  if (packed_low == nullptr) return nullptr;
  plan.tile(rows, groups, a, ld, packed_low, low_acc);
  return low_acc;
}

// One depth block of a row block: each tile's int32 sums (a split B: 256 times the high bytes'
// sums plus the low bytes') added into the int64 sums, or written straight into C.
template <class Q>
void block_tiles(const Plan<Q>& plan, const Q* a_block, int64_t rows, int64_t p0, int64_t kc_padded, const Q* packed,
                 const Q* packed_low, const TileOut& out) {
  constexpr int64_t G = TileKind<Q>::kGroup;
  const int64_t nr = plan.nr, npad = plan.npad, ld = plan.depth_block_padded;
  const int64_t mr = packed_low != nullptr && plan.split_tile != nullptr ? plan.split_mr : plan.mr;
  // A panel's sums for all the block's rows (each tile's at its rows, row stride nr; a tile
  // writes whole tiles, and kQuantRowBlock is a multiple of mr), then written out at once.
  alignas(64) int32_t panel_acc[kQuantRowBlock * 16], low_acc[kQuantRowBlock * 16];
  for (int64_t panel = 0; panel < plan.panels; ++panel) {
    const int64_t at = (panel * plan.kgroups + p0 / G) * nr * G;
    const int32_t* low = nullptr;
    for (int64_t r0 = 0; r0 < rows; r0 += mr) {
      low = run_tile(plan, std::min(mr, rows - r0), kc_padded / G, a_block + r0 * ld, packed + at,
                     packed_low != nullptr ? packed_low + at : nullptr, panel_acc + r0 * nr, low_acc + r0 * nr);
    }
    low = low != nullptr ? low_acc : nullptr;
    if (out.factor != nullptr) {
      write_tile(out, panel_acc, low, rows, nr, 0, panel * nr);
      continue;
    }
    for (int64_t r = 0; r < rows; ++r) {
      add_tile_row(panel_acc + r * nr, low != nullptr ? low + r * nr : nullptr, nr, out.acc + r * npad + panel * nr);
    }
  }
}

// sum_p qa[r][p] over a row block's depth block (the zero-padded tail adds nothing).
template <class Q>
void add_row_sums(const Q* a_block, int64_t rows, int64_t kc, int64_t ld, int64_t* row_sums) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t sum = 0;
    for (int64_t p = 0; p < kc; ++p) sum += a_block[r * ld + p];
    row_sums[r] += sum;
  }
}

// double(x) for |x| < 2^51 without a scalar conversion (SSE2 has no packed one from int64): x's
// bits added to those of 1.5 * 2^52 are the double 1.5 * 2^52 + x, exactly; the subtraction
// leaves x. The same value as static_cast<double>(x).
inline double small_int64_to_double(int64_t x) {
  const uint64_t bits = static_cast<uint64_t>(x) + 0x4338000000000000ull;
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d - 6755399441055744.0;
}

// C's rows [i0, i0 + rows) from their sums of qa qb (`acc`, row stride npad) and qa's row sums.
void write_rows(const Dequant& d, int64_t i0, int64_t rows, int64_t n, int64_t npad, int64_t* acc,
                const int64_t* row_sums, float* c, int64_t ldc, int64_t* sums) {
  for (int64_t r = 0; r < rows; ++r) {
    float* c_row = c + (i0 + r) * ldc;
    int64_t* acc_row = acc + r * npad;
    if (d.zero_a != 0 || d.zero_b != 0) {
      const int64_t row_term = d.zero_b * row_sums[r] - d.k * d.zero_a * d.zero_b;
      for (int64_t j = 0; j < n; ++j) {
        acc_row[j] -= (d.zero_a != 0 ? d.zero_a * d.column_sums_b[j] : 0) + row_term;
      }
    }
    if (d.small_sums && d.beta == 0.0f) {  // the common case, in a loop the compiler vectorizes
      for (int64_t j = 0; j < n; ++j) c_row[j] = static_cast<float>(d.factor[j] * small_int64_to_double(acc_row[j]));
    } else {
      for (int64_t j = 0; j < n; ++j) {
        const float product = static_cast<float>(d.factor[j] * static_cast<double>(acc_row[j]));
        c_row[j] = product + (d.beta == 0.0f ? 0.0f : d.beta * c_row[j]);
      }
    }
    if (sums != nullptr) std::copy(acc_row, acc_row + n, sums + (i0 + r) * n);
  }
}

// The sums of qa qb of rows [i0, i0 + rows) over depth [p_begin, p_end) (whole depth blocks
// from 0) into `out` (TileOut), and, where B has a zero point, qa's row sums into `row_sums`.
template <class Q, class FillA>
void block_sums(const Plan<Q>& plan, const FillA& fill_a, const Q* packed, const Q* packed_low, bool want_row_sums,
                int64_t i0, int64_t rows, int64_t p_begin, int64_t p_end, Q* a_block, const TileOut& out,
                int64_t* row_sums) {
  constexpr int64_t G = TileKind<Q>::kGroup;
  const int64_t ld = plan.depth_block_padded;
  if (out.factor == nullptr) std::fill(out.acc, out.acc + rows * plan.npad, int64_t{0});
  std::fill(row_sums, row_sums + rows, int64_t{0});
  for (int64_t p0 = p_begin; p0 < p_end; p0 += plan.depth_block) {
    const int64_t kc = std::min(plan.depth_block, p_end - p0), kc_padded = round_up(kc, G);
    fill_a.fill(i0, rows, p0, kc, a_block, ld);
    for (int64_t r = 0; r < rows && kc_padded > kc; ++r) std::fill(a_block + r * ld + kc, a_block + r * ld + kc_padded, Q{0});
    if (want_row_sums) add_row_sums(a_block, rows, kc, ld, row_sums);
    block_tiles(plan, a_block, rows, p0, kc_padded, packed, packed_low, out);
  }
}

// The blocked product over the tiles and the f32 output; `memory` holds tiles_bytes(plan). Each
// part takes its share of the items: a row block (written out once summed), or with slices a
// row block's depth slice (the slices' sums added up and written out after all items).
template <class Q, class FillA>
void run_tiles(const Plan<Q>& plan, const FillA& fill_a, const Q* packed, const Q* packed_low, const Dequant& dequant,
               float* c, int64_t ldc, int8_t* memory, int64_t* sums) {
  const int64_t m = plan.m, npad = plan.npad, slices = plan.slices, items = plan.blocks * slices;
  const int64_t depth_blocks = (plan.k + plan.depth_block - 1) / plan.depth_block;
  const bool direct = writes_direct(plan, dequant);
  int8_t* sets = memory + plan.parts * a_block_bytes(plan);
  const auto acc_of = [&](int64_t set) { return reinterpret_cast<int64_t*>(sets + set * sums_bytes(plan)); };
  const auto row_sums_of = [&](int64_t set) {
    return reinterpret_cast<int64_t*>(sets + set * sums_bytes(plan) + acc_bytes(plan));
  };
  parallel_for(plan.pool, plan.parts, 1, [&](int64_t part_begin, int64_t part_end) {
    for (int64_t part = part_begin; part < part_end; ++part) {
      Q* a_block = reinterpret_cast<Q*>(memory + part * a_block_bytes(plan));
      for (int64_t item = part * items / plan.parts; item < (part + 1) * items / plan.parts; ++item) {
        const int64_t block = item / slices, slice = item % slices, set = slices > 1 ? item : part;
        const int64_t i0 = block * kQuantRowBlock, rows = std::min(kQuantRowBlock, m - i0);
        const int64_t p_begin = depth_blocks * slice / slices * plan.depth_block;
        const int64_t p_end = std::min(plan.k, depth_blocks * (slice + 1) / slices * plan.depth_block);
        const TileOut out{acc_of(set), direct ? dequant.factor : nullptr, c + i0 * ldc, ldc, plan.n,
                          sums != nullptr ? sums + i0 * plan.n : nullptr};
        block_sums(plan, fill_a, packed, packed_low, dequant.zero_b != 0, i0, rows, p_begin, p_end, a_block, out,
                   row_sums_of(set));
        if (slices == 1 && !direct) write_rows(dequant, i0, rows, plan.n, npad, acc_of(set), row_sums_of(set), c, ldc, sums);
      }
    }
  });
  if (slices == 1) return;
  parallel_for(plan.pool, plan.blocks, 1, [&](int64_t block_begin, int64_t block_end) {
    for (int64_t block = block_begin; block < block_end; ++block) {
      const int64_t i0 = block * kQuantRowBlock, rows = std::min(kQuantRowBlock, m - i0), first = block * slices;
      for (int64_t set = first + 1; set < first + slices; ++set) {
        for (int64_t t = 0; t < rows * npad; ++t) acc_of(first)[t] += acc_of(set)[t];
        for (int64_t r = 0; r < rows; ++r) row_sums_of(first)[r] += row_sums_of(set)[r];
      }
      write_rows(dequant, i0, rows, plan.n, npad, acc_of(first), row_sums_of(first), c, ldc, sums);
    }
  });
}

void fill_nan(int64_t m, int64_t n, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, std::numeric_limits<float>::quiet_NaN());
}

// max|op(X)|'s bits over a stored rows x cols matrix with row stride ld.
int32_t matrix_max_bits(const float* x, int64_t rows, int64_t cols, int64_t ld, ThreadPool* pool) {
  std::atomic<int32_t> result{0};
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, cols));
  parallel_for(pool, rows, grain, [&](int64_t begin, int64_t end) {
    int32_t m = 0;
    for (int64_t i = begin; i < end; ++i) m = std::max(m, max_abs_bits(x + i * ld, cols));
    atomic_max(result, m);
  });
  return result.load();
}

// The same over one contiguous range, in pieces.
int32_t range_max_bits(const float* x, int64_t size, ThreadPool* pool) {
  constexpr int64_t kPiece = 65536;
  std::atomic<int32_t> result{0};
  parallel_for(pool, (size + kPiece - 1) / kPiece, 1, [&](int64_t begin, int64_t end) {
    int32_t m = 0;
    for (int64_t piece = begin; piece < end; ++piece) {
      m = std::max(m, max_abs_bits(x + piece * kPiece, std::min(kPiece, size - piece * kPiece)));
    }
    atomic_max(result, m);
  });
  return result.load();
}

// min X and max X over an affine operand's values (called once the max pass found them finite):
// op(X) stored rows x cols with row stride ld.
struct MinMax {
  float min = 0, max = 0;
};
// Starts at 0 (the grid spans min(0, min X) and max(0, max X) anyway); rows on the vector kernel.
MinMax matrix_min_max(const float* x, int64_t rows, int64_t cols, int64_t ld) {
  MinMax r;
  for (int64_t i = 0; i < rows; ++i) {
    float lo, hi;
    f32_vector().min_max(cols, x + i * ld, &lo, &hi);
    r.min = std::min(r.min, lo);
    r.max = std::max(r.max, hi);
  }
  return r;
}

// The grid of an operand of format f whose finite values have max|X| = max_abs; an affine one's
// from its min and max (`min_max()`, asked only then).
template <class MinMaxFn>
FixedPointGrid tensor_grid(const FixedPointFormat& f, float max_abs, const MinMaxFn& min_max) {
  if (!f.affine) return fixed_point_grid(f, -max_abs, max_abs);
  const MinMax r = min_max();
  return fixed_point_grid(f, r.min, r.max);
}

// A per-channel B's grids, column by column (op(B) [k x n] stored with row stride ldb, transposed
// when trans; column j of channel j % o.b_channels): each column's multiplier and step.
struct ColumnGrids {
  std::vector<float> mults;
  std::vector<double> steps;
};
ColumnGrids column_grids(const Int8GemmOptions& o, const float* b, int64_t k, int64_t n, int64_t ldb, bool trans) {
  ColumnGrids g;
  if (!o.b.per_channel) return g;
  RG_CHECK(o.b_channels > 0 && o.b_channel_axis == ChannelAxis::columns && !o.b.affine && !o.a.per_channel,
           "dynamic integer GEMM: per-channel scales are B's, on its columns, without a zero point");
  std::vector<float> channel_max(static_cast<size_t>(o.b_channels), 0.0f);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) {
      float& m = channel_max[static_cast<size_t>(j % o.b_channels)];
      m = std::max(m, std::fabs(trans ? b[j * ldb + p] : b[p * ldb + j]));
    }
  for (int64_t j = 0; j < n; ++j) {
    const float m = channel_max[static_cast<size_t>(j % o.b_channels)];
    const FixedPointGrid grid = fixed_point_grid(o.b, -m, m);
    g.mults.push_back(grid.multiplier);
    g.steps.push_back(grid.step);
  }
  return g;
}

// alpha * step_a * step_b of each column, in double (8 bits, real: alpha * (max_a / 127) * (max_b / 127)).
std::vector<double> column_factors(float alpha, const FixedPointGrid& a, const FixedPointGrid& b,
                                   const ColumnGrids& columns, int64_t n) {
  std::vector<double> factor(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    factor[static_cast<size_t>(j)] =
        static_cast<double>(alpha) * a.step * (columns.steps.empty() ? b.step : columns.steps[static_cast<size_t>(j)]);
  }
  return factor;
}

void start_trace(Int8GemmTrace* trace, int64_t m, int64_t n, float max_a, float max_b, bool nonfinite,
                 uint64_t key_a = 0, uint64_t key_b = 0) {
  if (trace == nullptr) return;
  trace->max_abs_a = max_a;
  trace->max_abs_b = max_b;
  trace->nonfinite = nonfinite;
  trace->key_a = key_a;
  trace->key_b = key_b;
  trace->sums.assign(trace->want_sums ? static_cast<size_t>(m * n) : 0, 0);
}

int64_t* trace_sums(Int8GemmTrace* trace) {
  return trace != nullptr && trace->want_sums ? trace->sums.data() : nullptr;
}

}  // namespace

bool int8_gemm_without_products(int64_t m, int64_t n, int64_t k, float alpha, float beta, float* c, int64_t ldc,
                                const Int8GemmOptions& o) {
  if (m == 0 || n == 0) {
    start_trace(o.trace, 0, 0, 0, 0, false);
    return true;
  }
  if (k == 0 || alpha == 0.0f) {
    f32_gemm_scale_c(m, n, beta, c, ldc);
    start_trace(o.trace, m, n, 0, 0, false);
    return true;
  }
  return false;
}

const char* gemm_precision_name(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::f32:
      return "f32";
    case GemmPrecision::fixed_point:
      return "fixed_point";
  }
  return "?";
}

float int8_rounding_uniform(uint64_t key, uint64_t index) {
  // One MurmurHash3 finalizer over a Weyl sequence of the index, offset by the key: streams of
  // two keys are the same sequence shifted by a key-dependent amount (uncorrelated element by
  // element). Indices past 2^32 move the offset.
  const uint32_t lo = static_cast<uint32_t>(index), hi = static_cast<uint32_t>(index >> 32);
  const uint32_t k1 = (static_cast<uint32_t>(key) ^ static_cast<uint32_t>(key >> 32)) + hi * kHighMul;
  const uint32_t h = fmix32(lo * kIndexMul + k1);
  return static_cast<float>(static_cast<int32_t>(h >> 8)) * kTwoToMinus24;
}

uint64_t int8_rounding_key(const Int8GemmOptions& options, int operand, int64_t m, int64_t n, int64_t k,
                           float max_abs, float middle) {
  const uint64_t words[] = {options.stream,
                            static_cast<uint64_t>(m),
                            static_cast<uint64_t>(n),
                            static_cast<uint64_t>(k),
                            static_cast<uint64_t>(operand),
                            float_to_bits(max_abs),
                            float_to_bits(middle)};
  uint64_t h = mix64(options.seed + 0x9E3779B97F4A7C15ull);
  uint64_t position = 0;
  for (uint64_t w : words) h = mix64(h ^ mix64(w + (++position) * 0x9E3779B97F4A7C15ull));
  return h;
}

float int8_quant_multiplier(float max_abs) { return fixed_point_multiplier(int8_format(), max_abs); }

int8_t int8_quantize_nearest(float x, float multiplier) {
  return static_cast<int8_t>(fixed_point_quantize_nearest(x, multiplier, 127));
}

int8_t int8_quantize_stochastic(float x, float multiplier, float u) {
  return static_cast<int8_t>(fixed_point_quantize_stochastic(x, multiplier, 127, u));
}

namespace {
// An operand's quantizer: its grid, bound, and (stochastic) its stream's key; a per-channel B
// its columns' multipliers.
OperandQuant operand_quant(const Int8GemmOptions& o, int operand, int64_t m, int64_t n, int64_t k,
                           const FixedPointGrid& grid, float middle, const ColumnGrids* columns = nullptr) {
  const FixedPointFormat& f = operand == 1 ? o.a : o.b;
  const bool stochastic = f.rounding == Rounding::stochastic;
  const bool each_column = columns != nullptr && !columns->mults.empty();
  return OperandQuant{grid.multiplier, grid.zero, f.qmax(), stochastic,
                      stochastic ? int8_rounding_key(o, operand, m, n, k, grid.half_range, middle) : 0,
                      f.scale == ScaleRule::fixed, each_column ? columns->mults.data() : nullptr};
}
}  // namespace

namespace {

// B quantized into its panels at the front of `memory` (and, split, its low bytes after them);
// returns the bytes used and sets *packed, *packed_low. With `column_sums` ([npad]), each
// column's sum of its values too.
template <class Q>
int64_t pack_b(const Plan<Q>& plan, const float* b, int64_t ldb, bool trans, const OperandQuant& quant, int8_t* memory,
               const Q** packed, const Q** packed_low, int64_t* column_sums) {
  constexpr int64_t G = TileKind<Q>::kGroup;
  const int64_t count = plan.panels * plan.kgroups * plan.nr * G;
  const int64_t bytes = align64(count * static_cast<int64_t>(sizeof(Q)));
  Q* values = reinterpret_cast<Q*>(memory);
  pack_b_quantized(plan, b, ldb, trans, quant, values);
  if (column_sums != nullptr) {
    std::fill(column_sums, column_sums + plan.npad, int64_t{0});
    for (int64_t t = 0; t < count; ++t) column_sums[(t / (plan.kgroups * plan.nr * G)) * plan.nr + (t / G) % plan.nr] += values[t];
  }
  *packed = values;
  *packed_low = nullptr;
  if constexpr (sizeof(Q) == 2) {
    if (plan.split_b) {
      Q* low = reinterpret_cast<Q*>(memory + bytes);
      split_packed_b(values, count, low, plan.pool);
      *packed_low = low;
    }
  }
  return plan.split_b ? 2 * bytes : bytes;
}

// What pack_b will use, for the scratch's size.
template <class Q>
int64_t packed_b_bytes(const Plan<Q>& plan) {
  const int64_t count = plan.panels * plan.kgroups * plan.nr * TileKind<Q>::kGroup;
  return align64(count * static_cast<int64_t>(sizeof(Q))) * (plan.split_b ? 2 : 1);
}

// Both operands' quantizers and C's factors, once both are known finite (built in place:
// b.column_mults points into columns).
struct Prepared {
  ColumnGrids columns;
  OperandQuant a, b;
  std::vector<double> factor;
  std::vector<int64_t> column_sums_b;  // [npad], where A has a zero point
};
void prepare(Prepared* p, float alpha, int64_t m, int64_t n, int64_t k, int64_t npad, const FixedPointGrid& grid_a,
             const FixedPointGrid& grid_b, float middle_a, float middle_b, const Int8GemmOptions& o) {
  p->a = operand_quant(o, 1, m, n, k, grid_a, middle_a);
  p->b = operand_quant(o, 2, m, n, k, grid_b, middle_b, &p->columns);
  p->factor = column_factors(alpha, grid_a, grid_b, p->columns, n);
  p->column_sums_b.assign(p->a.zero != 0 ? static_cast<size_t>(npad) : 0, 0);
  start_trace(o.trace, m, n, grid_a.half_range, grid_b.half_range, false, p->a.key, p->b.key);
}
Dequant dequant_of(const Prepared& p, float beta, int64_t k) {
  const bool small = k < (int64_t{1} << 51) / (4 * int64_t{p.a.qmax} * p.b.qmax);
  return Dequant{p.factor.data(), beta, p.a.zero, p.b.zero, k, p.column_sums_b.data(), small};
}
int64_t* column_sums_of(Prepared& p) { return p.column_sums_b.empty() ? nullptr : p.column_sums_b.data(); }

template <class Q>
void dynamic_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                  ThreadPool* pool, const Int8GemmOptions& o) {
  if (int8_gemm_without_products(s.m, s.n, s.k, alpha, beta, c, s.ldc, o)) return;
  const bool ta = s.trans_a == Trans::yes, tb = s.trans_b == Trans::yes;
  const Plan<Q> plan = make_plan<Q>(s.m, s.n, s.k, pool, o);
  // Stored shapes: A is [m x k] or [k x m], B [k x n] or [n x k].
  const int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k, b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
  const int32_t bits_a = matrix_max_bits(a, a_rows, a_cols, s.lda, plan.pool);
  const int32_t bits_b = matrix_max_bits(b, b_rows, b_cols, s.ldb, plan.pool);
  const float max_a = bits_to_float(bits_a), max_b = bits_to_float(bits_b);
  if (bits_a >= kInfBits || bits_b >= kInfBits) {
    fill_nan(s.m, s.n, c, s.ldc);
    start_trace(o.trace, s.m, s.n, max_a, max_b, true, 0);
    return;
  }
  const int64_t mid_i = s.m / 2, mid_p = s.k / 2, mid_j = s.n / 2;
  Prepared prepared;
  prepared.columns = column_grids(o, b, s.k, s.n, s.ldb, tb);
  prepare(&prepared, alpha, s.m, s.n, s.k, plan.npad,
          tensor_grid(o.a, max_a, [&] { return matrix_min_max(a, a_rows, a_cols, s.lda); }),
          tensor_grid(o.b, max_b, [&] { return matrix_min_max(b, b_rows, b_cols, s.ldb); }),
          ta ? a[mid_p * s.lda + mid_i] : a[mid_i * s.lda + mid_p], tb ? b[mid_j * s.ldb + mid_p] : b[mid_p * s.ldb + mid_j],
          o);

  int8_t* memory = scratch_bytes(packed_b_bytes(plan) + tiles_bytes(plan));
  const Q *packed = nullptr, *packed_low = nullptr;
  const int64_t packed_bytes =
      pack_b(plan, b, s.ldb, tb, prepared.b, memory, &packed, &packed_low, column_sums_of(prepared));
  const PlainA fill{a, s.lda, s.k, ta, prepared.a};
  run_tiles(plan, fill, packed, packed_low, dequant_of(prepared, beta, s.k), c, s.ldc, memory + packed_bytes,
            trace_sums(o.trace));
}

template <class Q>
void dynamic_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a, const float* b,
                           int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool, const Int8GemmOptions& o) {
  if (int8_gemm_without_products(m, n, k, alpha, beta, c, ldc, o)) return;
  const Plan<Q> plan = make_plan<Q>(m, n, k, pool, o);
  const auto rows = std::minmax_element(a.row_offsets, a.row_offsets + m);
  const auto depth = std::minmax_element(a.depth_offsets, a.depth_offsets + k);
  const int64_t lo = int64_t{*rows.first} + *depth.first, size = int64_t{*rows.second} + *depth.second - lo + 1;
  const float* image = a.base + lo;
  const int32_t bits_a = range_max_bits(image, size, plan.pool);
  const int32_t bits_b = matrix_max_bits(b, k, n, ldb, plan.pool);
  const float max_a = bits_to_float(bits_a), max_b = bits_to_float(bits_b);
  if (bits_a >= kInfBits || bits_b >= kInfBits) {
    fill_nan(m, n, c, ldc);
    start_trace(o.trace, m, n, max_a, max_b, true, 0);
    return;
  }
  Prepared prepared;
  prepared.columns = column_grids(o, b, k, n, ldb, false);
  prepare(&prepared, alpha, m, n, k, plan.npad, tensor_grid(o.a, max_a, [&] { return matrix_min_max(image, 1, size, size); }),
          tensor_grid(o.b, max_b, [&] { return matrix_min_max(b, k, n, ldb); }), image[size / 2],
          b[(k / 2) * ldb + n / 2], o);

  const int64_t image_bytes = align64(size * static_cast<int64_t>(sizeof(Q)) + kCopyBytes), runs_bytes = align64(k * 4);
  int8_t* memory = scratch_bytes(packed_b_bytes(plan) + image_bytes + runs_bytes + tiles_bytes(plan));
  const Q *packed = nullptr, *packed_low = nullptr;
  const int64_t packed_bytes =
      pack_b(plan, b, ldb, false, prepared.b, memory, &packed, &packed_low, column_sums_of(prepared));
  Q* q_image = reinterpret_cast<Q*>(memory + packed_bytes);
  constexpr int64_t kImageGrain = 65536;
  parallel_for(plan.pool, (size + kImageGrain - 1) / kImageGrain, 1, [&](int64_t begin, int64_t end) {
    for (int64_t piece = begin; piece < end; ++piece) {
      const int64_t t0 = piece * kImageGrain, count = std::min(kImageGrain, size - t0);
      quantize_run(prepared.a, image + t0, count, static_cast<uint64_t>(t0), 1, q_image + t0);
    }
  });
  int32_t* runs = reinterpret_cast<int32_t*>(memory + packed_bytes + image_bytes);
  const GatheredQ<Q> fill{q_image, a.row_offsets, a.depth_offsets, lo,
                          depth_runs(a.depth_offsets, k, plan.depth_block, runs)};
  run_tiles(plan, fill, packed, packed_low, dequant_of(prepared, beta, k), c, ldc,
            memory + packed_bytes + image_bytes + runs_bytes, trace_sums(o.trace));
}

}  // namespace

void int8_dynamic_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                       ThreadPool* pool, const Int8GemmOptions& o) {
  dynamic_gemm<int8_t>(s, alpha, a, b, beta, c, pool, o);
}

void int8_dynamic_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                                const Int8GemmOptions& o) {
  dynamic_gemm_gathered<int8_t>(m, n, k, alpha, a, b, ldb, beta, c, ldc, pool, o);
}

void int16_dynamic_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                        ThreadPool* pool, const Int8GemmOptions& o) {
  dynamic_gemm<int16_t>(s, alpha, a, b, beta, c, pool, o);
}

void int16_dynamic_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool,
                                 const Int8GemmOptions& o) {
  dynamic_gemm_gathered<int16_t>(m, n, k, alpha, a, b, ldb, beta, c, ldc, pool, o);
}

void release_int8_gemm_scratch() { thread_scratch_block() = Tensor(); }

int64_t int8_gemm_scratch_bytes() {
  const Tensor& block = thread_scratch_block();
  return block.defined() ? static_cast<int64_t>(block.bytes()) : 0;
}

}  // namespace rg
