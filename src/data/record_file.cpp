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

#include "base/files.h"
#include "base/serial.h"

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
                                                           int64_t rows, const std::string& shown_as) {
  std::shared_ptr<RecordFile> file(new RecordFile());
  file->path_ = path;
  file->name_ = shown_as.empty() || shown_as == path ? path : shown_as + " (read from its inflated copy " + path + ")";
  // Opened first, then measured: the size checked is the size of the file that is read.
  file->fd_ = ::open(path.c_str(), kOpenFlags);
  if (file->fd_ < 0) return Status::error(file->name_ + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (fstat(file->fd_, &info) != 0) return Status::error(file->name_ + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) return Status::error(file->name_ + ": not a regular file");
  const auto bytes = static_cast<int64_t>(info.st_size);
  if (bytes < offset + row_bytes * rows) {
    return Status::error(file->name_ + ": truncated: " + std::to_string(rows) + " records of " +
                         std::to_string(row_bytes) + " bytes after byte " + std::to_string(offset) + " need " +
                         std::to_string(offset + row_bytes * rows) + " bytes, the file has " + std::to_string(bytes));
  }
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
    if (got < 0) return Status::error(name_ + ": read error at byte " + std::to_string(at + done) + ": " + std::strerror(errno));
    if (got == 0) {
      return Status::error(name_ + ": record " + std::to_string(row) + " ends early at byte " + std::to_string(at + done) +
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

namespace {

constexpr size_t kPieceBytes = size_t{1} << 20;  // read and inflated 1 MiB at a time

// What an inflated copy is a copy of: the compressed file's size and the FNV-1a hash of its
// bytes (not its CRC-32: serial.h says why).
struct ContentKey {
  int64_t bytes = 0;
  uint64_t hash = 0;
  bool operator==(const ContentKey& o) const { return bytes == o.bytes && hash == o.hash; }
};

Result<ContentKey> content_key(const std::string& path) {
  const UniqueFile file(std::fopen(path.c_str(), "rb"));
  if (!file) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> piece(kPieceBytes);
  ContentKey key;
  key.hash = kFnv1aStart;
  size_t got = 0;
  while ((got = std::fread(piece.data(), 1, piece.size(), file.get())) > 0) {
    key.hash = fnv1a_update(key.hash, piece.data(), got);
    key.bytes += static_cast<int64_t>(got);
  }
  if (std::ferror(file.get())) return Status::error(path + ": read error: " + std::strerror(errno));
  return key;
}

// An inflated copy ends with this stamp, written after its data: "rgcopy01", the data's size,
// the source's key, and the CRC-32 of those 32 bytes. A copy whose last bytes are not the
// stamp its own size and its source call for is not used.
constexpr char kStampMagic[8] = {'r', 'g', 'c', 'o', 'p', 'y', '0', '1'};
constexpr int64_t kStampBytes = 8 + 8 + 8 + 8 + 4;

std::vector<uint8_t> copy_stamp(const ContentKey& source, int64_t data_bytes) {
  ByteWriter stamp;
  stamp.raw(kStampMagic, sizeof kStampMagic);
  stamp.i64(data_bytes);
  stamp.i64(source.bytes);
  stamp.u64(source.hash);
  stamp.u32(crc32_of(stamp.bytes().data(), stamp.bytes().size()));
  return stamp.bytes();
}

// The data bytes of the copy at `copy` when it is whole and of `source`; -1 when it is
// missing, cut short, replaced or damaged (then it is made again).
int64_t whole_copy_data_bytes(const std::string& copy, const ContentKey& source) {
  const int fd = ::open(copy.c_str(), kOpenFlags);
  if (fd < 0) return -1;
  struct stat info {};
  int64_t data_bytes = -1;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size >= kStampBytes) {
    const int64_t data = static_cast<int64_t>(info.st_size) - kStampBytes;
    uint8_t found[kStampBytes];
    const std::vector<uint8_t> expected = copy_stamp(source, data);
    if (read_at(fd, found, sizeof found, data) == kStampBytes && std::memcmp(found, expected.data(), sizeof found) == 0) {
      data_bytes = data;
    }
  }
  ::close(fd);
  return data_bytes;
}

// Inflates `from` into `to` in 1 MiB pieces, then appends the stamp; the data's size, or an
// error naming the file at fault.
Result<int64_t> inflate_file(const std::string& from, const std::string& to, const ContentKey& source) {
  const std::string cannot_write = to + ": cannot write the inflated copy of " + from + " (set RETROGRAD_CACHE to "
                                   "another folder): ";
  gzFile gz = gzopen(from.c_str(), "rb");
  if (gz == nullptr) return Status::error(from + ": cannot open: " + std::strerror(errno));
  FILE* out = std::fopen(to.c_str(), "wb");
  if (out == nullptr) {
    gzclose(gz);
    return Status::error(cannot_write + std::strerror(errno));
  }
  std::vector<char> buffer(kPieceBytes);
  int64_t data_bytes = 0;
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
      status = Status::error(cannot_write + std::strerror(errno));
      break;
    }
    data_bytes += got;
  }
  const int closed = gzclose(gz);
  if (status.ok() && closed != Z_OK) status = Status::error(from + ": gzip stream ends early or is corrupt");
  if (status.ok()) {
    const std::vector<uint8_t> stamp = copy_stamp(source, data_bytes);
    if (std::fwrite(stamp.data(), 1, stamp.size(), out) != stamp.size()) status = Status::error(cannot_write + std::strerror(errno));
  }
  if (std::fclose(out) != 0 && status.ok()) status = Status::error(cannot_write + std::strerror(errno));
  if (!status.ok()) return status;
  return data_bytes;
}

// The copy must hold the content its name says: a source replaced while it was inflated is not
// cached under the old content's name.
Status check_unchanged(const std::string& path, const ContentKey& key) {
  RG_ASSIGN(const ContentKey now, content_key(path));
  if (now == key) return Status();
  return Status::error(path + ": changed while it was being inflated; run again");
}

// "train-images-idx3-ubyte.gz" -> "train-images-idx3-ubyte.<16 hex digits of the hash>-<size>"
std::string copy_name(const std::string& path, const ContentKey& key) {
  std::string base = last_path_component(path);
  if (base.size() > 3 && base.compare(base.size() - 3, 3, ".gz") == 0) base.erase(base.size() - 3);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(key.hash));
  return base + "." + hash + "-" + std::to_string(static_cast<long long>(key.bytes));
}

}  // namespace

