// Inverted dropout's mask, as numbers: the constants and random streams the CPU layer
// (nn/dropout.h) and the OpenCL kernel (opencl/dropout.h, kernels/dropout.cl) both draw from, so
// the two drop the same values.
#pragma once

#include <cmath>
#include <cstdint>

namespace rg {

// The constants of a mask: the step's seed from the layer's seed (drawn at init) and
// ctx.noise_stream; the 32-bit draw below which a value is dropped, llround(rate 2^32); what kept
// f32 values are multiplied by, (float)(1 / (1 - rate)).
inline uint64_t dropout_step_seed(uint64_t layer_seed, uint64_t noise_stream) {
  return layer_seed ^ (noise_stream * 0x9E3779B97F4A7C15ull);
}
inline uint64_t dropout_threshold(double rate) { return static_cast<uint64_t>(std::llround(rate * 4294967296.0)); }
inline float dropout_scale(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }

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
inline int64_t dropout_blocks_per_row(int64_t row_size) {
  return (row_size + kDropoutBlockValues - 1) / kDropoutBlockValues;
}
// The stream of block `block` of the step's sample `sample`: sample * blocks_per_row + block.
inline uint64_t dropout_block_stream(int64_t sample, int64_t blocks_per_row, int64_t block) {
  return static_cast<uint64_t>(sample) * static_cast<uint64_t>(blocks_per_row) + static_cast<uint64_t>(block);
}

}  // namespace rg
