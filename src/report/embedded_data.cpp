// embedded_data(): a lookup in the table tools/embed_kernels.py generates from data/*.csv.
#include "report/embedded_data.h"

namespace rg {

Result<std::string> embedded_data(const std::string& name) {
  std::string held;
  for (size_t i = 0; i < kEmbeddedDataFileCount; ++i) {
    if (name == kEmbeddedDataFiles[i].name) return std::string(kEmbeddedDataFiles[i].text);
    held += (held.empty() ? "" : ", ") + std::string(kEmbeddedDataFiles[i].name);
  }
  return Status::error("data/" + name + " is not embedded in this binary (it holds " + held + ")");
}

}  // namespace rg
