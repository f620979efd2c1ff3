// How busy the machine was over an interval, and with what: the CPU time the hypervisor gave
// to other guests (steal), the CPU time other programs took, and the load average. A study
// reads a snapshot before and between its rounds, so that every figure can say how noisy the
// machine was while it was measured (issue 30). Sources: /proc/stat, /proc/loadavg and
// getrusage on Linux; GetSystemTimes on Windows (no steal figure, no load average there).
// A source that cannot be read is flagged in the snapshot and gives NaN, never an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rg {

// The aggregate "cpu" line of /proc/stat, summed over all CPUs, in ticks (USER_HZ).
struct CpuTicks {
  uint64_t total = 0;       // user nice system idle iowait irq softirq steal (guest is within user)
  uint64_t idle = 0;        // idle + iowait
  uint64_t steal = 0;       // 0 where the kernel has no steal column (before 2.6.11)
  bool has_steal = false;
};

// /proc/stat's text -> its aggregate line; empty when there is none or it is malformed.
std::optional<CpuTicks> parse_proc_stat(const std::string& text);
// /proc/loadavg's text ("0.52 0.58 0.59 1/123 4567") -> the 1-minute load; empty when malformed.
std::optional<double> parse_loadavg(const std::string& text);

struct LoadSnapshot {
  double monotonic_seconds = 0;   // steady clock
  bool has_cpu_ticks = false;     // /proc/stat (Windows: GetSystemTimes)
  CpuTicks cpu;
  double ticks_per_second = 0;    // USER_HZ (Windows: 10^7)
  bool has_own_cpu = false;       // getrusage (Windows: GetProcessTimes, this process only)
  double own_cpu_seconds = 0;     // this process and its waited-for children: user + system
  bool has_load1 = false;         // /proc/loadavg
  double load1 = 0;
};

LoadSnapshot read_load_snapshot();

// Shares of all logical CPUs' time over an interval, 0 to 1; NaN where a source is missing (at
// either end) or the interval is empty. busy: CPUs running anything (not idle, not stolen);
// others: busy time that was neither this process's nor its children's. A child counts as ours
// once it has been waited for: take snapshots between runs, not during one.
struct LoadInterval {
  double seconds = 0;
  double steal_share = 0;
  double busy_share = 0;
  double others_busy_share = 0;
  double load1 = 0;               // the 1-minute load average at the end
  int logical_cpus = 0;
};

LoadInterval load_between(const LoadSnapshot& before, const LoadSnapshot& after, int logical_cpus);

// "other programs 48% of 2 CPUs, steal 0.0%, load 1.9" ("unknown" for a NaN).
std::string describe_load(const LoadInterval& load);

// The speed of a fixed piece of work on this thread now, in GB/s: sums of a 2 MiB buffer (a
// core's L2 or L3) timed pass by pass for about 15 ms, the median pass. It falls when another
// program or another virtual machine shares this core, its caches or its memory: what steal time
// and the load average do not see. The study takes it before every run, so the report can say
// how far the machine itself varied over a figure's rounds.
double fixed_work_gbs();

}  // namespace rg
