// Inverted dropout's mask, as Dropout::apply_mask (src/nn/dropout.cpp) draws it: each row in
// blocks of block_values (kDropoutBlockValues, ops/dropout_mask.h), block b of row r from its own
// generator Rng(step_seed, (row_offset + r) blocks_per_row + b) of src/base/rng.cpp (xoshiro256**
// seeded by SplitMix64), one next_u32() per value in order. One work-item per (row, block),
// rows * blocks_per_row items, item g = r blocks_per_row + b (cnn's dropout1, 14x14x32 = 6272
// values a sample: 98 blocks of 64, 6272 items at batch 64); the draws within a block are
// sequential. Launcher: src/opencl/dropout.cpp.
#pragma OPENCL FP_CONTRACT OFF

ulong splitmix64(ulong* x) {
  ulong z = (*x += 0x9E3779B97F4A7C15UL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
  return z ^ (z >> 31);
}

ulong rotl64(ulong x, uint k) { return (x << k) | (x >> (64 - k)); }

// Rng::next_u64 on the state s[4].
ulong next_u64(ulong* s) {
  const ulong result = rotl64(s[1] * 5, 7) * 9;
  const ulong t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return result;
}

// to [rows, row_size] = draw < threshold ? +0 : from * scale, draw = Rng::next_u32 (the high 32
// bits of next_u64); threshold = llround(rate 2^32) and scale = (float)(1 / (1 - rate)) come from
// the host, as do block_values and blocks_per_row = ceil(row_size / block_values). from may be
// to (in place: each item reads its value before writing it).
__kernel void f32_dropout_apply(uint rows, uint row_size, uint block_values, uint blocks_per_row, ulong step_seed,
                                ulong row_offset, ulong threshold, float scale, __global const float* from,
                                uint from_offset, __global float* to, uint to_offset) {
  const uint g = get_global_id(0);
  if (g >= rows * blocks_per_row) return;
  const uint r = g / blocks_per_row, b = g - r * blocks_per_row;
  // Rng(seed, stream)'s seeding, stream = dropout_block_stream(row_offset + r, blocks_per_row, b).
  const ulong stream = (row_offset + r) * blocks_per_row + b;
  ulong x = step_seed ^ (stream * 0xD1342543DE82EF95UL + 0x2545F4914F6CDD1DUL);
  ulong s[4];
  for (int k = 0; k < 4; ++k) s[k] = splitmix64(&x);
  const uint begin = b * block_values, end = begin + min(block_values, row_size - begin);
  __global const float* in = from + from_offset + r * row_size;
  __global float* out = to + to_offset + r * row_size;
  for (uint i = begin; i < end; ++i) {
    const uint draw = (uint)(next_u64(s) >> 32);
    const float v = in[i];
    out[i] = draw < threshold ? 0.0f : v * scale;
  }
}
