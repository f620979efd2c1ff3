// --device cpu|cl:P:D, --device-mem and --loss-on for the commands that train: the OpenCL
// device opened with its memory budget, or none for the CPU.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "opencl/device.h"
#include "opencl/model/cl_layer.h"
#include "train/trainer.h"

namespace rg {

void add_device_options(Args& args);

// The device --device names, opened with --device-mem's budget (null for cpu); sets
// options->device and options->loss_on_host. Errors name the option.
Result<std::unique_ptr<ocl::Device>> open_train_device(const Args& args, TrainOptions* options);

// "cl:0:0 (NVIDIA H100): device memory peak 41.2 MiB (budget 128 MiB); copies ...": the
// summary's line.
std::string describe_device_use(ocl::Device& device, const ocl::TransferCounts& transfers);
// --profile-device: a table of the device time per kernel, the largest first.
std::string describe_kernel_times(const ocl::Device& device);
// --profile-device in --json: {"kernel_seconds", "copy_seconds", "launches"} over the profile.
nlohmann::json kernel_times_json(const ocl::Device& device);

}  // namespace rg
