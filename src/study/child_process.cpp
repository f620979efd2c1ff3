// posix_spawn + wait4 on POSIX; CreateProcess + GetProcessTimes on Windows.
#include "study/child_process.h"

#include <chrono>
#include <cstring>

#if defined(_WIN32)
#include <windows.h>
#include <psapi.h>
#else
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;
#endif

namespace rg {

std::string ChildResult::describe() const {
  if (exit_code >= 0) return "exit code " + std::to_string(exit_code);
#if defined(_WIN32)
  return "ended abnormally";
#else
  const char* name = strsignal(signal);
  return "killed by signal " + std::to_string(signal) + (name ? std::string(" (") + name + ")" : "");
#endif
}

#if defined(_WIN32)

namespace {
// One command line from argv, quoted the way the Microsoft C runtime splits it again.
std::string quote_argument(const std::string& arg) {
  if (!arg.empty() && arg.find_first_of(" \t\"") == std::string::npos) return arg;
  std::string out = "\"";
  size_t backslashes = 0;
  for (char c : arg) {
    if (c == '\\') { ++backslashes; continue; }
    if (c == '"') out.append(backslashes * 2 + 1, '\\');
    else out.append(backslashes, '\\');
    backslashes = 0;
    out += c;
  }
  out.append(backslashes * 2, '\\');
  return out + "\"";
}
double filetime_seconds(FILETIME t) {
  return static_cast<double>((static_cast<uint64_t>(t.dwHighDateTime) << 32) | t.dwLowDateTime) * 1e-7;
}
}  // namespace

Result<ChildResult> run_child(const ChildSpec& spec) {
  std::string command;
  for (const std::string& arg : spec.argv) command += (command.empty() ? "" : " ") + quote_argument(arg);
  SECURITY_ATTRIBUTES inherit{sizeof(SECURITY_ATTRIBUTES), nullptr, TRUE};
  const bool redirect = !spec.output_path.empty();
  HANDLE out = redirect ? CreateFileA(spec.output_path.c_str(), GENERIC_WRITE, FILE_SHARE_READ, &inherit, CREATE_ALWAYS,
                                      FILE_ATTRIBUTE_NORMAL, nullptr)
                        : GetStdHandle(STD_OUTPUT_HANDLE);
  if (out == INVALID_HANDLE_VALUE) return Status::error(spec.output_path + ": cannot create the run's output file");
  // The environment block: ours with the spec's changes (variables set for the child only).
  for (const auto& [name, value] : spec.env) SetEnvironmentVariableA(name.c_str(), value.empty() ? nullptr : value.c_str());
  STARTUPINFOA startup{};
  startup.cb = sizeof startup;
  startup.dwFlags = STARTF_USESTDHANDLES;
  startup.hStdOutput = out;
  startup.hStdError = redirect ? out : GetStdHandle(STD_ERROR_HANDLE);
  startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  PROCESS_INFORMATION process{};
  auto start = std::chrono::steady_clock::now();
  // A start that fails for want of the moment's resources is tried again, 3 starts in all (Wine
  // under load has answered ERROR_INTERNAL_ERROR, 1359, about once in a few thousand starts); the
  // error is read before the calls below can overwrite it.
  BOOL created = FALSE;
  DWORD error = 0;
  for (int attempt = 0; attempt < 3 && !created; ++attempt) {
    if (attempt > 0) Sleep(200);
    start = std::chrono::steady_clock::now();
    created = CreateProcessA(nullptr, command.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &startup, &process);
    error = created ? 0 : GetLastError();
    if (error != ERROR_INTERNAL_ERROR && error != ERROR_NOT_ENOUGH_MEMORY && error != ERROR_NO_SYSTEM_RESOURCES) break;
  }
  for (const auto& entry : spec.env) SetEnvironmentVariableA(entry.first.c_str(), nullptr);
  if (redirect) CloseHandle(out);
  if (!created) return Status::error(spec.argv[0] + ": cannot start (error " + std::to_string(error) + ")");
  WaitForSingleObject(process.hProcess, INFINITE);
  ChildResult result;
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  DWORD code = 0;
  GetExitCodeProcess(process.hProcess, &code);
  result.exit_code = static_cast<int>(code);
  FILETIME created_at, exited_at, kernel, user;
  if (GetProcessTimes(process.hProcess, &created_at, &exited_at, &kernel, &user)) {
    result.cpu_seconds = filetime_seconds(kernel) + filetime_seconds(user);
  }
  PROCESS_MEMORY_COUNTERS counters;
  if (GetProcessMemoryInfo(process.hProcess, &counters, sizeof counters)) {
    result.peak_rss_bytes = static_cast<int64_t>(counters.PeakWorkingSetSize);
  }
  CloseHandle(process.hThread);
  CloseHandle(process.hProcess);
  return result;
}

std::string self_executable_path(const char* argv0) {
  char path[MAX_PATH];
  const DWORD n = GetModuleFileNameA(nullptr, path, MAX_PATH);
  return n > 0 && n < MAX_PATH ? std::string(path, n) : std::string(argv0);
}

#else

namespace {
// environ with the spec's changes: "NAME=value" strings the caller keeps alive.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& changes) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    bool replaced = false;
    for (const auto& change : changes) replaced = replaced || entry.rfind(change.first + "=", 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [name, value] : changes) {
    if (!value.empty()) env.push_back(name + "=" + value);
  }
  return env;
}
}  // namespace

Result<ChildResult> run_child(const ChildSpec& spec) {
  if (spec.argv.empty()) return Status::error("run_child: no program given");
  // posix_spawn reports a program it cannot run, but not under qemu-user (its emulated vfork
  // runs the exec in a copy): asked here first, so the error is the same everywhere.
  if (access(spec.argv[0].c_str(), X_OK) != 0) {
    return Status::error(spec.argv[0] + ": cannot start: " + std::strerror(errno));
  }
  const bool redirect = !spec.output_path.empty();
  const int out = redirect ? open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  if (redirect && out < 0) {
    return Status::error(spec.output_path + ": cannot create the run's output file: " + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (redirect) {
    posix_spawn_file_actions_adddup2(&actions, out, 1);
    posix_spawn_file_actions_adddup2(&actions, out, 2);
  }
  std::vector<std::string> env = child_environment(spec.env);
  std::vector<char*> argv, envp;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (redirect) close(out);
  if (spawned != 0) return Status::error(spec.argv[0] + ": cannot start: " + std::strerror(spawned));
  int status = 0;
  struct rusage usage {};
  while (wait4(pid, &status, 0, &usage) < 0) {
    if (errno != EINTR) return Status::error(spec.argv[0] + ": waiting for the run failed: " + std::strerror(errno));
  }
  ChildResult result;
  result.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  result.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  result.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
  return result;
}

std::string self_executable_path(const char* argv0) {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : std::string(argv0);
}

#endif

}  // namespace rg
