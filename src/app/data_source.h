// Where training and evaluation data come from: a folder of IDX files, the Debian
// Fashion-MNIST package by default, or "synthetic" (generated, no files).
#pragma once

#include <string>

#include "data/dataset.h"

namespace rg {

constexpr const char* kSyntheticData = "synthetic";

// `source` is a folder, "synthetic", or empty for the Fashion-MNIST package's folder.
Result<DataSplit> load_data_source(const std::string& source, uint64_t seed);
// The name a source is recorded under in checkpoints and reports.
std::string data_source_name(const std::string& source);

}  // namespace rg
