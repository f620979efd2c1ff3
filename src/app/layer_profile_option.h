// --profile for `train` and `precision`: the per-layer profile attached to the training steps on
// the CPU (nn/layer_profile.h), and after training its table and --json's "layer_profile"
// (report/layer_profile_table.h), against the peak of the threads used at the ISA level run.
// train --profile-device on an OpenCL device: the same table from the device's own command
// times (LayerProfile::Clock::device), against the GPU's published peak where it is listed.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "report/layer_profile_table.h"
#include "train/trainer.h"

namespace rg {

void add_profile_option(Args& args);

// Null without --profile (or, training on a device, --profile-device: a device clock's profile,
// fed by the caller through Device::set_profile_listener); --profile with a device is an error.
Result<std::unique_ptr<LayerProfile>> layer_profile_for(const Args& args, const TrainOptions& options);

// The peak the tables divide by: as many cores as `threads` (at most the CPU's physical cores:
// SMT siblings share their units) at the active ISA level, at the clock measured now with them
// busy (about 0.1 s: measure once a run, not once a table).
PeakFigure layer_profile_peak(int threads);
// An OpenCL device's: the published table's figure for `device_name`, or none (unknown: 0).
PeakFigure layer_profile_device_peak(const std::string& device_name);
nlohmann::json layer_profile_json(const LayerProfileReport& report);

}  // namespace rg
