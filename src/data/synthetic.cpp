// A generated image dataset for tests and demos: each class is a fixed prototype (a blob and
// a bar at class-specific places); samples add a seeded shift, contrast and noise.
#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "data/dataset.h"

namespace rg {

namespace {

constexpr int kSyntheticSide = 28;
constexpr int kPixels = kSyntheticSide * kSyntheticSide;
constexpr int32_t kMaxClasses = 176;  // past this, prototypes repeat (see class_prototype)
constexpr uint64_t kSyntheticTrainStream = 0x53594E5431ull;  // "SYNT1"
constexpr uint64_t kSyntheticTestStream = 0x53594E5432ull;   // "SYNT2"

// Class c's prototype in [0, 1], [28, 28] row-major. It depends on c only, never on the
// seed, so every split and every seed shares one labelling. The blob sits on a 4x4 grid
// (c mod 16) and the bar at c * 5 mod 22 (distinct for c mod 22), so two classes below
// kMaxClasses = lcm(16, 22) never share both.
std::vector<float> class_prototype(int32_t c) {
  std::vector<float> proto(kPixels, 0.0f);
  const double blob_x = 5.0 + 6.0 * (c % 4);
  const double blob_y = 5.0 + 6.0 * ((c / 4) % 4);
  const double sigma = 2.5;
  const int bar_at = 3 + (c * 5) % 22;  // a 2-pixel-wide bar at rows or columns [bar_at, bar_at + 2)
  const bool bar_horizontal = c % 2 == 0;
  for (int y = 0; y < kSyntheticSide; ++y) {
    for (int x = 0; x < kSyntheticSide; ++x) {
      const double d2 = (x - blob_x) * (x - blob_x) + (y - blob_y) * (y - blob_y);
      double v = std::exp(-d2 / (2.0 * sigma * sigma));
      const int across = bar_horizontal ? y : x;
      const int along = bar_horizontal ? x : y;
      if (across >= bar_at && across < bar_at + 2 && along >= 4 && along < kSyntheticSide - 4) v = std::max(v, 0.8);
      proto[static_cast<size_t>(y * kSyntheticSide + x)] = static_cast<float>(v);
    }
  }
  return proto;
}

// Fills a dataset of n samples: balanced labels (i mod classes) in a seeded order, each
// image its prototype shifted by up to 1 pixel, scaled by a contrast in [0.7, 1] and
// with uniform noise in [-30, 30] grey levels, clamped to 0..255.
Dataset make_split(int64_t n, int32_t classes, const std::vector<std::vector<float>>& prototypes, Rng& rng,
                   const std::string& name) {
  Dataset out;
  out.name = name;
  out.sample_shape = Shape{kSyntheticSide, kSyntheticSide, 1};
  out.num_classes = classes;
  Result<Tensor> samples = Tensor::zeros(out.sample_shape.batched(n), DType::u8, name + " samples");
  Result<Tensor> labels = Tensor::zeros(Shape{n}, DType::i32, name + " labels");
  RG_CHECK(samples.ok() && labels.ok(), "synthetic data: " << samples.status().message() << labels.status().message());
  out.samples = samples.take();
  out.labels = labels.take();

  int32_t* label = out.labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) label[i] = static_cast<int32_t>(i % classes);
  for (int64_t i = n - 1; i > 0; --i) {
    std::swap(label[i], label[rng.below(static_cast<uint64_t>(i) + 1)]);
  }

  uint8_t* pixels = out.samples.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<float>& proto = prototypes[static_cast<size_t>(label[i])];
    const int dx = static_cast<int>(rng.below(3)) - 1;
    const int dy = static_cast<int>(rng.below(3)) - 1;
    const float contrast = 255.0f * (0.7f + 0.3f * rng.uniform_f32());
    uint8_t* image = pixels + i * kPixels;
    uint64_t noise_bits = 0;
    for (int p = 0; p < kPixels; ++p) {
      if (p % 8 == 0) noise_bits = rng.next_u64();  // eight noise bytes per draw
      const int noise = static_cast<int>(((noise_bits & 0xFF) * 61) >> 8) - 30;
      noise_bits >>= 8;
      const int x = p % kSyntheticSide - dx;
      const int y = p / kSyntheticSide - dy;
      const bool inside = x >= 0 && x < kSyntheticSide && y >= 0 && y < kSyntheticSide;
      const float clean = inside ? contrast * proto[static_cast<size_t>(y * kSyntheticSide + x)] : 0.0f;
      const int value = static_cast<int>(std::lround(clean)) + noise;
      image[p] = static_cast<uint8_t>(std::min(255, std::max(0, value)));
    }
  }
  return out;
}

}  // namespace

DataSplit make_synthetic(int64_t train_size, int64_t test_size, int32_t classes, uint64_t seed) {
  RG_CHECK(train_size >= 0 && test_size >= 0 && classes >= 1 && classes <= kMaxClasses,
           "make_synthetic(" << train_size << ", " << test_size << ", " << classes << ")");
  std::vector<std::vector<float>> prototypes;
  for (int32_t c = 0; c < classes; ++c) prototypes.push_back(class_prototype(c));
  Rng train_rng(seed, kSyntheticTrainStream);
  Rng test_rng(seed, kSyntheticTestStream);
  DataSplit out;
  out.train = make_split(train_size, classes, prototypes, train_rng, "synthetic train");
  out.test = make_split(test_size, classes, prototypes, test_rng, "synthetic test");
  return out;
}

}  // namespace rg
