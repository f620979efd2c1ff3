// Test helpers that differ between POSIX and Windows: fresh temp folders, environment
// variables for one scope, and running the retrograd binary for its output and exit code.
#pragma once

#include <gtest/gtest.h>

#include "test_paths.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#if defined(_WIN32)
#include <windows.h>
#else
#include <sys/wait.h>
#endif

// A new empty folder under the test temp folder, named prefix + random letters.
inline std::string make_temp_folder(const std::string& prefix) {
  static std::mt19937_64 random{std::random_device{}()};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string path = ::testing::TempDir() + prefix + std::to_string(random() % 1000000000);
    std::error_code error;
    if (std::filesystem::create_directory(path, error)) return path;
  }
  ADD_FAILURE() << "cannot create a temp folder " << ::testing::TempDir() << prefix << "*";
  return ::testing::TempDir();
}

inline void set_env(const char* name, const char* value) {
#if defined(_WIN32)
  _putenv_s(name, value);
#else
  setenv(name, value, 1);
#endif
}

inline void unset_env(const char* name) {
#if defined(_WIN32)
  _putenv_s(name, "");  // an empty value removes the variable
#else
  unsetenv(name);
#endif
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  // `value` null: unset for the scope.
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      set_env(name, value);
    } else {
      unset_env(name);
    }
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (had_) {
      set_env(name_, old_.c_str());
    } else {
      unset_env(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// AddressSanitizer (tools/sanitize_build.sh) reserves terabytes of address space for its
// shadow memory, so a test of ulimit -v cannot run under it.
#if defined(__SANITIZE_ADDRESS__)
#define RG_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RG_TEST_ASAN 1
#endif
#endif
#if defined(RG_TEST_ASAN)
constexpr bool kUnderAddressSanitizer = true;
#else
constexpr bool kUnderAddressSanitizer = false;
#endif

// Wine's ntdll exports wine_get_version; Windows's does not.
inline bool running_under_wine() {
#if defined(_WIN32)
  const HMODULE ntdll = GetModuleHandleA("ntdll.dll");
  return ntdll != nullptr && GetProcAddress(ntdll, "wine_get_version") != nullptr;
#else
  return false;
#endif
}

// The retrograd binary for a shell command. A cross build's tests run it the way Meson runs
// them: through the exe wrapper (MESON_EXE_WRAPPER: qemu as the same old CPU), or on Windows
// under Wine, where the build's Unix path "/x/y" is "Z:/x/y" (Wine maps Z: to the Unix root)
// and the child is a Windows process already.
inline std::string retrograd_binary() {
  std::string path = retrograd_binary_path;
#if defined(_WIN32)
  if (!path.empty() && path[0] == '/') path = "Z:" + path;
  return "\"" + path + "\"";
#else
  const char* wrapper = std::getenv("MESON_EXE_WRAPPER");
  const std::string quoted = "'" + path + "'";
  return wrapper != nullptr && wrapper[0] != '\0' ? "'" + std::string(wrapper) + "' " + quoted : quoted;
#endif
}

struct Outcome {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a command line through the shell (cmd.exe on Windows): its output, both streams.
inline Outcome run_command_once(const std::string& command_line) {
  const std::string command = command_line + " 2>&1";
  Outcome outcome;
#if defined(_WIN32)
  // cmd /c strips the outer quotes of a line that starts with one: a second pair keeps them.
  FILE* pipe = _popen(("\"" + command + "\"").c_str(), "rb");
#else
  FILE* pipe = popen(command.c_str(), "r");
#endif
  if (pipe == nullptr) return outcome;
  std::array<char, 4096> buffer;
  size_t got;
  while ((got = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) outcome.output.append(buffer.data(), got);
#if defined(_WIN32)
  outcome.code = _pclose(pipe);
#else
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
#endif
  return outcome;
}

// cmd.exe's exit code when it could not start the program (no program of ours exits with it).
constexpr int kCmdCouldNotLaunch = 9009;

// As run_command_once; on Windows a start that cmd.exe reports it could not make is tried again
// (twice at most): under Wine, CI saw one such start fail among thousands, mid-suite, with the
// binary in place (its output cmd's own message). A program that started is never run twice.
inline Outcome run_command(const std::string& command_line) {
  Outcome outcome = run_command_once(command_line);
#if defined(_WIN32)
  for (int retry = 0; retry < 2 && outcome.code == kCmdCouldNotLaunch; ++retry) {
    std::fprintf(stderr, "cmd.exe could not start the program (exit %d: %s); trying again\n", outcome.code,
                 outcome.output.c_str());
    outcome = run_command_once(command_line);
  }
#endif
  return outcome;
}

// Runs `retrograd ARGS`.
inline Outcome run(const std::string& args) { return run_command(retrograd_binary() + " " + args); }
