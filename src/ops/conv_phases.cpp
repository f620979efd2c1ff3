// A strided convolution's adjoint by output phases (ops/conv_phases.h).
// Phase (a, b)'s output pixel (i, j) has o0 = (i + pad - a) / S; its tap t counted from the kernel's
// end (kh = a + S (T - 1 - th), th = 0..T-1) reads source row o0 - (T - 1 - th), which is padded
// row o0 + th once the source has T - 1 zero rows before it. So a pixel's taps start at padded
// (o0(i), o0(j)) and run over a T x T window of all F channels: a gathered GEMM's row.
#include "ops/conv_phases.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "ops/gemm.h"

namespace rg {

namespace {

// Fewer output channels than this leave most of a GEMM tile's columns idle (dcgan's last layer,
// one channel): im2col's route, whose product is K^2 C wide, serves those better.
constexpr int64_t kMinPhaseChannels = 16;

int64_t first_in_phase(int64_t phase, int64_t pad, int64_t stride) { return ((phase - pad) % stride + stride) % stride; }

int64_t count_from(int64_t first, int64_t size, int64_t stride) {
  return first < size ? (size - first + stride - 1) / stride : 0;
}

}  // namespace

bool ConvPhases::fits(const ConvGeometry& g, int64_t filters) {
  return g.stride >= 1 && g.kernel % g.stride == 0 && g.channels >= kMinPhaseChannels && filters >= 1;
}

ConvPhases::ConvPhases(const ConvGeometry& g, int64_t filters) : g_(g), filters_(filters) {
  RG_CHECK(fits(g, filters), "conv phases: a " << g.kernel << "x" << g.kernel << " kernel at stride " << g.stride
                                               << " over " << g.channels << " channels");
  const int64_t s = g.stride, t = taps_per_side(), pad_before = t - 1;
  padded_h_ = std::max(pad_before + g.out_h, (g.height - 1 + g.pad) / s + t);
  padded_w_ = std::max(pad_before + g.out_w, (g.width - 1 + g.pad) / s + t);
  for (int64_t th = 0; th < t; ++th)
    for (int64_t tw = 0; tw < t; ++tw)
      for (int64_t f = 0; f < filters_; ++f) taps_.push_back(static_cast<int32_t>((th * padded_w_ + tw) * filters_ + f));
  for (int64_t a = 0; a < s; ++a)
    for (int64_t b = 0; b < s; ++b) {
      Phase p{a, b, first_in_phase(a, g.pad, s), first_in_phase(b, g.pad, s), 0, 0, {}};
      p.rows = count_from(p.i0, g.height, s);
      p.cols = count_from(p.j0, g.width, s);
      phases_.push_back(std::move(p));
    }
}

int64_t ConvPhases::scratch_per_sample() const {
  int64_t largest = 0;
  for (const Phase& p : phases_) largest = std::max(largest, p.rows * p.cols);
  return padded_h_ * padded_w_ * filters_ + largest * g_.channels;
}

void ConvPhases::transform_weight(const float* w, ConvWeightLayout layout, float* phase_weights) const {
  const int64_t k = g_.kernel, s = g_.stride, t = taps_per_side(), c_count = g_.channels;
  for (const Phase& p : phases_) {
    float* out = phase_weights + (p.a * s + p.b) * t * t * filters_ * c_count;
    for (int64_t th = 0; th < t; ++th)
      for (int64_t tw = 0; tw < t; ++tw) {
        const float* tap = w + ((p.a + s * (t - 1 - th)) * k + p.b + s * (t - 1 - tw)) * layout.tap;
        float* rows = out + (th * t + tw) * filters_ * c_count;
        for (int64_t f = 0; f < filters_; ++f)
          for (int64_t c = 0; c < c_count; ++c) rows[f * c_count + c] = tap[c * layout.dst + f * layout.src];
      }
  }
}

// The pixel offsets run image by image: those of `count_` images serve any fewer (a last chunk).
void ConvPhases::prepare(int64_t count) {
  if (count <= count_) return;
  const int64_t image = padded_h_ * padded_w_ * filters_, s = g_.stride;
  RG_CHECK(count * image < (int64_t{1} << 31), "conv phases: " << count << " padded sources of " << image
                                                                << " elements exceed 32-bit offsets");
  for (Phase& p : phases_) {
    p.pixels.clear();
    p.pixels.reserve(static_cast<size_t>(count * p.rows * p.cols));
    for (int64_t n = 0; n < count; ++n)
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t q = 0; q < p.cols; ++q) {
          const int64_t o_h = (p.i0 + s * r + g_.pad - p.a) / s, o_w = (p.j0 + s * q + g_.pad - p.b) / s;
          p.pixels.push_back(static_cast<int32_t>(n * image + (o_h * padded_w_ + o_w) * filters_));
        }
  }
  count_ = count;
}

// padded [count, padded_h, padded_w, F]: each source image at row and column T - 1, zeros around.
void ConvPhases::pad_source(ThreadPool* pool, int64_t count, const float* src, float* padded) const {
  const int64_t image = padded_h_ * padded_w_ * filters_, row = g_.out_w * filters_, before = taps_per_side() - 1;
  parallel_for(pool, count, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      float* out = padded + n * image;
      std::fill(out, out + image, 0.0f);
      for (int64_t o = 0; o < g_.out_h; ++o)
        std::memcpy(out + ((o + before) * padded_w_ + before) * filters_, src + (n * g_.out_h + o) * row,
                    static_cast<size_t>(row) * sizeof(float));
    }
  });
}

// The phase's output rows [count, rows, cols, C] into their pixels of dst [count, H, W, C].
void ConvPhases::copy_out(ThreadPool* pool, int64_t count, const Phase& p, const float* out, float* dst) const {
  const int64_t c = g_.channels, s = g_.stride;
  parallel_for(pool, count, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t r = 0; r < p.rows; ++r)
        for (int64_t q = 0; q < p.cols; ++q)
          std::memcpy(dst + ((n * g_.height + p.i0 + s * r) * g_.width + p.j0 + s * q) * c,
                      out + ((n * p.rows + r) * p.cols + q) * c, static_cast<size_t>(c) * sizeof(float));
  });
}

void ConvPhases::run(ThreadPool* pool, int64_t count, const float* src, const float* phase_weights, float* dst,
                     float* scratch) {
  prepare(count);
  const int64_t s = g_.stride, depth = static_cast<int64_t>(taps_.size()), c = g_.channels;
  float* padded = scratch;
  float* out = scratch + count * padded_h_ * padded_w_ * filters_;
  pad_source(pool, count, src, padded);
  for (const Phase& p : phases_) {
    if (p.rows == 0 || p.cols == 0) continue;
    f32_gemm_gathered(count * p.rows * p.cols, c, depth, 1.0f, GatheredA<float>{padded, p.pixels.data(), taps_.data()},
                      phase_weights + (p.a * s + p.b) * depth * c, c, 0.0f, out, c, pool);
    copy_out(pool, count, p, out, dst);
  }
}

}  // namespace rg
