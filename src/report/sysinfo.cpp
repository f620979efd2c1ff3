// Reads the machine facts of sysinfo.h: /proc and /sys on Linux, the Win32 API on Windows.
// Every source is optional (old kernels lack MemAvailable, containers hide /sys, XP before SP3
// lacks GetLogicalProcessorInformation): a missing one leaves its fields 0 or empty.
#include "report/sysinfo.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "base/memory.h"
#include "report/process_stats.h"

#if defined(__linux__)
#include <sys/utsname.h>
#include <unistd.h>

#include <thread>
#elif defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <thread>  // not on Windows: MinGW's win32 thread model has no std::thread
#endif

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || defined(_M_IX86)
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#else
#include <cpuid.h>
#endif
#define RG_SYSINFO_X86 1
#else
#define RG_SYSINFO_X86 0
#endif

namespace rg {
namespace {

// CPUID.1:ECX bit 31, set by hypervisors for their guests (always 0 on bare metal).
bool cpuid_hypervisor_bit() {
#if RG_SYSINFO_X86 && defined(_MSC_VER) && !defined(__clang__)
  int regs[4] = {0, 0, 0, 0};
  __cpuid(regs, 0);
  if (regs[0] < 1) return false;
  __cpuid(regs, 1);
  return ((static_cast<unsigned>(regs[2]) >> 31) & 1u) != 0;
#elif RG_SYSINFO_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return ((c >> 31) & 1u) != 0;
#else
  return false;
#endif
}

// Cache size for the caches line: "32 KiB" rather than "32.0 KiB" when the size is whole.
std::string format_cache_size(int64_t bytes) {
  std::string text = format_bytes(bytes);
  const size_t dot_zero = text.find(".0 ");
  if (dot_zero != std::string::npos) text.erase(dot_zero, 2);
  return text;
}

// "L1d", "L1i", "L2": the usual short name of a cache.
std::string cache_label(const CacheLevel& cache) {
  std::string label = "L" + std::to_string(cache.level);
  if (cache.type == "data") label += "d";
  if (cache.type == "instruction") label += "i";
  return label;
}

// L1d before L1i before L2: by level, then data, instruction, unified. (Unused where the
// platform gives no cache list.)
[[maybe_unused]] void sort_caches(std::vector<CacheLevel>& caches) {
  auto rank = [](const std::string& type) { return type == "data" ? 0 : type == "instruction" ? 1 : 2; };
  std::stable_sort(caches.begin(), caches.end(), [&](const CacheLevel& a, const CacheLevel& b) {
    if (a.level != b.level) return a.level < b.level;
    return rank(a.type) < rank(b.type);
  });
}

#if defined(__linux__)

// The first line of a small /proc or /sys file, without its newline; empty if unreadable.
std::string read_first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (file) std::getline(file, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// "value" of a "key<spaces>: value" line of /proc/cpuinfo or /proc/meminfo; false if not that key.
bool split_key_value(const std::string& line, const std::string& key, std::string& value) {
  if (line.compare(0, key.size(), key) != 0) return false;
  size_t pos = key.size();
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  if (pos >= line.size() || line[pos] != ':') return false;
  ++pos;
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  value = line.substr(pos);
  return true;
}

// "32K", "1024K", "8M", "512" (bytes) as /sys writes cache sizes; 0 if unreadable.
int64_t parse_sys_size(const std::string& text) {
  char* end = nullptr;
  const long long number = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || number <= 0) return 0;
  int64_t scale = 1;
  if (*end == 'K' || *end == 'k') scale = int64_t{1} << 10;
  if (*end == 'M' || *end == 'm') scale = int64_t{1} << 20;
  if (*end == 'G' || *end == 'g') scale = int64_t{1} << 30;
  return static_cast<int64_t>(number) * scale;
}

// How many CPUs a list like "0-1,4,6-7" names; 0 if empty or malformed.
int count_cpu_list(const std::string& list) {
  int count = 0;
  std::stringstream parts(list);
  std::string part;
  while (std::getline(parts, part, ',')) {
    if (part.empty()) continue;
    int first = 0, last = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &first, &last) == 2) {
      if (last < first) return 0;
      count += last - first + 1;
    } else if (std::sscanf(part.c_str(), "%d", &first) == 1) {
      count += 1;
    } else {
      return 0;
    }
  }
  return count;
}

