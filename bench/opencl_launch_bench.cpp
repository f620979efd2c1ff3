// What one kernel launch costs on an OpenCL device, host and device (issue 33: resnet20 at batch
// 256 runs ~300 launches a step on the H200, and a batch norm of 3 MB takes as long as one of
// 13 MB). An elementwise add of n floats (out = a + b) launched LAUNCHES times back to back, five
// ways: "ours" through ocl::f32_add (kernel lookup, argument checks and setting, no event asked of
// the driver: what every layer pays), "ours+event" the same in a Device::KeepEvents scope (every
// launch before 2026-12-01), "raw+event" the same kind of kernel built here with its arguments
// set once and only clEnqueueNDRangeKernel with an event (released at once) per launch, "raw" the same
// without an event, "raw+event+args" setting its 4 arguments each launch too. Per launch: the host's
// enqueue time (to the last enqueue returned) and the wall time to the queue's finish, in us, the
// median [min, max] of --reps after 2 warm-ups; the wall time at the large n (bandwidth-bound)
// beside the small one (launch-bound) tells the device's own floor a kernel. Exit 2 on a bad
// command line.
//
// usage: opencl_launch_bench [--device cl:P:D] [--reps 7] [--launches 200] [--sizes 1024,3211264]
// Built by bench/opencl_launch_bench.sh (against the build's static libraries).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "opencl/buffer.h"
#include "opencl/cl_error.h"
#include "opencl/device.h"
#include "opencl/elementwise.h"

#include "bench_cli.h"
#include "bench_device.h"

using namespace rg;
using namespace rg::bench;

namespace {

struct Options {
  std::string device = "cl:0:0";
  int reps = 7, launches = 200;
  std::vector<int64_t> sizes{1024, 3211264};
};

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> sizes;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return option_value(argc, argv, &i); };
    if (arg == "--device") o.device = value();
    else if (arg == "--reps") o.reps = static_cast<int>(integer(value(), "--reps", 1, 1000));
    else if (arg == "--launches") o.launches = static_cast<int>(integer(value(), "--launches", 1, 100000));
    else if (arg == "--sizes") sizes = split(value());
    else usage_error("unknown argument " + arg + " (see the header of bench/opencl_launch_bench.cpp)");
  }
  if (!sizes.empty()) o.sizes.clear();
  for (const auto& s : sizes) o.sizes.push_back(integer(s, "--sizes", 1, 1 << 28));
  if (o.sizes.empty()) usage_error("--sizes needs an entry");
  return o;
}

constexpr const char* kRawSource =
    "__kernel void raw_add(uint n, __global const float* a, __global const float* b, __global float* out) {\n"
    "  const uint i = get_global_id(0);\n"
    "  if (i < n) out[i] = a[i] + b[i];\n"
    "}\n";

// raw_add built here (no program cache: nothing of ours between the launch and the driver).
cl_kernel build_raw_kernel(const ocl::Device& device) {
  const ocl::ClApi& api = device.api();
  cl_int code = CL_SUCCESS;
  const char* source = kRawSource;
  cl_program program = api.clCreateProgramWithSource(device.context(), 1, &source, nullptr, &code);
  check(ocl::cl_status("clCreateProgramWithSource", code), "raw program");
  const cl_device_id id = device.id();
  check(ocl::cl_status("clBuildProgram", api.clBuildProgram(program, 1, &id, "", nullptr, nullptr)), "raw program");
  cl_kernel kernel = api.clCreateKernel(program, "raw_add", &code);
  check(ocl::cl_status("clCreateKernel", code), "raw_add");
  api.clReleaseProgram(program);  // the kernel holds it
  return kernel;
}

// `launch` LAUNCHES times, timed to the last enqueue and to the finish, us per launch.
LaunchTimes time_us(ocl::Device& device, const Options& o, const std::function<void()>& launch) {
  return time_launches(device, o.reps, o.launches, 1e6, [&] {
    launch();
    return true;
  });
}

