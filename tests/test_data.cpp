// The dataset layer: IDX reading (raw and gzip) and every rule it enforces, the MNIST folder
// layout, the validation split, synthetic data and gather's u8 -> f32 scaling.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/fp16.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "data/batch_prefetch.h"
#include "data/chance.h"
#include "data/dataset.h"
#include "data/generated_images.h"
#include "data/record_file.h"
#include "portable.h"

#if !defined(_WIN32)
#include <sys/stat.h>
#endif

namespace rg {
namespace {

using Bytes = std::vector<uint8_t>;

// A fresh folder under the test temp dir, removed with the files written through it.
class TempDir {
 public:
  TempDir() {
    path_ = make_temp_folder("rg_data_");
  }
  ~TempDir() {
    for (const std::string& f : files_) std::remove(f.c_str());
    std::error_code ignored;
    for (auto d = dirs_.rbegin(); d != dirs_.rend(); ++d) std::filesystem::remove(*d, ignored);
    std::filesystem::remove(path_, ignored);
  }
  const std::string& path() const { return path_; }

  std::string subdir(const std::string& name) {
    const std::string dir = path_ + "/" + name;
    RG_CHECK(std::filesystem::create_directory(dir), "mkdir " << dir);
    dirs_.push_back(dir);
    return dir;
  }
  // Writes bytes as they are.
  std::string raw(const std::string& name, const Bytes& bytes) {
    const std::string file = path_ + "/" + name;
    FILE* f = std::fopen(file.c_str(), "wb");
    RG_CHECK(f != nullptr, "fopen " << file);
    RG_CHECK(bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(), "fwrite " << file);
    std::fclose(f);
    files_.push_back(file);
    return file;
  }
  // Writes bytes gzip-compressed.
  std::string gz(const std::string& name, const Bytes& bytes) {
    const std::string file = path_ + "/" + name;
    gzFile g = gzopen(file.c_str(), "wb");
    RG_CHECK(g != nullptr, "gzopen " << file);
    RG_CHECK(gzwrite(g, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()),
             "gzwrite " << file);
    RG_CHECK(gzclose(g) == Z_OK, "gzclose " << file);
    files_.push_back(file);
    return file;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
  std::vector<std::string> dirs_;
};

Bytes read_file(const std::string& path) {
  Bytes out;
  FILE* f = std::fopen(path.c_str(), "rb");
  RG_CHECK(f != nullptr, "fopen " << path);
  int c;
  while ((c = std::fgetc(f)) != EOF) out.push_back(static_cast<uint8_t>(c));
  std::fclose(f);
  return out;
}

void put_u32_be(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

Bytes idx_bytes(uint32_t magic, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes out;
  put_u32_be(out, magic);
  for (uint32_t d : dims) put_u32_be(out, d);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// n images of rows x cols, pixel (i, y, x) = 10 i + 3 y + x; labels i mod 3.
constexpr uint32_t kN = 5, kRows = 3, kCols = 4;
Bytes image_data(uint32_t n = kN) {
  Bytes data;
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t y = 0; y < kRows; ++y)
      for (uint32_t x = 0; x < kCols; ++x) data.push_back(static_cast<uint8_t>(10 * i + 3 * y + x));
  return data;
}
Bytes label_data(uint32_t n = kN) {
  Bytes data;
  for (uint32_t i = 0; i < n; ++i) data.push_back(static_cast<uint8_t>(i % 3));
  return data;
}
Bytes images_file(uint32_t n = kN) { return idx_bytes(0x00000803, {n, kRows, kCols}, image_data(n)); }
Bytes labels_file(uint32_t n = kN) { return idx_bytes(0x00000801, {n}, label_data(n)); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Expects a failed load whose message names `path` and says `rule`.
void expect_error(const Result<Dataset>& result, const std::string& path, const std::string& rule) {
  ASSERT_FALSE(result.ok()) << "expected an error naming " << path << " and '" << rule << "'";
  const std::string message = result.status().message();  // status() is a copy
  EXPECT_TRUE(contains(message, path)) << message;
  EXPECT_TRUE(contains(message, rule)) << message;
}

void expect_tiny_dataset(const Dataset& d, const std::string& name) {
  EXPECT_EQ(d.name, name);
  EXPECT_EQ(d.size(), kN);
  EXPECT_EQ(d.sample_shape, (Shape{kRows, kCols, 1}));
  EXPECT_EQ(d.samples.shape(), (Shape{kN, kRows, kCols, 1}));
  EXPECT_EQ(d.samples.dtype(), DType::u8);
  EXPECT_EQ(d.labels.shape(), (Shape{kN}));
  EXPECT_EQ(d.labels.dtype(), DType::i32);
  EXPECT_EQ(d.num_classes, 3);
  const Bytes expected = image_data();
  const uint8_t* pixels = d.samples.data<uint8_t>();
  for (size_t i = 0; i < expected.size(); ++i) ASSERT_EQ(pixels[i], expected[i]) << "byte " << i;
  for (int64_t i = 0; i < kN; ++i) EXPECT_EQ(d.labels.data<int32_t>()[i], i % 3);
}

TEST(Idx, RoundTripRaw) {
  TempDir dir;
  const std::string images = dir.raw("images-idx3-ubyte", images_file());
  const std::string labels = dir.raw("labels-idx1-ubyte", labels_file());
  Result<Dataset> d = load_idx_pair(images, labels, "tiny");
  ASSERT_TRUE(d.ok()) << d.status().message();
  expect_tiny_dataset(d.value(), "tiny");
}

TEST(Idx, RoundTripGzip) {
  TempDir dir;
  const std::string images = dir.gz("images-idx3-ubyte.gz", images_file());
  const std::string labels = dir.gz("labels-idx1-ubyte.gz", labels_file());
  Result<Dataset> d = load_idx_pair(images, labels, "tiny");
  ASSERT_TRUE(d.ok()) << d.status().message();
  expect_tiny_dataset(d.value(), "tiny");
}

TEST(Idx, RoundTripLargerThanOneReadChunk) {
  // 3000 images of 28x28 = 2.35 MB: several 1 MiB gzread chunks.
  TempDir dir;
  Bytes pixels(3000 * 28 * 28);
  Rng rng(7);
  for (uint8_t& p : pixels) p = static_cast<uint8_t>(rng.next_u32());
  Bytes labels(3000);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % 10);
  const std::string ip = dir.gz("i.gz", idx_bytes(0x803, {3000, 28, 28}, pixels));
  const std::string lp = dir.raw("l", idx_bytes(0x801, {3000}, labels));
  Result<Dataset> d = load_idx_pair(ip, lp, "big");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d.value().num_classes, 10);
  EXPECT_EQ(0, std::memcmp(d.value().samples.data<uint8_t>(), pixels.data(), pixels.size()));
}

TEST(Idx, WrongMagic) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  // Labels magic in the images file.
  const std::string swapped = dir.raw("images-as-labels", idx_bytes(0x801, {kN}, label_data()));
  expect_error(load_idx_pair(swapped, labels, "x"), swapped, "magic");
  // Element type 0x0B (int16): neither bytes nor float32.
  const std::string shorts = dir.raw("short-images", idx_bytes(0x00000B03, {kN, kRows, kCols}, image_data()));
  expect_error(load_idx_pair(shorts, labels, "x"), shorts, "magic number 0x00000B03 where 0x00000803 was expected");
  expect_error(load_idx_pair(shorts, labels, "x"), shorts, "or 0x00000D03: float32 data");
  // Float labels are not labels.
  const std::string images_ok = dir.raw("images-ok", images_file());
  const std::string float_labels = dir.raw("float-labels", idx_bytes(0x00000D01, {kN}, Bytes(4 * kN)));
  expect_error(load_idx_pair(images_ok, float_labels, "x"), float_labels, "magic");
  // Little-endian magic.
  const std::string little = dir.raw("little", idx_bytes(0x03080000, {kN, kRows, kCols}, image_data()));
  expect_error(load_idx_pair(little, labels, "x"), little, "magic");
  // A wrong labels magic names the labels file.
  const std::string images = dir.raw("images", images_file());
  const std::string bad_labels = dir.raw("bad-labels", idx_bytes(0x803, {kN, 1, 1}, label_data()));
  expect_error(load_idx_pair(images, bad_labels, "x"), bad_labels, "magic");
}

// Float32 IDX images (type 0x0D, big-endian): kept in f32 exactly, or in f16 at half the bytes
// (rounded to nearest even, gather widening them back); values must be finite, and within f16's
// range when kept in f16; a short file is truncated data; streamed opening reads them into memory.
Bytes float_images_file(const std::vector<float>& values) {
  Bytes data;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put_u32_be(data, bits);
  }
  return idx_bytes(0x00000D03, {kN, kRows, kCols}, data);
}
std::vector<float> float_values() {
  std::vector<float> v(kN * kRows * kCols);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.37f * static_cast<float>(i) - 7.1f;  // most not exact in f16
  return v;
}

TEST(Idx, FloatImagesInF32AndF16) {
  TempDir dir;
  const std::vector<float> values = float_values();
  const std::string images = dir.gz("float-images.gz", float_images_file(values));
  const std::string labels = dir.raw("labels", labels_file());
  std::vector<int32_t> index(kN);
  for (int32_t i = 0; i < static_cast<int32_t>(kN); ++i) index[static_cast<size_t>(i)] = static_cast<int32_t>(kN) - 1 - i;
  std::vector<float> gathered(values.size());
  std::vector<int32_t> gathered_labels(kN);
  int64_t bytes[2] = {0, 0};
  for (DType storage : {DType::f32, DType::f16}) {
    Result<Dataset> d = load_idx_pair(images, labels, "floats", storage);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(d.value().samples.dtype(), storage);
    EXPECT_EQ(d.value().sample_bytes(), static_cast<int64_t>(values.size() * dtype_size(storage)));
    bytes[storage == DType::f16] = d.value().memory_bytes();
    ASSERT_TRUE(d.value().gather(index.data(), kN, gathered.data(), gathered_labels.data()).ok());
    const int64_t row = kRows * kCols;
    for (int64_t i = 0; i < static_cast<int64_t>(kN); ++i) {
      EXPECT_EQ(gathered_labels[static_cast<size_t>(i)], index[static_cast<size_t>(i)] % 3);
      for (int64_t j = 0; j < row; ++j) {
        const float v = values[static_cast<size_t>(index[static_cast<size_t>(i)] * row + j)];
        const float want = storage == DType::f32 ? v : f16_to_f32(f32_to_f16(v));
        ASSERT_EQ(gathered[static_cast<size_t>(i * row + j)], want) << dtype_name(storage) << " sample " << i;
      }
    }
    // The validation split copies f16 rows like any other.
    auto split = split_validation(d.value(), 0.4, 3);
    ASSERT_TRUE(split.ok()) << split.status().message();
    EXPECT_EQ(split.value().train.samples.dtype(), storage);
    Result<Dataset> streamed = open_idx_pair_streamed(images, labels, "floats", storage);
    ASSERT_TRUE(streamed.ok()) << streamed.status().message();
    EXPECT_TRUE(streamed.value().in_memory()) << "streaming reads byte records; float images are read in";
    EXPECT_EQ(streamed.value().samples.dtype(), storage);
  }
  EXPECT_EQ(bytes[0] - bytes[1], static_cast<int64_t>(values.size() * 2)) << "f16 halves the samples' bytes";
}

TEST(Idx, FloatImagesMustBeFiniteAndFitF16WhenKeptInF16) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  std::vector<float> values = float_values();
  values[2 * kRows * kCols + 5] = std::nanf("");
  const std::string nan = dir.raw("nan-images", float_images_file(values));
  expect_error(load_idx_pair(nan, labels, "x"), nan, "sample 2, value 5 is nan; every value must be finite");
  values = float_values();
  values[kRows * kCols + 1] = 1e6f;
  const std::string large = dir.raw("large-images", float_images_file(values));
  EXPECT_TRUE(load_idx_pair(large, labels, "x", DType::f32).ok()) << "f32 holds 1e6";
  expect_error(load_idx_pair(large, labels, "x", DType::f16), large,
               "sample 1, value 1 is 1000000.000000, outside f16's range (|v| <= 65504)");
  Bytes cut = float_images_file(float_values());
  cut.resize(cut.size() - 3);
  const std::string truncated = dir.raw("truncated-floats", cut);
  expect_error(load_idx_pair(truncated, labels, "x"), truncated, "truncated data: expected 240 bytes after the header, found 237");
  Bytes longer = float_images_file(float_values());
  longer.push_back(0);
  const std::string trailing = dir.raw("trailing-floats", longer);
  expect_error(load_idx_pair(trailing, labels, "x"), trailing, "trailing bytes: 1 byte follows the 240 data bytes");
}