// /sys/devices/system/cpu/cpu0/cache/indexN/: one directory per cache of the first CPU.
std::vector<CacheLevel> read_linux_caches() {
  std::vector<CacheLevel> caches;
  const std::string root = "/sys/devices/system/cpu/cpu0/cache/index";
  for (int index = 0; index < 16; ++index) {
    const std::string dir = root + std::to_string(index) + "/";
    const std::string level = read_first_line(dir + "level");
    if (level.empty()) continue;  // indices are normally dense, but a gap costs nothing
    CacheLevel cache;
    cache.level = std::atoi(level.c_str());
    const std::string type = read_first_line(dir + "type");
    if (type == "Data") cache.type = "data";
    else if (type == "Instruction") cache.type = "instruction";
    else if (type == "Unified") cache.type = "unified";
    else continue;  // nothing else holds data we compute on
    cache.size_bytes = parse_sys_size(read_first_line(dir + "size"));
    cache.line_bytes = std::atoi(read_first_line(dir + "coherency_line_size").c_str());
    cache.shared_by_cpus = count_cpu_list(read_first_line(dir + "shared_cpu_list"));
    if (cache.level <= 0 || cache.size_bytes <= 0) continue;
    caches.push_back(cache);
  }
  sort_caches(caches);
  return caches;
}

// Physical cores from /proc/cpuinfo: distinct (physical id, core id) pairs over all processors.
// Falls back to the /sys topology files (ARM and some VMs print no ids in /proc/cpuinfo).
// Also takes the first "cpu MHz" line.
void read_linux_cpuinfo(SystemInfo& info) {
  std::set<std::pair<int, int>> cores;
  std::ifstream file("/proc/cpuinfo");
  std::string line, value;
  int physical_id = -1, core_id = -1;
  auto end_processor = [&]() {
    if (physical_id >= 0 && core_id >= 0) cores.insert({physical_id, core_id});
    physical_id = core_id = -1;
  };
  while (file && std::getline(file, line)) {
    if (line.empty()) {
      end_processor();
    } else if (split_key_value(line, "physical id", value)) {
      physical_id = std::atoi(value.c_str());
    } else if (split_key_value(line, "core id", value)) {
      core_id = std::atoi(value.c_str());
    } else if (info.cpu_mhz == 0.0 && split_key_value(line, "cpu MHz", value)) {
      info.cpu_mhz = std::atof(value.c_str());
    }
  }
  end_processor();

  if (cores.empty()) {
    for (int cpu = 0; cpu < info.logical_cpus; ++cpu) {
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      const std::string package = read_first_line(dir + "physical_package_id");
      const std::string core = read_first_line(dir + "core_id");
      if (package.empty() || core.empty()) continue;
      cores.insert({std::atoi(package.c_str()), std::atoi(core.c_str())});
    }
  }
  info.physical_cores = static_cast<int>(cores.size());

  if (info.cpu_mhz == 0.0) {  // no "cpu MHz" line (ARM): the cpufreq maximum, in kHz
    const std::string khz = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
    if (!khz.empty()) info.cpu_mhz = std::atof(khz.c_str()) / 1000.0;
  }
}

// /proc/meminfo: "MemTotal:  24576000 kB". Kernels before 3.14 have no MemAvailable; then
// free + buffers + page cache is the usual estimate.
void read_linux_meminfo(SystemInfo& info) {
  std::ifstream file("/proc/meminfo");
  std::string line, value;
  int64_t free_kb = -1, buffers_kb = 0, cached_kb = 0, available_kb = -1, total_kb = 0;
  while (file && std::getline(file, line)) {
    if (split_key_value(line, "MemTotal", value)) total_kb = std::strtoll(value.c_str(), nullptr, 10);
    else if (split_key_value(line, "MemAvailable", value)) available_kb = std::strtoll(value.c_str(), nullptr, 10);
    else if (split_key_value(line, "MemFree", value)) free_kb = std::strtoll(value.c_str(), nullptr, 10);
    else if (split_key_value(line, "Buffers", value)) buffers_kb = std::strtoll(value.c_str(), nullptr, 10);
    else if (split_key_value(line, "Cached", value)) cached_kb = std::strtoll(value.c_str(), nullptr, 10);
  }
  if (available_kb < 0 && free_kb >= 0) available_kb = free_kb + buffers_kb + cached_kb;
  info.mem_total_bytes = std::max<int64_t>(total_kb, 0) * 1024;
  info.mem_available_bytes = std::max<int64_t>(available_kb, 0) * 1024;
}

