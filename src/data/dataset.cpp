// Dataset batches (u8 or f16 -> f32 on gather), views, the validation split and the MNIST folder
// layout. IDX parsing lives in idx.cpp, generated data in synthetic.cpp.
#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/files.h"
#include "base/memory.h"
#include "base/rng.h"
#include "cpu/kernel_tables.h"

namespace rg {

namespace {

// Separates the split's shuffle from every other use of the run's seed.
constexpr uint64_t kValidationSplitStream = 0x56414C4944ull;  // "VALID"

// x / 255 for every byte, correctly rounded (so 255 gives exactly 1.0f, which
// x * (1.0f / 255) does not promise).
const float* u8_to_unit_table() {
  static const auto table = [] {
    struct Table {
      float v[256];
    } t{};
    for (int i = 0; i < 256; ++i) t.v[i] = static_cast<float>(i) / 255.0f;
    return t;
  }();
  return table.v;
}

// dst rows [0, count) = src rows index[0..count); both of the same dtype and row shape.
void copy_rows(const Tensor& src, const int32_t* index, int64_t count, const Tensor& dst) {
  RG_CHECK(src.dtype() == dst.dtype() && src.shape().sample() == dst.shape().sample() && dst.shape()[0] == count,
           "copy_rows " << src.shape().str() << " into " << dst.shape().str());
  const size_t row_bytes = static_cast<size_t>(src.shape().numel_from(1)) * dtype_size(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst.raw_data());
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(to + static_cast<size_t>(i) * row_bytes, from + static_cast<size_t>(index[i]) * row_bytes, row_bytes);
  }
}

// The rows of the dataset as loaded that `source`'s rows index[0..count) are.
std::shared_ptr<const std::vector<int64_t>> loaded_rows(const Dataset& source, const std::vector<int32_t>& index) {
  auto rows = std::make_shared<std::vector<int64_t>>(index.size());
  for (size_t i = 0; i < index.size(); ++i) (*rows)[i] = source.loaded_row(index[i]);
  return rows;
}

// A new dataset holding copies of `source`'s rows index[0..count) (of its labels and a list of
// its rows when the samples are not in memory, or when the labels have an origin to name).
Result<Dataset> gather_copy(const Dataset& source, const std::vector<int32_t>& index, const std::string& name) {
  const auto count = static_cast<int64_t>(index.size());
  Dataset out = source;
  out.name = name;
  out.source_rows = nullptr;
  out.source_first = 0;
  if (!source.in_memory() || source.label_origin) out.source_rows = loaded_rows(source, index);
  RG_ASSIGN(out.labels, Tensor::zeros(Shape{count}, DType::i32, name + " labels"));
  copy_rows(source.labels, index.data(), count, out.labels);
  if (source.in_memory()) {
    RG_ASSIGN(out.samples, Tensor::zeros(source.samples.shape().sample().batched(count), source.samples.dtype(),
                                         name + " samples"));
    copy_rows(source.samples, index.data(), count, out.samples);
  }
  return out;
}

const char* const kMnistFiles[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                   "t10k-labels-idx1-ubyte"};

std::string mnist_file_list() {
  std::string list;
  for (const char* f : kMnistFiles) list += std::string(list.empty() ? "" : ", ") + f + "[.gz]";
  return list;
}

// dir/name if anything is there, else dir/name.gz, else an error naming both. What is there is
// the IDX reader's to judge: a folder or FIFO under the name is refused, never passed over.
Result<std::string> find_mnist_file(const std::string& dir, const std::string& name) {
  const std::string base = join_path(dir, name);
  if (path_exists(base)) return base;
  if (path_exists(base + ".gz")) return base + ".gz";
  return Status::error(dir + ": neither " + name + " nor " + name + ".gz is there (an MNIST-layout folder holds " +
                       mnist_file_list() + ")");
}

}  // namespace

std::string LabelOrigin::place(int64_t row) const {
  if (rows_per_file == 0) return files.at(static_cast<size_t>(row));
  return files.at(static_cast<size_t>(row / rows_per_file)) + ": " + unit + " " + std::to_string(row % rows_per_file);
}

int64_t Dataset::loaded_row(int64_t i) const {
  return source_rows ? (*source_rows)[static_cast<size_t>(i)] : source_first + i;
}

std::string Dataset::label_place(int64_t i) const {
  return label_origin ? label_origin->place(loaded_row(i)) : name + ": sample " + std::to_string(i);
}