TEST(Idx, TruncatedHeader) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  const Bytes full = images_file();
  for (size_t keep : {0, 2, 4, 10, 15}) {
    const std::string images = dir.raw("images-" + std::to_string(keep), Bytes(full.begin(), full.begin() + keep));
    expect_error(load_idx_pair(images, labels, "x"), images, "truncated header");
  }
  const std::string images = dir.raw("images", images_file());
  const Bytes full_labels = labels_file();
  const std::string short_labels = dir.raw("labels-6", Bytes(full_labels.begin(), full_labels.begin() + 6));
  expect_error(load_idx_pair(images, short_labels, "x"), short_labels, "truncated header");
}

TEST(Idx, ZeroAndHugeDimensions) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  const std::string zero_rows = dir.raw("zero-rows", idx_bytes(0x803, {kN, 0, kCols}, {}));
  expect_error(load_idx_pair(zero_rows, labels, "x"), zero_rows, "must be positive");
  const std::string zero_count = dir.raw("zero-count", idx_bytes(0x803, {0, kRows, kCols}, {}));
  expect_error(load_idx_pair(zero_count, labels, "x"), zero_count, "positive");
  // 2^32-1 cubed would overflow 64 bits; it must be refused before any allocation.
  const int64_t peak_before = host_memory().peak_bytes();
  const std::string huge = dir.raw("huge", idx_bytes(0x803, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, image_data()));
  expect_error(load_idx_pair(huge, labels, "x"), huge, "limit");
  const std::string big = dir.raw("big", idx_bytes(0x803, {60000, 200, 200}, image_data()));
  expect_error(load_idx_pair(big, labels, "x"), big, "limit");
  // Under the limit but far beyond the file: refused as truncated, also before allocating.
  const std::string tall = dir.raw("tall", idx_bytes(0x803, {1000, 1000, 1000}, image_data()));
  expect_error(load_idx_pair(tall, labels, "x"), tall, "truncated data");
  const std::string tall_gz = dir.gz("tall.gz", idx_bytes(0x803, {1000, 1000, 1000}, image_data()));
  expect_error(load_idx_pair(tall_gz, labels, "x"), tall_gz, "truncated data");
  EXPECT_LT(host_memory().peak_bytes() - peak_before, 1 << 20);
}

