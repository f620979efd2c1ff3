// Winograd F(4x4, 3x3) convolution (ops/winograd_conv.h): the weight's transforms (once a call)
// in blocks of filters with the Kronecker product of G, the blocks on the kernel table's
// transforms and tiles.
#include "ops/winograd_conv.h"

#include <algorithm>
#include <cstring>

#include "base/int_math.h"
#include "cpu/kernel_tables.h"
#include "ops/float4.h"

namespace rg {

namespace {
// Blocks run in at most this many lanes at once (the most threads that share one chunk).
constexpr int64_t kWinogradLanes = 16;
// A lane's scratch (V and M of one block) in floats: 256 KB, so it stays in L2 between the
// transforms and the GEMMs on the CPUs this runs on (an Athlon 64 X2's L2 is 512 KB), and the
// 16 lanes take a few MB of workspace (a block is at least 12 tiles: more for many channels).
constexpr int64_t kWinogradLaneFloats = int64_t{1} << 16;
// The weight gradient's lanes: lane l sums the chunk's tiles [l T / L, (l + 1) T / L) into its own
// M, and the lanes' M are added in order at the end (add_lanes). L depends on the chunk's
// tiles only (each lane at least one full round), never on the threads, so neither do the bits;
// where the threads divide L each thread runs whole lanes and no transform crosses cores (one
// round's sums read every tile's transforms: at 4 threads 3/4 of them were other cores' writes,
// and cnn's weight gradients ran 2.1-2.3x faster than at 1 thread where its forward ran 3.0-3.2x).
// Each lane's M (up to 590 KB) is its own scratch: 4 lanes, not 16 (16 lanes' M went through
// the cache each block: 1.2-1.8x slower at 1 thread on the VM).
constexpr int64_t kWinogradGradLanes = 4;
// The lanes' M together at most this many floats (4 MB: 64 x 64 channels' 590 KB takes 4 lanes,
// 128 x 128's 2.4 MB one), so a wide layer's weight gradient does not take 4 times its M.
constexpr int64_t kWinogradGradLanesFloats = int64_t{1} << 20;
// A lane's rounds: at most this many blocks' tiles (V and D about 0.9 MB, so a lane's round and
// its M stay in the 2 MB L2 of the Xeon the project measures on: in one round of all lanes, 16
// blocks, conv2's dW of cnn (28x28, 32 -> 32, 64 samples) at 1 thread took 10.8-10.9 ms against
// 8.2-8.5 at 8 and 6.3-6.8 at 4; in 4 lanes, rounds of 8 blocks ran cnn's three at 4 threads in
// 3.70 / 1.60 / 2.92 ms, of 4 in 2.57 / 1.51 / 2.31 (medians of 5, bench/winograd_bench.cpp)).
constexpr int64_t kWinogradGradRoundBlocks = 4;
// The input transform asks for the pixels of the tile this many ahead (from memory: the images
// are megabytes, read a 6x6 block at a time; the transform waited on their loads).
constexpr int64_t kPrefetchTiles = 2;
// Block sizes are multiples of this (the f32 tiles' MR: 6, 8, 12, 16 divide 48 or 12).
constexpr int64_t kWinogradBlockStep = 12;
}  // namespace

WinogradConv::WinogradConv(const ConvGeometry& g, int64_t filters)
    : g_(g), filters_(filters), padded_filters_(round_up(filters, int64_t{32})) {
  tiles_h_ = ceil_div(g.out_h, int64_t{kWinogradTile});
  tiles_w_ = ceil_div(g.out_w, int64_t{kWinogradTile});
  const int64_t per_tile = kWinogradPoints * (g.channels + filters);
  block_tiles_ = std::max(kWinogradBlockStep, kWinogradLaneFloats / per_tile / kWinogradBlockStep * kWinogradBlockStep);
  channel_offsets_.resize(static_cast<size_t>(g.channels));
  for (int64_t ch = 0; ch < g.channels; ++ch) channel_offsets_[static_cast<size_t>(ch)] = static_cast<int32_t>(ch);
  tile_offsets_.resize(static_cast<size_t>(kWinogradGradRoundBlocks * block_tiles_));
  for (size_t t = 0; t < tile_offsets_.size(); ++t) tile_offsets_[t] = static_cast<int32_t>(static_cast<int64_t>(t) * g.channels);
}

int64_t WinogradConv::lanes(int64_t count) const {
  return std::min(kWinogradLanes, ceil_div(count * tiles_per_sample(), block_tiles_));
}

// V [36][block][c], M [36][block][filters] (positions position_stride apart), a zero row of c
// (the pixels in the padding or past the image).
int64_t WinogradConv::lane_elements() const {
  return kWinogradPoints * (position_stride(block_tiles_, g_.channels) + position_stride(block_tiles_, filters_)) +
         g_.channels;
}

namespace {
// (G (x) G)[xi][tap] = G[xi / 6][tap / 3] G[xi % 6][tap % 3]: U = G g G^T as one product of
// the 9 taps, and dW = G^T M G as its transpose's.
struct KroneckerG {
  float at[kWinogradPoints][9];
  KroneckerG() {
    for (int xi = 0; xi < kWinogradPoints; ++xi)
      for (int tap = 0; tap < 9; ++tap) at[xi][tap] = kWinogradG[xi / 6][tap / 3] * kWinogradG[xi % 6][tap % 3];
  }
};
const KroneckerG kGG;
}  // namespace

// The weight's transforms, U [36][c][fp] from W [9][c][f] and dW [9][c][f] back from M
// [36][c][fp]: each value a product, then a sum, the terms in order from 0 (or from beta dW), as
// the device's f32_winograd_weight and _weight_grad compute them, so the bits are the same at
// every level (a GEMM's fused multiply-adds at the FMA levels moved resnet20's device-against-CPU
// test past its tolerance). A channel's filters go in blocks of kWeightBlock, each block's sums in
// Float4 registers (ops/float4.h: each lane's product and sum are IEEE's, so the bits are
// scalar code's). Blocks of 8
// copied out by a library call ran at ~1 GMAC/s on the VM (1.4 ms for cnn's conv4, a third of its
// weight gradient, once a chunk); plain loops over 16 floats the baseline build's vectoriser cut
// into pieces of 4, 1, 4, 4, 2 and 1. A block past the filters reads zero-padded copies of its rows.
constexpr int64_t kWeightBlock = 16, kWeightVectors = kWeightBlock / 4;

// acc[j] lane q += the sum over t < terms, in order, of coef[t * coef_step] rows[t][4 j + q].
inline void add_weighted_block(int terms, const float* coef, int coef_step, const float* const* rows, Float4* acc) {
  for (int t = 0; t < terms; ++t) {
    const float k = coef[t * coef_step];
    for (int64_t j = 0; j < kWeightVectors; ++j) {
      acc[j] += k * load_float4(rows[t] + 4 * j);
    }
  }
}

// The kWeightBlock floats from `row` on: `row` itself where the block holds n == kWeightBlock of
// them, else a copy of its n in `padded`, zeros after (a block at or past the last filter).
inline const float* block_row(const float* row, int64_t n, float* padded) {
  if (n == kWeightBlock) return row;
  std::fill(std::copy(row, row + n, padded), padded + kWeightBlock, 0.0f);
  return padded;
}

// u[xi][ch][k] = sum over the 9 taps of (G (x) G)[xi][tap] w[tap][ch][k], columns past the
// filters zero (their taps read as zeros); channels over the pool.
void WinogradConv::transform_weight(ThreadPool* pool, const float* w, float* u) const {
  const int64_t c = g_.channels, f = filters_, fp = padded_filters_;
  parallel_for(pool, c, 1, [&](int64_t c0, int64_t c1) {
    float padded[9][kWeightBlock];
    Float4 acc[kWeightVectors];
    const float* taps[9];
    for (int64_t ch = c0; ch < c1; ++ch) {
      for (int64_t k0 = 0; k0 < fp; k0 += kWeightBlock) {  // fp: a multiple of the block
        const int64_t n = std::max<int64_t>(0, std::min(kWeightBlock, f - k0));
        for (int tap = 0; tap < 9; ++tap) taps[tap] = block_row(w + (tap * c + ch) * f + k0, n, padded[tap]);
        for (int xi = 0; xi < kWinogradPoints; ++xi) {
          for (Float4& a : acc) a = Float4{};
          add_weighted_block(9, &kGG.at[xi][0], 1, taps, acc);
          std::memcpy(u + (xi * c + ch) * fp + k0, acc, sizeof acc);
        }
      }
    }
  });
}

// dw[tap][ch][k] = beta dw + sum over xi of (G (x) G)[xi][tap] m[xi][ch][k]; channels over the
// pool. M's columns past the filters are not read (weight_grad leaves them unwritten).
void WinogradConv::transform_back(ThreadPool* pool, const float* m, float beta, float* dw) const {
  const int64_t c = g_.channels, f = filters_, fp = padded_filters_;
  parallel_for(pool, c, 1, [&](int64_t c0, int64_t c1) {
    Float4 acc[kWeightVectors];
    float start[kWeightBlock], padded[kWinogradPoints][kWeightBlock];
    const float* points[kWinogradPoints];
    for (int64_t ch = c0; ch < c1; ++ch)
      for (int64_t k0 = 0; k0 < f; k0 += kWeightBlock) {
        const int64_t n = std::min(kWeightBlock, f - k0);
        for (int xi = 0; xi < kWinogradPoints; ++xi) points[xi] = block_row(m + (xi * c + ch) * fp + k0, n, padded[xi]);
        for (int tap = 0; tap < 9; ++tap) {
          float* row = dw + (tap * c + ch) * f + k0;
          for (int64_t q = 0; q < kWeightBlock; ++q)
            start[q] = q >= n || beta == 0.0f ? 0.0f : beta == 1.0f ? row[q] : beta * row[q];
          std::memcpy(acc, start, sizeof acc);
          add_weighted_block(kWinogradPoints, &kGG.at[0][tap], 9, points, acc);
          std::memcpy(row, acc, static_cast<size_t>(n) * sizeof(float));
        }
      }
  });
}

// Lane l takes tiles [l T / L, (l + 1) T / L) in blocks of at most block_tiles_: the lanes end
// together. No result depends on the lanes or the blocks (each tile's sums are its own), so
// there are as many lanes as threads (at most lanes(count)): a lane's tiles go in whole blocks
// but its last (16 lanes on one thread each ended in a short block: cnn's chunks of 18 samples
// in blocks of 24, 24 and 7 tiles). A chunk of lanes [l0, l1) runs on one thread in lane l0's
// scratch, which stays in its L2.
void WinogradConv::run(ThreadPool* pool, int64_t count, const float* images, const float* u, float* y,
                       float* scratch) const {
  const int64_t threads = pool != nullptr ? pool->threads() : 1;
  const int64_t tiles = count * tiles_per_sample(), lane_count = std::min(lanes(count), threads);
  parallel_for(pool, lane_count, 1, [&](int64_t l0, int64_t l1) {
    float* lane_scratch = scratch + l0 * lane_elements();
    for (int64_t lane = l0; lane < l1; ++lane) {
      const int64_t end = (lane + 1) * tiles / lane_count;
      for (int64_t t = lane * tiles / lane_count; t < end; t += block_tiles_) {
        run_block(t, std::min(end, t + block_tiles_), images, u, y, lane_scratch);
      }
    }
  });
}

void WinogradConv::input_rows(int64_t t, const float* images, const float* zero, const float** d) const {
  const int64_t s = t / tiles_per_sample(), in_sample = t % tiles_per_sample(), c = g_.channels;
  const int64_t y0 = in_sample / tiles_w_ * kWinogradTile - g_.pad, x0 = in_sample % tiles_w_ * kWinogradTile - g_.pad;
  const int64_t h = g_.height, w = g_.width;
  const float* image = images + s * h * w * c;
  for (int i = 0; i < kWinogradInput; ++i)
    for (int j = 0; j < kWinogradInput; ++j) {
      const int64_t y = y0 + i, x = x0 + j;
      d[i * 6 + j] = y >= 0 && y < h && x >= 0 && x < w ? image + (y * w + x) * c : zero;
    }
}

template <class T>
void WinogradConv::output_rows(int64_t t, T* images, int64_t row, T** out) const {
  const int64_t s = t / tiles_per_sample(), in_sample = t % tiles_per_sample();
  const int64_t y0 = in_sample / tiles_w_ * kWinogradTile, x0 = in_sample % tiles_w_ * kWinogradTile;
  T* image = images + s * g_.patches() * row;
  for (int i = 0; i < kWinogradTile; ++i)
    for (int j = 0; j < kWinogradTile; ++j)
      out[i * 4 + j] = y0 + i < g_.out_h && x0 + j < g_.out_w ? image + ((y0 + i) * g_.out_w + x0 + j) * row : nullptr;
}

namespace {
// Asks the cache for the `floats` floats at each of `rows` (null: none).
void prefetch_rows(const float* const* rows, int count, int64_t floats) {
  for (int i = 0; i < count; ++i)
    for (int64_t k = 0; rows[i] != nullptr && k < floats; k += 16) __builtin_prefetch(rows[i] + k);
}

// use(t, rows) for tiles t in [0, n) in order, their row pointers (Count a tile) made by
// fill(t, rows) kPrefetchTiles tiles ahead of their use, each once; fill asks the cache for them.
template <int Count, class Fill, class Use>
void over_tiles_ahead(int64_t n, const Fill& fill, const Use& use) {
  constexpr int64_t kRing = kPrefetchTiles + 1;
  const float* ring[kRing][Count];
  for (int64_t t = 0; t < std::min(n, kPrefetchTiles); ++t) fill(t, ring[t]);
  for (int64_t t = 0; t < n; ++t) {
    if (t + kPrefetchTiles < n) fill(t + kPrefetchTiles, ring[(t + kPrefetchTiles) % kRing]);
    use(t, ring[t % kRing]);
  }
}
}  // namespace

void WinogradConv::run_block(int64_t t0, int64_t t1, const float* images, const float* u, float* y,
                             float* lane) const {
  const int64_t nt = t1 - t0, c = g_.channels, f = filters_;
  const int64_t v_stride = position_stride(block_tiles_, c), m_stride = position_stride(block_tiles_, f);
  float* v = lane;
  float* m = v + kWinogradPoints * v_stride;
  float* zero = m + kWinogradPoints * m_stride;
  std::fill(zero, zero + c, 0.0f);
  const F32WinogradKernels& transforms = f32_winograd_kernels(active_isa());
  over_tiles_ahead<kWinogradPoints>(
      nt,
      [&](int64_t t, const float** d) {
        input_rows(t0 + t, images, zero, d);
        prefetch_rows(d, kWinogradPoints, c);
      },
      [&](int64_t t, const float* const* d) { transforms.input(c, d, v + t * c, v_stride); });
  // M[xi] [nt x f] = V[xi] [nt x c] * U[xi] [c x f]; rows past nt repeat the last (not stored).
  const F32GemmKernel& gemm = f32_gemm_kernel_for(active_isa(), f);
  const float* rows[kF32GemmMaxMr];
  for (int xi = 0; xi < kWinogradPoints; ++xi) {
    const float* vx = v + xi * v_stride;
    for (int64_t jr = 0; jr < f; jr += gemm.nr) {
      for (int64_t ir = 0; ir < nt; ir += gemm.mr) {
        const int64_t live = std::min<int64_t>(gemm.mr, nt - ir);
        for (int64_t r = 0; r < gemm.mr; ++r) rows[r] = vx + (ir + std::min(r, live - 1)) * c;
        gemm.gathered_tile(c, rows, channel_offsets_.data(), u + xi * c * padded_filters_ + jr, padded_filters_, 1.0f,
                           0.0f, m + xi * m_stride + ir * f + jr, f, live, std::min<int64_t>(gemm.nr, f - jr));
      }
    }
  }
  float* out[kWinogradTile * kWinogradTile];
  for (int64_t t = 0; t < nt; ++t) {
    output_rows(t0 + t, y, f, out);
    transforms.output(f, m + t * f, m_stride, out);
  }
}

// ---------------------------------------------------------------- the weight gradient

WinogradConv::GradPlan WinogradConv::grad_plan(int64_t count) const {
  const int64_t tiles = count * tiles_per_sample(), full_round = kWinogradGradRoundBlocks * block_tiles_;
  GradPlan plan;
  plan.lanes = std::clamp<int64_t>(std::min(tiles / full_round, kWinogradGradLanesFloats / weight_elements()), 1,
                                   kWinogradGradLanes);
  plan.round = std::max<int64_t>(1, std::min(full_round, ceil_div(tiles, plan.lanes)));
  plan.v_stride = position_stride(plan.round, g_.channels);
  plan.d_stride = position_stride(plan.round, padded_filters_);
  plan.round_floats = kWinogradPoints * (plan.v_stride + plan.d_stride);
  plan.rounds = ceil_div(ceil_div(tiles, plan.lanes), plan.round);
  return plan;
}

// Lane `lane`'s round k: its tiles [first, end) of the chunk (none past the lane's last round),
// V [36][round][c] and D [36][round][padded filters] in lane `slot`'s part of the scratch, and
// its M [36][c][padded filters]. The scratch: every lane's V and D, then every lane's M.
WinogradConv::GradRound WinogradConv::grad_round(const GradPlan& plan, int64_t count, int64_t lane, int64_t k,
                                                 int64_t slot, float* scratch) const {
  const int64_t tiles = count * tiles_per_sample(), lane_end = (lane + 1) * tiles / plan.lanes;
  GradRound r;
  r.first = std::min(lane_end, lane * tiles / plan.lanes + k * plan.round);
  r.end = std::min(lane_end, r.first + plan.round);
  r.v = scratch + slot * plan.round_floats;
  r.dt = r.v + kWinogradPoints * plan.v_stride;
  r.m = scratch + plan.lanes * plan.round_floats + lane * weight_elements();
  return r;
}

// The round's tiles [t0, t1) (of the chunk) into its V and D at rows t0 - first on: every
// position's rows of the whole round lie together, so one tile call sums them all (grad_sums).
void WinogradConv::grad_transforms(const GradPlan& plan, const GradRound& r, int64_t t0, int64_t t1,
                                   const float* images, const float* dy, const float* zero) const {
  const int64_t c = g_.channels, fp = padded_filters_, at = t0 - r.first;
  const F32WinogradKernels& transforms = f32_winograd_kernels(active_isa());
  constexpr int kDyRows = kWinogradTile * kWinogradTile;  // after the tile's 36 input rows
  over_tiles_ahead<kWinogradPoints + kDyRows>(
      t1 - t0,
      [&](int64_t t, const float** rows) {
        input_rows(t0 + t, images, zero, rows);
        output_rows(t0 + t, dy, filters_, rows + kWinogradPoints);
        prefetch_rows(rows, kWinogradPoints, c);
        prefetch_rows(rows + kWinogradPoints, kDyRows, filters_);
      },
      [&](int64_t t, const float* const* rows) {
        transforms.input(c, rows, r.v + (at + t) * c, plan.v_stride);
        transforms.grad(filters_, rows + kWinogradPoints, r.dt + (at + t) * fp, plan.d_stride);
      });
}

// Units [u0, u1) of the round's sums (unit: position xi, MR channels): m[xi] [c x fp] (+)=
// V[xi]^T [c x round tiles] * D[xi] [round tiles x fp], one tile call per (unit, NR filters),
// the round's tiles its depth (its sums in registers, M read and written once a round).
void WinogradConv::grad_sums(const GradPlan& plan, const GradRound& r, bool first_round, int64_t u0,
                             int64_t u1) const {
  const int64_t c = g_.channels, fp = padded_filters_, f = filters_;
  const F32GemmKernel& gemm = f32_gemm_kernel_for(active_isa(), f);
  const int64_t groups = grad_sum_units() / kWinogradPoints;
  const float* rows[kF32GemmMaxMr];
  for (int64_t unit = u0; unit < u1; ++unit) {
    const int64_t xi = unit / groups, r0 = unit % groups * gemm.mr, live = std::min<int64_t>(gemm.mr, c - r0);
    const float* vx = r.v + xi * plan.v_stride;
    for (int64_t row = 0; row < gemm.mr; ++row) rows[row] = vx + r0 + std::min(row, live - 1);
    for (int64_t jr = 0; jr < f; jr += gemm.nr) {
      gemm.gathered_tile(r.end - r.first, rows, tile_offsets_.data(), r.dt + xi * plan.d_stride + jr, fp, 1.0f,
                         first_round ? 0.0f : 1.0f, r.m + (xi * c + r0) * fp + jr, fp, live,
                         std::min<int64_t>(gemm.nr, f - jr));
    }
  }
}

int64_t WinogradConv::grad_sum_units() const {
  return kWinogradPoints * ceil_div(g_.channels, int64_t{f32_gemm_kernel_for(active_isa(), filters_).mr});
}

namespace {
// part(lane, lo, hi) for each lane's share [lo, hi) of [i0, i1), a range over lanes of `each`
// items apiece (a pool's chunk of the lanes' items side by side).
template <class Part>
void over_lane_parts(int64_t i0, int64_t i1, int64_t each, const Part& part) {
  for (int64_t lane = i0 / each; lane * each < i1; ++lane)
    part(lane, std::max(i0 - lane * each, int64_t{0}), std::min(i1 - lane * each, each));
}

// m[i] = the sum in order of the lanes' m[i] (lane l's `floats` floats from m + l floats on), in
// ranges of i over the pool: a pass in memory's order (transform_back read the lanes' rows 16 KB
// apart, which no prefetcher follows: 3x its time at 4 lanes).
void add_lanes(ThreadPool* pool, float* m, int64_t lanes, int64_t floats) {
  if (lanes == 1) return;
  parallel_for(pool, floats, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t lane = 1; lane < lanes; ++lane) {
      const float* part = m + lane * floats;
      for (int64_t i = i0; i < i1; ++i) m[i] += part[i];
    }
  });
}
}  // namespace

