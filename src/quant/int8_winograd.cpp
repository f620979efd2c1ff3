// The Winograd F(2x2, 3x3) int8 conv stage (int8_winograd.h) and its weight transform.
#include "quant/int8_winograd.h"

#include <algorithm>
#include <sstream>

#include "base/check.h"
#include "quant/int8_stages.h"

namespace rg {

bool winograd_fits(const ConvGeometry& g) {
  return g.kernel == 3 && g.stride == 1 && g.pad <= 2 && g.channels >= kWinogradMinChannels &&
         g.channels <= kWinogradMaxChannels;
}

std::vector<int16_t> winograd_weights(int64_t channels, int64_t filters, const int8_t* q) {
  static constexpr int kG[4][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};  // G' = 2 G
  std::vector<int16_t> u(static_cast<size_t>(16 * channels * filters));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t k = 0; k < filters; ++k) {
      auto g = [&](int kh, int kw) { return int32_t{q[((kh * 3 + kw) * channels + c) * filters + k]}; };
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          int32_t sum = 0;  // (G' g G'^T)[i][j]
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) sum += kG[i][kh] * g(kh, kw) * kG[j][kw];
          u[static_cast<size_t>(((4 * i + j) * channels + c) * filters + k)] = static_cast<int16_t>(sum);
        }
    }
  return u;
}

void pack_winograd_weights(int64_t channels, int64_t filters, const std::vector<int16_t>& u, int64_t nr,
                           int16_t* packed) {
  const int64_t cpairs = winograd_padded_channels(channels) / 2, panels = (filters + nr - 1) / nr;
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t p = 0; p < 16; ++p)
      for (int64_t i = 0; i < cpairs; ++i)
        for (int64_t j = 0; j < nr; ++j)
          for (int64_t e = 0; e < 2; ++e) {
            const int64_t c = 2 * i + e, k = panel * nr + j;
            *packed++ = c < channels && k < filters ? u[static_cast<size_t>((p * channels + c) * filters + k)] : 0;
          }
}

namespace {

// The stage. The tiles of the whole batch (image-major, then tile rows, then columns) go in
// blocks of kTilesPerBlock: a block's input transform V [16][kTilesPerBlock][cpad] (int16; 48 KB
// at 64 channels) is written and then read by the tile kernel for every panel of filters while
// it is in L1/L2. Blocks run in passes of kBlocksPerPass over the pool, each with its own V.
// With a 2x2 max pooling fused, a tile is a pooling window: the grid of tiles is the pooled
// output (an odd last row or column of the conv's output is dropped, as the pooling drops it).
class WinogradStage : public Int8Stage {
 public:
  WinogradStage(const ConvGeometry& g, const Qs8OutputStage& output, QuantParams in, bool pool, Isa isa)
      : geometry_(g), output_(output), pool_(pool), kernel_(&qs8_winograd_kernel(isa)) {
    cpad_ = winograd_padded_channels(g.channels);
    tiles_h_ = pool ? g.out_h / 2 : (g.out_h + 1) / 2;
    tiles_w_ = pool ? g.out_w / 2 : (g.out_w + 1) / 2;
    zero_point_pixel_.assign(static_cast<size_t>(g.channels), static_cast<int8_t>(in.zero_point));
    RG_CHECK(kernel_->mr <= kMaxMr, "" << kernel_->name << ": mr " << kernel_->mr);
  }

  // The filters q [9 * channels x filters] transformed and packed for the kernel's panels.
  Status pack(const std::vector<int8_t>& q, const std::string& name) {
    filters_ = static_cast<int64_t>(q.size()) / geometry_.patch_size();
    out_shape = pool_ ? Shape{tiles_h_, tiles_w_, filters_} : Shape{geometry_.out_h, geometry_.out_w, filters_};
    const int64_t panels = (filters_ + kernel_->nr - 1) / kernel_->nr;
    auto t = Tensor::zeros(Shape{2 * panels * 16 * cpad_ * kernel_->nr}, DType::i8, name + " Winograd weights");
    if (!t.ok()) return t.status();
    packed_ = t.take();
    pack_winograd_weights(geometry_.channels, filters_, winograd_weights(geometry_.channels, filters_, q.data()),
                          kernel_->nr, as_int16(packed_));
    return Status();
  }

