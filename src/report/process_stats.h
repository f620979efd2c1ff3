// What the operating system says about this process: peak resident memory and CPU time (how
// much address space it may map, AddressSpace, is base/memory.h's: the allocator's checks need it).
#pragma once

#include <cstdint>
#include <string>

#include "base/memory.h"

namespace rg {

int64_t peak_rss_bytes();       // 0 when unknown
int64_t current_rss_bytes();    // resident now; 0 when unknown
double process_cpu_seconds();   // user + system, all threads

}  // namespace rg