TEST(Idx, TruncatedData) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  Bytes cut = images_file();
  cut.pop_back();
  const std::string raw = dir.raw("images", cut);
  expect_error(load_idx_pair(raw, labels, "x"), raw, "truncated data");
  expect_error(load_idx_pair(raw, labels, "x"), raw, "expected 60 bytes");
  expect_error(load_idx_pair(raw, labels, "x"), raw, "found 59");
  const std::string gz = dir.gz("images.gz", cut);
  expect_error(load_idx_pair(gz, labels, "x"), gz, "truncated data");
  expect_error(load_idx_pair(gz, labels, "x"), gz, "found 59");

  const std::string images = dir.raw("good-images", images_file());
  Bytes cut_labels = labels_file();
  cut_labels.resize(cut_labels.size() - 2);
  const std::string short_labels = dir.gz("labels.gz", cut_labels);
  expect_error(load_idx_pair(images, short_labels, "x"), short_labels, "truncated data");
}

TEST(Idx, TrailingBytes) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  Bytes longer = images_file();
  longer.push_back(0);
  longer.push_back(7);
  const std::string raw = dir.raw("images", longer);
  expect_error(load_idx_pair(raw, labels, "x"), raw, "trailing bytes");
  expect_error(load_idx_pair(raw, labels, "x"), raw, "2 bytes");
  const std::string gz = dir.gz("images.gz", longer);
  expect_error(load_idx_pair(gz, labels, "x"), gz, "trailing bytes");

  const std::string images = dir.raw("good-images", images_file());
  Bytes long_labels = labels_file();
  long_labels.push_back(1);
  const std::string trailing_labels = dir.raw("long-labels", long_labels);
  expect_error(load_idx_pair(images, trailing_labels, "x"), trailing_labels, "trailing bytes");
}

TEST(Idx, CountMismatch) {
  TempDir dir;
  const std::string images = dir.raw("images", images_file(5));
  const std::string labels = dir.raw("labels", labels_file(4));
  Result<Dataset> d = load_idx_pair(images, labels, "x");
  expect_error(d, images, "counts differ");
  expect_error(d, labels, "5 images");
  expect_error(d, labels, "4 labels");
}

TEST(Idx, CorruptGzip) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  const std::string good = dir.gz("good.gz", images_file());
  const Bytes compressed = read_file(good);
  ASSERT_GT(compressed.size(), 30u);

  // The CRC-32 in the trailer (the last 8 bytes are CRC and length) no longer matches.
  Bytes bad_crc = compressed;
  bad_crc[bad_crc.size() - 8] ^= 0xFF;
  const std::string crc = dir.raw("bad-crc.gz", bad_crc);
  expect_error(load_idx_pair(crc, labels, "x"), crc, "corrupt gzip");

  // A deflate block type of 3 is invalid: the first body byte after the 10-byte header.
  Bytes bad_block = compressed;
  bad_block[10] |= 0x06;
  const std::string block = dir.raw("bad-block.gz", bad_block);
  expect_error(load_idx_pair(block, labels, "x"), block, "corrupt gzip");

  // The stream stops half way.
  Bytes cut(compressed.begin(), compressed.begin() + static_cast<long>(compressed.size() / 2));
  const std::string half = dir.raw("half.gz", cut);
  expect_error(load_idx_pair(half, labels, "x"), half, "gzip");

  // Only the trailer is missing: all data arrives, the stream still does not end well.
  Bytes no_trailer(compressed.begin(), compressed.end() - 8);
  const std::string trailer = dir.raw("no-trailer.gz", no_trailer);
  expect_error(load_idx_pair(trailer, labels, "x"), trailer, "gzip");
}

TEST(Idx, MissingFile) {
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  const std::string missing = dir.path() + "/no-such-images";
  expect_error(load_idx_pair(missing, labels, "x"), missing, "cannot open");
  const std::string images = dir.raw("images", images_file());
  const std::string missing_labels = dir.path() + "/no-such-labels";
  expect_error(load_idx_pair(images, missing_labels, "x"), missing_labels, "cannot open");
  // A folder is not an IDX file.
  expect_error(load_idx_pair(dir.path(), labels, "x"), dir.path(), "is a folder, not an IDX file");
}

TEST(Idx, NeverCrashesOnMutatedBytes) {
  // Every header byte set to a few values, and every cut length: each load fails cleanly
  // or succeeds with consistent shapes.
  TempDir dir;
  const std::string labels = dir.raw("labels", labels_file());
  const Bytes good = images_file();
  int files = 0;
  for (size_t at = 0; at < 16; ++at) {
    for (int value : {0x00, 0x01, 0x03, 0x08, 0x7F, 0x80, 0xFF}) {
      Bytes mutated = good;
      mutated[at] = static_cast<uint8_t>(value);
      const std::string path = dir.raw("m" + std::to_string(files++), mutated);
      Result<Dataset> d = load_idx_pair(path, labels, "x");
      if (d.ok()) {
        EXPECT_EQ(d.value().samples.numel(), d.value().size() * d.value().sample_shape.numel());
      }
    }
  }
  for (size_t keep = 0; keep < good.size(); ++keep) {
    const std::string path = dir.gz("c" + std::to_string(files++), Bytes(good.begin(), good.begin() + keep));
    EXPECT_FALSE(load_idx_pair(path, labels, "x").ok());
  }
}

