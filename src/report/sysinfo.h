// The machine facts `retrograd probe` prints: CPU, cores, caches, memory, OS.
// Read from CPUID, /proc and /sys on Linux, the Win32 API on Windows. Whatever cannot be read
// stays 0 or empty and prints as "unknown"; reading never fails and never ends the program.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/cpuid.h"
#include "report/process_stats.h"

namespace rg {

struct CacheLevel {
  int level = 0;               // 1, 2, 3
  std::string type;            // "data", "instruction" or "unified"
  int64_t size_bytes = 0;      // one instance of this cache
  int line_bytes = 0;          // 0 if unknown
  int shared_by_cpus = 0;      // logical CPUs sharing one instance; 0 if unknown
};

struct SystemInfo {
  CpuInfo cpu;
  int logical_cpus = 0;        // online logical CPUs (hardware threads)
  int physical_cores = 0;      // 0 if unknown
  std::vector<CacheLevel> caches;  // those of the first CPU, by level: L1d, L1i, L2, L3
  int64_t mem_total_bytes = 0;     // 0 if unknown
  int64_t mem_available_bytes = 0; // what can be allocated without swapping; 0 if unknown
  std::string os;              // "Linux 6.1.0-13-amd64 x86_64", "Windows 10.0.19045 x86_64"
  AddressSpace address_space;  // this process's, where limited (ulimit -v, 32-bit)
  double cpu_mhz = 0.0;        // current clock as the OS reports it; 0 if unknown
  bool hypervisor = false;     // CPUID says we run in a virtual machine
};

SystemInfo read_system_info();

// Multi-line block, one fact per line, each line "name       value\n":
//   cpu        AMD EPYC (family 25 model 17), 2 logical CPUs, 2 cores
//   features   sse2 sse3 ssse3 sse4.1 sse4.2 popcnt avx avx2 fma f16c avx512f
//   caches     L1d 32 KiB, L1i 32 KiB, L2 512 KiB, L3 32 MiB
//   memory     23.4 GiB total, 21.0 GiB available[; this process may map 4.0 GiB (32-bit process)]
//   os         Linux 6.1.0-13-amd64 x86_64
std::string format_system_info(const SystemInfo& info);

}  // namespace rg
