// The study's estimates for the other machines of the hardware table: each network's fp32
// speed measured here, scaled per layer by the roofline (report/roofline.h): a CPU measurement
// to the table's CPUs, a GPU measurement to its GPUs. A listed CPU takes the efficiency measured
// here at the ISA level its kernels would run (a Core 2 Duo E6600 the ssse3 kernels'), where this
// CPU has that level; else the best level's. Every figure is marked an estimate; a machine class
// not measured here gets only its roofline ceiling (100% efficiency).
#pragma once

#include <nlohmann/json.hpp>

#include "study/study_result.h"

namespace rg {

// One object per network and table row: {"network", "machine", "type", "measured_on",
// "efficiency", "estimated_samples_per_s" (null when no efficiency applies),
// "ceiling_samples_per_s", "compute_bound_share", "basis"}.
nlohmann::json estimate_other_machines(const StudyResult& result);

// The same as CSV: a header and one row per estimate.
std::string estimates_csv(const nlohmann::json& estimates);

}  // namespace rg