Result<RawCopy> inflated_cache_copy(const std::string& path) {
  RG_ASSIGN(const bool gzipped, is_gzip_file(path));
  if (!gzipped) {
    RG_ASSIGN(const int64_t bytes, input_file_size(path, "an IDX file"));
    return RawCopy{path, bytes};
  }
  RG_ASSIGN(const ContentKey key, content_key(path));
  const std::string dir = cache_folder();
  const std::string copy = join_path(dir, copy_name(path, key));
  if (const int64_t data_bytes = whole_copy_data_bytes(copy, key); data_bytes >= 0) return RawCopy{copy, data_bytes};
  if (Status made = make_directories(dir); !made.ok()) {
    return made.with_context("the cache for inflating " + path + " (set RETROGRAD_CACHE to another folder): ");
  }
  const std::string partial = copy + ".part" + std::to_string(static_cast<long long>(getpid()));
  const Result<int64_t> inflated = inflate_file(path, partial, key);
  Status status = inflated.status();
  if (status.ok()) status = check_unchanged(path, key);
  if (!status.ok()) {
    std::remove(partial.c_str());
    return status;
  }
  std::remove(copy.c_str());  // a damaged copy: Windows' rename does not replace a file
  if (std::rename(partial.c_str(), copy.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(partial.c_str());
    return Status::error(copy + ": cannot rename the inflated copy of " + path + " into place: " + why);
  }
  return RawCopy{copy, inflated.value()};
}

}  // namespace rg