  void run(const Tensor& x, const Tensor& y, ThreadPool* pool) override {
    const int64_t tiles = x.shape()[0] * tiles_h_ * tiles_w_, blocks = (tiles + kTilesPerBlock - 1) / kTilesPerBlock;
    RG_CHECK(static_cast<int64_t>(scratch_.bytes()) >= std::min(blocks, kBlocksPerPass) * block_bytes(),
             "int8 Winograd conv not reserved for " << x.shape()[0]);
    for (int64_t b0 = 0; b0 < blocks; b0 += kBlocksPerPass) {
      parallel_for(pool, std::min(kBlocksPerPass, blocks - b0), 1, [&](int64_t b, int64_t e) {
        for (int64_t s = b; s < e; ++s)
          block(x.data<int8_t>(), y.data<int8_t>(), tiles, b0 + s, as_int16(scratch_) + s * block_bytes() / 2);
      });
    }
  }

  Status reserve(int64_t batch) override {
    const int64_t bytes = scratch_bytes(batch);
    if (scratch_.defined() && static_cast<int64_t>(scratch_.bytes()) >= bytes) return Status();
    auto t = Tensor::zeros(Shape{bytes}, DType::i8, "int8 Winograd transformed inputs");
    if (!t.ok()) return t.status();
    scratch_ = t.take();
    return Status();
  }
  int64_t scratch_bytes(int64_t batch) const override {
    const int64_t blocks = (batch * tiles_h_ * tiles_w_ + kTilesPerBlock - 1) / kTilesPerBlock;
    return std::min(blocks, kBlocksPerPass) * block_bytes();
  }
  int64_t weight_bytes() const override { return static_cast<int64_t>(packed_.bytes()) + 3 * 4 * filters_; }
  std::string describe() const override {
    std::ostringstream os;
    os << "int8 Winograd F(2x2, 3x3) " << geometry_.patch_size() << " x " << filters_
       << (pool_ ? " + 2x2 max pooling" : "") << " (" << kernel_->name << ")";
    return os.str();
  }

 private:
  static constexpr int64_t kTilesPerBlock = 24;  // a multiple of every kernel's mr
  static constexpr int64_t kBlocksPerPass = 32;
  static constexpr int kMaxMr = 12;

  // The tensors hold int16 as bytes (the counted allocator has no int16 type).
  static int16_t* as_int16(const Tensor& t) { return reinterpret_cast<int16_t*>(t.data<int8_t>()); }
  int64_t block_bytes() const { return 16 * kTilesPerBlock * cpad_ * 2; }

  // Where tile (image, row, column) reads its 16 input pixels (the zero point's pixel outside
  // the image) and writes its 4 output pixels (null past an odd output's edge), or its one
  // pooled pixel; output pointers at filter 0.
  void tile_pixels(const int8_t* in, int64_t image, int64_t row, int64_t column, const int8_t** px) const {
    const ConvGeometry& g = geometry_;
    const int64_t top = 2 * row - g.pad, left = 2 * column - g.pad;
    for (int64_t a = 0; a < 4; ++a) {
      const int64_t ih = top + a;
      const int8_t* line = in + (image * g.height + ih) * g.width * g.channels;
      for (int64_t b = 0; b < 4; ++b) {
        const int64_t iw = left + b;
        const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
        px[4 * a + b] = inside ? line + iw * g.channels : zero_point_pixel_.data();
      }
    }
  }
  void tile_outputs(int8_t* out, int64_t image, int64_t row, int64_t column, int8_t** o) const {
    const ConvGeometry& g = geometry_;
    if (pool_) {
      o[0] = out + ((image * tiles_h_ + row) * tiles_w_ + column) * filters_;
      return;
    }
    for (int64_t dy = 0; dy < 2; ++dy)
      for (int64_t dx = 0; dx < 2; ++dx) {
        const int64_t oh = 2 * row + dy, ow = 2 * column + dx;
        o[2 * dy + dx] = oh < g.out_h && ow < g.out_w ? out + ((image * g.out_h + oh) * g.out_w + ow) * filters_ : nullptr;
      }
  }

