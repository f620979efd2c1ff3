// generated_images: a SampleSource computing each image from (seed, stream, row).
#include "data/generated_images.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/memory.h"
#include "base/output_file.h"
#include "base/rng.h"

namespace rg {

namespace {

constexpr int64_t kMaxImageBytes = int64_t{64} << 20;

// Where class k's ellipse sits, how large and of which colour: fixed per class.
struct ClassLook {
  double cx, cy, rx, ry;  // centre and radii, as fractions of the image
  double rgb[3];          // 0..1
};

ClassLook class_look(int32_t k) {
  static const double kColours[10][3] = {{0.9, 0.6, 0.3}, {0.4, 0.5, 0.9}, {0.3, 0.8, 0.4}, {0.9, 0.3, 0.6},
                                         {0.8, 0.8, 0.2}, {0.2, 0.8, 0.8}, {0.6, 0.3, 0.9}, {0.9, 0.9, 0.9},
                                         {0.5, 0.2, 0.2}, {0.2, 0.4, 0.3}};
  ClassLook look{};
  look.cx = 0.3 + 0.4 * ((k * 7) % 10) / 9.0;
  look.cy = 0.3 + 0.4 * ((k * 3) % 10) / 9.0;
  look.rx = k % 2 == 0 ? 0.22 : 0.12;  // even classes wide, odd ones tall
  look.ry = k % 2 == 0 ? 0.12 : 0.22;
  for (int c = 0; c < 3; ++c) look.rgb[c] = kColours[k % 10][c];
  return look;
}

class GeneratedImages final : public SampleSource {
 public:
  GeneratedImages(const Shape& shape, int64_t count, uint64_t seed, uint64_t stream, Tensor labels)
      : shape_(shape), count_(count), seed_(seed), stream_(stream), labels_(std::move(labels)) {}

  int64_t size() const override { return count_; }
  int64_t row_bytes() const override { return shape_.numel(); }
  std::string describe() const override { return "generated on the fly"; }

  // The class's ellipse moved by up to 10 % and scaled by up to 25 %, a per-sample background
  // gradient, and uniform noise of +-24 grey levels.
  Status read(int64_t row, uint8_t* out) const override {
    Rng rng(seed_ ^ (stream_ * 0x9E3779B97F4A7C15ull), static_cast<uint64_t>(row));
    const ClassLook look = class_look(labels_.data<int32_t>()[row]);
    const int64_t h = shape_[0], w = shape_[1], channels = shape_[2];
    const double cx = (look.cx + 0.2 * (rng.uniform_f64() - 0.5)) * static_cast<double>(w);
    const double cy = (look.cy + 0.2 * (rng.uniform_f64() - 0.5)) * static_cast<double>(h);
    const double scale = 0.75 + 0.5 * rng.uniform_f64();
    const double rx = look.rx * scale * static_cast<double>(w), ry = look.ry * scale * static_cast<double>(h);
    const double slope = rng.uniform(-0.3, 0.3), base = rng.uniform(0.1, 0.4);
    uint64_t noise_bits = 0;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const double dx = (static_cast<double>(x) - cx) / rx, dy = (static_cast<double>(y) - cy) / ry;
        const bool inside = dx * dx + dy * dy <= 1.0;
        const double background = base + slope * static_cast<double>(x + y) / static_cast<double>(w + h);
        for (int64_t c = 0; c < channels; ++c) {
          const int64_t p = (y * w + x) * channels + c;
          if (p % 8 == 0) noise_bits = rng.next_u64();
          const int noise = static_cast<int>(((noise_bits & 0xFF) * 49) >> 8) - 24;
          noise_bits >>= 8;
          const double grey = channels == 1 ? (look.rgb[0] + look.rgb[1] + look.rgb[2]) / 3.0 : look.rgb[c];
          const double v = 255.0 * (inside ? grey : background) + noise;
          out[p] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
        }
      }
    }
    return Status();
  }

 private:
  Shape shape_;
  int64_t count_;
  uint64_t seed_, stream_;
  Tensor labels_;  // shared with the dataset: the class of each row
};

}  // namespace

Status check_generated_shape(const Shape& shape) {
  if (shape.rank() == 3 && (shape[2] == 1 || shape[2] == 3) && shape.numel() <= kMaxImageBytes) return Status();
  return Status::error("generated images are height x width x channels with 1 or 3 channels and at most " +
                       format_bytes(kMaxImageBytes) + " a sample; the model takes " + shape.str());
}

Dataset generated_images(const std::string& name, const Shape& shape, int64_t count, int32_t classes, uint64_t seed,
                         uint64_t stream) {
  RG_CHECK(check_generated_shape(shape).ok() && classes >= 2 && classes <= 10 && count >= 0,
           "generated_images(" << shape.str() << ", " << count << ", " << classes << ")");
  Dataset out;
  out.name = name;
  out.sample_shape = shape;
  out.num_classes = classes;
  Result<Tensor> labels = Tensor::zeros(Shape{count}, DType::i32, name + " labels");
  RG_CHECK(labels.ok(), "" << labels.status().message());
  out.labels = labels.take();
  Rng rng(seed, stream);
  for (int64_t i = 0; i < count; ++i) out.labels.data<int32_t>()[i] = static_cast<int32_t>(rng.below(static_cast<uint64_t>(classes)));
  out.source = std::make_shared<GeneratedImages>(shape, count, seed, stream, out.labels);
  return out;
}

DataSplit make_generated_split(const Shape& shape, int32_t classes, uint64_t seed) {
  DataSplit out;
  out.train = generated_images("generated train", shape, 1024, classes, seed, 1);
  out.test = generated_images("generated test", shape, 256, classes, seed, 2);
  return out;
}

namespace {

void put_u32(std::vector<uint8_t>* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<uint8_t>(v >> shift));
}

}  // namespace

Status write_idx_pair(const Dataset& data, const std::string& images_path, const std::string& labels_path) {
  const Shape& shape = data.sample_shape;
  if (shape.rank() != 3 || shape[2] != 1) {
    return Status::error(images_path + ": IDX image files hold grey images; these samples are " + shape.str());
  }
  if (data.in_memory() && data.samples.dtype() != DType::u8) {
    return Status::error(images_path + ": IDX image files hold bytes; these samples are " +
                         dtype_name(data.samples.dtype()));
  }
  const int64_t n = data.size(), row = shape.numel();
  std::vector<uint8_t> header;
  put_u32(&header, 0x00000803);
  for (int64_t d : {n, shape[0], shape[1]}) put_u32(&header, static_cast<uint32_t>(d));
  RG_ASSIGN(std::unique_ptr<OutputStream> images, OutputStream::open(images_path));
  RG_TRY(images->write(header.data(), header.size()));
  // Chunks of 4096 rows, as the bytes they are stored in.
  const int64_t chunk = 4096;
  std::vector<uint8_t> bytes(static_cast<size_t>(chunk * row));
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const int64_t count = std::min(chunk, n - begin);
    for (int64_t i = 0; i < count; ++i) RG_TRY(data.read_row_bytes(begin + i, bytes.data() + i * row));
    RG_TRY(images->write(bytes.data(), static_cast<size_t>(count * row)));
  }
  RG_TRY(images->commit());

  header.clear();
  put_u32(&header, 0x00000801);
  put_u32(&header, static_cast<uint32_t>(n));
  std::vector<uint8_t> label_bytes(header);
  for (int64_t i = 0; i < n; ++i) label_bytes.push_back(static_cast<uint8_t>(data.labels.data<int32_t>()[i]));
  return write_file_atomic(labels_path, label_bytes);
}

}  // namespace rg