// The four MNIST files of `n_train` and `n_test` tiny images in `folder`, some gzipped.
void write_mnist_folder(TempDir& dir, const std::string& folder, bool skip_t10k_labels = false) {
  dir.gz(folder + "/train-images-idx3-ubyte.gz", images_file(kN));
  dir.raw(folder + "/train-labels-idx1-ubyte", labels_file(kN));
  dir.raw(folder + "/t10k-images-idx3-ubyte", images_file(2));
  if (!skip_t10k_labels) dir.gz(folder + "/t10k-labels-idx1-ubyte.gz", labels_file(2));
}

TEST(MnistFolder, LoadsRawAndGzipFiles) {
  TempDir dir;
  dir.subdir("tiny-mnist");
  write_mnist_folder(dir, "tiny-mnist");
  Result<DataSplit> split = load_mnist_folder(dir.path() + "/tiny-mnist/");
  ASSERT_TRUE(split.ok()) << split.status().message();
  expect_tiny_dataset(split.value().train, "tiny-mnist train");
  EXPECT_EQ(split.value().test.name, "tiny-mnist test");
  EXPECT_EQ(split.value().test.size(), 2);
  EXPECT_EQ(split.value().test.num_classes, 2);
}

TEST(MnistFolder, MissingFileAndFolder) {
  TempDir dir;
  const std::string folder = dir.subdir("partial");
  write_mnist_folder(dir, "partial", /*skip_t10k_labels=*/true);
  Result<DataSplit> split = load_mnist_folder(folder);
  ASSERT_FALSE(split.ok());
  EXPECT_TRUE(contains(split.status().message(), folder)) << split.status().message();
  EXPECT_TRUE(contains(split.status().message(), "t10k-labels-idx1-ubyte.gz")) << split.status().message();

  const std::string nowhere = dir.path() + "/nowhere";
  Result<DataSplit> none = load_mnist_folder(nowhere);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(contains(none.status().message(), nowhere)) << none.status().message();
  EXPECT_TRUE(contains(none.status().message(), "no such folder")) << none.status().message();
  EXPECT_TRUE(contains(none.status().message(), "train-images-idx3-ubyte")) << none.status().message();
}

TEST(MnistFolder, FashionMnistFromTheDebianPackage) {
  const std::string dir = default_fashion_mnist_dir();
  struct stat info {};
  if (stat(dir.c_str(), &info) != 0) GTEST_SKIP() << dir << " is absent (install dataset-fashion-mnist)";
  Result<DataSplit> split = load_mnist_folder(dir);
  ASSERT_TRUE(split.ok()) << split.status().message();
  const DataSplit& s = split.value();
  EXPECT_EQ(s.train.name, "fashion-mnist train");
  EXPECT_EQ(s.test.name, "fashion-mnist test");
  EXPECT_EQ(s.train.size(), 60000);
  EXPECT_EQ(s.test.size(), 10000);
  EXPECT_EQ(s.train.num_classes, 10);
  EXPECT_EQ(s.test.num_classes, 10);
  EXPECT_EQ(s.train.sample_shape, (Shape{28, 28, 1}));
  EXPECT_EQ(s.train.samples.shape(), (Shape{60000, 28, 28, 1}));
  std::vector<int64_t> per_class(10, 0);
  for (int64_t i = 0; i < s.test.size(); ++i) ++per_class[static_cast<size_t>(s.test.labels.data<int32_t>()[i])];
  for (int64_t count : per_class) EXPECT_EQ(count, 1000);
}

// n samples of [2] f32, sample i = {i, -i}, label i mod 3: every sample identifiable.
Dataset numbered_dataset(int64_t n) {
  Dataset d;
  d.name = "numbers train";
  d.sample_shape = Shape{2};
  d.num_classes = 3;
  d.samples = Tensor::zeros(Shape{n, 2}, DType::f32, "numbers").take();
  d.labels = Tensor::zeros(Shape{n}, DType::i32, "numbers labels").take();
  for (int64_t i = 0; i < n; ++i) {
    d.samples.f32()[2 * i] = static_cast<float>(i);
    d.samples.f32()[2 * i + 1] = static_cast<float>(-i);
    d.labels.data<int32_t>()[i] = static_cast<int32_t>(i % 3);
  }
  return d;
}

std::vector<float> first_column(const Dataset& d) {
  std::vector<float> out;
  for (int64_t i = 0; i < d.size(); ++i) out.push_back(d.samples.f32()[2 * i]);
  return out;
}

TEST(SplitValidation, SizesNamesAndCoverage) {
  const Dataset all = numbered_dataset(100);
  Result<DataSplit> split = split_validation(all, 0.1, 42);
  ASSERT_TRUE(split.ok()) << split.status().message();
  const DataSplit& s = split.value();
  EXPECT_EQ(s.train.size(), 90);
  EXPECT_EQ(s.test.size(), 10);
  EXPECT_EQ(s.train.name, "numbers train");
  EXPECT_EQ(s.test.name, "numbers validation");
  EXPECT_EQ(s.train.sample_shape, (Shape{2}));
  EXPECT_EQ(s.test.num_classes, 3);
  EXPECT_EQ(s.train.samples.shape(), (Shape{90, 2}));
  std::set<int> seen;
  for (const Dataset* part : {&s.train, &s.test}) {
    for (int64_t i = 0; i < part->size(); ++i) {
      const float v = part->samples.f32()[2 * i];
      EXPECT_EQ(part->samples.f32()[2 * i + 1], -v);
      EXPECT_EQ(part->labels.data<int32_t>()[i], static_cast<int>(v) % 3);
      EXPECT_TRUE(seen.insert(static_cast<int>(v)).second) << "sample " << v << " twice";
    }
  }
  EXPECT_EQ(seen.size(), 100u);
  // Real copies: changing the source leaves the split alone.
  const std::vector<float> before = first_column(s.test);
  all.samples.fill_zero();
  EXPECT_EQ(first_column(s.test), before);
}

TEST(SplitValidation, DeterministicPerSeed) {
  const Dataset all = numbered_dataset(1000);
  const DataSplit a = split_validation(all, 0.2, 7).take();
  const DataSplit b = split_validation(all, 0.2, 7).take();
  const DataSplit c = split_validation(all, 0.2, 8).take();
  EXPECT_EQ(first_column(a.test), first_column(b.test));
  EXPECT_EQ(first_column(a.train), first_column(b.train));
  EXPECT_NE(first_column(a.test), first_column(c.test));
  EXPECT_EQ(a.test.size(), 200);
}

TEST(SplitValidation, KeepsU8Samples) {
  const DataSplit synth = make_synthetic(50, 0, 5, 3);
  const DataSplit s = split_validation(synth.train, 0.5, 1).take();
  EXPECT_EQ(s.train.samples.dtype(), DType::u8);
  EXPECT_EQ(s.test.samples.shape(), (Shape{25, 28, 28, 1}));
  EXPECT_EQ(s.test.name, "synthetic validation");
}

