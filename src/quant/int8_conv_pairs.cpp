// The direct single-channel int8 conv (first layers on grey images), with a 2x2 max pooling
// optionally fused: int8_stages.h's conv pairs stage.
#include <algorithm>
#include <sstream>

#include "cpu/kernel_tables.h"
#include "quant/int8_stages.h"

namespace rg {

namespace {

// A single-channel convolution (a first layer on a grey image) without a patch matrix, on
// qs8_conv_kernel's pairs of taps (kh, kw) and (kh, kw + 1), kw = 0, 2, .. (the last of an odd
// kernel with a zero partner). Per sample, the padded image widened to int16 (padding: the
// zero point). With a fused 2x2 max pooling, the kernel's lanes are pooled pixels: pixel j of
// window (dy, dx) and tap (kh, kw) reads the int16 at 2j + dx + kw of image row 2 oh + dy + kh and
// its right neighbour, so the rows themselves are the pair operands. Without pooling each row is
// stored as pairs D[x] = (I[x], I[x + 1]). The pooling takes the max of the int32 sums before
// the requantization, which is non-decreasing: the same bits as pooling its outputs.
class ConvPairsStage : public Int8Stage {
 public:
  // q: the int8 weights [kernel^2 x n], with their requantization.
  ConvPairsStage(const ConvGeometry& g, const std::vector<int8_t>& q, const Qs8OutputStage& output, QuantParams in,
                 bool pool, Isa isa)
      : geometry_(g), output_(output), in_(in), pool_(pool), isa_(isa) {
    const int64_t kk = g.kernel, n = static_cast<int64_t>(q.size()) / (kk * kk);
    filters_ = n;
    out_h_ = pool_ ? g.out_h / 2 : g.out_h;
    out_w_ = pool_ ? g.out_w / 2 : g.out_w;
    out_shape = Shape{out_h_, out_w_, n};
    // Row length in int16, with room for a whole vector of reads past the last pixel.
    row_ = pool_ ? g.padded_width() + 32 : 2 * (g.padded_width() + 16);
    for (int64_t kh = 0; kh < kk; ++kh)
      for (int64_t kw = 0; kw < kk; kw += 2) {
        ++pairs_;
        for (int64_t f = 0; f < n; ++f) {
          const int32_t a = q[static_cast<size_t>((kh * kk + kw) * n + f)];
          const int32_t b = kw + 1 < kk ? q[static_cast<size_t>((kh * kk + kw + 1) * n + f)] : 0;
          pair_weights_.push_back(static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint16_t>(a)) |
                                                       (static_cast<uint32_t>(static_cast<uint16_t>(b)) << 16)));
        }
      }
    // Where pair (kh, kw) of pooling window (dy, dx) reads, from the first image row of an output row.
    for (int64_t w = 0; w < (pool_ ? 4 : 1); ++w)
      for (int64_t kh = 0; kh < kk; ++kh)
        for (int64_t kw = 0; kw < kk; kw += 2) {
          const int64_t dy = w / 2, dx = w % 2;
          offsets_.push_back((dy + kh) * row_ + (pool_ ? dx + kw : 2 * kw));
        }
  }

