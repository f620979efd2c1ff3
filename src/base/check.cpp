// Where a broken invariant ends the program.
#include "base/check.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rg {
namespace {

// __FILE__ from the first "src/" folder on: the build names a source "build/../src/nn/model.cpp"
// in a unity file, "../src/nn/model.cpp" otherwise (meson.build's -fmacro-prefix-map).
const char* from_source_folder(const char* file) {
  for (const char* at = file; (at = std::strstr(at, "src/")) != nullptr; ++at)
    if (at == file || at[-1] == '/') return at;
  return file;
}

}  // namespace

void check_failed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "retrograd: internal error at %s:%d: check failed: %s%s%s\n", from_source_folder(file), line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace rg
