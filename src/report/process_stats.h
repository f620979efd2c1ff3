// What the operating system says about this process: peak resident memory and CPU time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/memory.h"

namespace rg {

int64_t peak_rss_bytes();       // 0 when unknown
int64_t current_rss_bytes();    // resident now; 0 when unknown
double process_cpu_seconds();   // user + system, all threads
// User + system seconds of this process and of the children it has waited for (getrusage's
// RUSAGE_SELF + RUSAGE_CHILDREN). Windows keeps no children's sum: this process's alone there.
// Empty when unknown.
std::optional<double> process_and_children_cpu_seconds();

// The address space a process may map (AddressSpace, address_space()) is base/memory.h's.

}  // namespace rg
