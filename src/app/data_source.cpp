// Resolving --data.
#include "app/data_source.h"

namespace rg {

std::string data_source_name(const std::string& source) {
  return source.empty() ? default_fashion_mnist_dir() : source;
}

Result<DataSplit> load_data_source(const std::string& source, uint64_t seed) {
  if (source == kSyntheticData) return make_synthetic(6000, 1000, 10, seed);
  const std::string dir = data_source_name(source);
  auto split = load_mnist_folder(dir);
  if (!split.ok() && source.empty()) {
    return Status::error(split.status().message() +
                         "\n  (the default data is the Debian package dataset-fashion-mnist: apt-get install "
                         "dataset-fashion-mnist, or pass --data DIR, or --data synthetic)");
  }
  return split;
}

}  // namespace rg
