// The one allocator every tensor's bytes go through: it counts current and peak bytes
// per memory space (host now, devices later) and refuses allocations past a budget. Also what
// the system says a process may still take (address space, available memory), which plans
// are checked against.
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

// The address space this process may map, where that is a limit that matters: the soft
// RLIMIT_AS (`ulimit -v`) or a 32-bit process's ceiling (4 GiB under a 64-bit kernel, 3 GiB
// under a 32-bit Linux, 2 GiB on Windows unless large-address-aware), whichever is lower.
struct AddressSpace {
  int64_t limit_bytes = 0;  // 0: no limit that matters (a 64-bit process without ulimit -v)
  int64_t used_bytes = 0;   // mapped now: code, libraries, heap, stacks
  std::string source;       // "ulimit -v", "32-bit process"
};
AddressSpace address_space();

// The host memory this process may still take now: the lower of what the system has free for
// it (MemAvailable in /proc/meminfo; ullAvailPhys of GlobalMemoryStatusEx on Windows) and what
// is left of a limited address space (limit less what is mapped). The environment variable
// RETROGRAD_MEM_AVAILABLE (a size: "512M") stands in for the system's figure (tests, or a
// machine that reports too much). bytes 0: unknown.
struct AvailableMemory {
  int64_t bytes = 0;
  std::string source;  // "MemAvailable in /proc/meminfo", "ulimit -v less what is mapped", ...
};
AvailableMemory available_host_memory();

// Before allocating `bytes` of host memory for `what` ("the parameters of mlp.cfg"): an error
// when they pass what the host account's budget has left, where there is a budget (the user's
// word, obeyed even above the machine's memory), else what available_host_memory() says. The
// message names `what` and both figures. A check made once before a group of allocations, so a
// request the machine cannot meet is refused with a word instead of met by the OOM killer.
Status check_host_memory(int64_t bytes, const std::string& what);

}  // namespace rg
