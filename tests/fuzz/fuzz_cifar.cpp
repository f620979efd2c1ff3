// libFuzzer target: CIFAR-10 binary folders (data/image_data.h) of 1 to 4 records per file,
// the layout and rules of the real 10,000. Input: a byte of options (bits 0-1: records per
// file - 1; bits 2-4: which of the six files is made a byte shorter, or longer with bit 7 (6
// and 7: none); bit 5: do that; bit 6: write batches.meta.txt), a 16-bit length and the
// class-names text, then the records, which fill the six files in turn (zeros where the input
// runs out).
#include <cstdint>
#include <filesystem>

#include "data/image_data.h"
#include "fuzz_input.h"

namespace {
constexpr size_t kRecordBytes = 3073;
const char* const kFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                              "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::fuzz::InputParts input(data, size);
  const uint8_t options = input.byte();
  const int64_t records = 1 + (options & 3);
  const int odd_file = (options >> 2) & 7;
  const std::string meta = input.sized_part();
  const std::string folder = rg::fuzz::scratch_folder() + "/cifar";
  std::error_code ignored;
  std::filesystem::remove_all(folder, ignored);
  std::filesystem::create_directory(folder, ignored);
  for (int f = 0; f < 6; ++f) {
    std::string bytes = input.take(static_cast<size_t>(records) * kRecordBytes);
    bytes.resize(static_cast<size_t>(records) * kRecordBytes, '\0');
    if ((options & 32) != 0 && f == odd_file) bytes.resize(bytes.size() - 1 + 2 * (options >> 7));
    rg::fuzz::write_scratch_file("cifar/" + std::string(kFiles[f]), bytes);
  }
  if ((options & 64) != 0) rg::fuzz::write_scratch_file("cifar/batches.meta.txt", meta);
  rg::fuzz::report("load", rg::load_cifar10_folder(folder, records).status());
  return 0;
}