void read_platform(SystemInfo& info) {
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  info.logical_cpus = online > 0 ? static_cast<int>(online) : static_cast<int>(std::thread::hardware_concurrency());
  info.caches = read_linux_caches();
  read_linux_cpuinfo(info);
  read_linux_meminfo(info);
  struct utsname names;
  if (uname(&names) == 0) {
    info.os = std::string(names.sysname) + " " + names.release + " " + names.machine;
  }
}

#elif defined(_WIN32)

// Casts a GetProcAddress result; going through void(*)(void) keeps -Wcast-function-type quiet.
template <typename Function>
Function lookup_function(const char* module, const char* name) {
  HMODULE handle = GetModuleHandleA(module);
  if (handle == nullptr) return nullptr;
  FARPROC address = GetProcAddress(handle, name);
  if (address == nullptr) return nullptr;
  return reinterpret_cast<Function>(reinterpret_cast<void (*)(void)>(address));
}

int count_mask_bits(ULONG_PTR mask) {
  int count = 0;
  for (; mask != 0; mask &= mask - 1) ++count;
  return count;
}

// Cores and caches from GetLogicalProcessorInformation, looked up at run time because
// Windows XP before SP3 does not export it. Each cache instance is listed once per group of
// sharing CPUs; we keep the first of each (level, type).
void read_windows_topology(SystemInfo& info) {
  using GetInfoFn = BOOL(WINAPI*)(PSYSTEM_LOGICAL_PROCESSOR_INFORMATION, PDWORD);
  const GetInfoFn get_info = lookup_function<GetInfoFn>("kernel32.dll", "GetLogicalProcessorInformation");
  if (get_info == nullptr) return;
  DWORD length = 0;
  get_info(nullptr, &length);  // fails with ERROR_INSUFFICIENT_BUFFER and sets length
  if (length == 0) return;
  std::vector<SYSTEM_LOGICAL_PROCESSOR_INFORMATION> entries(length / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION) +
                                                            1);
  length = static_cast<DWORD>(entries.size() * sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION));
  if (!get_info(entries.data(), &length)) return;
  entries.resize(length / sizeof(SYSTEM_LOGICAL_PROCESSOR_INFORMATION));

  int cores = 0;
  for (const SYSTEM_LOGICAL_PROCESSOR_INFORMATION& entry : entries) {
    if (entry.Relationship == RelationProcessorCore) {
      ++cores;
    } else if (entry.Relationship == RelationCache) {
      const CACHE_DESCRIPTOR& descriptor = entry.Cache;
      CacheLevel cache;
      cache.level = descriptor.Level;
      if (descriptor.Type == CacheData) cache.type = "data";
      else if (descriptor.Type == CacheInstruction) cache.type = "instruction";
      else if (descriptor.Type == CacheUnified) cache.type = "unified";
      else continue;  // trace caches hold decoded instructions
      cache.size_bytes = static_cast<int64_t>(descriptor.Size);
      cache.line_bytes = descriptor.LineSize;
      cache.shared_by_cpus = count_mask_bits(entry.ProcessorMask);
      bool seen = false;
      for (const CacheLevel& other : info.caches) seen = seen || (other.level == cache.level && other.type == cache.type);
      if (!seen && cache.size_bytes > 0) info.caches.push_back(cache);
    }
  }
  info.physical_cores = cores;
  sort_caches(info.caches);
}

