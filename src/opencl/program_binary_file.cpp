// Writing and checking program binary files (program_binary_file.h).
#include "opencl/program_binary_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "base/files.h"
#include "base/output_file.h"
#include "base/serial.h"

namespace rg::ocl {

namespace {
std::string checksum_hex(const std::vector<uint8_t>& bytes, size_t begin) {
  char hex[17];
  const uint64_t sum = fnv1a_update(kFnv1aStart, bytes.data() + begin, bytes.size() - begin);
  std::snprintf(hex, sizeof hex, "%016" PRIx64, sum);
  return hex;
}
// The line starting at *at (without its '\n'), *at moved past it; false where no '\n' ends it
// within the first 4 KiB.
bool next_line(const std::vector<uint8_t>& bytes, size_t* at, std::string* line) {
  line->clear();
  for (size_t i = *at; i < bytes.size() && i < *at + 4096; ++i) {
    if (bytes[i] == '\n') {
      *at = i + 1;
      return true;
    }
    line->push_back(static_cast<char>(bytes[i]));
  }
  return false;
}
}  // namespace

std::vector<uint8_t> program_binary_file(const std::string& key, const std::vector<uint8_t>& binary) {
  const std::string header = std::string(kProgramBinaryMagic) + "\nfor " + key + "\nbytes " +
                             std::to_string(binary.size()) + " fnv1a " + checksum_hex(binary, 0) + "\n";
  std::vector<uint8_t> file(header.begin(), header.end());
  file.insert(file.end(), binary.begin(), binary.end());
  return file;
}

Result<std::vector<uint8_t>> program_binary_of(const std::vector<uint8_t>& file, const std::string& key) {
  size_t at = 0;
  std::string magic, made_for, sizes;
  if (!next_line(file, &at, &magic) || magic != kProgramBinaryMagic) {
    return Status::error("not a program binary file (the first line must be '" + std::string(kProgramBinaryMagic) + "')");
  }
  if (!next_line(file, &at, &made_for) || made_for != "for " + key) return Status::error("made for another program");
  char sum[17] = {};
  unsigned long long count = 0;
  int used = 0;
  if (!next_line(file, &at, &sizes) ||
      std::sscanf(sizes.c_str(), "bytes %llu fnv1a %16[0-9a-f]%n", &count, sum, &used) != 2 ||
      static_cast<size_t>(used) != sizes.size()) {
    return Status::error("want 'bytes N fnv1a HASH' on line 3");
  }
  if (count != file.size() - at) {
    return Status::error("says " + std::to_string(count) + " bytes, holds " + std::to_string(file.size() - at));
  }
  if (checksum_hex(file, at) != sum) return Status::error("its bytes do not match their checksum");
  return std::vector<uint8_t>(file.begin() + static_cast<std::ptrdiff_t>(at), file.end());
}

bool is_program_binary_name(const std::string& name) {
  const std::string head = "opencl-program-", tail = ".bin";
  if (name.size() != head.size() + 16 + tail.size() || name.compare(0, head.size(), head) != 0) return false;
  if (name.compare(name.size() - tail.size(), tail.size(), tail) != 0) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(head.size()),
                     name.end() - static_cast<std::ptrdiff_t>(tail.size()),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

namespace {

// A binary's write temporary (output_file.h's PATH.tmp-<pid>-<8 hex>) left by a process killed
// while writing it, `age` seconds old: an hour gives any writer time to finish.
bool stale_temporary(const std::string& folder, const std::string& name, int64_t age) {
  const size_t at = name.find(".tmp-");
  if (at == std::string::npos || age < 3600) return false;
  const std::string binary = name.substr(0, at);
  return is_program_binary_name(binary) && is_temporary_of(join_path(folder, binary), name);
}

}  // namespace

void prune_program_binaries(const std::string& folder, const std::string& keep) {
  const auto names = list_folder(folder);
  if (!names.ok()) return;
  struct Entry {
    int64_t mtime, bytes;
    std::string path;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  for (const std::string& name : names.value()) {
    struct stat info {};
    const std::string path = join_path(folder, name);
    if (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    if (stale_temporary(folder, name, now - static_cast<int64_t>(info.st_mtime))) {
      std::remove(path.c_str());
      continue;
    }
    if (!is_program_binary_name(name)) continue;
    total += static_cast<int64_t>(info.st_size);
    if (name != keep) entries.push_back({static_cast<int64_t>(info.st_mtime), static_cast<int64_t>(info.st_size), path});
  }
  if (total <= kMaxProgramBinaryFolderBytes) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  for (const Entry& e : entries) {
    if (total <= kMaxProgramBinaryFolderBytes / 4 * 3) break;
    if (std::remove(e.path.c_str()) == 0) total -= e.bytes;
  }
}

}  // namespace rg::ocl
