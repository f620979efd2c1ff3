// 3x3 stride-1 convolutions by Winograd F(4x4, 3x3) in f32 (ukernels/f32_winograd.h), over
// NHWC images as they are: a tile's pixels in the padding (or past the image) read a zero row.
// (A padded copy, as the gathered GEMM reads, cost a pass over the images and their size again:
// cnn's Winograd layers at avx512 ~5% faster without it, the transforms' reads prefetched.)
// The output is cut into 4x4 tiles, counted over the chunk's samples and cut into blocks of
// tiles; per block: the input transform V [36][tiles][c], one GEMM per position
// M[xi] [tiles x filters] = V[xi] [tiles x c] * U[xi] [c x filters] on the kernel table's
// gathered tiles (V's rows read in place), and the output transform into y. Blocks are shared
// over the pool in lanes (as many as threads), each thread's in one scratch; every output is
// computed the same way whatever the lane or thread, so results do not depend on the thread count.
// Multiplies per output: 36 c filters / 16 against the direct convolution's 9 c filters
// (4x fewer where the output's sides are multiples of 4; partial edge tiles waste some).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/ukernels/f32_winograd.h"

#include "base/thread_pool.h"
#include "ops/im2col.h"

namespace rg {

class WinogradConv {
 public:
  // Whether Winograd F(4x4, 3x3) computes this convolution: a 3x3 kernel at stride 1.
  static bool fits(const ConvGeometry& g) { return g.kernel == 3 && g.stride == 1; }

  WinogradConv() = default;
  // For a convolution of `g` (fits(g)) with `filters` outputs per pixel.
  WinogradConv(const ConvGeometry& g, int64_t filters);

  const ConvGeometry& geometry() const { return g_; }
  // The flops run() (or weight_grad()) does for one sample, a multiply-add counted as 2, partial
  // edge tiles whole: per tile 36 c filters multiply-adds and the transforms of c input channels
  // and of the filters' outputs (or dy's). The weight's transforms (once a call) are not counted.
  int64_t executed_flops_per_sample(bool weight_grad) const {
    const int64_t c = g_.channels, f = filters_;
    return tiles_per_sample() * (2 * kWinogradPoints * c * f + kWinogradInputFlops * c +
                                 (weight_grad ? kWinogradGradFlops : kWinogradOutputFlops) * f);
  }
  // Floats of the transformed weight U [36][c][filters rounded up to 32].
  int64_t weight_elements() const { return 36 * g_.channels * padded_filters_; }
  // Floats of scratch that run() takes for a chunk of `count` samples (lanes x their blocks).
  int64_t scratch_elements(int64_t count) const { return lanes(count) * lane_elements(); }

  // u = the transforms G g G^T of w [3 * 3 * c, filters] (Conv2D's weight layout), columns past
  // `filters` zero; channels over the pool.
  void transform_weight(ThreadPool* pool, const float* w, float* u) const;
  // dw [3 * 3 * c, filters] = beta dw + G^T m G for each filter, m [36][c][filters rounded up to
  // 32] the positions' sums (weight_grad's last step); channels over the pool. Both transforms
  // sum each value's terms in order, a product then a sum (the device's bits).
  void transform_back(ThreadPool* pool, const float* m, float beta, float* dw) const;
  // y [count, out_h, out_w, filters] = the convolution of images [count, h, w, c] (zero padded by g's pad)
  // with the weight u holds.
  void run(ThreadPool* pool, int64_t count, const float* images, const float* u, float* y, float* scratch) const;

  // dw [3 * 3 * c, filters] = beta * dw + the weight gradient of that convolution whose output
  // gradient is dy [count, out_h, out_w, filters]: G^T (sum over tiles of (B^T d B) (.) (A dy A^T)) G.
  // The chunk's tiles in up to 4 lanes (by count and shape, never by threads; their M at most 4
  // MB together), each summing its tiles into its own M in rounds of up to 4 blocks' tiles: a
  // round's transforms, then the 36 positions' sums over the round's tiles in order; the lanes' M
  // added in order, then G^T M G over the pool by channel. No result depends on the thread count.
  void weight_grad(ThreadPool* pool, int64_t count, const float* images, const float* dy, float beta, float* dw,
                   float* scratch) const;
  // Floats of scratch weight_grad takes for a chunk of `count` samples.
  int64_t weight_grad_scratch_elements(int64_t count) const {
    const GradPlan plan = grad_plan(count);
    return plan.lanes * (plan.round_floats + weight_elements()) + g_.channels;
  }

 private:
  int64_t tiles_per_sample() const { return tiles_h_ * tiles_w_; }
  int64_t lanes(int64_t count) const;
  int64_t lane_elements() const;
  // Floats between two positions' rows in V, M (a block's) or D (weight_grad's round): `rows` of
  // `width` floats and 16 more, so that positions 4 KB multiples apart (12 KB at 24 tiles of 32,
  // 24 KB at 192) do not all fall in one set of the L1: the transforms' stores thrashed it
  // (weight_grad 1.9x slower than with the pad).
  static int64_t position_stride(int64_t round, int64_t width) { return round * width + 16; }
  // Tiles [t0, t1) of the chunk (tile t: sample t / tiles_per_sample, row-major in it).
  void run_block(int64_t t0, int64_t t1, const float* images, const float* u, float* y, float* lane) const;
  // The 36 input pointers of tile t (the zero row where a pixel is padding or past the image), its 16 output pointers
  // into an image of `row` floats a pixel (null past the output).
  void input_rows(int64_t t, const float* images, const float* zero, const float** d) const;
  template <class T>
  void output_rows(int64_t t, T* image, int64_t row, T** out) const;
  // weight_grad's plan for a chunk: its lanes (a lane: a range of the chunk's tiles summed into
  // its own M), the tiles of a lane's round (its sums' depth), the most rounds a lane has, the
  // positions' strides in a round's V and D, and their floats together.
  struct GradPlan {
    int64_t lanes = 1, round = 1, rounds = 0, v_stride = 0, d_stride = 0, round_floats = 0;
  };
  // One lane's round: its tiles [first, end) of the chunk and its V, D and M in the scratch.
  struct GradRound {
    int64_t first = 0, end = 0;
    float *v = nullptr, *dt = nullptr, *m = nullptr;
  };
  GradPlan grad_plan(int64_t count) const;
  GradRound grad_round(const GradPlan& plan, int64_t count, int64_t lane, int64_t k, int64_t slot,
                       float* scratch) const;
  // weight_grad's steps: tiles [t0, t1) of a round into its V and D; units [u0, u1) of its sums
  // (a unit: a position and MR channels) into its M.
  void grad_transforms(const GradPlan& plan, const GradRound& r, int64_t t0, int64_t t1, const float* images,
                       const float* dy, const float* zero) const;
  void grad_sums(const GradPlan& plan, const GradRound& r, bool first_round, int64_t u0, int64_t u1) const;
  // A round's sums' units: the 36 positions times the channels' groups of the tile's MR.
  int64_t grad_sum_units() const;

  ConvGeometry g_;
  int64_t filters_ = 0, padded_filters_ = 0;
  int64_t tiles_h_ = 0, tiles_w_ = 0, block_tiles_ = 0;
  std::vector<int32_t> channel_offsets_;  // 0 .. c - 1: V's rows read as a gathered A
  std::vector<int32_t> tile_offsets_;     // t c for t < a round's tiles: V's columns, weight_grad's A
};

}  // namespace rg
