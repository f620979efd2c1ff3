// Finding a kernel file's source: the development directory first, then the embedded copy.
#include "opencl/kernel_sources.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rg::ocl {

Result<KernelSource> kernel_source(const std::string& file) {
  const char* dir = std::getenv("RETROGRAD_KERNELS_DIR");
  if (dir != nullptr && dir[0] != '\0') {
    const std::string path = std::string(dir) + "/" + file;
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::error("kernel file " + file + ": cannot read " + path + " (RETROGRAD_KERNELS_DIR is set)");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return Status::error("kernel file " + file + ": read error in " + path);
    return KernelSource{text.str(), path};
  }
  for (size_t i = 0; i < kEmbeddedKernelFileCount; ++i) {
    if (file == kEmbeddedKernelFiles[i].name) return KernelSource{kEmbeddedKernelFiles[i].source, "embedded"};
  }
  std::string names;
  for (const std::string& name : embedded_kernel_file_names()) names += (names.empty() ? "" : ", ") + name;
  return Status::error("kernel file " + file + " is not embedded in this binary (it has: " + names + ")");
}

std::vector<std::string> embedded_kernel_file_names() {
  std::vector<std::string> names;
  for (size_t i = 0; i < kEmbeddedKernelFileCount; ++i) names.emplace_back(kEmbeddedKernelFiles[i].name);
  return names;
}

}  // namespace rg::ocl
