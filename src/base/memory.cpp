// Counted, aligned host allocation.
#include "base/memory.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>

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

}  // namespace rg
