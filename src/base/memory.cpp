// Counted, aligned host allocation; what the system says about the memory left to take.
#include "base/memory.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <sys/resource.h>
#include <sys/utsname.h>
#endif

namespace rg {

namespace {
constexpr size_t kAlignment = 64;  // a cache line; enough for any SIMD load

void* aligned_alloc_bytes(size_t bytes) {
#if defined(_WIN32)
  return _aligned_malloc(bytes, kAlignment);
#else
  void* ptr = nullptr;
  if (posix_memalign(&ptr, kAlignment, bytes) != 0) return nullptr;
  return ptr;
#endif
}

void aligned_free(void* ptr) {
#if defined(_WIN32)
  _aligned_free(ptr);
#else
  std::free(ptr);
#endif
}
}  // namespace

Status MemoryAccount::charge(int64_t bytes, const std::string& what, int64_t* in_use_after) {
  // One compare-exchange, so concurrent charges cannot both pass the check.
  const int64_t budget = budget_.load();
  int64_t in_use = current_.load();
  do {
    if (budget > 0 && in_use + bytes > budget) {
      return Status::error("out of " + name_ + " memory budget: " + what + " needs " + format_bytes(bytes) + ", " +
                           format_bytes(in_use) + " of the " + format_bytes(budget) + " budget are in use");
    }
  } while (!current_.compare_exchange_weak(in_use, in_use + bytes));
  *in_use_after = in_use + bytes;
  return Status();
}

void MemoryAccount::note_peak(int64_t in_use) {
  int64_t peak = peak_.load();
  while (in_use > peak && !peak_.compare_exchange_weak(peak, in_use)) {
  }
}

Status MemoryAccount::reserve(int64_t bytes, const std::string& what) {
  int64_t now = 0;
  RG_TRY(charge(bytes, what, &now));
  note_peak(now);
  return Status();
}

void MemoryAccount::unreserve(int64_t bytes) { current_.fetch_sub(bytes); }

Result<void*> MemoryAccount::allocate(size_t bytes, const std::string& what) {
  // Charge the bytes against the budget first, then allocate; the peak counts only what was allocated.
  const int64_t size = static_cast<int64_t>(bytes);
  int64_t now = 0;
  RG_TRY(charge(size, what, &now));
  void* ptr = aligned_alloc_bytes(bytes == 0 ? kAlignment : bytes);
  if (ptr == nullptr) {
    current_.fetch_sub(size);
    return Status::error("allocation of " + format_bytes(size) + " for " + what + " failed (" + name_ +
                         " memory in use: " + format_bytes(current_.load()) + ")");
  }
  note_peak(now);
  return ptr;
}

void MemoryAccount::release(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  aligned_free(ptr);
  current_.fetch_sub(static_cast<int64_t>(bytes));
}

MemoryAccount& host_memory() {
  static MemoryAccount account("host");
  return account;
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (std::fabs(value) >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  }
  return text;
}

Result<int64_t> parse_bytes(const std::string& text) {
  // Digits with at most one '.', then an optional unit: no signs, exponents or hex.
  size_t digits_end = 0;
  int dots = 0;
  while (digits_end < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits_end])) || text[digits_end] == '.')) {
    dots += text[digits_end] == '.';
    ++digits_end;
  }
  if (digits_end == 0 || dots > 1 || text[0] == '.') {
    return Status::error("'" + text + "' is not a size (expected a number with an optional unit K, M or G, e.g. 64M)");
  }
  const double number = std::strtod(text.substr(0, digits_end).c_str(), nullptr);
  std::string unit = text.substr(digits_end);
  double scale = 1;
  if (unit.empty() || unit == "B" || unit == "b") {
    scale = 1;
  } else if (unit == "K" || unit == "k" || unit == "KiB" || unit == "KB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "m" || unit == "MiB" || unit == "MB") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G" || unit == "g" || unit == "GiB" || unit == "GB") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else {
    return Status::error("'" + text + "' has an unknown size unit '" + unit + "' (use K, M or G)");
  }
  const double bytes = number * scale;
  if (!(bytes <= 4611686018427387904.0)) return Status::error("'" + text + "' is larger than any memory (2^62 bytes)");
  if (bytes != std::floor(bytes)) return Status::error("'" + text + "' is not a whole number of bytes");
  return static_cast<int64_t>(bytes);
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

namespace {
// MemAvailable of /proc/meminfo ("MemAvailable:   123456 kB"); 0 where there is none.
int64_t system_available_bytes() {
#if defined(_WIN32)
  MEMORYSTATUSEX status;
  status.dwLength = sizeof status;
  return GlobalMemoryStatusEx(&status) ? static_cast<int64_t>(status.ullAvailPhys) : 0;
#else
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  long long kib = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return static_cast<int64_t>(kib) * 1024;
#endif
}

#if defined(_WIN32)
constexpr const char* kSystemSource = "available physical memory (GlobalMemoryStatusEx)";
#else
constexpr const char* kSystemSource = "MemAvailable in /proc/meminfo";
#endif
}  // namespace

AvailableMemory available_host_memory() {
  AvailableMemory available{system_available_bytes(), kSystemSource};
  if (const char* text = std::getenv("RETROGRAD_MEM_AVAILABLE")) {
    auto stated = parse_bytes(text);  // not a size: the system's figure stands
    if (stated.ok()) available = {stated.value(), "RETROGRAD_MEM_AVAILABLE"};
  }
  const AddressSpace space = address_space();
  const int64_t room = space.limit_bytes > 0 ? std::max<int64_t>(space.limit_bytes - space.used_bytes, 0) : 0;
  if (space.limit_bytes > 0 && (available.bytes == 0 || room < available.bytes)) {
    available = {room, "the address space (" + space.source + ") less what is mapped"};
  }
  return available;
}

Status check_host_memory(int64_t bytes, const std::string& what) {
  const MemoryAccount& host = host_memory();
  const int64_t budget = host.budget_bytes();
  if (budget > 0) {
    const int64_t left = budget - host.current_bytes();
    if (bytes <= left) return Status();
    return Status::error(what + ": " + format_bytes(bytes) + " needed, more than the " + format_bytes(left > 0 ? left : 0) +
                         " left of the " + format_bytes(budget) + " host memory budget");
  }
  const AvailableMemory available = available_host_memory();
  if (available.bytes == 0 || bytes <= available.bytes) return Status();  // 0: unknown
  return Status::error(what + ": " + format_bytes(bytes) + " needed, more than the " + format_bytes(available.bytes) +
                       " this machine has available (" + available.source + ")");
}

}  // namespace rg
