// Folder and path helpers: listing a folder, telling files from folders, joining paths, the
// folder retrograd keeps its caches in. POSIX calls (opendir, stat), which MinGW provides too.
// Input files checked by kind and size before they are read: base/input_file.h.
#pragma once

#include <string>
#include <vector>

#include "base/input_file.h"
#include "base/status.h"

namespace rg {

bool is_directory(const std::string& path);
bool is_regular_file(const std::string& path);  // follows symbolic links
// Creates a folder and any missing parents (an existing folder is fine); the error names the
// part that could not be made.
Status make_directories(const std::string& path);
// The folder part of a path ("a/b.cfg" -> "a", "b.cfg" -> "").
std::string parent_path(const std::string& path);
// "dir" + "name" -> "dir/name" (no doubled slash).
std::string join_path(const std::string& dir, const std::string& name);
// The absolute path: links and ".." resolved (realpath); on Windows made absolute with ".."
// resolved but links kept (_fullpath). The path itself when that fails.
std::string absolute_path(const std::string& path);
// "/usr/share/datasets/fashion-mnist/" -> "fashion-mnist".
std::string last_path_component(std::string path);

// The entries of a folder, names only, sorted by byte value; "." and ".." left out.
Result<std::vector<std::string>> list_folder(const std::string& dir);

// The folder caches go to (inflated dataset copies, OpenCL tuning and capability results):
// $RETROGRAD_CACHE, else $XDG_CACHE_HOME/retrograd, else $HOME/.cache/retrograd, else (Windows)
// %LOCALAPPDATA%/retrograd or %TEMP%/retrograd-cache, else /tmp/retrograd-cache.
std::string cache_folder();
// Writes a cache file whole (its folder made first), only over a regular file or nothing: a
// symbolic link (to /dev/zero, or to a user's own file), a device, FIFO or folder at `path` is
// left as it is, and the error says so.
Status write_cache_file(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace rg