Status check_labels(const Dataset& data, int64_t outputs) {
  RG_CHECK(outputs >= 1, "check_labels against " << outputs << " outputs");
  const int64_t n = data.size();
  const int32_t* labels = n > 0 ? data.labels.data<int32_t>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t label = labels[i];
    if (label >= 0 && label < outputs) continue;
    const bool named = label >= 0 && static_cast<size_t>(label) < data.class_names.size();
    const std::string classes = outputs == 1 ? "1 output (class 0)"
                                             : std::to_string(outputs) + " outputs (classes 0 to " +
                                                   std::to_string(outputs - 1) + ")";
    return Status::error(data.label_place(i) + " has label " + std::to_string(label) +
                         (named ? " (" + data.class_names[static_cast<size_t>(label)] + ")" : "") +
                         "; the model has " + classes);
  }
  return Status();
}

Result<Tensor> Dataset::first_samples(int64_t count) const {
  RG_CHECK(count >= 0 && count <= size(), "" << count << " samples of " << name << " of " << size());
  RG_ASSIGN(Tensor out, Tensor::zeros(sample_shape.batched(count), DType::f32, "the first samples of " + name));
  std::vector<int32_t> index(static_cast<size_t>(count)), out_labels(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) index[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  RG_TRY(gather(index.data(), count, out.f32(), out_labels.data()));
  return out;
}

int64_t Dataset::memory_bytes() const {
  // Whole blocks: a slice keeps the rows it left out alive.
  int64_t bytes = static_cast<int64_t>(labels.storage_bytes() + samples.storage_bytes());
  if (source_rows) bytes += static_cast<int64_t>(source_rows->size() * sizeof(int64_t));
  return bytes;
}

int64_t Dataset::sample_bytes() const {
  const int64_t value_bytes = samples.defined() ? static_cast<int64_t>(dtype_size(samples.dtype())) : 1;
  return size() * sample_shape.numel() * value_bytes;
}

Status Dataset::read_row_bytes(int64_t i, uint8_t* out) const {
  const int64_t row = sample_shape.numel();
  if (source == nullptr) {
    std::memcpy(out, samples.data<uint8_t>() + i * row, static_cast<size_t>(row));  // aborts unless u8
    return Status();
  }
  if (Status s = source->read(loaded_row(i), out); !s.ok()) return s.with_context(name + ": ");
  return Status();
}

Status Dataset::gather(const int32_t* index, int64_t count, float* out, int32_t* out_labels) const {
  const int64_t row = sample_shape.numel();
  const int64_t n = size();
  const int32_t* label_data = labels.data<int32_t>();
  for (int64_t i = 0; i < count; ++i) {
    RG_CHECK(index[i] >= 0 && index[i] < n, "index " << index[i] << " outside " << name << " of " << n);
  }
  const float* unit = u8_to_unit_table();
  if (source != nullptr) {
    // Each record is read into the front of its f32 row, then widened from the back: float k
    // overwrites bytes 4k..4k+3, all past byte k, so no byte is overwritten before it is read.
    RG_CHECK(source->row_bytes() == row, "" << name << ": records of " << source->row_bytes() << " bytes for samples of " << row);
    for (int64_t i = 0; i < count; ++i) {
      float* to = out + i * row;
      auto* bytes = reinterpret_cast<uint8_t*>(to);
      RG_TRY(read_row_bytes(index[i], bytes));
      for (int64_t j = row; j-- > 0;) to[j] = unit[bytes[j]];
    }
  } else if (samples.dtype() == DType::u8) {
    const uint8_t* src = samples.data<uint8_t>();
    for (int64_t i = 0; i < count; ++i) {
      const uint8_t* from = src + index[i] * row;
      float* to = out + i * row;
      for (int64_t j = 0; j < row; ++j) to[j] = unit[from[j]];
    }
  } else if (samples.dtype() == DType::f16) {
    const uint16_t* src = samples.data<uint16_t>();
    const HalfConvertKernels& widen = f16_convert();
    for (int64_t i = 0; i < count; ++i) widen.to_f32(row, src + index[i] * row, out + i * row);
  } else {
    const float* src = samples.data<float>();  // aborts on any dtype other than f32
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(out + i * row, src + index[i] * row, static_cast<size_t>(row) * sizeof(float));
    }
  }
  if (out_labels != nullptr) {
    for (int64_t i = 0; i < count; ++i) out_labels[i] = label_data[index[i]];
  }
  return Status();
}

