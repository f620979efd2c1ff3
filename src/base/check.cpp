// Where a broken invariant ends the program.
#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace rg {

void check_failed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "retrograd: internal error at %s:%d: check failed: %s%s%s\n", file, line, condition,
               detail.empty() ? "" : ": ", detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace rg
