// getrusage on POSIX, GetProcessMemoryInfo / GetProcessTimes on Windows.
#include "report/process_stats.h"

#if defined(_WIN32)
#include <windows.h>
#include <psapi.h>
#else
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
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

AddressSpace address_space() {
  AddressSpace space;
#if defined(_WIN32)
  MEMORYSTATUSEX status;
  status.dwLength = sizeof status;
  // A 64-bit process has 128 TiB: no limit that matters.
  if (GlobalMemoryStatusEx(&status) && status.ullTotalVirtual < (uint64_t{1} << 40)) {
    space.limit_bytes = static_cast<int64_t>(status.ullTotalVirtual);
    space.used_bytes = static_cast<int64_t>(status.ullTotalVirtual - status.ullAvailVirtual);
    space.source = "32-bit process";
  }
#else
  if (sizeof(void*) == 4) {
    struct utsname name;
    const bool kernel_64 = uname(&name) == 0 && std::strcmp(name.machine, "x86_64") == 0;
    space.limit_bytes = (kernel_64 ? int64_t{4} : int64_t{3}) << 30;
    space.source = "32-bit process";
  }
  struct rlimit limit;
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      (space.limit_bytes == 0 || static_cast<int64_t>(limit.rlim_cur) < space.limit_bytes)) {
    space.limit_bytes = static_cast<int64_t>(limit.rlim_cur);
    space.source = "ulimit -v";
  }
  if (space.limit_bytes > 0) {
    // The mappings of /proc/self/maps ("start-end perms ..."), summed: qemu-user gives its
    // guest this file, where statm would count qemu's own reservations.
    FILE* f = std::fopen("/proc/self/maps", "r");
    if (f != nullptr) {
      unsigned long long start = 0, end = 0;
      char line[512];
      while (std::fgets(line, sizeof line, f) != nullptr) {
        if (std::sscanf(line, "%llx-%llx", &start, &end) == 2 && end > start) {
          space.used_bytes += static_cast<int64_t>(end - start);
        }
      }
      std::fclose(f);
    }
  }
#endif
  return space;
}

double process_cpu_seconds() {
#if defined(_WIN32)
  FILETIME created, exited, kernel, user;
  if (!GetProcessTimes(GetCurrentProcess(), &created, &exited, &kernel, &user)) return 0;
  auto to_seconds = [](FILETIME t) {
    return static_cast<double>((static_cast<uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime) * 1e-7;
  };
  return to_seconds(kernel) + to_seconds(user);
#else
  struct rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
#endif
}

}  // namespace rg