Dataset Dataset::slice(int64_t begin, int64_t end, const std::string& new_name) const {
  Dataset out = *this;
  out.name = new_name;
  out.labels = labels.rows(begin, end);  // checks the bounds
  if (samples.defined()) out.samples = samples.rows(begin, end);
  if (source_rows) {
    out.source_rows = std::make_shared<const std::vector<int64_t>>(source_rows->begin() + begin, source_rows->begin() + end);
  } else {
    out.source_first = source_first + begin;
  }
  return out;
}

Result<Dataset> Dataset::in_memory_copy() const {
  if (in_memory()) return *this;
  Dataset out = *this;
  out.source = nullptr;
  if (!label_origin) {  // the rows are kept only to name the labels' places
    out.source_rows = nullptr;
    out.source_first = 0;
  }
  RG_ASSIGN(out.samples, Tensor::zeros(sample_shape.batched(size()), DType::u8, name + " samples"));
  uint8_t* to = out.samples.data<uint8_t>();
  const int64_t row = sample_shape.numel();
  for (int64_t i = 0; i < size(); ++i) RG_TRY(read_row_bytes(i, to + i * row));
  return out;
}

Result<Tensor> allocate_samples(const Shape& sample_shape, int64_t n, DType dtype, const std::string& name,
                                const std::string& source) {
  const int64_t bytes = n * sample_shape.numel() * dtype_size(dtype) + n * 4;  // and the i32 labels
  RG_TRY(check_host_memory(bytes, source + ": its " + std::to_string(n) + " samples in memory"));
  return Tensor::zeros(sample_shape.batched(n), dtype, name + " samples");
}

std::string default_fashion_mnist_dir() { return "/usr/share/datasets/fashion-mnist"; }

std::vector<std::string> fashion_mnist_class_names() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
}

Result<DataSplit> load_mnist_folder(const std::string& dir, bool streamed, DType float_storage) {
  if (!is_directory(dir)) {
    return Status::error(dir + ": no such folder (looked for " + mnist_file_list() + " in it)");
  }
  std::string paths[4];
  for (int i = 0; i < 4; ++i) {
    RG_ASSIGN(paths[i], find_mnist_file(dir, kMnistFiles[i]));
  }
  const std::string name = last_path_component(dir);
  DataSplit out;
  const auto open = streamed ? open_idx_pair_streamed : load_idx_pair;
  RG_ASSIGN(out.train, open(paths[0], paths[1], name + " train", float_storage));
  RG_ASSIGN(out.test, open(paths[2], paths[3], name + " test", float_storage));
  return out;
}

Result<DataSplit> split_validation(const Dataset& train, double fraction, uint64_t seed) {
  const int64_t n = train.size();
  if (!(fraction > 0.0 && fraction < 1.0)) {
    return Status::error("validation fraction " + std::to_string(fraction) + " of " + train.name +
                         " is outside (0, 1)");
  }
  if (n > INT32_MAX) return Status::error(train.name + ": " + std::to_string(n) + " samples are too many to split");
  const auto n_val = static_cast<int64_t>(std::llround(static_cast<double>(n) * fraction));
  if (n_val < 1 || n_val > n - 1) {
    return Status::error("validation fraction " + std::to_string(fraction) + " of " + train.name + " (" +
                         std::to_string(n) + " samples) leaves " + std::to_string(n_val) + " for validation and " +
                         std::to_string(n - n_val) + " for training; each side needs at least 1");
  }

  Rng rng(seed, kValidationSplitStream);
  const std::vector<int32_t> order = shuffled_indices(static_cast<int32_t>(n), rng);
  // Each side is copied in the original order: the seed picks which samples go where,
  // training shuffles them per epoch anyway, and sorted reads are kinder to the cache.
  std::vector<int32_t> train_index(order.begin(), order.end() - n_val);
  std::vector<int32_t> val_index(order.end() - n_val, order.end());
  std::sort(train_index.begin(), train_index.end());
  std::sort(val_index.begin(), val_index.end());

  // "fashion-mnist train" -> "fashion-mnist train" / "fashion-mnist validation".
  std::string base = train.name;
  const std::string suffix = " train";
  if (base.size() >= suffix.size() && base.compare(base.size() - suffix.size(), suffix.size(), suffix) == 0) {
    base.erase(base.size() - suffix.size());
  }
  DataSplit out;
  RG_ASSIGN(out.train, gather_copy(train, train_index, base + " train"));
  RG_ASSIGN(out.test, gather_copy(train, val_index, base + " validation"));
  return out;
}

}  // namespace rg
