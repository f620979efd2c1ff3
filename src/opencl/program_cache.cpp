// Building programs (with the build log on failure) and caching them and their kernels.
#include "opencl/program_cache.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "base/files.h"
#include "base/serial.h"
#include "opencl/cl_error.h"
#include "opencl/kernel_sources.h"
#include "opencl/program_binary_file.h"

namespace rg::ocl {

namespace {
// Enough of a log to find the first errors; a broken kernel can log megabytes.
constexpr size_t kMaxLogChars = 8000;

std::string all_build_options(const std::string& options) {
  return std::string(kBaseBuildOptions) + (options.empty() ? "" : " " + options);
}

}  // namespace

ProgramCache::ProgramCache(const ClApi& api, cl_context context, cl_device_id device, std::string device_label,
                           std::string identity, std::string binary_folder)
    : api_(api),
      context_(context),
      device_(device),
      device_label_(std::move(device_label)),
      identity_(std::move(identity)),
      binary_folder_(std::move(binary_folder)) {}

ProgramCache::~ProgramCache() {
  for (auto& entry : kernels_) api_.clReleaseKernel(entry.second->handle);
  for (auto& entry : programs_) api_.clReleaseProgram(entry.second);
}

Result<cl_program> ProgramCache::build_source(const std::string& what, const std::string& source,
                                              const std::string& options) {
  const std::string context = "building " + what + " for " + device_label_ + ": ";
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int code = CL_SUCCESS;
  cl_program program = api_.clCreateProgramWithSource(context_, 1, &text, &length, &code);
  if (code != CL_SUCCESS) return cl_status("clCreateProgramWithSource", code).with_context(context);
  const std::string all_options = all_build_options(options);
  code = api_.clBuildProgram(program, 1, &device_, all_options.c_str(), nullptr, nullptr);
  if (code == CL_SUCCESS) return program;

  std::string log;
  size_t log_size = 0;
  if (api_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size) == CL_SUCCESS &&
      log_size > 1) {
    log.resize(log_size);
    if (api_.clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, log_size, &log[0], nullptr) != CL_SUCCESS) {
      log = "(the build log could not be read)";
    }
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
    if (log.size() > kMaxLogChars) log = log.substr(0, kMaxLogChars) + "\n... (" + std::to_string(log_size) + " bytes of log)";
  }
  api_.clReleaseProgram(program);
  return Status::error(context + cl_status("clBuildProgram", code).message() + " with options '" + all_options + "'" +
                       (log.empty() ? " (the build log is empty)" : "; build log:\n" + log));
}

Result<cl_program> ProgramCache::program(const std::string& file, const std::string& options) {
  const auto key = std::make_pair(file, options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = programs_.find(key); found != programs_.end()) return found->second;
  }
  RG_ASSIGN(const KernelSource source, kernel_program_source(file));
  // Every build's options (kBaseBuildOptions too), the source as built: a binary is never another's.
  const std::string binary_key = identity_ + " | " + file + " | " + all_build_options(options) + " | " + fnv1a_hex(source.text);
  const std::string path =
      binary_folder_.empty() ? "" : join_path(binary_folder_, "opencl-program-" + fnv1a_hex(binary_key) + ".bin");
  if (!path.empty()) {
    if (cl_program loaded = load_binary(path, binary_key, options)) return keep(key, loaded);
  }
  const std::string what = "kernels/" + file + (source.origin == "embedded" ? "" : " (read from " + source.origin + ")");
  RG_ASSIGN(cl_program program, build_source(what, source.text, options));  // unlocked: builds may overlap
  if (!path.empty()) save_binary(path, binary_key, program);
  return keep(key, program);
}