TEST(SplitValidation, RejectsBadFractions) {
  const Dataset all = numbered_dataset(100);
  for (double f : {0.0, 1.0, -0.5, 1.5, std::nan(""), 0.001, 0.999}) {
    Result<DataSplit> s = split_validation(all, f, 1);
    ASSERT_FALSE(s.ok()) << "fraction " << f;
    EXPECT_TRUE(contains(s.status().message(), "validation fraction")) << s.status().message();
    EXPECT_TRUE(contains(s.status().message(), "numbers train")) << s.status().message();
  }
  EXPECT_FALSE(split_validation(numbered_dataset(1), 0.5, 1).ok());
  EXPECT_TRUE(split_validation(numbered_dataset(2), 0.5, 1).ok());
}

TEST(Synthetic, DeterministicShapesAndLabels) {
  const DataSplit a = make_synthetic(300, 100, 10, 5);
  const DataSplit b = make_synthetic(300, 100, 10, 5);
  const DataSplit c = make_synthetic(300, 100, 10, 6);
  EXPECT_EQ(a.train.size(), 300);
  EXPECT_EQ(a.test.size(), 100);
  EXPECT_EQ(a.train.sample_shape, (Shape{28, 28, 1}));
  EXPECT_EQ(a.train.samples.shape(), (Shape{300, 28, 28, 1}));
  EXPECT_EQ(a.train.samples.dtype(), DType::u8);
  EXPECT_EQ(a.train.num_classes, 10);
  EXPECT_EQ(0, std::memcmp(a.train.samples.data<uint8_t>(), b.train.samples.data<uint8_t>(), a.train.samples.bytes()));
  EXPECT_EQ(0, std::memcmp(a.test.labels.data<int32_t>(), b.test.labels.data<int32_t>(), a.test.labels.bytes()));
  EXPECT_NE(0, std::memcmp(a.train.samples.data<uint8_t>(), c.train.samples.data<uint8_t>(), a.train.samples.bytes()));
  std::vector<int> per_class(10, 0);
  for (int64_t i = 0; i < a.train.size(); ++i) {
    const int32_t label = a.train.labels.data<int32_t>()[i];
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++per_class[static_cast<size_t>(label)];
  }
  for (int count : per_class) EXPECT_EQ(count, 30);
}

TEST(Synthetic, LogisticRegressionLearnsIt) {
  // Softmax regression by plain SGD, two epochs: the classes must be easy to tell apart.
  const int classes = 10, features = 28 * 28;
  const DataSplit data = make_synthetic(2000, 500, classes, 11);
  std::vector<float> w(static_cast<size_t>(classes * features), 0.0f), b(classes, 0.0f);
  std::vector<float> x(features), logits(classes);
  auto forward = [&](const Dataset& d, int32_t i, int32_t* label) {
    ASSERT_TRUE(d.gather(&i, 1, x.data(), label).ok());
    for (int c = 0; c < classes; ++c) {
      float z = b[static_cast<size_t>(c)];
      for (int f = 0; f < features; ++f) z += w[static_cast<size_t>(c * features + f)] * x[static_cast<size_t>(f)];
      logits[static_cast<size_t>(c)] = z;
    }
  };
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int32_t i = 0; i < data.train.size(); ++i) {
      int32_t label = 0;
      forward(data.train, i, &label);
      float max = logits[0], sum = 0;
      for (float z : logits) max = std::max(max, z);
      for (float& z : logits) sum += (z = std::exp(z - max));
      for (int c = 0; c < classes; ++c) {
        const float grad = logits[static_cast<size_t>(c)] / sum - (c == label ? 1.0f : 0.0f);
        b[static_cast<size_t>(c)] -= 0.01f * grad;
        for (int f = 0; f < features; ++f) w[static_cast<size_t>(c * features + f)] -= 0.01f * grad * x[static_cast<size_t>(f)];
      }
    }
  }
  int correct = 0;
  for (int32_t i = 0; i < data.test.size(); ++i) {
    int32_t label = 0;
    forward(data.test, i, &label);
    correct += static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin()) == label;
  }
  EXPECT_GT(correct, 450) << correct << " of 500";
}

TEST(Gather, ScalesBytesToUnitFloats) {
  Dataset d;
  d.name = "bytes";
  d.sample_shape = Shape{2, 2, 1};
  d.num_classes = 4;
  d.samples = Tensor::zeros(Shape{3, 2, 2, 1}, DType::u8, "bytes").take();
  d.labels = Tensor::zeros(Shape{3}, DType::i32, "labels").take();
  const uint8_t pixels[12] = {0, 255, 51, 1, 10, 20, 30, 40, 255, 255, 0, 128};
  std::memcpy(d.samples.data<uint8_t>(), pixels, sizeof pixels);
  for (int i = 0; i < 3; ++i) d.labels.data<int32_t>()[i] = i + 1;

  const int32_t index[2] = {2, 0};
  float out[8];
  int32_t out_labels[2];
  ASSERT_TRUE(d.gather(index, 2, out, out_labels).ok());
  EXPECT_EQ(out[0], 1.0f);  // 255 gives exactly 1
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(out[2], 0.0f);
  EXPECT_EQ(out[3], 128.0f / 255.0f);
  EXPECT_EQ(out[4], 0.0f);
  EXPECT_EQ(out[5], 1.0f);
  EXPECT_EQ(out[6], 0.2f);  // 51 / 255
  EXPECT_EQ(out[7], 1.0f / 255.0f);
  EXPECT_EQ(out_labels[0], 3);
  EXPECT_EQ(out_labels[1], 1);
  for (int v = 0; v < 256; ++v) {
    d.samples.data<uint8_t>()[0] = static_cast<uint8_t>(v);
    const int32_t first = 0;
    ASSERT_TRUE(d.gather(&first, 1, out, nullptr).ok());
    EXPECT_EQ(out[0], static_cast<float>(v) / 255.0f);
  }
}

TEST(Gather, CopiesFloatsAndSlicesShareStorage) {
  const Dataset d = numbered_dataset(10);
  const int32_t index[3] = {9, 4, 4};
  float out[6];
  int32_t labels[3];
  ASSERT_TRUE(d.gather(index, 3, out, labels).ok());
  EXPECT_EQ(out[0], 9.0f);
  EXPECT_EQ(out[1], -9.0f);
  EXPECT_EQ(out[4], 4.0f);
  EXPECT_EQ(labels[0], 0);
  EXPECT_EQ(labels[1], 1);

  const Dataset part = d.slice(3, 7, "numbers part");
  EXPECT_EQ(part.name, "numbers part");
  EXPECT_EQ(part.size(), 4);
  EXPECT_EQ(part.num_classes, 3);
  EXPECT_EQ(part.sample_shape, (Shape{2}));
  const int32_t zero = 0;
  ASSERT_TRUE(part.gather(&zero, 1, out, labels).ok());
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(labels[0], 0);
  d.samples.f32()[6] = 100.0f;  // sample 3 of d is sample 0 of the slice
  ASSERT_TRUE(part.gather(&zero, 1, out, labels).ok());
  EXPECT_EQ(out[0], 100.0f);
}


