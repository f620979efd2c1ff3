// CIFAR-10, binary version: fixed 3073-byte records (label, then R, G and B planes of
// 32x32), transposed to [32, 32, 3] as they are read. Sizes are checked before allocating.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/check.h"
#include "base/files.h"
#include "base/memory.h"
#include "base/serial.h"
#include "data/image_data.h"

namespace rg {

namespace {

constexpr int kCifarSide = 32;
constexpr int kPlane = kCifarSide * kCifarSide;  // 1024 bytes per colour plane
constexpr int kRecord = 1 + 3 * kPlane;          // 3073: label byte, R, G, B
constexpr int kClasses = 10;
constexpr int64_t kChunkRecords = 500;           // one fread: 1.5 MB
const char* const kTrainFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                   "data_batch_5.bin"};
const char* const kTestFile = "test_batch.bin";
const char* const kLayout = "a CIFAR-10 binary folder holds data_batch_1.bin .. data_batch_5.bin and test_batch.bin";

// The path if a regular file is there and exactly `records` records long.
Result<std::string> checked_batch_file(const std::string& dir, const char* name, int64_t records) {
  const std::string path = join_path(dir, name);
  if (!path_exists(path)) return Status::error(dir + ": " + name + " is missing (" + kLayout + ")");
  RG_ASSIGN(const int64_t bytes, input_file_size(path, "a CIFAR-10 batch file"));
  if (bytes != records * kRecord) {
    const std::string found = bytes % kRecord != 0
                                  ? "not a whole number of records (truncated, or not a CIFAR-10 file)"
                                  : std::to_string(bytes / kRecord) + " records";
    return Status::error(path + ": " + std::to_string(bytes) + " bytes, " + found + "; a CIFAR-10 batch file is " +
                         std::to_string(records) + " records of " + std::to_string(kRecord) +
                         " bytes (1 label byte, 3072 pixel bytes) = " + std::to_string(records * kRecord) +
                         " bytes");
  }
  return path;
}

// Reads one batch file into samples [records, 32, 32, 3] and labels [records].
Status read_batch(const std::string& path, int64_t records, uint8_t* samples, int32_t* labels) {
  errno = 0;
  UniqueFile file(std::fopen(path.c_str(), "rb"));
  if (!file) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> chunk(static_cast<size_t>(kChunkRecords * kRecord));
  for (int64_t first = 0; first < records; first += kChunkRecords) {
    const int64_t count = std::min(kChunkRecords, records - first);
    const size_t want = static_cast<size_t>(count * kRecord);
    if (std::fread(chunk.data(), 1, want, file.get()) != want) {
      return Status::error(path + ": read failed at record " + std::to_string(first) + " (" +
                           (std::ferror(file.get()) ? std::strerror(errno) : "the file shrank while being read") + ")");
    }
    for (int64_t r = 0; r < count; ++r) {
      const uint8_t* record = chunk.data() + r * kRecord;
      const int64_t index = first + r;
      if (record[0] >= kClasses) {
        return Status::error(path + ": record " + std::to_string(index) + " (byte " + std::to_string(index * kRecord) +
                             ") has label " + std::to_string(record[0]) + "; CIFAR-10 labels are 0 to 9");
      }
      labels[index] = record[0];
      // Planar [3, 32, 32] -> interleaved [32, 32, 3].
      const uint8_t* planes = record + 1;
      uint8_t* out = samples + index * 3 * kPlane;
      for (int p = 0; p < kPlane; ++p) {
        out[3 * p + 0] = planes[p];
        out[3 * p + 1] = planes[kPlane + p];
        out[3 * p + 2] = planes[2 * kPlane + p];
      }
    }
  }
  return Status();
}

// batches.meta.txt: the class names, one per line, in label order (blank lines ignored).
Result<std::vector<std::string>> read_class_names(const std::string& path) {
  constexpr int64_t kMaxBytes = 64 << 10;  // ten names take a hundred bytes
  RG_ASSIGN(const std::vector<uint8_t> bytes, read_file_bytes(path, "a class-names file (one name a line)", kMaxBytes));
  std::vector<std::string> names;
  std::string line;
  auto finish_line = [&] {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    if (start < line.size()) names.push_back(line.substr(start));
    line.clear();
  };
  for (uint8_t b : bytes) {
    if (b == '\n') {
      finish_line();
    } else {
      line.push_back(static_cast<char>(b));
    }
  }
  finish_line();
  if (names.size() != kClasses) {
    return Status::error(path + ": " + std::to_string(names.size()) + " class names; CIFAR-10 has " +
                         std::to_string(kClasses) + ", one per line in label order");
  }
  return names;
}

// A dataset of `files`' records (`records_per_file` each), its labels' origin those files.
Result<Dataset> allocate(const std::string& name, const std::vector<std::string>& files, int64_t records_per_file,
                         const std::vector<std::string>& classes) {
  const auto n = static_cast<int64_t>(files.size()) * records_per_file;
  auto origin = std::make_shared<LabelOrigin>();
  origin->files = files;
  origin->rows_per_file = records_per_file;
  origin->unit = "record";
  Dataset out;
  out.label_origin = origin;
  out.name = name;
  out.sample_shape = Shape{kCifarSide, kCifarSide, 3};
  out.num_classes = kClasses;
  out.class_names = classes;
  RG_ASSIGN(out.samples, allocate_samples(out.sample_shape, n, DType::u8, name, files.front()));
  RG_ASSIGN(out.labels, Tensor::zeros(Shape{n}, DType::i32, name + " labels"));
  return out;
}

}  // namespace

std::vector<std::string> cifar10_class_names() {
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

Result<DataSplit> load_cifar10_folder(const std::string& dir, int64_t records_per_file) {
  RG_CHECK(records_per_file > 0, "load_cifar10_folder: " << records_per_file << " records per file");
  if (!is_directory(dir)) return Status::error(dir + ": no such folder (" + kLayout + ")");
  // Every file's presence and size first: nothing is allocated for a folder that cannot load.
  std::vector<std::string> train_paths;
  for (const char* name : kTrainFiles) {
    RG_ASSIGN(std::string path, checked_batch_file(dir, name, records_per_file));
    train_paths.push_back(std::move(path));
  }
  RG_ASSIGN(const std::string test_path, checked_batch_file(dir, kTestFile, records_per_file));
  std::vector<std::string> classes = cifar10_class_names();
  const std::string meta_path = join_path(dir, "batches.meta.txt");
  if (path_exists(meta_path)) {  // optional, but what is there must be a file
    RG_ASSIGN(classes, read_class_names(meta_path));
  }

  const std::string name = last_path_component(dir);
  DataSplit out;
  RG_ASSIGN(out.train, allocate(name + " train", train_paths, records_per_file, classes));
  RG_ASSIGN(out.test, allocate(name + " test", {test_path}, records_per_file, classes));
  for (size_t f = 0; f < train_paths.size(); ++f) {
    const int64_t first = static_cast<int64_t>(f) * records_per_file;
    RG_TRY(read_batch(train_paths[f], records_per_file, out.train.samples.data<uint8_t>() + first * 3 * kPlane,
                      out.train.labels.data<int32_t>() + first));
  }
  RG_TRY(read_batch(test_path, records_per_file, out.test.samples.data<uint8_t>(), out.test.labels.data<int32_t>()));
  return out;
}

}  // namespace rg
