// Parsing and checking --device.
#include "opencl/device_choice.h"

#include <cctype>

namespace rg::ocl {

namespace {

// "cpu, cl:0:0 (NAME, GPU)" or "cpu (OpenCL is off: WHY)".
std::string devices_here(const Result<std::vector<PlatformInfo>>& platforms) {
  if (!platforms.ok()) return "cpu only (OpenCL is off: " + platforms.status().message() + ")";
  std::string text = "cpu";
  for (const PlatformInfo& platform : platforms.value()) {
    for (const DeviceInfo& device : platform.devices) text += ", " + device.label + " (" + device.name + ", " + device.type + ")";
  }
  return text;
}

// A decimal index of at most 4 digits, nothing else.
bool parse_index(const std::string& text, int* value) {
  if (text.empty() || text.size() > 4) return false;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  *value = std::stoi(text);
  return true;
}

}  // namespace

std::string DeviceChoice::text() const {
  return opencl ? "cl:" + std::to_string(platform) + ":" + std::to_string(device) : "cpu";
}

Result<DeviceChoice> parse_device_choice(const std::string& text, const Result<std::vector<PlatformInfo>>& platforms) {
  DeviceChoice choice;
  if (text == "cpu") return choice;
  const std::string where = "device '" + text + "': ";
  const size_t second = text.find(':', 3);
  if (text.rfind("cl:", 0) != 0 || second == std::string::npos ||
      !parse_index(text.substr(3, second - 3), &choice.platform) ||
      !parse_index(text.substr(second + 1), &choice.device)) {
    return Status::error(where + "expected cpu or cl:P:D (P the OpenCL platform, D its device, from 0); devices here: " +
                         devices_here(platforms));
  }
  choice.opencl = true;
  if (!platforms.ok()) return Status::error(where + "OpenCL is off: " + platforms.status().message());
  const auto& list = platforms.value();
  if (choice.platform >= static_cast<int>(list.size())) {
    return Status::error(where + "there is no OpenCL platform " + std::to_string(choice.platform) +
                         "; devices here: " + devices_here(platforms));
  }
  const PlatformInfo& platform = list[choice.platform];
  if (choice.device >= static_cast<int>(platform.devices.size())) {
    return Status::error(where + "platform " + std::to_string(choice.platform) + " (" + platform.name + ") has no device " +
                         std::to_string(choice.device) + "; devices here: " + devices_here(platforms));
  }
  return choice;
}

// "cpu" never loads the OpenCL library: PoCL alone (its LLVM) costs a CPU run ~60 MiB of RSS.
Result<DeviceChoice> parse_device_choice(const std::string& text) {
  if (text == "cpu") return DeviceChoice();
  return parse_device_choice(text, list_platforms());
}

}  // namespace rg::ocl
