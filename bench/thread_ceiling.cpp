// What this machine lets T threads do at once: the ceiling of any program's parallel efficiency.
//
// Built and run by bench/thread_ceiling.sh (a direct g++ line; no library). Three loads, each run
// by T threads pinned to the first T CPUs of --cpus, every thread the same fixed work:
//   fma   multiply-adds on registers only (24 independent chains at the CPU's widest level:
//         AVX-512, AVX2+FMA or SSE2 multiply and add): the cores' arithmetic, nothing shared;
//   l2    sums over a private buffer of --l2-kb (512 KB: within a core's L2 on the CPUs measured)
//         again and again;
//   dram  sums over a private 64 MB buffer (the shared L3 and memory).
// The time of a run is from the threads' common start to the last one's end; a thread's rate is
// its work over that time; efficiency at T = T threads' summed rate / (T x 1 thread's rate). On a
// dedicated machine fma's is ~1.0; a VM whose vCPUs share physical cores with other tenants (or
// each other: hyperthreads) shows less, and no program's efficiency can pass the load it is
// limited by. Rounds are interleaved over T; the medians and ranges over rounds are printed.
//
//   thread_ceiling [--cpus 0-15 | 3,5,7] [--threads 1,2,4,8,16] [--rounds 5] [--l2-kb 512]
// (defaults: the CPUs this process may run on; 1, 2, 4 ... up to their count)
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

__attribute__((target("avx512f"))) float fma_avx512(long iterations) {
  __m512 acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long n = 0; n < iterations; ++n)
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  for (int i = 1; i < 24; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  return _mm512_reduce_add_ps(acc[0]);
}

__attribute__((target("avx2,fma"))) float fma_avx2(long iterations) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long n = 0; n < 2 * iterations; ++n)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_ps(acc[0], acc[i]);
  float out[8];
  _mm256_storeu_ps(out, acc[0]);
  return out[0];
}

float mul_add_sse2(long iterations) {
  __m128 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm_set1_ps(static_cast<float>(i));
  const __m128 a = _mm_set1_ps(0.999999f), b = _mm_set1_ps(1e-7f);
  for (long n = 0; n < 2 * iterations; ++n)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], a), b);
  for (int i = 1; i < 12; ++i) acc[0] = _mm_add_ps(acc[0], acc[i]);
  return _mm_cvtss_f32(acc[0]);
}

// Sums a buffer `passes` times with 8 independent 128-bit chains (bandwidth, not latency).
float sum_passes(const float* data, size_t floats, long passes) {
  __m128 acc[8];
  for (auto& a : acc) a = _mm_setzero_ps();
  for (long p = 0; p < passes; ++p)
    for (size_t i = 0; i + 32 <= floats; i += 32)
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) acc[k] = _mm_add_ps(acc[k], _mm_loadu_ps(data + i + 4 * k));
  for (int k = 1; k < 8; ++k) acc[0] = _mm_add_ps(acc[0], acc[k]);
  return _mm_cvtss_f32(acc[0]);
}

struct Load {
  const char* name;
  size_t buffer_floats;  // 0: registers only
  long work;             // iterations (fma) or passes over the buffer
};

std::atomic<float> g_sink{0};

void run_work(const Load& load, const float* buffer) {
  float r;
  if (load.buffer_floats != 0) {
    r = sum_passes(buffer, load.buffer_floats, load.work);
  } else if (__builtin_cpu_supports("avx512f")) {
    r = fma_avx512(load.work);
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    r = fma_avx2(load.work);
  } else {
    r = mul_add_sse2(load.work);
  }
  g_sink.store(r, std::memory_order_relaxed);
}

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// Seconds from the common start to the last thread's end; buffers are each thread's own and
// touched once (first-touch pages on its own node) before the start.
double timed_run(const Load& load, const std::vector<int>& cpus, int threads) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> ends(static_cast<size_t>(threads));
  Clock::time_point start;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (!pin_to(cpus[static_cast<size_t>(t)])) std::fprintf(stderr, "cannot pin to CPU %d\n", cpus[static_cast<size_t>(t)]);
      std::vector<float> buffer(load.buffer_floats, 1.0f);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      run_work(load, buffer.data());
      ends[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  while (ready.load() != threads) std::this_thread::yield();
  start = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& thread : pool) thread.join();
  return *std::max_element(ends.begin(), ends.end());
}

