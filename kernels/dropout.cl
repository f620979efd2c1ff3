// Inverted dropout's mask, as Dropout::apply_mask (src/nn/dropout.cpp) draws it: row r from its
// own generator Rng(step_seed, row_offset + r) of src/base/rng.cpp (xoshiro256** seeded by
// SplitMix64), one next_u32() per value in order, so one work-item per row: the draws within a
// row are sequential. Launcher: src/opencl/dropout.cpp.
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
// the host. from may be to (in place: each item reads its value before writing it).
__kernel void f32_dropout_apply(uint rows, uint row_size, ulong step_seed, ulong row_offset, ulong threshold,
                                float scale, __global const float* from, uint from_offset, __global float* to,
                                uint to_offset) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  // Rng(seed, stream)'s seeding, stream = row_offset + r.
  ulong x = step_seed ^ ((row_offset + r) * 0xD1342543DE82EF95UL + 0x2545F4914F6CDD1DUL);
  ulong s[4];
  for (int k = 0; k < 4; ++k) s[k] = splitmix64(&x);
  __global const float* in = from + from_offset + r * row_size;
  __global float* out = to + to_offset + r * row_size;
  for (uint i = 0; i < row_size; ++i) {
    const uint draw = (uint)(next_u64(s) >> 32);
    const float v = in[i];
    out[i] = draw < threshold ? 0.0f : v * scale;
  }
}
