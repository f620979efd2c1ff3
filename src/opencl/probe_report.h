// What `retrograd probe` says about OpenCL: every device with its tested capabilities,
// or why OpenCL is off, and whether a GPU is on.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace rg::ocl {

// `only_device` ("" for all, else --device's text: "cpu" tests none) and the --device-mem
// budget to show. Only a bad --device is an error; OpenCL being off is part of the text.
Result<std::string> opencl_probe_report(const std::string& only_device, int64_t memory_budget_bytes);

}  // namespace rg::ocl
