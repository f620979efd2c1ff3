// Inverted dropout: in training each value is zeroed with probability `rate` and the rest
// scaled by 1 / (1 - rate); in inference it passes through. The mask is not stored: it is
// drawn again in backward from the same (layer seed, ctx.noise_stream, sample, block of the
// sample's values), the noise stream derived by the trainer from the step, so a resumed run
// draws the same masks as an uninterrupted one, and a step split into micro-batches the same
// as one whole batch.
#pragma once

#include "nn/layer.h"

namespace rg {

class CfgSection;

// The constants of a mask, shared with the OpenCL kernel (opencl/dropout.h) so both draw alike:
// the step's seed from the layer's seed (drawn at init) and ctx.noise_stream; the 32-bit draw
// below which a value is dropped, llround(rate 2^32); what kept f32 values are multiplied by,
// (float)(1 / (1 - rate)).
uint64_t dropout_step_seed(uint64_t layer_seed, uint64_t noise_stream);
uint64_t dropout_threshold(double rate);
float dropout_scale(double rate);

// A row (sample) of row_size values is drawn in blocks of kDropoutBlockValues values (the last
// one shorter), block b of the step's sample s from its own generator Rng(step_seed,
// s * blocks_per_row + b), one next_u32() per value in order. Blocks are independent, so the
// device runs one work-item per (row, block) and the CPU shares the blocks among its threads.
//
// No two blocks of one step share a stream: with 0 <= b < blocks_per_row, s * blocks_per_row + b
// is the mixed-radix number (s, b), distinct for distinct (s, b) while (s + 1) blocks_per_row stays
// within 2^64; apply_mask checks 2^63 (2^31 samples a step of 2^32 blocks, 2^38 values, reach it).
// Distinct streams give distinct generator states: Rng's seeding maps the stream to
// seed ^ (stream M + C) with M odd, a bijection of 64-bit words, and its first state word is
// SplitMix64's bijective mix of that word. Across steps or layers the seed differs, and states
// coincide only as any two 64-bit hashes do (the per-sample streams before blocks did too).
//
// 64 values: on an H100 (cnn, batch 64) a launch averaged 531 us with one work-item per row, and
// 72, 41, 28, 18, 12 us with blocks of 256, 128, 64, 32, 16; on the CPU, one thread, a block's
// seeding (four SplitMix64 steps) adds 1%, 3%, 6%, 12%, 25% to the draws of whole rows.
constexpr int64_t kDropoutBlockValues = 64;
// ceil(row_size / kDropoutBlockValues): 0 for an empty row.
int64_t dropout_blocks_per_row(int64_t row_size);
// The stream of block `block` of the step's sample `sample`: sample * blocks_per_row + block.
uint64_t dropout_block_stream(int64_t sample, int64_t blocks_per_row, int64_t block);

class Dropout : public Layer {
 public:
  explicit Dropout(double rate) : rate_(rate) {}
  static Result<std::unique_ptr<Layer>> from_cfg(const CfgSection& section);

  std::string kind() const override { return "dropout"; }
  Result<Shape> configure(const Shape& input) override { return input; }
  Status init(Rng& rng, DType dtype) override;
  void forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) override;
  void backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                const LayerContext& ctx) override;
  std::string describe() const override;
  LayerTraffic traffic(double in, double out) const override { return moving_traffic(in, out); }

  double rate() const { return rate_; }
  uint64_t seed() const { return seed_; }  // drawn at init

 private:
  // to[i] = keep(i) ? from[i] / (1 - rate) : 0 with the mask of ctx.noise_stream; row r's mask
  // is that of sample ctx.row_offset + r of the step, drawn by blocks (dropout_block_stream).
  void apply_mask(const Tensor& from, const Tensor& to, const LayerContext& ctx) const;

  double rate_;
  uint64_t seed_ = 0;  // drawn from the model's seed at init
};

}  // namespace rg
