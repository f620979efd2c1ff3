// Finding a kernel file's source: the development directory first, then the embedded copy.
#include "opencl/kernel_sources.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/serial.h"

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

Result<KernelSource> kernel_program_source(const std::string& file) {
  RG_ASSIGN(KernelSource source, kernel_source(file));
  const std::string directive = "#include \"";
  std::string text;
  std::istringstream lines(source.text);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, directive.size(), directive) == 0 && line.size() > directive.size() && line.back() == '"') {
      const std::string name = line.substr(directive.size(), line.size() - directive.size() - 1);
      auto included = kernel_source(name);
      if (!included.ok()) return included.status().with_context("kernel file " + file + " includes " + name + ": ");
      text += included.value().text;
      if (!text.empty() && text.back() != '\n') text += '\n';
    } else {
      text += line + '\n';
    }
  }
  source.text = std::move(text);
  return source;
}

std::vector<std::string> embedded_kernel_file_names() {
  std::vector<std::string> names;
  for (size_t i = 0; i < kEmbeddedKernelFileCount; ++i) names.emplace_back(kEmbeddedKernelFiles[i].name);
  return names;
}

std::string measured_identity(const std::string& device_name, const std::string& driver_version,
                              const std::vector<std::string>& kernel_files) {
  std::string text = device_name + " | " + driver_version;
  for (const std::string& file : kernel_files) {
    const auto source = kernel_program_source(file);
    text += " | " + file + " " + fnv1a_hex(source.ok() ? source.value().text : std::string());
  }
  return text;
}

}  // namespace rg::ocl
