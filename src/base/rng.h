// Seeded deterministic random numbers: xoshiro256** seeded through SplitMix64.
// The same (seed, stream) gives the same sequence on every platform and compiler,
// so nothing here uses <random>'s distributions (their output is not specified).
#pragma once

#include <cstdint>
#include <vector>

namespace rg {

// SplitMix64 (Steele, Lea and Flood 2014): its state advances by kSplitMix64Gamma, and its
// output is splitmix64_mix (a bijective finaliser) of the new state. Rng seeds its state with it.
constexpr uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// Output number n (from 0) of SplitMix64 started at `state`, computed directly: a counter-based
// generator (any draw without the ones before it; vectorisable over n).
inline uint64_t splitmix64_at(uint64_t state, uint64_t n) { return splitmix64_mix(state + (n + 1) * kSplitMix64Gamma); }

class Rng {
 public:
  // `stream` separates independent uses of one seed (init, shuffle of epoch e, dropout...).
  explicit Rng(uint64_t seed, uint64_t stream = 0);

  uint64_t next_u64();
  uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }
  // Uniform in [0, n) without modulo bias.
  uint64_t below(uint64_t n);
  // Uniform in [0, 1) with 24 random bits (exact in float).
  float uniform_f32() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform_f64() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform_f64(); }
  // Standard normal (Box-Muller; both values used).
  double normal();

  // The full state, for checkpoints.
  struct State {
    uint64_t s[4];
    double spare_normal;
    bool has_spare;
  };
  State state() const;
  void set_state(const State& state);

 private:
  uint64_t s_[4];
  double spare_normal_ = 0;
  bool has_spare_ = false;
};

// Fisher-Yates shuffle of 0..n-1 driven by `rng`, into order [n] or a new vector.
void shuffle_indices(int32_t n, Rng& rng, int32_t* order);
std::vector<int32_t> shuffled_indices(int32_t n, Rng& rng);

}  // namespace rg
