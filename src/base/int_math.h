// Small integer helpers the size computations share.
#pragma once

#include <cstdint>

namespace rg {

// The least multiple of `to` (> 0) that is >= v (v >= 0).
inline int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// The least integer >= v / to (v >= 0, to > 0).
inline int64_t ceil_div(int64_t v, int64_t to) { return (v + to - 1) / to; }

}  // namespace rg
