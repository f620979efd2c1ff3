// What the ThreadPool's fork-join costs on this machine beside the work it splits (issue 32's
// 4-thread point: a lenet step runs ~34 parallel regions at batch 64, a cnn step ~100; on the
// Xeon 4 independent 1-thread trainings reach ~1.0 of 4 times one alone, a 4-thread training
// 0.6-0.75: bench/copies_ceiling.sh). Two loads on the pool (base/thread_pool.h), each timed over
// --regions regions, --reps times, medians [min, max] by wall time:
//   gap   every chunk spins W microseconds of arithmetic; between regions the caller spins G of
//         its own (a step's serial code: the loss, a bias, the update). Overhead a region = its
//         wall time less the caller's alone on W and G (interleaved): the wake-ups, the claims,
//         the wait, and a worker that slept through a long gap.
//   move  a buffer of S KB (4 to 262144) in one part a chunk: region A has chunk p add to part
//         p, region B has chunk p add to part (p + shift) mod parts, shift 0 (each part stays
//         with its core) and 1 (each part goes to another core's cache): region B's time both
//         ways, per MB moved.
// The thread count is the pool's (--threads, 1 = no pool); pin with taskset.
//
// usage: pool_bench [--threads 4] [--work-us 5] [--gaps-us 0,20,100,500] [--kb 256,1024,4096]
//                   [--regions 2000] [--reps 5]
// Built by bench/pool_bench.sh (against the build's static libraries).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "base/thread_pool.h"

#include "bench_cli.h"

using namespace rg;
using namespace rg::bench;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Options {
  int threads = 4, regions = 2000, reps = 5;
  double work_us = 5;
  std::vector<double> gaps_us = {0, 20, 100, 500};
  std::vector<int64_t> kbs = {256, 1024, 4096};
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return option_value(argc, argv, &i); };
    if (arg == "--threads") o.threads = static_cast<int>(integer(value(), "--threads", 1, 256));
    else if (arg == "--regions") o.regions = static_cast<int>(integer(value(), "--regions", 1, 1000000));
    else if (arg == "--reps") o.reps = static_cast<int>(integer(value(), "--reps", 1, 1000));
    else if (arg == "--work-us") o.work_us = static_cast<double>(integer(value(), "--work-us", 0, 100000));
    else if (arg == "--gaps-us") {
      o.gaps_us.clear();
      for (const auto& g : split(value())) o.gaps_us.push_back(static_cast<double>(integer(g, "--gaps-us", 0, 1000000)));
    } else if (arg == "--kb") {
      o.kbs.clear();
      for (const auto& k : split(value())) o.kbs.push_back(integer(k, "--kb", 4, 1 << 18));
    } else {
      usage_error("unknown option '" + arg + "' (see the file's header)");
    }
  }
  if (o.gaps_us.empty() || o.kbs.empty()) usage_error("--gaps-us and --kb need one value or more");
  // A rep of the gap load runs regions x (work + gap): at most 10 minutes.
  const double longest_gap = *std::max_element(o.gaps_us.begin(), o.gaps_us.end());
  if (o.regions * (o.work_us + longest_gap) > 600e6) {
    usage_error("--regions x (--work-us + the longest --gaps-us) over 10 minutes a rep: fewer regions or shorter gaps");
  }
  return o;
}

// A chain of dependent multiply-adds: its iterations a microsecond are measured once.
volatile double g_sink = 0;
void spin_iterations(int64_t n) {
  double x = 1.0;
  for (int64_t i = 0; i < n; ++i) x = x * 0.9999999 + 1e-9;
  g_sink = g_sink + x;
}
double iterations_per_us() {
  const int64_t n = 20000000;
  const auto t0 = Clock::now();
  spin_iterations(n);
  return static_cast<double>(n) / (seconds_since(t0) * 1e6);
}

// Medians [min, max] over reps of one timed call's result.
template <class Timed>
Spread over_reps(int reps, Timed timed) {
  std::vector<double> s;
  for (int r = 0; r < reps; ++r) s.push_back(timed());
  return spread(s);
}

// Per region: the pool's time less the caller's alone on one chunk's work and the gap, the
// two interleaved in each rep (a calibration drifts with the clock speed; this does not).
void gap_load(ThreadPool* pool, int parts, const Options& o, double per_us) {
  const auto work = static_cast<int64_t>(o.work_us * per_us);
  for (double gap_us : o.gaps_us) {
    const auto gap = static_cast<int64_t>(gap_us * per_us);
    auto timed = [&](bool with_pool) {
      const auto t0 = Clock::now();
      for (int r = 0; r < o.regions; ++r) {
        if (with_pool) {
          parallel_for(pool, parts, 1, [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) spin_iterations(work);
          });
        } else {
          spin_iterations(work);
        }
        spin_iterations(gap);
      }
      return seconds_since(t0) * 1e6 / o.regions;
    };
    const Spread s = over_reps(o.reps, [&] {
      const double alone = timed(false);
      return timed(true) - alone;
    });
    std::printf("gap   threads %d  work %.0f us  gap %5.0f us: overhead a region %7.2f us [%.2f, %.2f]\n", parts,
                o.work_us, gap_us, s.median, s.low, s.high);
  }
}

void move_load(ThreadPool* pool, int parts, const Options& o) {
  for (int64_t kb : o.kbs) {
    const int64_t part = kb * 1024 / static_cast<int64_t>(sizeof(float)) / parts;
    std::vector<float> buffer;
    try {
      buffer.assign(static_cast<size_t>(part * parts), 1.0f);
    } catch (const std::bad_alloc&) {
      fail("--kb " + std::to_string(kb) + ": no memory for the buffer");
    }
    auto add_to = [&](int64_t which) {
      float* p = buffer.data() + which * part;
      for (int64_t i = 0; i < part; ++i) p[i] = p[i] * 0.5f + 1.0f;
    };
    for (int shift : {0, 1}) {
      const Spread s = over_reps(o.reps, [&] {
        double b_seconds = 0;
        for (int r = 0; r < o.regions / 10 + 1; ++r) {
          parallel_for(pool, parts, 1, [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) add_to(p);
          });
          const auto t0 = Clock::now();
          parallel_for(pool, parts, 1, [&](int64_t b, int64_t e) {
            for (int64_t p = b; p < e; ++p) add_to((p + shift) % parts);
          });
          b_seconds += seconds_since(t0);
        }
        return b_seconds * 1e6 / (o.regions / 10 + 1);
      });
      std::printf("move  threads %d  %6lld KB  shift %d: region B %8.2f us [%.2f, %.2f], %.1f us a MB\n", parts,
                  static_cast<long long>(kb), shift, s.median, s.low, s.high, s.median * 1024.0 / static_cast<double>(kb));
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::unique_ptr<ThreadPool> pool;
  if (o.threads > 1) pool = std::make_unique<ThreadPool>(o.threads);
  const double per_us = iterations_per_us();
  std::printf("pool_bench: %d threads, %.0f multiply-add iterations a microsecond on the caller\n", o.threads, per_us);
  gap_load(pool.get(), o.threads, o, per_us);
  move_load(pool.get(), o.threads, o);
  std::fflush(stdout);
  return g_sink == 12345.0 ? 3 : 0;  // keeps the spins' results alive
}
