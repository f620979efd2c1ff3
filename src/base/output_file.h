// Files we write (checkpoints, reports, sample grids): what is at an output's path decides how
// it is written, the path is checked writable before any work, and a run holds a lock on the
// files it keeps rewriting so that a second run cannot write them at the same time.
//
//   absent or a regular file   written atomically: a temporary of a name unique to this process
//                              beside it (PATH.tmp-<pid>-<8 hex>), fsync, rename over it
//   a symbolic link            written through to its final target (atomically there); the link stays
//   a device or a FIFO         written in place (opened for writing, not created or replaced):
//                              /dev/stdout, /dev/null or a pipe's reader get the bytes
//   a folder or a socket       refused
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

enum class OutputKind { absent, regular_file, device_or_fifo };

struct OutputTarget {
  std::string path;  // where the bytes go: the path given, or its symbolic link's final target
  OutputKind kind = OutputKind::absent;
};

// What writing `path` would write to; folders, sockets and link loops are refused, naming the path.
Result<OutputTarget> resolve_output(const std::string& path);

// Checks, before any work, that `path` can be written: refused as resolve_output refuses; a
// regular file's folder must exist and take a new file (one is created and removed); a device
// or FIFO must be writable. Errors start with the path.
Status check_output_writable(const std::string& path);

// Writes `bytes` to `path` as the file-top comment says. Atomic for regular files: the old file
// stays whole if anything fails, and concurrent writers each leave a whole file.
Status write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);

// One output written in pieces (a file too large to hold whole: make-data's IDX files), by the
// same rules: a temporary renamed over the target by commit(); a device or FIFO written in place.
// Dropped without commit() (or after a failed write), the temporary is removed and the target
// is as it was.
class OutputStream {
 public:
  static Result<std::unique_ptr<OutputStream>> open(const std::string& path);
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  Status write(const void* data, size_t size);  // errors name the path
  Status commit();                              // synced and renamed into place

 private:
  OutputStream() = default;
  void abandon();
  std::string path_;  // as given, for messages
  OutputTarget target_;
  std::string temp_;  // empty: written in place (or done)
  int fd_ = -1;
};

// True when both paths name the same existing file (links followed).
bool same_file(const std::string& a, const std::string& b);

// A run's claim on an output it rewrites (a checkpoint): the file PATH.lock beside its target,
// locked (flock; on Windows opened unshared) for the lock's life and removed with it. Taking it
// removes the temporaries that a killed writer of the same path left (only names of this
// module's pattern for that path: no live writer can hold them while the lock is ours).
class OutputLock {
 public:
  // Refuses when another lock holds the path, naming the process that holds it where it can.
  // Devices and FIFOs take no lock (nothing is created beside them).
  static Result<std::unique_ptr<OutputLock>> acquire(const std::string& path);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  const std::string& lock_path() const { return lock_path_; }

 private:
  OutputLock() = default;
  std::string lock_path_;  // empty: nothing held (a device or FIFO)
#if defined(_WIN32)
  void* handle_ = nullptr;
#else
  int fd_ = -1;
#endif
};

// The temporary files a writer of `path` leaves if it is killed mid-write: their names, for tests
// and for the cleanup. `name` is a file name in path's folder.
bool is_temporary_of(const std::string& path, const std::string& name);

}  // namespace rg
