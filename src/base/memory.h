// The one allocator every tensor's bytes go through: it counts current and peak bytes
// per memory space (host now, devices later) and refuses allocations past a budget.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"

namespace rg {

class MemoryAccount {
 public:
  explicit MemoryAccount(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  int64_t current_bytes() const { return current_.load(); }
  int64_t peak_bytes() const { return peak_.load(); }
  int64_t budget_bytes() const { return budget_.load(); }  // 0 = no budget
  void set_budget(int64_t bytes) { budget_.store(bytes); }
  void reset_peak() { peak_.store(current_.load()); }

  // 64-byte aligned, uninitialised. `what` names the allocation in error messages.
  Result<void*> allocate(size_t bytes, const std::string& what);
  void release(void* ptr, size_t bytes);

  // Counts bytes that live elsewhere (a device buffer) against the budget without allocating
  // anything: the same budget check and message as allocate(). unreserve() gives them back.
  Status reserve(int64_t bytes, const std::string& what);
  void unreserve(int64_t bytes);

 private:
  // Adds `bytes` to the current count unless that passes the budget.
  Status charge(int64_t bytes, const std::string& what, int64_t* in_use_after);
  void note_peak(int64_t in_use);

  std::string name_;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> budget_{0};
};

// The process's host memory account.
MemoryAccount& host_memory();

// "1.5 MiB", "312 B": sizes for people.
std::string format_bytes(int64_t bytes);

// Parses "64M", "1.5G", "4096", "512k" (binary units). Errors name the text.
Result<int64_t> parse_bytes(const std::string& text);

}  // namespace rg
