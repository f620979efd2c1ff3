// Data files shipped inside the binary (data/*.csv, embedded at build time by
// tools/embed_kernels.py), so a binary copied alone to an old PC still has them.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace rg {

struct EmbeddedDataFile {
  const char* name;  // "hardware_specs.csv": the file name under data/
  const char* text;  // byte for byte
};
extern const EmbeddedDataFile kEmbeddedDataFiles[];
extern const size_t kEmbeddedDataFileCount;

// data/<name>'s text; an error lists what the binary holds.
Result<std::string> embedded_data(const std::string& name);

}  // namespace rg
