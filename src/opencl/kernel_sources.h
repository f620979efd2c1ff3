// The OpenCL C sources of kernels/*.cl: embedded in the binary at build time
// (tools/embed_kernels.py writes the table), or read from $RETROGRAD_KERNELS_DIR when that
// is set, so a kernel can be edited and rerun without rebuilding.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg::ocl {

struct EmbeddedKernelFile {
  const char* name;    // "gemm.cl": the file name under kernels/
  const char* source;  // its text, byte for byte
};

// Written by tools/embed_kernels.py (a Meson custom_target) into the build directory.
extern const EmbeddedKernelFile kEmbeddedKernelFiles[];
extern const size_t kEmbeddedKernelFileCount;

struct KernelSource {
  std::string text;
  std::string origin;  // "embedded" or the path it was read from
};

// kernels/<file>. Errors name the file and, for the embedded table, list what it holds; for
// $RETROGRAD_KERNELS_DIR, the path that could not be read.
Result<KernelSource> kernel_source(const std::string& file);

// kernels/<file> as it is built: kernel_source's text with each line `#include "NAME"` replaced
// by kernels/NAME's text (one level: fused_activation.h, shared by gemm.cl and batch_norm.cl so
// that fused kernels apply the activation as its own kernel does). An include that cannot be
// read is an error naming both files.
Result<KernelSource> kernel_program_source(const std::string& file);

std::vector<std::string> embedded_kernel_file_names();

// "NAME | DRIVER | gemm.cl HASH | ...": what measurements made on one device with these kernels
// (the GEMM tuning, the capability tests) are valid for; another driver or an edited kernel is
// another identity, so a cache keyed by it is measured again.
std::string measured_identity(const std::string& device_name, const std::string& driver_version,
                              const std::vector<std::string>& kernel_files);

}  // namespace rg::ocl
