// Helpers of the libFuzzer targets: splitting one input into parts, and putting bytes in a
// file for the readers that take a path (each process has its own folder, so libFuzzer's
// -jobs/-workers can run several at once).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>

#include "base/status.h"

namespace rg::fuzz {

// With RETROGRAD_FUZZ_VERBOSE set, each input's outcome is printed: "ok" or the reader's
// message (to check that seeds parse, and what a found input is told).
inline void report(const char* step, const Status& status) {
  static const bool verbose = std::getenv("RETROGRAD_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "%s: %s\n", step, status.ok() ? "ok" : status.message().c_str());
}

// The input as a sequence of parts: take(n) gives the next n bytes (fewer at the end).
class InputParts {
 public:
  InputParts(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return offset_ < size_ ? data_[offset_++] : 0; }
  // A 16-bit little-endian length, then that many bytes.
  std::string sized_part() {
    const size_t low = byte();  // two statements: the order of the reads is fixed
    const size_t high = byte();
    return take(low | high << 8);
  }
  std::string take(size_t n) {
    n = std::min(n, size_ - offset_);
    std::string part(reinterpret_cast<const char*>(data_ + offset_), n);
    offset_ += n;
    return part;
  }
  std::string rest() { return take(size_ - offset_); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

// A folder of this process's own for the targets' files: $TMPDIR/retrograd-fuzz-PID.
inline const std::string& scratch_folder() {
  static const std::string folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/retrograd-fuzz-" +
                       std::to_string(getpid());
    mkdir(path.c_str(), 0700);
    return path;
  }();
  return folder;
}

// Writes `bytes` to scratch_folder()/name and returns the path; aborts if it cannot (a
// broken fuzzing setup, not a finding).
inline std::string write_scratch_file(const std::string& name, const std::string& bytes) {
  const std::string path = scratch_folder() + "/" + name;
  FILE* file = std::fopen(path.c_str(), "wb");
  const bool written = file != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  if (file == nullptr || std::fclose(file) != 0 || !written) {
    std::fprintf(stderr, "fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace rg::fuzz
