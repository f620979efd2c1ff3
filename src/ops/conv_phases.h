// A strided convolution's adjoint (its input gradient, and a transposed convolution's forward, at
// any stride) as one stride-1 product per output phase, read straight from the padded source, with no patch
// matrix. Output pixel (i, j) of the adjoint takes taps kh = (i + pad) mod S + S t only (and kw
// alike): the S x S phases (a, b) = ((i + pad) mod S, (j + pad) mod S) are each a convolution
// with (K / S)^2 taps over the source, so the adjoint is S^2 gathered GEMMs of depth
// (K / S)^2 x F, each written to a phase buffer and copied into its pixels. im2col's route
// instead writes a patch matrix K^2 / S^2 times the size of the output (dcgan's 7x7x128 ->
// 14x14x64: 200 KB a sample) and col2im adds it back (the Xeon, 64 samples: 8.3 ms against 7.7
// at avx512, 16.3 against 12.3 at avx2).
// Applies where the kernel is a multiple of the stride (every phase has the same taps) and the
// output has channels enough to fill a tile's columns (kMinPhaseChannels).
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "ops/im2col.h"

namespace rg {

// Where w(kh, kw, c, f) lies in a layer's weight: base[(kh * K + kw) * tap + c * dst + f * src],
// c a channel of the adjoint's output (the convolution's image), f one of its source (the filters).
struct ConvWeightLayout {
  int64_t tap, dst, src;
};

class ConvPhases {
 public:
  ConvPhases() = default;
  // g: the convolution whose adjoint this is: image [H, W, C] -> patches [Ho, Wo] of `filters`.
  ConvPhases(const ConvGeometry& g, int64_t filters);
  static bool fits(const ConvGeometry& g, int64_t filters);

  int64_t weight_elements() const { return g_.kernel * g_.kernel * g_.channels * filters_; }
  int64_t scratch_per_sample() const;  // the padded source and the largest phase's output
  // phase_weights [S * S][(K/S)^2 * F x C] from the layer's weight.
  void transform_weight(const float* w, ConvWeightLayout layout, float* phase_weights) const;
  // dst [count, H, W, C] = the adjoint of src [count, Ho, Wo, F]; scratch: count * scratch_per_sample().
  void run(ThreadPool* pool, int64_t count, const float* src, const float* phase_weights, float* dst, float* scratch);

 private:
  struct Phase {
    int64_t a, b;        // (i + pad) mod S, (j + pad) mod S
    int64_t i0, j0;      // its first output row and column
    int64_t rows, cols;  // its grid in each image
    std::vector<int32_t> pixels;  // per output pixel of `count_` images: its first tap in the padded source
  };
  int64_t taps_per_side() const { return g_.kernel / g_.stride; }
  void prepare(int64_t count);
  void pad_source(ThreadPool* pool, int64_t count, const float* src, float* padded) const;
  void copy_out(ThreadPool* pool, int64_t count, const Phase& phase, const float* out, float* dst) const;

  ConvGeometry g_;
  int64_t filters_ = 0;
  int64_t padded_h_ = 0, padded_w_ = 0;  // the source with T - 1 zero rows and columns before, enough after
  std::vector<int32_t> taps_;            // (th, tw, f): offset from a pixel's first tap
  std::vector<Phase> phases_;
  int64_t count_ = 0;  // images the pixel offsets are for (at most)
};

}  // namespace rg