// Threads that divide the lanes run whole lanes, each round's transforms then its sums on one
// thread, a thread's lanes in one V and D (which stay in its L2: with each lane's own, every
// round's transforms wrote lines the L2 had let go, cnn's weight gradients 14-24% slower at 1
// thread). Other thread counts run the lanes' k-th rounds together: their transforms over the
// pool by tile, then their sums by (lane, position, channel group). Both make the same rounds and
// sums. Then dw[tap][ch][k] = beta dw + sum over xi of (G (x) G)[xi][tap] M[xi][ch][k], M the
// lanes' added in order.
void WinogradConv::weight_grad(ThreadPool* pool, int64_t count, const float* images, const float* dy, float beta,
                               float* dw, float* scratch) const {
  const GradPlan plan = grad_plan(count);
  const int64_t units = grad_sum_units();
  float* zero = scratch + plan.lanes * (plan.round_floats + weight_elements());
  std::fill(zero, zero + g_.channels, 0.0f);
  if (plan.lanes % (pool != nullptr ? pool->threads() : 1) == 0) {
    parallel_for(pool, plan.lanes, 1, [&](int64_t l0, int64_t l1) {
      for (int64_t lane = l0; lane < l1; ++lane)
        for (int64_t k = 0; k < plan.rounds; ++k) {
          const GradRound r = grad_round(plan, count, lane, k, l0, scratch);
          grad_transforms(plan, r, r.first, r.end, images, dy, zero);
          if (r.end > r.first) grad_sums(plan, r, k == 0, 0, units);
        }
    });
  } else {
    for (int64_t k = 0; k < plan.rounds; ++k) {
      parallel_for(pool, plan.lanes * plan.round, 1, [&](int64_t i0, int64_t i1) {
        over_lane_parts(i0, i1, plan.round, [&](int64_t lane, int64_t lo, int64_t hi) {
          const GradRound r = grad_round(plan, count, lane, k, lane, scratch);
          grad_transforms(plan, r, std::min(r.end, r.first + lo), std::min(r.end, r.first + hi), images, dy, zero);
        });
      });
      parallel_for(pool, plan.lanes * units, 1, [&](int64_t i0, int64_t i1) {
        over_lane_parts(i0, i1, units, [&](int64_t lane, int64_t lo, int64_t hi) {
          const GradRound r = grad_round(plan, count, lane, k, lane, scratch);
          if (r.end > r.first) grad_sums(plan, r, k == 0, lo, hi);
        });
      });
    }
  }
  float* m = grad_round(plan, count, 0, 0, 0, scratch).m;
  add_lanes(pool, m, plan.lanes, weight_elements());
  transform_back(pool, m, beta, dw);
}

}  // namespace rg
