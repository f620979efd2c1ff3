// Files the user names as input (a cfg, a checkpoint, a dataset file), checked for what they
// are before anything is read from them: a folder, device, FIFO or socket is refused with its
// kind named ("/dev/zero is a character device, not a cfg file"), so no reader blocks on a FIFO
// or reads an endless device, and the size comes back so a reader can check it first.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "base/status.h"

namespace rg {

// A FILE* that fcloses itself.
struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using UniqueFile = std::unique_ptr<FILE, FileCloser>;

// Whether anything is at the path (a file, a folder, a device...), links followed.
bool path_exists(const std::string& path);
// What is at the path, links followed, for messages: "a regular file", "a folder", "a character
// device", "a block device", "a FIFO (named pipe)", "a socket"; "" when nothing is.
std::string path_kind(const std::string& path);

// The size of the regular file at `path` (links followed). Otherwise an error naming the path,
// what is there and `what` it should be: "/dev/zero is a character device, not a cfg file".
Result<int64_t> input_file_size(const std::string& path, const std::string& what);

// A regular file open for reading, with its size when opened.
struct InputFile {
  std::string path;
  UniqueFile file;
  int64_t size = 0;

  // Reads exactly `bytes` into `out`; the error names the path, `what` was being read and whether
  // the file ended early or the read failed.
  Status read(void* out, size_t bytes, const std::string& what) const;
};

// Opens `path` after input_file_size's check, without waiting on a FIFO put there meanwhile
// (refused like one found by the check).
Result<InputFile> open_input_file(const std::string& path, const std::string& what);

}  // namespace rg
