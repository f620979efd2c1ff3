// Opening the training device from the command line.
#include "app/device_option.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "base/memory.h"

namespace rg {

void add_device_options(Args& args) {
  args.option("device", "cpu|cl:P:D", "train on the CPU or on OpenCL device D of platform P (retrograd probe lists them)",
              "cpu");
  args.option("device-mem", "SIZE", "OpenCL: a device memory budget (256M makes a large card behave like a 256 MB one); "
              "the batch is split into micro-batches to fit", "the device's memory");
  args.option("cpu-layers", "NAMES", "OpenCL: run these layers (comma-separated names, as the model summary shows "
              "them) on the CPU, the rest on the device; the copies between them are counted", "none");
  args.flag("profile-device", "OpenCL: time every kernel and copy on the device while training (waits for each: "
            "slower) and print the time per kernel");
  args.option("loss-on", "device|cpu", "OpenCL: where the loss and its gradient are computed (cpu: the output is read "
              "back and its gradient sent; devices without double support use cpu)", "device");
}

Result<std::unique_ptr<ocl::Device>> open_train_device(const Args& args, TrainOptions* options) {
  const std::string text = args.text("device");
  auto choice = ocl::parse_device_choice(text);
  if (!choice.ok()) return choice.status().with_context("--device: ");
  const std::string loss_on = args.text("loss-on");
  if (loss_on != "device" && loss_on != "cpu") return Status::error("--loss-on: '" + loss_on + "' is not device or cpu");
  if (!choice.value().opencl) {
    for (const char* name : {"device-mem", "loss-on", "cpu-layers", "profile-device"}) {
      if (args.given(name)) return Status::error("--" + std::string(name) + " applies to an OpenCL --device");
    }
    return std::unique_ptr<ocl::Device>();
  }
  ocl::DeviceOptions device_options;
  if (args.given("device-mem")) {
    auto budget = parse_bytes(args.text("device-mem"));
    if (!budget.ok()) return budget.status().with_context("--device-mem: ");
    if (budget.value() <= 0) return Status::error("--device-mem: a budget must be above 0 bytes");
    device_options.memory_budget_bytes = budget.value();
  }
  if (args.given("mem-budget")) {  // a device sharing host memory tests within it
    auto budget = parse_bytes(args.text("mem-budget"));
    if (!budget.ok()) return budget.status().with_context("--mem-budget: ");
    device_options.capability.host_budget_bytes = budget.value();
  }
  auto device = ocl::Device::open(choice.value(), device_options);
  if (!device.ok()) return device.status().with_context("--device " + text + ": ");
  options->device = device.value().get();
  device.value()->set_profiling(args.given("profile-device"));
  options->loss_on_host = loss_on == "cpu";
  if (args.given("cpu-layers")) {
    std::istringstream names(args.text("cpu-layers"));
    for (std::string name; std::getline(names, name, ',');) options->host_layers.push_back(name);
  }
  return device.take();
}

std::string describe_kernel_times(const ocl::Device& device) {
  std::vector<std::pair<std::string, ocl::Device::KernelTime>> kernels(device.kernel_times().begin(),
                                                                       device.kernel_times().end());
  // Copies are listed beside the kernels; "all kernels" sums the kernels alone.
  double total = 0, kernels_only = 0;
  for (const auto& k : kernels) total += k.second.seconds, kernels_only += k.first[0] == '(' ? 0 : k.second.seconds;
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  std::string text = "  kernel                              launches    seconds   share\n";
  char line[160];
  for (const auto& [name, time] : kernels) {
    std::snprintf(line, sizeof line, "  %-34s %9lld %10.3f  %5.1f%%\n", name.c_str(), static_cast<long long>(time.launches),
                  time.seconds, total > 0 ? 100.0 * time.seconds / total : 0.0);
    text += line;
  }
  std::snprintf(line, sizeof line, "  %-34s %9s %10.3f\n", "all kernels", "", kernels_only);
  return text + line;
}

nlohmann::json kernel_times_json(const ocl::Device& device) {
  double kernels = 0, copies = 0;
  int64_t launches = 0;
  for (const auto& [name, time] : device.kernel_times()) {
    const bool copy = name[0] == '(';  // "(copy to the device)"
    (copy ? copies : kernels) += time.seconds;
    if (!copy) launches += time.launches;
  }
  return {{"kernel_seconds", kernels}, {"copy_seconds", copies}, {"launches", launches}};
}

std::string describe_device_use(ocl::Device& device, const ocl::TransferCounts& transfers) {
  const MemoryAccount& memory = device.memory();
  std::string text = device.label() + ": device memory peak " + format_bytes(memory.peak_bytes());
  if (memory.budget_bytes() > 0) text += " (budget " + format_bytes(memory.budget_bytes()) + ")";
  text += "; copies " + format_bytes(transfers.up_bytes) + " to the device in " + std::to_string(transfers.ups) + ", " +
          format_bytes(transfers.down_bytes) + " back in " + std::to_string(transfers.downs);
  return text;
}

}  // namespace rg
