// Running the retrograd binary from a test: its exit code and everything it printed.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct Outcome {
  int code = -1;
  std::string output;  // stdout and stderr together
};

inline Outcome run(const std::string& args) {
  const std::string command = std::string(RETROGRAD_BINARY) + " " + args + " 2>&1";
  Outcome outcome;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return outcome;
  std::array<char, 4096> buffer;
  size_t got;
  while ((got = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) outcome.output.append(buffer.data(), got);
  const int status = pclose(pipe);
  outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return outcome;
}
