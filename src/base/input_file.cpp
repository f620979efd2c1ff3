// Input paths checked before they are read (see input_file.h): stat, which MinGW provides too,
// then on POSIX a non-blocking open whose fstat must agree (Windows has no FIFOs to wait on).
#include "base/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#if !defined(_WIN32)
#include <fcntl.h>
#include <unistd.h>
#endif

namespace rg {

namespace {
const char* kind_of(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
#if defined(S_ISBLK)
  if (S_ISBLK(mode)) return "a block device";
#endif
#if defined(S_ISFIFO)
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
#endif
#if defined(S_ISSOCK)
  if (S_ISSOCK(mode)) return "a socket";
#endif
  return "a special file";
}

// The size from a stat of `path`, or the refusal naming what the path is.
Result<int64_t> regular_file_size(const std::string& path, const struct stat& info, const std::string& what) {
  if (S_ISREG(info.st_mode)) return static_cast<int64_t>(info.st_size);
  return Status::error(path + " is " + kind_of(info.st_mode) + ", not " + what);
}

Status cannot_open(const std::string& path, int error) {
  return Status::error(path + ": cannot open: " + std::strerror(error));
}
}  // namespace

bool path_exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

std::string path_kind(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 ? kind_of(info.st_mode) : "";
}

Result<int64_t> input_file_size(const std::string& path, const std::string& what) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return cannot_open(path, errno);
  return regular_file_size(path, info, what);
}

Result<InputFile> open_input_file(const std::string& path, const std::string& what) {
  // The check comes before the open: opening a device can itself do something (rewind a tape).
  RG_ASSIGN(const int64_t checked_size, input_file_size(path, what));
  InputFile in;
  in.path = path;
  in.size = checked_size;
#if defined(_WIN32)
  errno = 0;
  in.file.reset(std::fopen(path.c_str(), "rb"));
  if (!in.file) return cannot_open(path, errno);
#else
  // O_NONBLOCK: a FIFO put at the path since the check fails fstat's test below instead of
  // waiting for a writer; it means nothing to a regular file's reads.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return cannot_open(path, errno);
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    return cannot_open(path, error);
  }
  auto size = regular_file_size(path, info, what);
  FILE* file = size.ok() ? fdopen(fd, "rb") : nullptr;
  if (file == nullptr) {
    const int error = errno;
    ::close(fd);
    if (!size.ok()) return size.status();
    return cannot_open(path, error);
  }
  in.file.reset(file);
  in.size = size.value();
#endif
  return in;
}

Status InputFile::read(void* out, size_t bytes, const std::string& what) const {
  errno = 0;
  const size_t got = bytes == 0 ? 0 : std::fread(out, 1, bytes, file.get());
  if (got == bytes) return Status();
  if (std::ferror(file.get())) {
    return Status::error(path + ": read error in " + what + (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
  }
  return Status::error(path + ": the file ends in " + what + " (" + std::to_string(bytes) + " bytes needed, " +
                       std::to_string(got) + " there; did it shrink while being read?)");
}

}  // namespace rg
