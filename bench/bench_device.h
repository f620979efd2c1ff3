// What the OpenCL tools of bench/ share: the device their --device names, opened (exit 2 for a
// text that names no OpenCL device, 1 where it fails to open) and its line of their output; the
// timing of back-to-back launches. Header only, as bench_cli.h.
#pragma once

#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "opencl/device.h"
#include "opencl/device_choice.h"

namespace rg::bench {

inline std::unique_ptr<ocl::Device> open_opencl_device(const std::string& text) {
  const ocl::DeviceChoice choice = get_arg(ocl::parse_device_choice(text), "--device " + text);
  if (!choice.opencl) usage_error("--device must be an OpenCL device cl:P:D");
  return get(ocl::Device::open(choice), "opening " + text);
}

// "device:  cl:P:D (NAME), driver VERSION", the first line of a tool's output.
inline void print_device_line(const ocl::Device& device) {
  std::printf("device:  %s, driver %s\n", device.label().c_str(), device.info().driver_version.c_str());
}

// Per call, in `unit`s a second (1e3: ms): the host's time to the last enqueue and the wall time
// to the queue's finish, over 2 + reps rounds of `launches` calls of `launch` from a finished
// queue, the first 2 rounds warm-ups. `launch` returns false to stop (an error it keeps): the
// rounds done until then count.
struct LaunchTimes {
  Spread enqueue, wall;
};
inline LaunchTimes time_launches(ocl::Device& device, int reps, int launches, double unit,
                                 const std::function<bool()>& launch) {
  std::vector<double> enqueue, wall;
  bool going = true;
  for (int r = 0; r < 2 + reps && going; ++r) {
    check(device.finish(), "finish");
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < launches && going; ++l) going = launch();
    const auto t1 = std::chrono::steady_clock::now();
    check(device.finish(), "finish");
    const auto t2 = std::chrono::steady_clock::now();
    if (r < 2 || !going) continue;
    enqueue.push_back(unit * std::chrono::duration<double>(t1 - t0).count() / launches);
    wall.push_back(unit * std::chrono::duration<double>(t2 - t0).count() / launches);
  }
  return {spread(enqueue), spread(wall)};
}

}  // namespace rg::bench