  // Tiles [index * kTilesPerBlock, ..) of `tiles`, with v [16][kTilesPerBlock][cpad] as scratch.
  void block(const int8_t* in, int8_t* out, int64_t tiles, int64_t index, int16_t* v) const {
    const Qs8WinogradKernel& kernel = *kernel_;
    const int64_t t0 = index * kTilesPerBlock, t1 = std::min(tiles, t0 + kTilesPerBlock);
    const int64_t v_stride = kTilesPerBlock * cpad_, cpairs = cpad_ / 2, nr = kernel.nr, mr = kernel.mr;
    const int64_t per_tile = pool_ ? 1 : 4;  // output pointers
    int8_t* outputs[4 * kTilesPerBlock];
    const int8_t* px[16];
    int64_t image = t0 / (tiles_h_ * tiles_w_), row = t0 / tiles_w_ % tiles_h_, column = t0 % tiles_w_;
    for (int64_t t = t0; t < t1; ++t) {
      tile_pixels(in, image, row, column, px);
      kernel.input(geometry_.channels, cpad_, px, v + (t - t0) * cpad_, v_stride);
      tile_outputs(out, image, row, column, outputs + (t - t0) * per_tile);
      if (++column == tiles_w_) {
        column = 0;
        if (++row == tiles_h_) row = 0, ++image;
      }
    }
    int8_t* o[4 * kMaxMr];
    for (int64_t j0 = 0; j0 < filters_; j0 += nr) {
      const int16_t* panel = as_int16(packed_) + (j0 / nr) * 16 * cpairs * nr * 2;
      const Qs8Requant rq{output_.bias.data() + j0, output_.multiplier.data() + j0, output_.shift.data() + j0,
                          output_.zero_point, output_.lo, output_.hi};
      for (int64_t r0 = t0; r0 < t1; r0 += mr) {
        const int64_t live = std::min(mr, t1 - r0);
        for (int64_t i = 0; i < live * per_tile; ++i) {
          int8_t* at = outputs[(r0 - t0) * per_tile + i];
          o[i] = at != nullptr ? at + j0 : nullptr;
        }
        kernel.tile(live, std::min(nr, filters_ - j0), cpairs, v + (r0 - t0) * cpad_, v_stride, cpad_, panel, &rq, pool_,
                    o);
      }
    }
  }

  ConvGeometry geometry_;
  Qs8OutputStage output_;  // the GEMM stage's: the input's zero point is folded into the bias
  bool pool_;
  const Qs8WinogradKernel* kernel_;
  int64_t filters_ = 0, cpad_ = 0, tiles_h_ = 0, tiles_w_ = 0;
  std::vector<int8_t> zero_point_pixel_;  // [channels]: what padding reads
  Tensor packed_;                         // int16 panels as bytes
  Tensor scratch_;                        // int16 [kBlocksPerPass][16][kTilesPerBlock][cpad] as bytes
};

}  // namespace

Result<std::unique_ptr<Int8Stage>> make_winograd_stage(const ConvGeometry& g, const std::vector<int8_t>& q,
                                                       const Qs8OutputStage& output, QuantParams in, bool pool,
                                                       Isa isa, const std::string& name) {
  RG_CHECK(winograd_fits(g), "" << name << ": not a conv the Winograd stage takes");
  auto stage = std::make_unique<WinogradStage>(g, output, in, pool, isa);
  if (Status s = stage->pack(q, name); !s.ok()) return s;
  return std::unique_ptr<Int8Stage>(std::move(stage));
}

}  // namespace rg
