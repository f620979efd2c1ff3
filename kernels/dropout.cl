// Inverted dropout's mask, as Dropout::apply_mask (src/nn/dropout.cpp) draws it (ops/dropout_mask.h):
// value i of the step's sample s has the counter s row_size + i, and its draw is the high 32 bits
// of SplitMix64's output number `counter` from `state` (base/rng.h's splitmix64_at). One
// work-item per value, rows * row_size items; item g is value g of [rows, row_size], whose
// counter is row_offset row_size + g. Launcher: src/opencl/dropout.cpp.
#pragma OPENCL FP_CONTRACT OFF

// splitmix64_mix(state + (counter + 1) gamma)
ulong splitmix64_at(ulong state, ulong counter) {
  ulong z = state + (counter + 1) * 0x9E3779B97F4A7C15UL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
  return z ^ (z >> 31);
}

// to [n] = draw < threshold ? +0 : from * scale; state = dropout_state(step_seed), first =
// row_offset row_size, threshold = llround(rate 2^32) and scale = (float)(1 / (1 - rate)) come
// from the host. from may be to (in place: each item reads its value before writing it).
__kernel void f32_dropout_apply(uint n, ulong state, ulong first, ulong threshold, float scale,
                                __global const float* from, uint from_offset, __global float* to, uint to_offset) {
  const uint g = get_global_id(0);
  if (g >= n) return;
  const uint draw = (uint)(splitmix64_at(state, first + g) >> 32);
  const float v = from[from_offset + g];
  to[to_offset + g] = draw < threshold ? 0.0f : v * scale;
}
