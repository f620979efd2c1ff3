// Images made on the fly, for memory and speed studies at any size (the catdog preset's
// 256x256x3) and for datasets larger than memory: sample i of a (seed, stream) is computed
// from those numbers alone when it is gathered, so nothing is stored but the labels.
#pragma once

#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace rg {

// `count` images of `shape` ([h, w, c], c 1 or 3) in `classes` classes (2..10): class k is a
// bright ellipse of its own place, size and colour over a gradient, with per-sample jitter and
// noise. Learnable, but not in one step. `stream` separates the splits of one seed.
Dataset generated_images(const std::string& name, const Shape& shape, int64_t count, int32_t classes, uint64_t seed,
                         uint64_t stream);

// Whether generated_images makes images of `shape`: [h, w, c], c 1 or 3, at most 64 MiB a
// sample; the error says what it takes.
Status check_generated_shape(const Shape& shape);

// Train and test splits of generated_images (1024 and 256 images).
DataSplit make_generated_split(const Shape& shape, int32_t classes, uint64_t seed);

// Writes `data` as an MNIST-layout IDX pair (grey images: c must be 1) into `images_path` and
// `labels_path`, a chunk of rows at a time (bounded memory whatever the size); u8 samples only.
// Each file is written as base/output_file.h writes outputs (atomically, links followed).
Status write_idx_pair(const Dataset& data, const std::string& images_path, const std::string& labels_path);

}  // namespace rg