std::vector<int> parse_list(const std::string& text, const char* what) {
  std::vector<int> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t comma = text.find(',', at);
    const std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const long first = std::strtol(part.c_str(), &end, 10);
    long last = first;
    if (*end == '-') last = std::strtol(end + 1, &end, 10);
    if (part.empty() || *end != '\0' || first < 0 || last < first || last > 4095) {
      std::fprintf(stderr, "thread_ceiling: %s: bad list '%s' (numbers and ranges like 0-3,8)\n", what, text.c_str());
      std::exit(2);
    }
    for (long v = first; v <= last; ++v) out.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> cpus, counts;
  int rounds = 5;
  long l2_kb = 512;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "thread_ceiling: %s wants a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--cpus") {
      cpus = parse_list(value, "--cpus");
    } else if (flag == "--threads") {
      counts = parse_list(value, "--threads");
    } else if (flag == "--l2-kb") {
      l2_kb = std::atol(value.c_str());
      if (l2_kb < 4 || l2_kb > 65536) {
        std::fprintf(stderr, "thread_ceiling: --l2-kb %s: 4 to 65536\n", value.c_str());
        return 2;
      }
    } else if (flag == "--rounds") {
      rounds = std::atoi(value.c_str());
      if (rounds < 1 || rounds > 100) {
        std::fprintf(stderr, "thread_ceiling: --rounds %s: 1 to 100\n", value.c_str());
        return 2;
      }
    } else {
      std::fprintf(stderr, "thread_ceiling: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  cpu_set_t allowed;  // the CPUs this process may run on (a container or taskset may hold fewer)
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    std::fprintf(stderr, "thread_ceiling: cannot read this process's CPUs (sched_getaffinity)\n");
    return 2;
  }
  if (cpus.empty())
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
  for (int c : cpus) {
    if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed)) {
      std::fprintf(stderr, "thread_ceiling: --cpus: CPU %d is not one this process may run on\n", c);
      return 2;
    }
  }
  for (int t : counts) {
    if (t < 1 || t > static_cast<int>(cpus.size())) {
      std::fprintf(stderr, "thread_ceiling: --threads %d: 1 to the %zu CPUs of --cpus\n", t, cpus.size());
      return 2;
    }
  }
  if (counts.empty())
    for (int t = 1; t <= static_cast<int>(cpus.size()); t *= 2) counts.push_back(t);
  if (std::find(counts.begin(), counts.end(), 1) == counts.end()) counts.insert(counts.begin(), 1);
  const Load loads[] = {{"fma", 0, 60000000}, {"l2", static_cast<size_t>(l2_kb) * 256, 20000 * 512 / l2_kb}, {"dram", 16 * 1024 * 1024, 40}};
  std::printf("fma at %s; CPUs", __builtin_cpu_supports("avx512f") ? "avx512" : __builtin_cpu_supports("avx2") ? "avx2" : "sse2");
  for (int c : cpus) std::printf(" %d", c);
  std::printf("; %d rounds\n", rounds);
  for (const Load& load : loads) {
    std::vector<std::vector<double>> seconds(counts.size());
    for (int r = 0; r < rounds; ++r)
      for (size_t k = 0; k < counts.size(); ++k) seconds[k].push_back(timed_run(load, cpus, counts[k]));
    const double one = median(seconds[0]);
    std::printf("%-5s", load.name);
    for (size_t k = 0; k < counts.size(); ++k) {
      std::vector<double> eff;
      for (double s : seconds[k]) eff.push_back(one / s);  // T threads did T times the work
      const auto [lo, hi] = std::minmax_element(eff.begin(), eff.end());
      std::printf("  %2d: %.2f (%.2f-%.2f)", counts[k], median(eff), *lo, *hi);
    }
    std::printf("   [1 thread %.3f s]\n", one);
  }
  return 0;
}