cl_program ProgramCache::load_binary(const std::string& path, const std::string& key, const std::string& options) {
  // None, not a regular file or past the limit: built from source.
  const auto file = read_file_bytes(path, "a program binary", kMaxProgramBinaryFileBytes);
  if (!file.ok()) return nullptr;
  const auto binary = program_binary_of(file.value(), key);
  if (!binary.ok() || binary.value().empty()) return nullptr;
  const size_t length = binary.value().size();
  const unsigned char* bytes = binary.value().data();
  cl_int status = CL_SUCCESS, code = CL_SUCCESS;
  cl_program program = api_.clCreateProgramWithBinary(context_, 1, &device_, &length, &bytes, &status, &code);
  if (code != CL_SUCCESS || status != CL_SUCCESS) {
    if (program != nullptr) api_.clReleaseProgram(program);
    return nullptr;
  }
  if (api_.clBuildProgram(program, 1, &device_, all_build_options(options).c_str(), nullptr, nullptr) != CL_SUCCESS) {
    api_.clReleaseProgram(program);
    return nullptr;
  }
  ++binaries_loaded_;
  return program;
}

void ProgramCache::save_binary(const std::string& path, const std::string& key, cl_program program) {
  size_t length = 0;
  if (api_.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof length, &length, nullptr) != CL_SUCCESS ||
      length == 0 || static_cast<int64_t>(length) > kMaxProgramBinaryFileBytes / 2) {
    return;  // one device: one size
  }
  std::vector<uint8_t> binary(length);
  unsigned char* out = binary.data();
  if (api_.clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof out, &out, nullptr) != CL_SUCCESS) return;
  if (!write_cache_file(path, program_binary_file(key, binary)).ok()) return;  // unwritten: built next run
  ++binaries_written_;
  prune_program_binaries(binary_folder_, last_path_component(path));
}

cl_program ProgramCache::keep(const std::pair<std::string, std::string>& key, cl_program program) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto [at, added] = programs_.emplace(key, program);
  if (!added) api_.clReleaseProgram(program);
  return at->second;
}

void ProgramCache::build_all(const std::string& file, const std::vector<std::string>& options_list) {
  std::vector<std::string> missing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::string& options : options_list)
      if (programs_.count({file, options}) == 0 && std::find(missing.begin(), missing.end(), options) == missing.end())
        missing.push_back(options);
  }
  const unsigned threads = std::min<unsigned>({kParallelBuilds, std::max(1u, std::thread::hardware_concurrency()),
                                               static_cast<unsigned>(missing.size())});
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < missing.size();) (void)program(file, missing[k]);  // a failure: program() again later
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no more threads: the ones started and this one build the rest
    }
  }
  work();
  for (std::thread& t : pool) t.join();
}

Result<const Kernel*> ProgramCache::kernel(const std::string& file, const std::string& name, const std::string& options) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto found = kernels_.find(std::make_tuple(file, options, name)); found != kernels_.end()) {
      return static_cast<const Kernel*>(found->second.get());
    }
  }
  RG_ASSIGN(cl_program program, this->program(file, options));
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto found = kernels_.find(std::make_tuple(file, options, name)); found != kernels_.end()) {
    return static_cast<const Kernel*>(found->second.get());  // another thread made it meanwhile
  }
  auto kernel = std::make_unique<Kernel>();
  kernel->name = name;
  kernel->file = file;
  cl_int code = CL_SUCCESS;
  kernel->handle = api_.clCreateKernel(program, name.c_str(), &code);
  if (code != CL_SUCCESS) {
    return cl_status("clCreateKernel", code).with_context("kernel " + name + " of kernels/" + file + " on " + device_label_ + ": ");
  }
  code = api_.clGetKernelWorkGroupInfo(kernel->handle, device_, CL_KERNEL_WORK_GROUP_SIZE, sizeof(size_t),
                                       &kernel->max_work_group_size, nullptr);
  if (code != CL_SUCCESS) {
    api_.clReleaseKernel(kernel->handle);
    return cl_status("clGetKernelWorkGroupInfo", code).with_context("kernel " + name + " on " + device_label_ + ": ");
  }
  const Kernel* result = kernel.get();
  kernels_.emplace(std::make_tuple(file, options, name), std::move(kernel));
  return result;
}

size_t ProgramCache::program_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return programs_.size();
}

}  // namespace rg::ocl
