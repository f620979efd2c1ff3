// Opening a device (context, profiling queue, program cache, capability tests), running
// kernels on it, and events.
#include "opencl/device.h"

#include <cstdlib>

#include "base/files.h"
#include "base/serial.h"
#include "opencl/cl_error.h"
#include "opencl/buffer.h"
#include "opencl/gemm_tuning.h"

namespace rg::ocl {

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) api_->clReleaseEvent(event_);
    api_ = other.api_;
    event_ = other.event_;
    queue_ = other.queue_;
    other.event_ = nullptr;
    other.queue_ = nullptr;
  }
  return *this;
}

Event::~Event() {
  if (event_ != nullptr) api_->clReleaseEvent(event_);
}

Status Event::wait() const {
  if (queue_ != nullptr) {  // an untracked launch: done when everything before it is
    RG_CL_TRY(*api_, clFinish, queue_);
    return Status();
  }
  if (event_ == nullptr) return Status();  // nothing was enqueued (an empty launch)
  RG_CL_TRY(*api_, clWaitForEvents, 1, &event_);
  // clWaitForEvents may succeed for a command that ended in error: its status says so.
  cl_int status = CL_COMPLETE;
  RG_CL_TRY(*api_, clGetEventInfo, event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
  if (status < 0) return cl_status("the command", status);
  return Status();
}

Result<double> Event::seconds() const {
  if (queue_ != nullptr) return Status::error("a launch timed by its event was enqueued without one (Device::KeepEvents)");
  if (event_ == nullptr) return 0.0;
  RG_TRY(wait());
  cl_ulong start = 0, end = 0;
  RG_CL_TRY(*api_, clGetEventProfilingInfo, event_, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
  RG_CL_TRY(*api_, clGetEventProfilingInfo, event_, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
  return end >= start ? static_cast<double>(end - start) * 1e-9 : 0.0;
}

Device::Device(const ClApi& api, DeviceInfo info)
    : api_(api), info_(std::move(info)), label_(info_.label + " (" + info_.name + ")"), memory_("device " + info_.label) {}

Device::~Device() {
  gemm_scratch_.reset();
  // Buffers release into memory_ and kernels into programs_: none may be left.
  RG_CHECK(memory_.current_bytes() == 0,
           "device " << label_ << " closed with " << memory_.current_bytes() << " bytes of buffers still allocated");
  programs_.reset();
  if (queue_ != nullptr) {
    api_.clFinish(queue_);
    api_.clReleaseCommandQueue(queue_);
  }
  if (context_ != nullptr) api_.clReleaseContext(context_);
}

namespace {

// Where built programs are kept (program_cache.h), or "" for nowhere: the cache folder for GPUs;
// not for CPU devices, whose runtimes compile at first launch and keep their own (PoCL compiled
// every kernel when asked for a binary: test_opencl_gemm 3 -> 9 minutes cold).
// RETROGRAD_CL_BINARIES=1 keeps them for any device, 0 for none; another value is an error.
Result<std::string> program_binary_folder(const DeviceInfo& info, const std::string& opening) {
  const char* asked = std::getenv("RETROGRAD_CL_BINARIES");
  const std::string binaries = asked != nullptr ? asked : "";
  if (!binaries.empty() && binaries != "0" && binaries != "1") {
    return Status::error(opening + "RETROGRAD_CL_BINARIES='" + binaries.substr(0, 40) + (binaries.size() > 40 ? "...'" : "'") +
                         ": 1 (keep compiled programs for any device), 0 (for none), or unset (for GPUs)");
  }
  const bool keep = binaries == "1" || (binaries != "0" && info.is_gpu());
  return keep ? cache_folder() : std::string();
}

}  // namespace

Result<std::unique_ptr<Device>> Device::open(const DeviceChoice& choice, const DeviceOptions& options) {
  RG_CHECK(choice.opencl, "Device::open of " << choice.text() << ", which is not an OpenCL device");
  RG_ASSIGN(const ClApi* api, opencl_api());
  const auto platforms = list_platforms(*api);
  // Checks the indices (a DeviceChoice can be made by hand) with --device's messages.
  RG_TRY(parse_device_choice(choice.text(), platforms).status());
  const DeviceInfo& info = platforms.value()[choice.platform].devices[choice.device];

  std::unique_ptr<Device> device(new Device(*api, info));
  const std::string opening = "opening " + device->label_ + ": ";
  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info.platform),
                                              0};
  cl_int code = CL_SUCCESS;
  device->context_ = api->clCreateContext(properties, 1, &info.id, nullptr, nullptr, &code);
  if (code != CL_SUCCESS) return cl_status("clCreateContext", code).with_context(opening);
  device->queue_ = api->clCreateCommandQueue(device->context_, info.id, CL_QUEUE_PROFILING_ENABLE, &code);
  if (code != CL_SUCCESS) return cl_status("clCreateCommandQueue", code).with_context(opening);
  RG_ASSIGN(const std::string binary_folder, program_binary_folder(info, opening));
  const std::string identity = info.name + " | " + info.vendor + " | " + info.platform_name + " | " + info.version + " | " +
                               info.opencl_c_version + " | " + info.driver_version + " | " + fnv1a_hex(info.extensions);
  device->programs_ =
      std::make_unique<ProgramCache>(*api, device->context_, info.id, device->label_, identity, binary_folder);
  device->memory_.set_budget(options.memory_budget_bytes);

  device->capabilities_.max_alloc_reported = info.max_alloc_bytes;
  device->capabilities_.local_mem_reported = info.local_mem_bytes;
  device->capabilities_.fp16_reported = info.has_extension("cl_khr_fp16");
  if (options.test_capabilities) {
    const KeepEvents waited(*device);  // the probes wait on their launches: each command's own error
    auto tested = test_capabilities(*device, options.capability);
    if (!tested.ok()) return tested.status().with_context("testing the capabilities of " + device->label_ + ": ");
    device->capabilities_ = tested.take();
  }
  return device;
}

Result<Event> Device::run(const Kernel& kernel, cl_uint dims, const size_t* global, const size_t* local) {
  cl_event event = nullptr;
  const cl_int code =
      api_.clEnqueueNDRangeKernel(queue_, kernel.handle, dims, nullptr, global, local, 0, nullptr, event_slot(&event));
  if (code != CL_SUCCESS) return error("running kernel " + kernel.name + " of kernels/" + kernel.file, "clEnqueueNDRangeKernel", code);
  ++launches_;
  Event done = enqueued(event);
  RG_TRY(add_profile(kernel.name, done));
  return done;
}

Status Device::add_profile(const std::string& name, const Event& done) {
  if (!profiling_) return Status();
  RG_ASSIGN(const double seconds, done.seconds());
  KernelTime& total = kernel_times_[name];
  total.launches += 1;
  total.seconds += seconds;
  if (profile_listener_) profile_listener_(seconds);
  return Status();
}

Status Device::finish() {
  const cl_int code = api_.clFinish(queue_);
  return code == CL_SUCCESS ? Status() : error("waiting for its queue", "clFinish", code);
}

Status Device::error(const std::string& doing, const char* call, cl_int code) const {
  std::string message = label_ + ": " + doing + ": " + cl_status(call, code).message();
  if (is_out_of_memory(code)) {
    const int64_t budget = memory_.budget_bytes();
    const std::string held = format_bytes(memory_.current_bytes()) + " of buffers counted" +
                             (budget > 0 ? " (budget " + format_bytes(budget) + ")" : "") + " of its " +
                             format_bytes(info_.global_mem_bytes);
    // CL_OUT_OF_RESOURCES from a launch is as often local memory or registers as memory.
    message += code == CL_OUT_OF_RESOURCES
                   ? ": the device ran out of a resource (memory, or a kernel's local memory or registers) with " + held
                   : ": the device is out of memory with " + held + "; a smaller batch or --device-mem would fit";
  }
  return Status::error(message);
}

}  // namespace rg::ocl
