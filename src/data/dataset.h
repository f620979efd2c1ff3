// Labelled datasets: samples held in memory as u8 (pixels 0..255) or f32, converted to f32
// batch by batch so a 60,000-image set costs 47 MB rather than 188 MB; or kept outside memory
// (a SampleSource: records on disk, or images generated on the fly) and read a row at a time
// as batches are gathered. Labels are always in memory, and each dataset read from files knows
// where its labels came from (LabelOrigin), so that a label the model cannot take is named by
// its file and place (check_labels).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/tensor.h"

namespace rg {

// Rows of u8 samples that are not in memory: read from disk or generated when asked for.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual int64_t size() const = 0;
  virtual int64_t row_bytes() const = 0;
  // Row `row` (< size()) into out [row_bytes()]; safe to call from several threads at once.
  virtual Status read(int64_t row, uint8_t* out) const = 0;
  virtual std::string describe() const = 0;  // "streamed from FILE"
};

// Where a dataset's labels were read from: for row r of the dataset as loaded, a file and the
// place in it. Files hold `rows_per_file` labels each, in row order (an IDX labels file, CIFAR
// batch files of `rows_per_file` records), or, with rows_per_file 0, one file is one row (the
// images of class folders, labelled by their folder).
struct LabelOrigin {
  std::vector<std::string> files;
  int64_t rows_per_file = 0;
  std::string unit = "sample";  // what a place in a file is called: "sample" (IDX), "record" (CIFAR)

  // "FILE: sample 17" (the 18th label of FILE), or the image file's path.
  std::string place(int64_t row) const;
};

struct Dataset {
  std::string name;       // "fashion-mnist train"
  Shape sample_shape;     // [h, w, c] for images (channels innermost), [features] otherwise
  int32_t num_classes = 0;
  Tensor samples;         // [n, sample...], u8 (scaled by 1/255 on gather), f32 or f16 (widened
                          // on gather); undefined when the samples come from `source`
  Tensor labels;          // [n] i32, each in [0, num_classes)
  std::vector<std::string> class_names;  // [num_classes] when the source names them, else empty
  // Samples outside memory, read from `source`: undefined `samples`.
  std::shared_ptr<const SampleSource> source;
  // Row i of this dataset is row source_rows[i] of the dataset as loaded when that list is given
  // (a validation split), else source_first + i (a slice): the row of `source`, and the row
  // `label_origin` names. Kept for a split of in-memory samples only when there is an origin.
  std::shared_ptr<const std::vector<int64_t>> source_rows;
  int64_t source_first = 0;
  std::shared_ptr<const LabelOrigin> label_origin;  // null: generated labels

  int64_t size() const { return labels.defined() ? labels.numel() : 0; }
  bool in_memory() const { return source == nullptr; }
  // Row i's row in the dataset as loaded (see source_rows).
  int64_t loaded_row(int64_t i) const;
  // Where row i's label was read from: "FILE: sample 17", an image's path, or (generated labels)
  // "NAME: sample i".
  std::string label_place(int64_t i) const;
  // Bytes this dataset holds in memory: samples (when in memory), labels and the row list; of a
  // slice, the whole blocks it shares.
  int64_t memory_bytes() const;
  // Bytes its samples take, or would take, in memory (a source's rows are u8).
  int64_t sample_bytes() const;
  // Row i's sample as the bytes it is stored in (u8 samples only: in memory or from `source`).
  Status read_row_bytes(int64_t i, uint8_t* out) const;

  // Copies samples index[0..count) into out [count, sample...] as f32 and their labels; the
  // error (reading a streamed source) names the file and the row.
  Status gather(const int32_t* index, int64_t count, float* out, int32_t* out_labels) const;
  // The first `count` samples (<= size()) as f32 [count, sample...], a counted allocation.
  Result<Tensor> first_samples(int64_t count) const;
  // Rows [begin, end) as a new dataset sharing storage.
  Dataset slice(int64_t begin, int64_t end, const std::string& new_name) const;
  // The same rows with the samples read into memory (itself when already there).
  Result<Dataset> in_memory_copy() const;
};

struct DataSplit {
  Dataset train;
  Dataset test;
};

// Every label of `data` is a class of a model with `outputs` outputs: 0 to outputs - 1. The
// error names the first that is not, by its file and place: "t10k-labels-idx1-ubyte: sample
// 17 has label 255; the model has 10 outputs (classes 0 to 9)". One pass over the labels: call
// it once, where the data meets the model, never per batch.
Status check_labels(const Dataset& data, int64_t outputs);

// The samples tensor [n, sample_shape...] of a dataset read into memory (named `name`
// samples), allocated after check_host_memory: samples and labels the machine (or the budget)
// cannot hold are refused naming `source` before anything is allocated or read.
Result<Tensor> allocate_samples(const Shape& sample_shape, int64_t n, DType dtype, const std::string& name,
                                const std::string& source);

// The folder the Debian package dataset-fashion-mnist installs to.
std::string default_fashion_mnist_dir();
// T-shirt/top, Trouser, Pullover, Dress, Coat, Sandal, Shirt, Sneaker, Bag, Ankle boot.
std::vector<std::string> fashion_mnist_class_names();

// Reads an IDX file pair (raw or gzip, detected from the bytes). Images are unsigned bytes
// (kept u8) or big-endian float32 (type 0x0D; kept in `float_storage`: f32, or f16 at half the
// bytes). Checks: magic number and element type, dimensions against the file length (truncated
// or trailing bytes), equal image and label counts, labels < 256, float values finite (and
// within f16's range when kept in f16). Errors name the file and the rule.
Result<Dataset> load_idx_pair(const std::string& images_path, const std::string& labels_path,
                              const std::string& name, DType float_storage = DType::f32);

// The same pair with the images left on disk (record_file.h): the header and the labels are
// read and checked as load_idx_pair does; a gzipped image file is inflated once into the cache.
// Float images are read into memory (load_idx_pair): streaming reads records of bytes.
Result<Dataset> open_idx_pair_streamed(const std::string& images_path, const std::string& labels_path,
                                       const std::string& name, DType float_storage = DType::f32);

// A folder in the MNIST layout: train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
// t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]; `streamed`: the images stay on disk;
// float images are kept in `float_storage`.
Result<DataSplit> load_mnist_folder(const std::string& dir, bool streamed = false, DType float_storage = DType::f32);

// Splits the last `fraction` of a (seed-shuffled) training set off as validation data.
// The order is fixed by the seed, so a resumed run gets the same split.
Result<DataSplit> split_validation(const Dataset& train, double fraction, uint64_t seed);

// A generated dataset for tests and demos: `classes` classes of 28x28 u8 images, each class a
// distinct pattern (bars and blobs at class-specific places) plus seeded noise. Learnable to
// high accuracy by an mlp in one epoch; no files needed.
DataSplit make_synthetic(int64_t train_size, int64_t test_size, int32_t classes, uint64_t seed);

}  // namespace rg
