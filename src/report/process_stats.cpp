// getrusage on POSIX, GetProcessMemoryInfo / GetProcessTimes on Windows.
#include "report/process_stats.h"

#if defined(_WIN32)
#include <windows.h>
#include <psapi.h>
#else
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#endif

namespace rg {

int64_t peak_rss_bytes() {
#if defined(_WIN32)
  PROCESS_MEMORY_COUNTERS counters;
  if (GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters)) {
    return static_cast<int64_t>(counters.PeakWorkingSetSize);
  }
  return 0;
#else
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
#endif
}

int64_t current_rss_bytes() {
#if defined(_WIN32)
  PROCESS_MEMORY_COUNTERS counters;
  if (GetProcessMemoryInfo(GetCurrentProcess(), &counters, sizeof counters)) {
    return static_cast<int64_t>(counters.WorkingSetSize);
  }
  return 0;
#else
  // /proc/self/statm: size, resident, ... in pages.
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : 0;
#endif
}

namespace {
// User + system seconds of `who` (Windows: this process, whatever `who`); empty when unknown.
std::optional<double> cpu_seconds_of(int who) {
#if defined(_WIN32)
  (void)who;
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) return std::nullopt;
  auto to_seconds = [](FILETIME t) {
    return static_cast<double>((static_cast<uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime) * 1e-7;
  };
  return to_seconds(kernel) + to_seconds(user);
#else
  struct rusage usage;
  if (getrusage(who, &usage) != 0) return std::nullopt;
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
#endif
}

#if defined(_WIN32)
constexpr int kSelf = 0;
#else
constexpr int kSelf = RUSAGE_SELF;
#endif
}  // namespace

double process_cpu_seconds() { return cpu_seconds_of(kSelf).value_or(0); }

std::optional<double> process_and_children_cpu_seconds() {
  const std::optional<double> self = cpu_seconds_of(kSelf);
#if defined(_WIN32)
  return self;
#else
  const std::optional<double> children = cpu_seconds_of(RUSAGE_CHILDREN);
  if (!self || !children) return std::nullopt;
  return *self + *children;
#endif
}

}  // namespace rg
