// The add-chain clock measurement.
#include "report/clock.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace rg {

namespace {

constexpr long kAddsPerIteration = 64;

// `iterations` x 64 dependent adds: 64 x iterations cycles (the loop's own counter runs beside
// the chain). Returns the result so nothing is optimised away.
unsigned long add_chain(long iterations) {
  unsigned long x = 0;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  for (long i = 0; i < iterations; ++i) {
#define RG_ADD8 "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
    __asm__ volatile(RG_ADD8 RG_ADD8 RG_ADD8 RG_ADD8 RG_ADD8 RG_ADD8 RG_ADD8 RG_ADD8 : "+r"(x) : "r"(1UL));
#undef RG_ADD8
  }
#else
  (void)iterations;
#endif
  return x;
}

// The best MHz of a few timed chains of ~20 ms each on this thread.
double measure_one_thread() {
  constexpr long kIterations = 1L << 16;  // 4.2 M cycles: ~1.5 ms at 3 GHz
  double best = 0;
  volatile unsigned long sink = 0;
  const auto stop = std::chrono::steady_clock::now() + std::chrono::milliseconds(80);
  add_chain(kIterations);  // warm: let the core leave its idle clock
  do {
    const auto start = std::chrono::steady_clock::now();
    sink = sink + add_chain(kIterations);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0) best = std::max(best, static_cast<double>(kIterations * kAddsPerIteration) / seconds / 1e6);
  } while (std::chrono::steady_clock::now() < stop);
  return best;
}

}  // namespace

double measure_cpu_mhz(int threads) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  threads = std::max(1, threads);
  std::vector<double> mhz(threads);
  std::vector<std::thread> workers;
  for (int t = 1; t < threads; ++t) workers.emplace_back([&mhz, t] { mhz[t] = measure_one_thread(); });
  mhz[0] = measure_one_thread();
  for (std::thread& w : workers) w.join();
  double sum = 0;
  for (double m : mhz) sum += m;
  return sum / threads;
#else
  (void)threads;
  return 0;
#endif
}

}  // namespace rg