// "Windows 10.0.19045 x86_64". RtlGetVersion tells the truth where GetVersionEx, since 8.1,
// reports 6.2 to programs without a manifest.
std::string read_windows_os() {
  std::string os = "Windows";
  using RtlGetVersionFn = LONG(WINAPI*)(OSVERSIONINFOW*);
  const RtlGetVersionFn rtl_get_version = lookup_function<RtlGetVersionFn>("ntdll.dll", "RtlGetVersion");
  if (rtl_get_version != nullptr) {
    OSVERSIONINFOW version;
    ZeroMemory(&version, sizeof version);
    version.dwOSVersionInfoSize = sizeof version;
    if (rtl_get_version(&version) == 0) {
      os += " " + std::to_string(version.dwMajorVersion) + "." + std::to_string(version.dwMinorVersion) + "." +
            std::to_string(version.dwBuildNumber);
    }
  }
  SYSTEM_INFO system;
  ZeroMemory(&system, sizeof system);
  GetNativeSystemInfo(&system);  // the machine's, not the WOW64 view of a 32-bit process
  if (system.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_AMD64) os += " x86_64";
  else if (system.wProcessorArchitecture == PROCESSOR_ARCHITECTURE_INTEL) os += " x86";
  return os;
}

void read_platform(SystemInfo& info) {
  SYSTEM_INFO system;
  ZeroMemory(&system, sizeof system);
  GetSystemInfo(&system);
  info.logical_cpus = static_cast<int>(system.dwNumberOfProcessors);
  read_windows_topology(info);
  MEMORYSTATUSEX memory;
  ZeroMemory(&memory, sizeof memory);
  memory.dwLength = sizeof memory;
  if (GlobalMemoryStatusEx(&memory)) {
    info.mem_total_bytes = static_cast<int64_t>(memory.ullTotalPhys);
    info.mem_available_bytes = static_cast<int64_t>(memory.ullAvailPhys);
  }
  info.os = read_windows_os();
  // cpu_mhz stays 0: the clock lives in the registry (advapi32), not worth a library for one line.
}

#else

void read_platform(SystemInfo& info) { info.logical_cpus = static_cast<int>(std::thread::hardware_concurrency()); }

#endif

}  // namespace

SystemInfo read_system_info() {
  SystemInfo info;
  info.cpu = detect_cpu();
  info.hypervisor = cpuid_hypervisor_bit();
  read_platform(info);
  info.address_space = address_space();
  return info;
}

std::string format_system_info(const SystemInfo& info) {
  std::ostringstream out;
  const CpuInfo& cpu = info.cpu;

  // cpu: brand (or vendor), family/model, thread and core counts, clock.
  out << "cpu        ";
  if (!cpu.brand.empty()) out << cpu.brand;
  else if (!cpu.vendor.empty()) out << cpu.vendor;
  else out << "unknown";
  if (!cpu.vendor.empty()) out << " (family " << cpu.family << " model " << cpu.model << ")";
  out << ", ";
  if (info.logical_cpus > 0) out << info.logical_cpus << (info.logical_cpus == 1 ? " logical CPU" : " logical CPUs");
  else out << "logical CPUs unknown";
  out << ", ";
  if (info.physical_cores > 0) out << info.physical_cores << (info.physical_cores == 1 ? " core" : " cores");
  else out << "cores unknown";
  if (info.cpu_mhz > 0.0) out << ", " << static_cast<long>(info.cpu_mhz + 0.5) << " MHz";
  if (info.hypervisor) out << ", virtual machine";
  out << "\n";

  // features: empty on x86 means none of ours (a pre-SSE2 CPU); without a vendor, no CPUID at all.
  const std::string features = features_string(cpu.features);
  out << "features   ";
  if (!features.empty()) out << features;
  else if (!cpu.vendor.empty()) out << "none (no SSE2)";
  else out << "unknown";
  out << "\n";

  out << "caches     ";
  if (info.caches.empty()) out << "unknown";
  for (size_t i = 0; i < info.caches.size(); ++i) {
    if (i > 0) out << ", ";
    out << cache_label(info.caches[i]) << " " << format_cache_size(info.caches[i].size_bytes);
  }
  out << "\n";

  out << "memory     ";
  if (info.mem_total_bytes > 0) out << format_bytes(info.mem_total_bytes) << " total";
  else out << "total unknown";
  out << ", ";
  if (info.mem_available_bytes > 0) out << format_bytes(info.mem_available_bytes) << " available";
  else out << "available unknown";
  // What this process may map, where that is limited (train plans within it).
  const AddressSpace& space = info.address_space;
  if (space.limit_bytes > 0) out << "; this process may map " << format_bytes(space.limit_bytes) << " (" << space.source << ")";
  out << "\n";

  out << "os         " << (info.os.empty() ? std::string("unknown") : info.os) << "\n";
  return out.str();
}

}  // namespace rg
