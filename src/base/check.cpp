// Where a broken invariant ends the program.
#include "base/check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rg {
namespace {

// __FILE__ from the last "src/" folder on (the tree has no src/ inside src/): the build names a
// source "build/../src/nn/model.cpp" in a unity file, "../src/nn/model.cpp" otherwise
// (meson.build's -ffile-prefix-map), or by absolute path from a build folder outside the tree.
const char* from_source_folder(const char* file) {
  const char* found = file;
  for (const char* at = file; (at = std::strstr(at, "src/")) != nullptr; ++at)
    if (at == file || at[-1] == '/') found = at;
  return found;
}

}  // namespace

void check_failed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "retrograd: internal error at %s:%d: check failed: %s%s%s\n", from_source_folder(file), line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace rg
