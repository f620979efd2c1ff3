// Machine load: the parsers of /proc/stat and /proc/loadavg, the snapshot (one reader per
// platform) and the shares over an interval.
#include "report/machine_load.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "report/process_stats.h"

#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <unistd.h>
#endif

namespace rg {

namespace {

// A non-negative decimal integer, the whole of `word`.
std::optional<uint64_t> parse_ticks(const std::string& word) {
  if (word.empty() || word.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : word) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

#if !defined(_WIN32)
// A /proc file's text (their size reads as 0, so read to the end); empty when unreadable.
std::string read_proc_text(const char* path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}
#endif

// The system's CPU ticks: /proc/stat, or GetSystemTimes (100 ns units; kernel time includes idle).
bool read_cpu_ticks(CpuTicks* ticks, double* ticks_per_second) {
#if defined(_WIN32)
  FILETIME idle, kernel, user;
  if (!GetSystemTimes(&idle, &kernel, &user)) return false;
  auto count = [](FILETIME t) { return (static_cast<uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime; };
  ticks->total = count(kernel) + count(user);
  ticks->idle = count(idle);
  ticks->steal = 0;
  ticks->has_steal = false;
  *ticks_per_second = 1e7;
  return true;
#else
  const std::optional<CpuTicks> parsed = parse_proc_stat(read_proc_text("/proc/stat"));
  const long hz = sysconf(_SC_CLK_TCK);
  if (!parsed || hz <= 0) return false;
  *ticks = *parsed;
  *ticks_per_second = static_cast<double>(hz);
  return true;
#endif
}

bool read_load1(double* load1) {
#if defined(_WIN32)
  (void)load1;
  return false;  // Windows keeps no load average
#else
  const std::optional<double> parsed = parse_loadavg(read_proc_text("/proc/loadavg"));
  if (parsed) *load1 = *parsed;
  return parsed.has_value();
#endif
}

// A share of the interval's CPU time in [0, 1] (rounding between sources can step past either end).
double share(double part, double whole) { return std::clamp(part / whole, 0.0, 1.0); }

}  // namespace

std::optional<CpuTicks> parse_proc_stat(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string name;
    if (!(words >> name) || name != "cpu") continue;  // cpu0, cpu1...: one CPU each
    // user nice system idle iowait irq softirq steal guest guest_nice: the first four in every
    // kernel, the rest as kernels added them. guest and guest_nice are counted in user and nice.
    uint64_t field[8] = {};
    int fields = 0;
    for (std::string word; fields < 8 && words >> word; ++fields) {
      const std::optional<uint64_t> value = parse_ticks(word);
      if (!value) return std::nullopt;
      field[fields] = *value;
    }
    if (fields < 4) return std::nullopt;
    CpuTicks ticks;
    for (int i = 0; i < fields; ++i) ticks.total += field[i];
    ticks.idle = field[3] + field[4];
    ticks.has_steal = fields >= 8;
    ticks.steal = field[7];
    return ticks;
  }
  return std::nullopt;
}

std::optional<double> parse_loadavg(const std::string& text) {
  std::istringstream words(text);
  std::string first;
  if (!(words >> first)) return std::nullopt;
  char* end = nullptr;
  const double load = std::strtod(first.c_str(), &end);
  if (end != first.c_str() + first.size() || !std::isfinite(load) || load < 0) return std::nullopt;
  return load;
}

LoadSnapshot read_load_snapshot() {
  LoadSnapshot s;
  s.monotonic_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  s.has_cpu_ticks = read_cpu_ticks(&s.cpu, &s.ticks_per_second);
  const std::optional<double> own = process_and_children_cpu_seconds();
  s.has_own_cpu = own.has_value();
  s.own_cpu_seconds = own.value_or(0);
  s.has_load1 = read_load1(&s.load1);
  return s;
}

LoadInterval load_between(const LoadSnapshot& before, const LoadSnapshot& after, int logical_cpus) {
  LoadInterval load;
  load.seconds = after.monotonic_seconds - before.monotonic_seconds;
  load.logical_cpus = logical_cpus;
  load.load1 = after.has_load1 ? after.load1 : NAN;
  load.steal_share = load.busy_share = load.others_busy_share = NAN;
  if (!before.has_cpu_ticks || !after.has_cpu_ticks || after.cpu.total <= before.cpu.total || load.seconds <= 0) {
    return load;
  }
  // Differences as signed numbers: a tickless kernel's iowait can step back a little.
  auto difference = [](uint64_t from, uint64_t to) { return static_cast<double>(to) - static_cast<double>(from); };
  const double total = difference(before.cpu.total, after.cpu.total);
  const double idle = difference(before.cpu.idle, after.cpu.idle);
  const bool has_steal = before.cpu.has_steal && after.cpu.has_steal;
  const double steal = has_steal ? difference(before.cpu.steal, after.cpu.steal) : 0.0;
  if (has_steal) load.steal_share = share(steal, total);
  const double busy = total - idle - steal;
  load.busy_share = share(busy, total);
  if (before.has_own_cpu && after.has_own_cpu) {
    const double ours = (after.own_cpu_seconds - before.own_cpu_seconds) * after.ticks_per_second;
    load.others_busy_share = share(busy - ours, total);
  }
  return load;
}

std::string describe_load(const LoadInterval& load) {
  auto figure = [](const char* format, double value) {
    if (!std::isfinite(value)) return std::string("unknown");
    char text[32];
    std::snprintf(text, sizeof text, format, value);
    return std::string(text);
  };
  return "other programs " + figure("%.0f%%", 100 * load.others_busy_share) + " of " +
         std::to_string(load.logical_cpus) + (load.logical_cpus == 1 ? " CPU" : " CPUs") + ", steal " +
         figure("%.1f%%", 100 * load.steal_share) + ", load " + figure("%.1f", load.load1);
}

double fixed_work_gbs() {
  constexpr size_t kFloats = (size_t{2} << 20) / sizeof(float);
  static std::vector<float> buffer(kFloats, 1.0f);  // one allocation for the process
  std::vector<double> rates;
  volatile float sink = 0;
  const auto stop = std::chrono::steady_clock::now() + std::chrono::milliseconds(15);
  do {
    const auto start = std::chrono::steady_clock::now();
    float sums[8] = {0, 0, 0, 0, 0, 0, 0, 0};  // independent chains: throughput, not latency
    for (size_t i = 0; i < kFloats; i += 8)
      for (int k = 0; k < 8; ++k) sums[k] += buffer[i + static_cast<size_t>(k)];
    sink = sink + sums[0] + sums[7];
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0) rates.push_back(static_cast<double>(kFloats * sizeof(float)) / seconds / 1e9);
  } while (std::chrono::steady_clock::now() < stop || rates.size() < 3);
  std::nth_element(rates.begin(), rates.begin() + static_cast<long>(rates.size() / 2), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace rg
