// --device cpu|cl:P:D: which device a run uses. Parsing checks the text's form and that
// the OpenCL device exists; an error names the text and lists the devices there are.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "opencl/platforms.h"

namespace rg::ocl {

struct DeviceChoice {
  bool opencl = false;  // false: the CPU
  int platform = 0;     // with opencl: indices into list_platforms() and its devices
  int device = 0;
  std::string text() const;  // "cpu" or "cl:P:D"
};

// Against a listing (`platforms` is the listing, or the reason OpenCL is off): tests give
// their own. "cpu" is always valid.
Result<DeviceChoice> parse_device_choice(const std::string& text, const Result<std::vector<PlatformInfo>>& platforms);

// Against this machine's devices (list_platforms()).
Result<DeviceChoice> parse_device_choice(const std::string& text);

}  // namespace rg::ocl