// An in-memory epoch's pieces gathered over pools of 1, 2, 3 and 5 threads (rows split among
// them) are the serial gather's: batches of 7 in pieces of at most 3 over a shuffled order of
// 23 rows, u8 samples widened, labels beside them.
TEST(Gather, PiecesGatheredOverAPoolAreTheSerialOnes) {
  Dataset d = numbered_dataset(23);
  d.sample_shape = Shape{3};
  d.samples = Tensor::zeros(Shape{23, 3}, DType::u8, "bytes").take();
  for (int64_t i = 0; i < 69; ++i) d.samples.data<uint8_t>()[i] = static_cast<uint8_t>(i * 37 % 256);
  std::vector<int32_t> order(23);
  for (int32_t i = 0; i < 23; ++i) order[static_cast<size_t>(i)] = (i * 5 + 3) % 23;
  auto epoch = [&](ThreadPool* pool) {
    auto batches = BatchPrefetcher::create(d.sample_shape, 3, false).take();
    batches->start(d, order.data(), 23, 7, 3);
    std::vector<float> x;
    std::vector<int32_t> labels;
    for (int piece = 0; piece < 10; ++piece) {  // 7 = 3 + 3 + 1 three times, then a batch of 2
      const BatchPrefetcher::Piece p = batches->next(pool).take();
      x.insert(x.end(), p.x.f32(), p.x.f32() + p.x.numel());
      labels.insert(labels.end(), p.labels.data<int32_t>(), p.labels.data<int32_t>() + p.labels.numel());
    }
    EXPECT_EQ(labels.size(), 23u);
    return std::make_pair(x, labels);
  };
  const auto serial = epoch(nullptr);
  EXPECT_EQ(serial.first[0], static_cast<float>(3 * 3 * 37 % 256) / 255.0f);  // row 3's first byte
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    EXPECT_EQ(epoch(&pool), serial) << threads << " threads";
  }
}


// Issue 29, section 1: every label is checked against the model's outputs where the data meets
// the model, and a label it has no output for is named by its file and its place in that file,
// whatever happened to the rows since (a slice, a validation split, streaming).

// An MNIST-layout folder whose `train_n` training labels are i mod 3 but for `bad_train` (label
// `bad_label`), and 4 test labels i mod 3 but for sample 1 (label 7), gzipped.
std::string write_labelled_folder(TempDir& dir, const std::string& folder, uint32_t train_n, uint32_t bad_train,
                                  uint8_t bad_label) {
  const std::string path = dir.subdir(folder);
  Bytes train_labels = label_data(train_n);
  train_labels[bad_train] = bad_label;
  Bytes test_labels = label_data(4);
  test_labels[1] = 7;
  dir.raw(folder + "/train-images-idx3-ubyte", images_file(train_n));
  dir.raw(folder + "/train-labels-idx1-ubyte", idx_bytes(0x00000801, {train_n}, train_labels));
  dir.raw(folder + "/t10k-images-idx3-ubyte", images_file(4));
  dir.gz(folder + "/t10k-labels-idx1-ubyte.gz", idx_bytes(0x00000801, {4}, test_labels));
  return path;
}

void expect_label_error(const Status& s, const std::string& place, const std::string& rest) {
  ASSERT_FALSE(s.ok()) << "expected " << place << rest;
  EXPECT_TRUE(contains(s.message(), place + rest)) << s.message();
}

TEST(Labels, IdxTrainAndTestNameTheFileAndTheSample) {
  TempDir dir;
  const std::string folder = write_labelled_folder(dir, "bad-labels", 8, 5, 255);
  for (const bool streamed : {false, true}) {
    SCOPED_TRACE(streamed ? "streamed" : "in memory");
    Result<DataSplit> split = load_mnist_folder(folder, streamed);
    ASSERT_TRUE(split.ok()) << split.status().message();  // a byte label is a valid IDX label
    const Dataset& train = split.value().train;
    expect_label_error(check_labels(train, 10), folder + "/train-labels-idx1-ubyte",
                       ": sample 5 has label 255; the model has 10 outputs (classes 0 to 9)");
    EXPECT_TRUE(check_labels(train, 256).ok());
    const Dataset& test = split.value().test;
    expect_label_error(check_labels(test, 3), folder + "/t10k-labels-idx1-ubyte.gz",
                       ": sample 1 has label 7; the model has 3 outputs (classes 0 to 2)");
    EXPECT_TRUE(check_labels(test, 8).ok());
  }
}

TEST(Labels, EveryLabelBelowTheOutputCountPassesAndTheFirstOtherIsNamed) {
  Dataset d = numbered_dataset(6);  // labels 0 1 2 0 1 2, no file: named by the dataset
  d.class_names = {"zero", "one", "two"};
  EXPECT_TRUE(check_labels(d, 3).ok());
  expect_label_error(check_labels(d, 2), "numbers train: sample 2", " has label 2 (two); the model has 2 outputs");
  expect_label_error(check_labels(d, 1), "numbers train: sample 1", " has label 1 (one); the model has 1 output (class 0)");
  d.labels.data<int32_t>()[4] = -1;
  expect_label_error(check_labels(d, 3), "numbers train: sample 4", " has label -1; the model has 3 outputs");
  Dataset empty;
  EXPECT_TRUE(check_labels(empty, 2).ok());
}

// A slice, a validation split (of rows in memory or streamed) and a streamed split read into
// memory all name the row of the file, not their own row.
TEST(Labels, SlicesAndValidationSplitsNameTheRowOfTheFile) {
  TempDir dir;
  const std::string folder = write_labelled_folder(dir, "split-labels", 40, 29, 9);
  const std::string labels = folder + "/train-labels-idx1-ubyte";
  for (const bool streamed : {false, true}) {
    SCOPED_TRACE(streamed ? "streamed" : "in memory");
    const Dataset train = load_mnist_folder(folder, streamed).take().train;
    expect_label_error(check_labels(train.slice(20, 40, "tail"), 3), labels, ": sample 29 has label 9");
    EXPECT_TRUE(check_labels(train.slice(0, 29, "head"), 3).ok());
    for (uint64_t seed : {1, 2, 3}) {
      const DataSplit split = split_validation(train, 0.25, seed).take();
      const bool held_out = !check_labels(split.test, 3).ok();
      const Dataset& with_it = held_out ? split.test : split.train;
      const Dataset& without = held_out ? split.train : split.test;
      expect_label_error(check_labels(with_it, 3), labels, ": sample 29 has label 9; the model has 3 outputs");
      EXPECT_TRUE(check_labels(without, 3).ok());
      expect_label_error(check_labels(with_it.in_memory_copy().take(), 3), labels, ": sample 29 has label 9");
      expect_label_error(check_labels(with_it.slice(0, with_it.size(), "again"), 3), labels, ": sample 29");
    }
  }
}