struct RawAdd {
  const ocl::Device& device;
  cl_kernel kernel;
  cl_uint n;
  cl_mem a, b, out;
  size_t local;  // 256, or the kernel's limit where lower
  void set_args() const {
    const ocl::ClApi& api = device.api();
    const std::pair<size_t, const void*> args[] = {{sizeof n, &n}, {sizeof a, &a}, {sizeof b, &b}, {sizeof out, &out}};
    for (cl_uint i = 0; i < 4; ++i) {
      const cl_int code = api.clSetKernelArg(kernel, i, args[i].first, args[i].second);
      if (code != CL_SUCCESS) check(ocl::cl_status("clSetKernelArg", code), "raw_add argument " + std::to_string(i));
    }
  }
  void enqueue(bool with_event) const {
    const size_t global = (n + local - 1) / local * local;
    cl_event event = nullptr;
    const cl_int code = device.api().clEnqueueNDRangeKernel(device.queue(), kernel, 1, nullptr, &global, &local, 0,
                                                            nullptr, with_event ? &event : nullptr);
    check(ocl::cl_status("clEnqueueNDRangeKernel", code), "raw_add");
    if (event != nullptr) device.api().clReleaseEvent(event);
  }
};

void print_row(int64_t n, const char* way, const LaunchTimes& t) {
  std::printf("| %lld | %s | %.2f [%.2f, %.2f] | %.2f [%.2f, %.2f] |\n", static_cast<long long>(n), way,
              t.enqueue.median, t.enqueue.low, t.enqueue.high, t.wall.median, t.wall.low, t.wall.high);
  std::fflush(stdout);
}

void bench_size(ocl::Device& device, cl_kernel raw, int64_t n, const Options& o) {
  if (4.0 * n > static_cast<double>(device.max_buffer_bytes()))
    usage_error("--sizes " + std::to_string(n) + ": a buffer larger than the device's largest");
  const std::vector<float> ones(static_cast<size_t>(n), 1.0f);
  ocl::Buffer a = get(ocl::upload(device, ones, "a"), "a"), b = get(ocl::upload(device, ones, "b"), "b");
  ocl::Buffer out = get(ocl::upload(device, ones, "out"), "out");
  auto ours = [&] { check(ocl::f32_add(device, n, a.f32(), b.f32(), out.f32()).status(), "f32_add"); };
  print_row(n, "ours (ocl::f32_add)", time_us(device, o, ours));
  {
    const ocl::Device::KeepEvents events(device);
    print_row(n, "ours+event", time_us(device, o, ours));
  }
  size_t limit = 256;
  const cl_int code = device.api().clGetKernelWorkGroupInfo(raw, device.id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof limit,
                                                            &limit, nullptr);
  check(ocl::cl_status("clGetKernelWorkGroupInfo", code), "raw_add");
  const RawAdd r{device, raw, static_cast<cl_uint>(n), a.mem(), b.mem(), out.mem(), std::min<size_t>(256, limit)};
  r.set_args();
  print_row(n, "raw+event", time_us(device, o, [&] { r.enqueue(true); }));
  print_row(n, "raw", time_us(device, o, [&] { r.enqueue(false); }));
  print_row(n, "raw+event+args", time_us(device, o, [&] {
              r.set_args();
              r.enqueue(true);
            }));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  auto device = open_opencl_device(o.device);
  print_device_line(*device);
  std::printf("us a launch: median [min, max] of %d rounds of %d launches after 2 warm-ups; enqueue: host time to "
              "the last enqueue; wall: to the queue's finish\n\n",
              o.reps, o.launches);
  std::printf("| n | way | enqueue us | wall us |\n|---|---|---:|---:|\n");
  cl_kernel raw = build_raw_kernel(*device);
  for (const int64_t n : o.sizes) bench_size(*device, raw, n, o);
  device->api().clReleaseKernel(raw);
  return 0;
}
