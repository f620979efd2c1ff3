// Seconds elapsed on the steady clock since a time point: the one helper for timing a stretch of
// work (the trainer's epochs and evaluations, the thread pool's timed regions).
#pragma once

#include <chrono>

namespace rg {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace rg
