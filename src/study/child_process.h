// Runs one program to its end as a child process and reports what the operating system
// measured of it: exit status, wall time, CPU time (user + system, all threads) and peak
// resident memory. The study runs every measurement this way, so that each run's memory
// peak and CPU time are its own and a run that crashes ends only itself.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace rg {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is the program's path
  std::vector<std::pair<std::string, std::string>> env;  // set (or, with an empty value, removed) for the child
  std::string output_path;        // the child's stdout and stderr go here (created or truncated); empty: ours
};

struct ChildResult {
  int exit_code = -1;        // -1 when ended by a signal
  int signal = 0;            // the signal that ended it (POSIX), else 0
  double wall_seconds = 0;
  double cpu_seconds = 0;    // user + system (wait4 / GetProcessTimes)
  int64_t peak_rss_bytes = 0;  // ru_maxrss / PeakWorkingSetSize
  bool ok() const { return exit_code == 0; }
  std::string describe() const;  // "exit code 2", "killed by signal 9 (Killed)"
};

// Errors only when the child could not be started (no such program, output file not writable).
Result<ChildResult> run_child(const ChildSpec& spec);

// This program's own path (/proc/self/exe; GetModuleFileName on Windows), or argv0 when unknown.
std::string self_executable_path(const char* argv0);

}  // namespace rg
