// pread-backed records and the inflated-copy cache of gzipped dataset files.
#include "data/record_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>
#if defined(_WIN32)
#include <io.h>
#include <windows.h>
#else
#include <unistd.h>
#endif

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/serial.h"

#include "data/files.h"

namespace rg {

namespace {

#if defined(_WIN32)
constexpr int kOpenFlags = O_RDONLY | O_BINARY;
// Windows has no pread: ReadFile at an OVERLAPPED offset reads there without relying on the
// descriptor's shared position, so prefetch threads may read at once. -1 on error, 0 at the end.
int64_t read_at(int fd, uint8_t* out, size_t bytes, int64_t offset) {
  const HANDLE handle = reinterpret_cast<HANDLE>(_get_osfhandle(fd));
  OVERLAPPED at{};
  at.Offset = static_cast<DWORD>(offset);
  at.OffsetHigh = static_cast<DWORD>(static_cast<uint64_t>(offset) >> 32);
  DWORD got = 0;
  if (!ReadFile(handle, out, static_cast<DWORD>(bytes), &got, &at)) {
    if (GetLastError() == ERROR_HANDLE_EOF) return 0;
    errno = EIO;
    return -1;
  }
  return got;
}
#else
constexpr int kOpenFlags = O_RDONLY;
int64_t read_at(int fd, uint8_t* out, size_t bytes, int64_t offset) {
  return ::pread(fd, out, bytes, static_cast<off_t>(offset));
}
#endif

}  // namespace

Result<std::shared_ptr<const RecordFile>> RecordFile::open(const std::string& path, int64_t offset, int64_t row_bytes,
                                                           int64_t rows) {
  RG_ASSIGN(const int64_t bytes, input_file_size(path, "a data file"));
  if (bytes < offset + row_bytes * rows) {
    return Status::error(path + ": truncated: " + std::to_string(rows) + " records of " + std::to_string(row_bytes) +
                         " bytes after byte " + std::to_string(offset) + " need " +
                         std::to_string(offset + row_bytes * rows) + " bytes, the file has " + std::to_string(bytes));
  }
  std::shared_ptr<RecordFile> file(new RecordFile());
  file->fd_ = ::open(path.c_str(), kOpenFlags);
  if (file->fd_ < 0) return Status::error(path + ": cannot open: " + std::strerror(errno));
  file->path_ = path;
  file->offset_ = offset;
  file->row_bytes_ = row_bytes;
  file->rows_ = rows;
  return std::shared_ptr<const RecordFile>(file);
}

RecordFile::~RecordFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RecordFile::read(int64_t row, uint8_t* out) const {
  RG_CHECK(row >= 0 && row < rows_, "record " << row << " of " << path_ << " with " << rows_);
  int64_t done = 0;
  const int64_t at = offset_ + row * row_bytes_;
  while (done < row_bytes_) {
    const int64_t got = read_at(fd_, out + done, static_cast<size_t>(row_bytes_ - done), at + done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return Status::error(path_ + ": read error at byte " + std::to_string(at + done) + ": " + std::strerror(errno));
    if (got == 0) {
      return Status::error(path_ + ": record " + std::to_string(row) + " ends early at byte " + std::to_string(at + done) +
                           " (the file shrank while in use?)");
    }
    done += got;
  }
  return Status();
}

Result<bool> is_gzip_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::error(path + ": cannot open: " + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const size_t got = std::fread(magic, 1, 2, f);
  std::fclose(f);
  return got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

std::string cache_folder() {
  // LOCALAPPDATA and TEMP: Windows, where HOME is usually not set.
  for (const char* name : {"RETROGRAD_CACHE", "XDG_CACHE_HOME", "HOME", "LOCALAPPDATA", "TEMP"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    const std::string dir = value;
    if (std::strcmp(name, "RETROGRAD_CACHE") == 0) return dir;
    if (std::strcmp(name, "HOME") == 0) return join_path(dir, ".cache/retrograd");
    return join_path(dir, std::strcmp(name, "TEMP") == 0 ? "retrograd-cache" : "retrograd");
  }
  return "/tmp/retrograd-cache";
}

namespace {

// Inflates `from` into `to` in 1 MiB pieces; the error names the file at fault.
Status inflate_file(const std::string& from, const std::string& to) {
  gzFile gz = gzopen(from.c_str(), "rb");
  if (gz == nullptr) return Status::error(from + ": cannot open: " + std::strerror(errno));
  FILE* out = std::fopen(to.c_str(), "wb");
  if (out == nullptr) {
    gzclose(gz);
    return Status::error(to + ": cannot create: " + std::strerror(errno));
  }
  std::vector<char> buffer(1 << 20);
  Status status;
  for (;;) {
    const int got = gzread(gz, buffer.data(), static_cast<unsigned>(buffer.size()));
    if (got < 0) {
      int code = 0;
      status = Status::error(from + ": corrupt gzip stream (zlib: " + gzerror(gz, &code) + ")");
      break;
    }
    if (got == 0) break;
    if (std::fwrite(buffer.data(), 1, static_cast<size_t>(got), out) != static_cast<size_t>(got)) {
      status = Status::error(to + ": write failed: " + std::strerror(errno));
      break;
    }
  }
  const int closed = gzclose(gz);
  if (status.ok() && closed != Z_OK) status = Status::error(from + ": gzip stream ends early or is corrupt");
  if (std::fclose(out) != 0 && status.ok()) status = Status::error(to + ": write failed: " + std::strerror(errno));
  return status;
}

}  // namespace

Result<std::string> inflated_cache_copy(const std::string& path) {
  RG_ASSIGN(const bool gzipped, is_gzip_file(path));
  if (!gzipped) return path;
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return Status::error(path + ": cannot open: " + std::strerror(errno));
  const std::string identity = absolute_path(path) + "|" + std::to_string(static_cast<long long>(info.st_size)) + "|" +
                               std::to_string(static_cast<long long>(info.st_mtime));
  std::string base = last_path_component(path);
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".gz") == 0) base.erase(base.size() - 3);
  const std::string dir = cache_folder();
  const std::string copy = join_path(dir, base + "." + fnv1a_hex(identity));
  if (is_regular_file(copy)) return copy;
  if (Status made = make_directories(dir); !made.ok()) {
    return made.with_context("the cache for inflating " + path + " (set RETROGRAD_CACHE to another folder): ");
  }
  const std::string partial = copy + ".part" + std::to_string(static_cast<long long>(getpid()));
  if (Status s = inflate_file(path, partial); !s.ok()) {
    std::remove(partial.c_str());
    return s;
  }
  if (std::rename(partial.c_str(), copy.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(partial.c_str());
    return Status::error(copy + ": cannot rename the inflated copy into place: " + why);
  }
  return copy;
}

}  // namespace rg
