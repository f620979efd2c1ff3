// Output files: what is at the path, the check before any work, the write, the run's lock.
#include "base/output_file.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "base/serial.h"

#if defined(_WIN32)
#include <fcntl.h>
#include <io.h>
#include <process.h>
#include <stdlib.h>
#include <windows.h>
#else
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#endif

namespace rg {

namespace {

#if defined(_WIN32)
constexpr const char* kSeparators = "/\\";
int process_id() { return _getpid(); }
#else
constexpr const char* kSeparators = "/";
int process_id() { return static_cast<int>(getpid()); }
#endif

std::string folder_of(const std::string& path) {
  const size_t slash = path.find_last_of(kSeparators);
  if (slash == std::string::npos) return ".";
  return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

std::string name_of(const std::string& path) {
  const size_t slash = path.find_last_of(kSeparators);
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The path as the user gave it, and where a link led when it led elsewhere.
std::string shown(const std::string& path, const OutputTarget& target) {
  return target.path == path ? path : path + " (a link to " + target.path + ")";
}

// PATH.tmp-<pid>-<8 hex>: unique to this process and call; is_temporary_of recognises it.
std::string temporary_name(const std::string& path) {
  static std::atomic<uint64_t> calls{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string seed = std::to_string(now) + "/" + std::to_string(calls++) + "/" + path;
  return path + ".tmp-" + std::to_string(process_id()) + "-" + fnv1a_hex(seed).substr(8);
}

// A new file that did not exist (O_EXCL), or -1 with errno set.
int create_exclusive(const std::string& path) {
#if defined(_WIN32)
  return _open(path.c_str(), _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
#else
  return open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
#endif
}

int open_existing_for_writing(const std::string& path) {
#if defined(_WIN32)
  return _open(path.c_str(), _O_WRONLY | _O_BINARY);
#else
  return open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
#endif
}

int close_file(int fd) {
#if defined(_WIN32)
  return _close(fd);
#else
  return close(fd);
#endif
}

// Every byte written (short writes continued), or false with errno set.
bool write_all(int fd, const uint8_t* bytes, size_t size) {
  size_t done = 0;
  while (done < size) {
    const size_t chunk = std::min<size_t>(size - done, size_t{1} << 30);
#if defined(_WIN32)
    const int wrote = _write(fd, bytes + done, static_cast<unsigned>(chunk));
#else
    const ssize_t wrote = write(fd, bytes + done, chunk);
    if (wrote < 0 && errno == EINTR) continue;
#endif
    if (wrote <= 0) {
      if (wrote == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(wrote);
  }
  return true;
}

bool sync_file(int fd) {
#if defined(_WIN32)
  return _commit(fd) == 0;
#else
  return fsync(fd) == 0;
#endif
}

Status rename_over(const std::string& temp, const std::string& target) {
#if defined(_WIN32)
  if (!MoveFileExA(temp.c_str(), target.c_str(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)) {
    return Status::error("cannot replace it with " + temp + " (Windows error " + std::to_string(GetLastError()) + ")");
  }
#else
  if (std::rename(temp.c_str(), target.c_str()) != 0) {
    return Status::error("cannot rename " + temp + " over it: " + std::strerror(errno));
  }
  const int dir = open(folder_of(target).c_str(), O_RDONLY | O_CLOEXEC);  // the rename itself made durable
  if (dir >= 0) {
    fsync(dir);
    close(dir);
  }
#endif
  return Status();
}

// A temporary of our own beside the target (absent or a regular file), or -1 with *temp the last name tried.
int create_temporary(const std::string& target, std::string* temp) {
  int fd = -1;
  for (int attempt = 0; attempt < 4 && fd < 0; ++attempt) {
    *temp = temporary_name(target);
    fd = create_exclusive(*temp);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

#if !defined(_WIN32)
// The text a lock file holds: the holder's process id, or "" when it cannot be read.
std::string lock_holder(int fd) {
  char text[32] = {};
  const ssize_t got = pread(fd, text, sizeof text - 1, 0);
  if (got <= 0) return "";
  std::string pid(text, static_cast<size_t>(got));
  for (char c : pid) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  }
  return pid;
}
#endif

// Removes what a killed writer of `path` left: names of temporary_name's pattern for it only.
void remove_stale_temporaries(const std::string& path) {
  DIR* dir = opendir(folder_of(path).c_str());
  if (dir == nullptr) return;
  std::vector<std::string> stale;
  while (const dirent* entry = readdir(dir)) {
    if (is_temporary_of(path, entry->d_name)) stale.push_back(entry->d_name);
  }
  closedir(dir);
  for (const std::string& name : stale) std::remove((folder_of(path) + "/" + name).c_str());
}

std::string lock_refusal(const std::string& who, const std::string& holder, const std::string& lock_path) {
  return who + " is being written by " + (holder.empty() ? "another process" : "process " + holder) + " (it holds " +
         lock_path + "); wait for that run to end, or write to another path";
}

}  // namespace

Result<OutputTarget> resolve_output(const std::string& path) {
  if (path.empty()) return Status::error("an empty file name");
  OutputTarget target{path, OutputKind::absent};
  struct stat info {};
#if defined(_WIN32)
  if (stat(path.c_str(), &info) != 0) return target;
#else
  for (int links = 0;; ++links) {
    if (lstat(target.path.c_str(), &info) != 0) {
      if (errno == ENOENT) return target;  // absent (a dangling link's target is created)
      return Status::error(shown(path, target) + ": cannot look at it: " + std::strerror(errno));
    }
    if (!S_ISLNK(info.st_mode)) break;
    if (links == 40) return Status::error(path + ": more than 40 symbolic links in a row (a loop?)");
    char link[4096];
    const ssize_t length = readlink(target.path.c_str(), link, sizeof link);
    if (length <= 0 || static_cast<size_t>(length) >= sizeof link) {
      return Status::error(shown(path, target) + ": cannot read the symbolic link");
    }
    const std::string to(link, static_cast<size_t>(length));
    target.path = to[0] == '/' ? to : folder_of(target.path) + "/" + to;
  }
  if (S_ISSOCK(info.st_mode)) return Status::error(shown(path, target) + " is a socket, not a file, device or FIFO");
#endif
  if (S_ISDIR(info.st_mode)) return Status::error(shown(path, target) + " is a folder, not a file");
  target.kind = S_ISREG(info.st_mode) ? OutputKind::regular_file : OutputKind::device_or_fifo;
  return target;
}

Status check_output_writable(const std::string& path) {
  RG_ASSIGN(const OutputTarget target, resolve_output(path));
  if (target.kind == OutputKind::device_or_fifo) {
#if defined(_WIN32)
    const int writable = _access(target.path.c_str(), 2);
#else
    const int writable = access(target.path.c_str(), W_OK);
#endif
    if (writable != 0) return Status::error(shown(path, target) + ": cannot be written: " + std::strerror(errno));
    return Status();
  }
  const std::string dir = folder_of(target.path);
  struct stat info {};
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Status::error(shown(path, target) + ": the folder " + dir + " does not exist");
  }
  const std::string probe = temporary_name(target.path);
  const int fd = create_exclusive(probe);
  if (fd < 0) {
    return Status::error(shown(path, target) + ": cannot create a file in the folder " + dir + ": " +
                         std::strerror(errno));
  }
  close_file(fd);
  std::remove(probe.c_str());
  return Status();
}

Result<std::unique_ptr<OutputStream>> OutputStream::open(const std::string& path) {
  RG_ASSIGN(const OutputTarget target, resolve_output(path));
  std::unique_ptr<OutputStream> out(new OutputStream());
  out->path_ = path;
  out->target_ = target;
  if (target.kind == OutputKind::device_or_fifo) {  // in place: there is nothing to replace
    out->fd_ = open_existing_for_writing(target.path);
    if (out->fd_ < 0) return Status::error(shown(path, target) + ": cannot open for writing: " + std::strerror(errno));
    return out;
  }
  out->fd_ = create_temporary(target.path, &out->temp_);
  if (out->fd_ < 0) {
    return Status::error(shown(path, target) + ": cannot create the temporary " + out->temp_ + ": " +
                         std::strerror(errno));
  }
  return out;
}

Status OutputStream::write(const void* data, size_t size) {
  if (fd_ < 0) return Status::error(shown(path_, target_) + ": written after it was closed");
  if (write_all(fd_, static_cast<const uint8_t*>(data), size)) return Status();
  const std::string reason = std::strerror(errno);
  abandon();
  return Status::error(shown(path_, target_) + ": write failed (" + reason + ")" +
                       (temp_.empty() ? "" : "; " + path_ + " is unchanged"));
}

Status OutputStream::commit() {
  if (fd_ < 0) return Status::error(shown(path_, target_) + ": committed after it was closed");
  const bool synced = temp_.empty() || sync_file(fd_);
  const std::string reason = std::strerror(errno);
  const bool closed = close_file(fd_) == 0;
  fd_ = -1;
  if (!synced || !closed) {
    abandon();
    return Status::error(shown(path_, target_) + ": write failed (" + (synced ? std::strerror(errno) : reason) + ")" +
                         (temp_.empty() ? "" : "; " + path_ + " is unchanged"));
  }
  if (temp_.empty()) return Status();
  Status renamed = rename_over(temp_, target_.path);
  if (!renamed.ok()) abandon();
  temp_.clear();
  return renamed.ok() ? renamed : renamed.with_context(shown(path_, target_) + ": ");
}

void OutputStream::abandon() {
  if (fd_ >= 0) close_file(fd_);
  fd_ = -1;
  if (!temp_.empty()) std::remove(temp_.c_str());
  temp_.clear();
}

OutputStream::~OutputStream() { abandon(); }

Status write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  RG_ASSIGN(std::unique_ptr<OutputStream> out, OutputStream::open(path));
  RG_TRY(out->write(bytes.data(), bytes.size()));
  return out->commit();
}

bool same_file(const std::string& a, const std::string& b) {
#if defined(_WIN32)
  char full_a[MAX_PATH], full_b[MAX_PATH];
  if (_fullpath(full_a, a.c_str(), MAX_PATH) == nullptr || _fullpath(full_b, b.c_str(), MAX_PATH) == nullptr) return false;
  struct stat info {};
  return _stricmp(full_a, full_b) == 0 && stat(full_a, &info) == 0;
#else
  struct stat info_a {}, info_b {};
  if (stat(a.c_str(), &info_a) != 0 || stat(b.c_str(), &info_b) != 0) return false;
  return info_a.st_dev == info_b.st_dev && info_a.st_ino == info_b.st_ino;
#endif
}

bool is_temporary_of(const std::string& path, const std::string& name) {
  const std::string prefix = name_of(path) + ".tmp-";
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  const std::string rest = name.substr(prefix.size());  // <pid>-<8 hex>
  const size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || rest.size() - dash - 1 != 8) return false;
  for (size_t i = 0; i < rest.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(rest[i]);
    const bool ok = i < dash ? std::isdigit(c) != 0 : (i == dash || std::isxdigit(c) != 0);
    if (!ok) return false;
  }
  return true;
}

Result<std::unique_ptr<OutputLock>> OutputLock::acquire(const std::string& path) {
  RG_ASSIGN(const OutputTarget target, resolve_output(path));
  std::unique_ptr<OutputLock> lock(new OutputLock());
  if (target.kind == OutputKind::device_or_fifo) return lock;
  const std::string lock_path = target.path + ".lock";
  const std::string pid = std::to_string(process_id());
#if defined(_WIN32)
  HANDLE handle = CreateFileA(lock_path.c_str(), GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_DELETE,
                              nullptr, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL | FILE_FLAG_DELETE_ON_CLOSE, nullptr);
  if (handle == INVALID_HANDLE_VALUE) {
    const DWORD error = GetLastError();
    if (error != ERROR_SHARING_VIOLATION) {
      return Status::error(shown(path, target) + ": cannot create its lock file " + lock_path + " (Windows error " +
                           std::to_string(error) + ")");
    }
    std::string holder;
    HANDLE peek = CreateFileA(lock_path.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                              nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
    if (peek != INVALID_HANDLE_VALUE) {
      char text[32] = {};
      DWORD got = 0;
      if (ReadFile(peek, text, sizeof text - 1, &got, nullptr) && got > 0) holder.assign(text, got);
      CloseHandle(peek);
    }
    return Status::error(lock_refusal(shown(path, target), holder, lock_path));
  }
  DWORD wrote = 0;
  WriteFile(handle, pid.data(), static_cast<DWORD>(pid.size()), &wrote, nullptr);
  lock->handle_ = handle;
  lock->lock_path_ = lock_path;
#else
  for (int attempt = 0; attempt < 8 && lock->fd_ < 0; ++attempt) {
    const int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      return Status::error(shown(path, target) + ": cannot create its lock file " + lock_path + ": " +
                           std::strerror(errno));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = lock_holder(fd);
      close(fd);
      if (error == EWOULDBLOCK) return Status::error(lock_refusal(shown(path, target), holder, lock_path));
      return Status::error(shown(path, target) + ": cannot lock " + lock_path + ": " + std::strerror(error));
    }
    // The last holder removes the file as it lets go: the lock counts only on the file now at the path.
    struct stat held {}, now {};
    if (fstat(fd, &held) == 0 && stat(lock_path.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino) {
      lock->fd_ = fd;
    } else {
      close(fd);
    }
  }
  if (lock->fd_ < 0) return Status::error(shown(path, target) + ": cannot lock " + lock_path + ": it keeps being replaced");
  // The id is a courtesy for the message of the writer we refuse; the lock holds without it.
  const bool noted = ftruncate(lock->fd_, 0) == 0 && pwrite(lock->fd_, pid.data(), pid.size(), 0) > 0;
  static_cast<void>(noted);
  lock->lock_path_ = lock_path;
#endif
  remove_stale_temporaries(target.path);
  return lock;
}

OutputLock::~OutputLock() {
#if defined(_WIN32)
  if (handle_ != nullptr) CloseHandle(static_cast<HANDLE>(handle_));  // FILE_FLAG_DELETE_ON_CLOSE removes it
#else
  if (fd_ >= 0) {
    unlink(lock_path_.c_str());  // while still held: a waiting writer then finds the file gone and retries
    close(fd_);
  }
#endif
}

}  // namespace rg