// Issue 29, section 2: a dataset file that is a folder, a FIFO or a device is refused naming
// what it is, neither passed over as missing nor waited on.
TEST(DatasetFiles, NonFilesInAnMnistFolderAreRefusedByWhatTheyAre) {
  TempDir dir;
  const std::string folder = dir.subdir("odd");
  write_mnist_folder(dir, "odd");
  dir.subdir("odd/train-images-idx3-ubyte");  // found before the .gz beside it
  for (const bool streamed : {false, true}) {
    auto split = load_mnist_folder(folder, streamed);
    ASSERT_FALSE(split.ok());
    EXPECT_EQ(split.status().message(), folder + "/train-images-idx3-ubyte is a folder, not an IDX file");
  }
#if !defined(_WIN32)
  std::filesystem::remove(folder + "/train-images-idx3-ubyte");
  const std::string labels = folder + "/train-labels-idx1-ubyte";
  std::remove(labels.c_str());
  ASSERT_EQ(mkfifo(labels.c_str(), 0600), 0);  // no writer: opening it to read would block
  auto split = load_mnist_folder(folder);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.status().message(), labels + " is a FIFO (named pipe), not an IDX file");
#endif
}

TEST(DatasetFiles, GeneratedImagesSayWhichShapesTheyMake) {
  EXPECT_TRUE(check_generated_shape(Shape{28, 28, 1}).ok());
  EXPECT_TRUE(check_generated_shape(Shape{256, 256, 3}).ok());
  for (const Shape& shape : {Shape{28, 28, 2}, Shape{784}, Shape{8192, 8192, 3}}) {
    const Status s = check_generated_shape(shape);
    EXPECT_FALSE(s.ok()) << shape.str();
    EXPECT_TRUE(contains(s.message(), shape.str())) << s.message();
  }
}

// ---------------------------------------------------------------------------------------------
// Issue 29, section 6: the inflated copy of a gzipped images file is keyed by the file's content
// and checked whole before use; section 7: streamed messages name the user's file.

// A folder of its own with RETROGRAD_CACHE pointing into it; removed with everything in it.
class CacheCase {
 public:
  CacheCase() : dir_(make_temp_folder("rg_cache_")), cache_env_("RETROGRAD_CACHE", (dir_ + "/cache").c_str()) {}
  ~CacheCase() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // The cache's files.
  std::vector<std::string> copies() const {
    auto names = list_folder(path("cache"));
    return names.ok() ? names.value() : std::vector<std::string>();
  }
  // `bytes` gzipped into `name` without compression (level 0): the file's size depends only on
  // the data's, so two different contents of one length give two files of one size.
  std::string stored_gz(const std::string& name, const Bytes& bytes) const {
    const std::string file = path(name);
    gzFile g = gzopen(file.c_str(), "wb0");
    RG_CHECK(g != nullptr, "gzopen " << file);
    RG_CHECK(gzwrite(g, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()),
             "gzwrite " << file);
    RG_CHECK(gzclose(g) == Z_OK, "gzclose " << file);
    return file;
  }
  std::string raw(const std::string& name, const Bytes& bytes) const {
    const std::string file = path(name);
    std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return file;
  }

 private:
  std::string dir_;
  ScopedEnv cache_env_;
};

// Row `row` of a streamed dataset's images, as bytes.
Bytes streamed_row(const Dataset& d, int64_t row) {
  Bytes out(static_cast<size_t>(d.source->row_bytes()));
  const Status read = d.source->read(row, out.data());
  EXPECT_TRUE(read.ok()) << read.message();
  return out;
}

Bytes row_of(const Bytes& image_data, int64_t row) {
  const auto at = image_data.begin() + row * kRows * kCols;
  return Bytes(at, at + kRows * kCols);
}

// Stored (level 0) gzip files of one length: their CRC-32s are all the same (each ends with its
// data's CRC-32, and CRC is linear), so this also holds a CRC-32 key to account.
TEST(Issue29Cache, ASourceReplacedBySameSizeWithinTheSameSecondIsInflatedAfresh) {
  CacheCase c;
  const std::string labels = c.raw("labels", labels_file());
  const std::string images = c.stored_gz("images.gz", images_file());
  const auto size = std::filesystem::file_size(images);
  const auto time = std::filesystem::last_write_time(images);
  auto first = open_idx_pair_streamed(images, labels, "first");
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(streamed_row(first.value(), 1), row_of(image_data(), 1));

  Bytes other = image_data();
  for (uint8_t& v : other) v = static_cast<uint8_t>(255 - v);
  c.stored_gz("images.gz", idx_bytes(0x00000803, {kN, kRows, kCols}, other));
  ASSERT_EQ(std::filesystem::file_size(images), size) << "the test needs a replacement of the same size";
  std::filesystem::last_write_time(images, time);
  auto second = open_idx_pair_streamed(images, labels, "second");
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(streamed_row(second.value(), 1), row_of(other, 1)) << "the old content's copy was served";
  EXPECT_EQ(c.copies().size(), 2u);
  // The first copy is still right for what it was read from.
  EXPECT_EQ(streamed_row(first.value(), 3), row_of(image_data(), 3));
}

// A copy cut short, replaced by other bytes of its size, or with its stamp damaged is not used:
// it is made again from the source.
TEST(Issue29Cache, ACopyCutShortOrReplacedIsMadeAgain) {
  CacheCase c;
  const std::string labels = c.raw("labels", labels_file());
  const std::string images = c.stored_gz("images.gz", images_file());
  ASSERT_TRUE(open_idx_pair_streamed(images, labels, "made").ok());
  ASSERT_EQ(c.copies().size(), 1u);
  const std::string copy = c.path("cache/" + c.copies()[0]);
  const Bytes whole = read_file(copy);
  ASSERT_GT(whole.size(), images_file().size()) << "the data, then the stamp";

  const std::vector<std::pair<const char*, Bytes>> damaged = {
      {"cut inside the data", Bytes(whole.begin(), whole.begin() + 20)},
      {"cut inside the stamp", Bytes(whole.begin(), whole.end() - 3)},
      {"zeros of its size", Bytes(whole.size(), 0)},
      {"one stamp byte changed", [&] { Bytes b = whole; b[b.size() - 10] ^= 1; return b; }()},
      {"a longer copy (a stamp that names another size)", [&] { Bytes b = whole; b.insert(b.begin() + 16, 7); return b; }()},
  };
  for (const auto& [what, bytes] : damaged) {
    c.raw("cache/" + c.copies()[0], bytes);
    auto again = open_idx_pair_streamed(images, labels, what);
    ASSERT_TRUE(again.ok()) << what << ": " << again.status().message();
    for (int64_t row = 0; row < kN; ++row) EXPECT_EQ(streamed_row(again.value(), row), row_of(image_data(), row)) << what;
    EXPECT_EQ(read_file(copy), whole) << what << ": the copy was made again";
    EXPECT_EQ(c.copies().size(), 1u) << what << ": no partial file is left";
  }
}

