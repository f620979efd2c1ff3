// xoshiro256** (Blackman and Vigna) with SplitMix64 seeding.
#include "base/rng.h"

#include <cmath>

namespace rg {

namespace {
uint64_t splitmix64(uint64_t& x) { return splitmix64_mix(x += kSplitMix64Gamma); }

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

Rng::Rng(uint64_t seed, uint64_t stream) {
  uint64_t x = seed ^ (stream * 0xD1342543DE82EF95ull + 0x2545F4914F6CDD1Dull);
  for (uint64_t& word : s_) word = splitmix64(x);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

uint64_t Rng::below(uint64_t n) {
  if (n <= 1) return 0;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // reject the biased tail
  uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return x % n;
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  double u1;
  do {
    u1 = uniform_f64();
  } while (u1 <= 0.0);
  const double u2 = uniform_f64();
  const double radius = std::sqrt(-2.0 * std::log(u1));
  const double angle = 6.283185307179586476925 * u2;
  spare_normal_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

Rng::State Rng::state() const {
  State state{};
  for (int i = 0; i < 4; ++i) state.s[i] = s_[i];
  state.spare_normal = spare_normal_;
  state.has_spare = has_spare_;
  return state;
}

void Rng::set_state(const State& state) {
  for (int i = 0; i < 4; ++i) s_[i] = state.s[i];
  spare_normal_ = state.spare_normal;
  has_spare_ = state.has_spare;
}

void shuffle_indices(int32_t n, Rng& rng, int32_t* order) {
  for (int32_t i = 0; i < n; ++i) order[i] = i;
  for (int32_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int32_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
}

std::vector<int32_t> shuffled_indices(int32_t n, Rng& rng) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  shuffle_indices(n, rng, order.data());
  return order;
}

}  // namespace rg
