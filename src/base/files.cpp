// Folder and path helpers, the cache folder and its files (see files.h).
#include "base/files.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/input_file.h"
#include "base/output_file.h"

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


Status make_directories(const std::string& path) {
  if (path.empty() || is_directory(path)) return Status();
  const std::string kind = path_kind(path);  // something else is there: say what, not "File exists"
  if (!kind.empty()) return Status::error(path + " is " + kind + ", not a folder");
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

Status write_cache_file(const std::string& path, const std::vector<uint8_t>& bytes) {
#if !defined(_WIN32)
  struct stat link {};  // a link would send the write to whatever it names (a user's own file)
  if (lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
    return Status::error(path + " is a symbolic link, not a cache file: left as it is");
#endif
  const std::string kind = path_kind(path);
  if (!kind.empty() && kind != "a regular file") return Status::error(path + " is " + kind + ", not a cache file: left as it is");
  if (const std::string folder = parent_path(path); !folder.empty()) RG_TRY(make_directories(folder));
  return write_file_atomic(path, bytes);
}

}  // namespace rg