// What goes wrong with a streamed gzipped file is told as the user's file; the cache copy is
// mentioned as where the bytes were read from.
TEST(Issue29Cache, StreamedMessagesNameTheUsersFile) {
  CacheCase c;
  const std::string labels = c.raw("labels", labels_file());
  const std::string trailing = c.stored_gz("trailing.gz", [] { Bytes b = images_file(); b.push_back(1); return b; }());
  auto refused = open_idx_pair_streamed(trailing, labels, "trailing");
  expect_error(refused, trailing, "trailing bytes");
  EXPECT_FALSE(contains(refused.status().message(), c.path("cache"))) << refused.status().message();
  const std::string more = c.stored_gz("more.gz", images_file(kN + 1));
  auto counted = open_idx_pair_streamed(more, labels, "more");
  expect_error(counted, more, "counts differ");
  EXPECT_FALSE(contains(counted.status().message(), c.path("cache"))) << counted.status().message();

#ifndef _WIN32  // Windows may refuse to cut a file another handle has open
  for (const std::string& name : c.copies()) std::filesystem::remove(c.path("cache/" + name));
  const std::string images = c.stored_gz("images.gz", images_file());
  auto opened = open_idx_pair_streamed(images, labels, "opened");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  ASSERT_EQ(c.copies().size(), 1u);
  const std::string copy = c.path("cache/" + c.copies()[0]);
  std::filesystem::resize_file(copy, 16);  // cut under the open dataset
  Bytes row(kRows * kCols);
  const Status read = opened.value().source->read(2, row.data());
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.message().rfind(images + " (read from its inflated copy " + copy + ")", 0), 0u) << read.message();
  EXPECT_TRUE(contains(read.message(), "ends early")) << read.message();
#endif
}


// Issue 29, section 3: samples read into memory are checked against the memory available before
// they are allocated or read: refused naming the file, with nothing allocated.
TEST(MachineCheck, SamplesThatDoNotFitAreRefusedBeforeTheyAreRead) {
  TempDir dir;
  const std::string folder = write_labelled_folder(dir, "fits-not", 400, 0, 1);  // 400 small images: 6.4 KB
  {
    ScopedEnv small("RETROGRAD_MEM_AVAILABLE", "2K");
    const int64_t before = host_memory().current_bytes();
    auto refused = load_mnist_folder(folder);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(host_memory().current_bytes(), before);
    const std::string text = refused.status().message();
    EXPECT_NE(text.find(folder + "/train-images-idx3-ubyte"), std::string::npos) << text;
    EXPECT_NE(text.find("2.0 KiB this machine has available"), std::string::npos) << text;
  }
  ScopedEnv enough("RETROGRAD_MEM_AVAILABLE", "64M");
  EXPECT_TRUE(load_mnist_folder(folder).ok());
}

// Issue 30: what learning nothing scores (data/chance.h), the yardsticks of "left chance"

// Labels `labels` (classes 0..classes-1) on samples of [1] f32 that nothing reads.
Dataset labelled(const std::vector<int32_t>& labels, int32_t classes) {
  Dataset d;
  d.name = "labelled";
  d.sample_shape = Shape{1};
  d.num_classes = classes;
  const int64_t n = static_cast<int64_t>(labels.size());
  d.samples = Tensor::zeros(Shape{n, 1}, DType::f32, "labelled").take();
  d.labels = Tensor::zeros(Shape{n}, DType::i32, "labelled labels").take();
  std::copy(labels.begin(), labels.end(), d.labels.data<int32_t>());
  return d;
}

TEST(Chance, BestConstantAccuracyIsTheLargestClassShare) {
  EXPECT_DOUBLE_EQ(best_constant_accuracy(labelled({0, 1, 2, 3}, 4)), 0.25);          // balanced: 1 / classes
  EXPECT_DOUBLE_EQ(best_constant_accuracy(labelled({2, 0, 2, 1, 2, 2, 0, 1}, 3)), 0.5);  // unbalanced: above it
  EXPECT_DOUBLE_EQ(best_constant_accuracy(labelled({9}, 10)), 1.0);  // classes absent from the set count for nothing
  EXPECT_DOUBLE_EQ(best_constant_accuracy(labelled({}, 10)), 0.0);
  // A slice counts its own labels: the first two of 0 0 1 1 1 are all class 0.
  EXPECT_DOUBLE_EQ(best_constant_accuracy(labelled({0, 0, 1, 1, 1}, 2).slice(0, 2, "first two")), 1.0);
}

TEST(Chance, MeanAnswerMseUsesTheTrainingMeanOnTheTestSamples) {
  // numbered_dataset: sample i = {i, -i}. 600 rows cross the 256-row blocks; the mean is {299.5, -299.5}.
  const Dataset train = numbered_dataset(600), test = numbered_dataset(7);
  auto mse = mean_answer_mse(train, test);
  ASSERT_TRUE(mse.ok()) << mse.status().message();
  double expected = 0;
  for (int i = 0; i < 7; ++i) expected += 2 * (i - 299.5) * (i - 299.5);  // both features alike
  EXPECT_NEAR(mse.value(), expected / (7 * 2), 1e-9 * expected);
  // Its own mean: the test set's variance per value (i = 0..6 about 3: 4).
  EXPECT_NEAR(mean_answer_mse(test, test).value(), 4.0, 1e-12);
  EXPECT_DOUBLE_EQ(mean_answer_mse(train, test.slice(0, 0, "none")).value(), 0.0);
}

TEST(Chance, MeanAnswerMseSeesPixelsAsTheModelDoes) {
  // u8 samples are scaled to [0, 1] as gather gives them to the model: 0 and 255 average 0.5,
  // and answering 0.5 for 0 or 255 errs by 0.5: MSE 0.25.
  Dataset bytes;
  bytes.name = "bytes";
  bytes.sample_shape = Shape{1, 1, 1};
  bytes.num_classes = 2;
  bytes.samples = Tensor::zeros(Shape{2, 1, 1, 1}, DType::u8, "bytes").take();
  bytes.labels = Tensor::zeros(Shape{2}, DType::i32, "labels").take();
  bytes.samples.data<uint8_t>()[1] = 255;
  bytes.labels.data<int32_t>()[1] = 1;  // one of each class
  EXPECT_NEAR(mean_answer_mse(bytes, bytes).value(), 0.25, 1e-7);
  // The figure in a model's own terms: accuracy for a classifier, MSE for an autoencoder.
  EXPECT_DOUBLE_EQ(chance_quality(true, bytes, bytes).value(), 0.5);
  EXPECT_NEAR(chance_quality(false, bytes, bytes).value(), 0.25, 1e-7);
}

}  // namespace
}  // namespace rg
