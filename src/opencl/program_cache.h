// Programs built once per device from kernels/*.cl, keyed by file and build options, and
// the kernel objects made from them. A build failure is returned with the compiler's log
// and not cached, so a fixed source (RETROGRAD_KERNELS_DIR) builds on the next call. Each
// program built is also kept on disk as the driver's binary (program_binary_file.h), in the
// binary folder under a name hashed from the device's identity, the file, its source and the
// options; a later run loads it instead of compiling (drivers without a compile cache of their
// own paid every build at every run). A file that does not check out, or that the driver will not
// load, is built from source and written again.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "base/status.h"
#include "opencl/cl_api.h"

namespace rg::ocl {

struct Kernel {
  cl_kernel handle = nullptr;
  std::string name;                // the __kernel function
  std::string file;                // "gemm.cl"
  size_t max_work_group_size = 0;  // CL_KERNEL_WORK_GROUP_SIZE: for this kernel on this device
};

// Options every build gets before the caller's: OpenCL C 1.2, and no fast-math flags.
constexpr const char* kBaseBuildOptions = "-cl-std=CL1.2";
// Programs build_all builds at once (and never more than the host's threads).
constexpr unsigned kParallelBuilds = 4;

class ProgramCache {
 public:
  // `device_label` ("cl:0:0 (NAME)") names the device in error messages; `identity` (device,
  // platform, versions) keys the binaries kept in `binary_folder` (empty: none kept).
  ProgramCache(const ClApi& api, cl_context context, cl_device_id device, std::string device_label,
               std::string identity = "", std::string binary_folder = "");
  ~ProgramCache();
  ProgramCache(const ProgramCache&) = delete;
  ProgramCache& operator=(const ProgramCache&) = delete;

  // kernels/<file> built with `options` (e.g. "-DTILE=16"), from the cache after the first call.
  Result<cl_program> program(const std::string& file, const std::string& options);
  // kernels/<file> built with each of `options_list` that is not cached yet, up to
  // kParallelBuilds at once (the searches build a dozen programs before timing any: NVIDIA's
  // compiler took 1.7 s a program alone, 0.9 s with four at once, bench/RESULTS.md 2026-11-30).
  // A build that fails is left out: program() builds it again and returns its error.
  void build_all(const std::string& file, const std::vector<std::string>& options_list);
  // The kernel `name` of that program; the pointer lives as long as the cache.
  Result<const Kernel*> kernel(const std::string& file, const std::string& name, const std::string& options);

  // Builds `source` (not cached; the caller releases it with clReleaseProgram). `what` names
  // it in errors, as a file name does.
  Result<cl_program> build_source(const std::string& what, const std::string& source, const std::string& options);

  size_t program_count() const;
  // Programs loaded from the binary folder, and binaries written there, since the cache was made.
  int binaries_loaded() const { return binaries_loaded_; }
  int binaries_written() const { return binaries_written_; }

 private:
  // Keeps `program` as (file, options)'s unless another thread kept one meanwhile (released then).
  cl_program keep(const std::pair<std::string, std::string>& key, cl_program program);
  // The program of `path`'s binary built with `options`, or null (no file, or one that does not
  // check out against `key`, or that the driver refuses); then `program`'s binary into `path`.
  cl_program load_binary(const std::string& path, const std::string& key, const std::string& options);
  void save_binary(const std::string& path, const std::string& key, cl_program program);

  const ClApi& api_;
  cl_context context_;
  cl_device_id device_;
  std::string device_label_;
  std::string identity_, binary_folder_;
  std::atomic<int> binaries_loaded_{0}, binaries_written_{0};
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, std::string>, cl_program> programs_;               // (file, options)
  std::map<std::tuple<std::string, std::string, std::string>, std::unique_ptr<Kernel>> kernels_;  // + name
};

}  // namespace rg::ocl
