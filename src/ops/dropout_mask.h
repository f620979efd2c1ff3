// Inverted dropout's mask, as numbers: the constants and the draws the CPU layer (nn/dropout.h)
// and the OpenCL kernel (opencl/dropout.h, kernels/dropout.cl) both use, so the two drop the same
// values.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/rng.h"

namespace rg {

// The constants of a mask: the step's seed from the layer's seed (drawn at init) and
// ctx.noise_stream; the 32-bit draw below which a value is dropped, llround(rate 2^32); what kept
// f32 values are multiplied by, (float)(1 / (1 - rate)).
inline uint64_t dropout_step_seed(uint64_t layer_seed, uint64_t noise_stream) {
  return layer_seed ^ (noise_stream * kSplitMix64Gamma);
}
inline uint64_t dropout_threshold(double rate) { return static_cast<uint64_t>(std::llround(rate * 4294967296.0)); }
inline float dropout_scale(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }

// The draws, counter-based: value i of the step's sample s (a row of row_size values) has the
// counter s * row_size + i, and its draw is the high 32 bits of output number `counter` of
// SplitMix64 started at dropout_state(step_seed) (base/rng.h's splitmix64_at): any value's draw
// without the others', so threads, vector lanes and device work-items each draw their own, and a
// step split into micro-batches (row_offset) draws what the whole batch does. SplitMix64 passes
// BigCrush; the counters of a step are distinct below 2^63 (apply_mask checks), so no two values
// of a step share a draw's input. The state is the step seed through SplitMix64's mix, so steps
// and layers (seeds differing in few bits) start far apart.
inline uint64_t dropout_state(uint64_t step_seed) { return splitmix64_mix(step_seed); }
inline uint32_t dropout_draw(uint64_t state, uint64_t counter) {
  return static_cast<uint32_t>(splitmix64_at(state, counter) >> 32);
}

}  // namespace rg
