// One OpenCL device opened for work: its context, an in-order command queue with profiling,
// the memory account its buffers are counted in (with the --device-mem budget), its
// program cache and its tested capabilities. Buffers, events and kernels made from a
// Device must not outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "base/memory.h"
#include "base/status.h"
#include "opencl/capabilities.h"
#include "opencl/cl_api.h"
#include "opencl/device_choice.h"
#include "opencl/platforms.h"
#include "opencl/program_cache.h"

namespace rg::ocl {

struct GemmTuning;
class Buffer;

// A command's completion, and its time on the device (the queue profiles every command).
// An empty Event stands for work that needed no command (n = 0): done, in 0 seconds. A launch,
// fill or copy enqueued without an event (outside profiling and Device::KeepEvents) is
// `untracked`: its wait() finishes the whole queue, and it has no time (seconds() is an error).
class Event {
 public:
  Event() = default;
  Event(const ClApi* api, cl_event event) : api_(api), event_(event) {}
  static Event untracked(const ClApi* api, cl_command_queue queue) {
    Event e;
    e.api_ = api;
    e.queue_ = queue;
    return e;
  }
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  cl_event get() const { return event_; }  // null for an untracked command
  bool valid() const { return event_ != nullptr || queue_ != nullptr; }  // a command was enqueued
  // Blocks until the command finished; the error of a command that failed (untracked: the queue's
  // finish, whose error is the queue's, not the command's).
  Status wait() const;
  // Seconds the command ran on the device (CL_PROFILING_COMMAND_START to END); waits first.
  Result<double> seconds() const;

 private:
  const ClApi* api_ = nullptr;
  cl_event event_ = nullptr;
  cl_command_queue queue_ = nullptr;  // an untracked launch's queue (not owned)
};

struct DeviceOptions {
  int64_t memory_budget_bytes = 0;  // 0: none (the device's own memory is the limit)
  bool test_capabilities = true;    // false: trust nothing, max buffer = reported limit (for quick tests)
  CapabilityOptions capability;
};

class Device {
 public:
  // Opens the OpenCL device `choice` names (choice.opencl must be true). Errors name the
  // device and the failed call; no loader / no platform come back as opencl_status() says.
  static Result<std::unique_ptr<Device>> open(const DeviceChoice& choice, const DeviceOptions& options = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const ClApi& api() const { return api_; }
  const DeviceInfo& info() const { return info_; }
  const std::string& label() const { return label_; }  // "cl:0:0 (NAME)"
  const Capabilities& capabilities() const { return capabilities_; }
  cl_context context() const { return context_; }
  cl_command_queue queue() const { return queue_; }
  cl_device_id id() const { return info_.id; }

  // Every Buffer's bytes, with the budget; refuses past it (buffer.h).
  MemoryAccount& memory() { return memory_; }
  // The largest single buffer allowed: Capabilities::max_buffer_bytes().
  int64_t max_buffer_bytes() const { return capabilities_.max_buffer_bytes(); }

  ProgramCache& programs() { return *programs_; }
  Result<const Kernel*> kernel(const std::string& file, const std::string& name, const std::string& options = "") {
    return programs_->kernel(file, name, options);
  }

  // Enqueues `kernel` over `dims` dimensions (its arguments already set, kernel_args.h).
  // `local` may be null (the driver picks). The driver is asked for the launch's event only
  // while profiling or inside a KeepEvents scope; else the Event is untracked (see Event): on
  // NVIDIA's OpenCL a launch with an event took 13-15 us of host time, without one 5-7
  // (bench/RESULTS.md 2026-12-01), and resnet20's ~300 launches a step waited on the host.
  Result<Event> run(const Kernel& kernel, cl_uint dims, const size_t* global, const size_t* local);
  // Where an enqueue (run's, a fill's, a copy's) writes its event: `slot` while events are kept
  // (profiling, KeepEvents), else null, no event asked of the driver; then enqueued() makes the
  // Event of what it enqueued (untracked without one).
  cl_event* event_slot(cl_event* slot) const { return profiling_ || keep_events_ > 0 ? slot : nullptr; }
  Event enqueued(cl_event event) const { return event != nullptr ? Event(&api_, event) : Event::untracked(&api_, queue_); }
  // While one lives, launches keep their events (code that times a launch by its event: the
  // GEMM's tuning, benchmarks).
  class KeepEvents {
   public:
    explicit KeepEvents(Device& device) : device_(device) { ++device_.keep_events_; }
    ~KeepEvents() { --device_.keep_events_; }
    KeepEvents(const KeepEvents&) = delete;
    KeepEvents& operator=(const KeepEvents&) = delete;

   private:
    Device& device_;
  };
  // Waits for everything enqueued.
  Status finish();
  // Kernels enqueued by run() since the device opened (fusion's tests count a step's launches).
  int64_t launches() const { return launches_; }

  // Profiling by kernel: when on, run() waits for each kernel (and buffer.h's copies for each
  // copy) and adds its device time to its name's total (a slower run, since the host waits each time; the times are the device's own).
  struct KernelTime {
    int64_t launches = 0;
    double seconds = 0;
  };
  void set_profiling(bool on) { profiling_ = on; }
  bool profiling() const { return profiling_; }
  // When profiling: waits for `done` and adds its device time under `name` (a kernel's name, or
  // "(copy to the device)" / "(copy to the host)" for buffer copies).
  Status add_profile(const std::string& name, const Event& done);
  const std::map<std::string, KernelTime>& kernel_times() const { return kernel_times_; }
  // Called with each profiled command's device seconds as add_profile counts them (the layer
  // profile of train --profile-device attributes them to the layer running); empty: none.
  void set_profile_listener(std::function<void(double seconds)> listener) { profile_listener_ = std::move(listener); }

  // The GEMM configurations' measured rates on this device (gemm_tuning.h fills it once).
  std::unique_ptr<GemmTuning>& gemm_tuning_slot() { return gemm_tuning_; }
  // The partial sums of products split over K (gemm.h's reserve_gemm_scratch fills it).
  std::unique_ptr<Buffer>& gemm_scratch_slot() { return gemm_scratch_; }

  // An error of `call` while `doing` something on this device: names the device, and for
  // out-of-memory codes what the account holds and what to lower.
  Status error(const std::string& doing, const char* call, cl_int code) const;

 private:
  Device(const ClApi& api, DeviceInfo info);

  const ClApi& api_;
  DeviceInfo info_;
  std::string label_;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  MemoryAccount memory_;
  std::unique_ptr<ProgramCache> programs_;
  Capabilities capabilities_;
  bool profiling_ = false;
  int keep_events_ = 0;  // KeepEvents scopes open (a Device is driven from one thread, as profiling_)
  int64_t launches_ = 0;
  std::map<std::string, KernelTime> kernel_times_;
  std::function<void(double)> profile_listener_;
  std::unique_ptr<GemmTuning> gemm_tuning_;
  std::unique_ptr<Buffer> gemm_scratch_;
};

}  // namespace rg::ocl