  // One input channel, stride 1, a kernel of at most 11 and rows of at most 512 pixels.
  static bool fits(const ConvGeometry& g) {
    return g.channels == 1 && g.stride == 1 && g.kernel <= 11 && g.padded_width() <= 512;
  }

  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const int64_t n = x.shape()[0];
    const int64_t in_sample = geometry_.height * geometry_.width, out_sample = out_shape.numel();
    for (int64_t s0 = 0; s0 < n; s0 += kChunk) {
      const int64_t count = std::min(kChunk, n - s0);
      parallel_for(pool, count, 1, [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s)
          sample(x.data<int8_t>() + (s0 + s) * in_sample, images() + s * image_size(),
                 y.data<int8_t>() + (s0 + s) * out_sample);
      });
    }
  }
  Status reserve(int64_t batch) override {
    if (image_.defined()) return Status();
    auto t = Tensor::zeros(Shape{scratch_bytes(batch)}, DType::i8, "int8 conv widened images");
    if (!t.ok()) return t.status();
    image_ = t.take();
    return Status();
  }
  int64_t scratch_bytes(int64_t batch) const override {
    (void)batch;  // a chunk of images at a time, whatever the batch
    return kChunk * image_size() * 2;
  }
  int64_t weight_bytes() const override { return static_cast<int64_t>(pair_weights_.size()) * 4 + 3 * 4 * filters_; }
  std::string describe() const override {
    std::ostringstream os;
    os << "int8 direct conv " << geometry_.kernel << "x" << geometry_.kernel << " x " << filters_
       << (pool_ ? " + 2x2 max pooling" : "") << " (" << qs8_conv_kernel(isa_).name << ")";
    return os.str();
  }

 private:
  static constexpr int64_t kChunk = 16;
  int64_t image_size() const { return geometry_.padded_height() * row_; }
  // The scratch as int16 (a byte tensor: the counted allocator has no int16 type).
  int16_t* images() const { return reinterpret_cast<int16_t*>(image_.data<int8_t>()); }

  void sample(const int8_t* image, int16_t* rows, int8_t* out) const {
    const ConvGeometry& g = geometry_;
    const int64_t hp = g.padded_height(), wp = g.padded_width();
    const int16_t zp = static_cast<int16_t>(in_.zero_point);
    int16_t line[512 + 1];
    for (int64_t r = 0; r < hp; ++r) {
      const int64_t ih = r - g.pad;
      int16_t* row = rows + r * row_;
      int16_t* padded = pool_ ? row : line;
      for (int64_t x = 0; x < g.pad; ++x) padded[x] = zp;
      if (ih >= 0 && ih < g.height) {
        const int8_t* in = image + ih * g.width;
        for (int64_t x = 0; x < g.width; ++x) padded[g.pad + x] = in[x];
      } else {
        for (int64_t x = 0; x < g.width; ++x) padded[g.pad + x] = zp;
      }
      for (int64_t x = g.pad + g.width; x < wp + 1; ++x) padded[x] = zp;
      if (pool_) {
        for (int64_t x = wp + 1; x < row_; ++x) row[x] = zp;
      } else {
        for (int64_t x = 0; x < wp; ++x) {
          row[2 * x] = line[x];
          row[2 * x + 1] = line[x + 1];
        }
        for (int64_t x = 2 * wp; x < row_; ++x) row[x] = zp;
      }
    }
    const Qs8Requant rq{output_.bias.data(), output_.multiplier.data(), output_.shift.data(), output_.zero_point,
                        output_.lo, output_.hi};
    const Qs8ConvKernel& kernel = qs8_conv_kernel(isa_);
    for (int64_t oh = 0; oh < out_h_; ++oh)
      kernel.conv_pairs(out_w_, pool_ ? 4 : 1, pairs_, rows + (pool_ ? 2 * oh : oh) * row_, offsets_.data(),
                        pair_weights_.data(), filters_, &rq, out + oh * out_w_ * filters_);
  }

  ConvGeometry geometry_;
  Qs8OutputStage output_;
  QuantParams in_;
  bool pool_ = false;
  Isa isa_ = Isa::reference;
  int64_t filters_ = 0, out_h_ = 0, out_w_ = 0, row_ = 0;
  int64_t pairs_ = 0;                  // tap pairs (kh, kw), (kh, kw + 1) with kw = 0, 2, ..
  std::vector<int64_t> offsets_;       // [window][pairs]: int16 from an output row's first image row
  std::vector<int32_t> pair_weights_;  // [pairs][filters]
  Tensor image_;                       // int16 [kChunk][padded height][row_], as bytes
};

}  // namespace

bool conv_pairs_fits(const ConvGeometry& g) { return ConvPairsStage::fits(g); }

std::unique_ptr<Int8Stage> make_conv_pairs_stage(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                 const Qs8OutputStage& output, QuantParams in, bool pool, Isa isa) {
  return std::make_unique<ConvPairsStage>(g, q, output, in, pool, isa);
}

}  // namespace rg
