// libFuzzer target: IDX file pairs, raw or gzipped (zlib tells them apart by their bytes), read
// whole or streamed (data/dataset.h). Input: a byte of options (bit 0 streamed, bit 1 float
// images kept in f16, bits 2-7 a model's outputs - 1), a 16-bit length and the labels file, then
// the images file. Every row that opened is gathered as a training batch would be, and the
// labels are checked against the outputs, whole and in a validation split's two sides.
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <vector>

#include "data/dataset.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::fuzz::InputParts input(data, size);
  const uint8_t options = input.byte();
  const std::string labels = rg::fuzz::write_scratch_file("labels.idx", input.sized_part());
  const std::string images = rg::fuzz::write_scratch_file("images.idx", input.rest());
  // A streamed gzip file is inflated into the cache once per content (CRC-32, size): a folder of
  // this run's own, emptied after each input so the disk does not fill.
  const std::string cache = rg::fuzz::scratch_folder() + "/cache";
  setenv("RETROGRAD_CACHE", cache.c_str(), 1);
  const rg::DType float_storage = options & 2 ? rg::DType::f16 : rg::DType::f32;
  auto dataset = options & 1 ? rg::open_idx_pair_streamed(images, labels, "fuzz", float_storage)
                             : rg::load_idx_pair(images, labels, "fuzz", float_storage);
  rg::fuzz::report(options & 1 ? "open streamed" : "load", dataset.status());
  if (dataset.ok() && dataset.value().size() <= 4096 && dataset.value().sample_shape.numel() <= 65536) {
    const rg::Dataset& d = dataset.value();
    std::vector<int32_t> index(static_cast<size_t>(d.size()));
    std::iota(index.begin(), index.end(), 0);
    std::vector<float> samples(static_cast<size_t>(d.size() * d.sample_shape.numel()));
    std::vector<int32_t> labels_out(index.size());
    rg::fuzz::report("gather", d.gather(index.data(), d.size(), samples.data(), labels_out.data()));
    const int64_t outputs = 1 + (options >> 2);
    rg::fuzz::report("labels", rg::check_labels(d, outputs));
    auto split = rg::split_validation(d, 0.5, options);
    rg::fuzz::report("split", split.status());
    if (split.ok()) {
      rg::fuzz::report("split's training labels", rg::check_labels(split.value().train, outputs));
      rg::fuzz::report("split's validation labels", rg::check_labels(split.value().test, outputs));
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(cache, ignored);
  return 0;
}
