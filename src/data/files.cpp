// Folder and path helpers for the dataset readers (see files.h).
#include "data/files.h"

#include <dirent.h>
#include <sys/stat.h>
#if !defined(_WIN32)
#include <unistd.h>  // access
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace rg {

namespace {
// stat() of Microsoft's C runtime fails on a trailing separator ("data/"); POSIX allows it.
std::string without_trailing_separator(const std::string& path) {
  std::string trimmed = path;
#ifdef _WIN32
  while (trimmed.size() > 1 && (trimmed.back() == '/' || trimmed.back() == '\\') && trimmed[trimmed.size() - 2] != ':') {
    trimmed.pop_back();
  }
#endif
  return trimmed;
}
}  // namespace

bool is_directory(const std::string& path) {
  struct stat info {};
  return stat(without_trailing_separator(path).c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

bool is_regular_file(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

#if defined(_WIN32)
// Windows: no FIFOs, sockets or symbolic links that stat reports; permission bits are not
// what decides reading, so an unreadable file is found when it is opened.
std::string why_not_a_readable_file(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return std::string("not readable (") + std::strerror(errno) + ")";
  if (S_ISDIR(info.st_mode)) return "a folder";
  return S_ISREG(info.st_mode) ? "" : "not a regular file";
}
#else
std::string why_not_a_readable_file(const std::string& path) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ELOOP) return "a symbolic link loop";
    struct stat link {};
    if (lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      if (error == ENOENT) return "a broken symbolic link (its target is missing)";
      return std::string("a symbolic link whose target cannot be reached (") + std::strerror(error) + ")";
    }
    return std::string("not readable (") + std::strerror(error) + ")";
  }
  if (S_ISDIR(info.st_mode)) return "a folder";
  if (S_ISFIFO(info.st_mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(info.st_mode)) return "a socket";
  if (S_ISCHR(info.st_mode) || S_ISBLK(info.st_mode)) return "a device";
  if (!S_ISREG(info.st_mode)) return "not a regular file";
  if (access(path.c_str(), R_OK) != 0) return std::string("not readable (") + std::strerror(errno) + ")";
  return "";
}
#endif

Status make_directories(const std::string& path) {
  if (path.empty() || is_directory(path)) return Status();
  const std::string parent = parent_path(path);
  if (!parent.empty() && parent != path) RG_TRY(make_directories(parent));
#ifdef _WIN32
  const int made = mkdir(path.c_str());
#else
  const int made = mkdir(path.c_str(), 0777);
#endif
  if (made != 0 && !is_directory(path)) return Status::error(path + ": cannot create the folder: " + std::strerror(errno));
  return Status();
}

std::string parent_path(const std::string& path) {
  std::string trimmed = path;
  while (trimmed.size() > 1 && (trimmed.back() == '/' || trimmed.back() == '\\')) trimmed.pop_back();
  const size_t slash = trimmed.find_last_of("/\\");
  if (slash == std::string::npos) return "";
  return slash == 0 ? trimmed.substr(0, 1) : trimmed.substr(0, slash);
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir + (dir.back() == '/' || dir.back() == '\\' ? "" : "/") + name;
}

std::string absolute_path(const std::string& path) {
#ifdef _WIN32
  char* absolute = _fullpath(nullptr, path.c_str(), 0);
#else
  char* absolute = realpath(path.c_str(), nullptr);
#endif
  const std::string result = absolute != nullptr ? absolute : path;
  std::free(absolute);
  return result;
}

std::string last_path_component(std::string path) {
  while (path.size() > 1 && (path.back() == '/' || path.back() == '\\')) path.pop_back();
  const size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Result<std::vector<std::string>> list_folder(const std::string& dir) {
  errno = 0;
  DIR* folder = opendir(dir.c_str());
  if (folder == nullptr) return Status::error(dir + ": cannot read the folder: " + std::strerror(errno));
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = readdir(folder)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
    errno = 0;
  }
  const int read_error = errno;
  closedir(folder);
  if (read_error != 0) return Status::error(dir + ": cannot read the folder: " + std::strerror(read_error));
  // readdir's order depends on the file system; sorting makes class indices and sample
  // order the same on every machine.
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rg
