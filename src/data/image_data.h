// Users' own image data: folders of PNG/JPEG/BMP files, one folder per class, and the
// CIFAR-10 binary batches. Both give u8 samples [n, h, w, c] with class names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "data/dataset.h"
#include "data/image_io.h"

namespace rg {

struct ImageFolderOptions {
  int height = 0, width = 0, channels = 0;  // every sample becomes [height, width, channels]; channels 1 or 3
  ImageFit fit = ImageFit::resize;
  // The share of each class held out as test data, DIR/<class>/ layout only (an error with
  // DIR/train and DIR/test). Unset: 0.2.
  std::optional<double> test_fraction;
  uint64_t seed = 1;  // picks which images the split holds out
  int64_t memory_budget = 0;  // --mem-budget: each image's decoding is checked against it (read_image); 0: none
};

// Classes are the subfolders' names, sorted; label i is the i-th. Two layouts:
//   DIR/train/<class>/*  and  DIR/test/<class>/*   (both must have the same classes), or
//   DIR/<class>/*        split per class: round(n * fraction) test images, at least 1 when the
//                        class has 2 or more, never all of them; chosen by the seed and the
//                        class name, so adding a class does not reshuffle the others.
// Files ending .png .jpg .jpeg .bmp (any case) are read; any other file is left alone, and so
// are hidden ones ("." first). Every error names the file or folder and the rule: a file that
// does not decode, an entry named like an image that is not a readable file (a broken link, a
// link loop, a FIFO, a folder), an entry beside the class folders that is neither a folder nor
// a file, an empty class folder, no classes, class lists that differ.
Result<DataSplit> load_image_folders(const std::string& dir, const ImageFolderOptions& options);

// The CIFAR-10 binary version: DIR/data_batch_1.bin .. data_batch_5.bin (train, 50,000) and
// DIR/test_batch.bin (10,000). Each file is exactly 10,000 records of 1 label byte (0..9) and
// 3072 pixel bytes stored as planes (R 32x32, G, B, rows top first); samples become [32, 32, 3].
// Class names from DIR/batches.meta.txt (one per line) when present, else the standard ten.
// File sizes are checked before anything is allocated. `records_per_file` other than 10,000:
// small folders of the same layout, for tests and the fuzz target.
constexpr int64_t kCifarRecordsPerFile = 10000;
Result<DataSplit> load_cifar10_folder(const std::string& dir, int64_t records_per_file = kCifarRecordsPerFile);

// airplane, automobile, bird, cat, deer, dog, frog, horse, ship, truck.
std::vector<std::string> cifar10_class_names();

}  // namespace rg
