// What the OpenCL tools of bench/ share: the device their --device names, opened (exit 2 for a
// text that names no OpenCL device, 1 where it fails to open). Header only, as bench_cli.h.
#pragma once

#include <memory>
#include <string>

#include "bench_cli.h"
#include "opencl/device.h"
#include "opencl/device_choice.h"

namespace rg::bench {

inline std::unique_ptr<ocl::Device> open_opencl_device(const std::string& text) {
  const ocl::DeviceChoice choice = get_arg(ocl::parse_device_choice(text), "--device " + text);
  if (!choice.opencl) usage_error("--device must be an OpenCL device cl:P:D");
  return get(ocl::Device::open(choice), "opening " + text);
}

}  // namespace rg::bench
