// What the operating system says about this process: peak resident memory, CPU time, and
// how much address space it may map.
#pragma once

#include <cstdint>
#include <string>

namespace rg {

int64_t peak_rss_bytes();       // 0 when unknown
int64_t current_rss_bytes();    // resident now; 0 when unknown
double process_cpu_seconds();   // user + system, all threads

// The address space this process may map, where that is a limit that matters: the soft
// RLIMIT_AS (`ulimit -v`) or a 32-bit process's ceiling (4 GiB under a 64-bit kernel, 3 GiB
// under a 32-bit Linux, 2 GiB on Windows unless large-address-aware), whichever is lower.
struct AddressSpace {
  int64_t limit_bytes = 0;  // 0: no limit that matters (a 64-bit process without ulimit -v)
  int64_t used_bytes = 0;   // mapped now: code, libraries, heap, stacks
  std::string source;       // "ulimit -v", "32-bit process"
};
AddressSpace address_space();

}  // namespace rg
