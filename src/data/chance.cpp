// The chance-level yardsticks of a dataset (see chance.h).
#include "data/chance.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "base/check.h"

namespace rg {

namespace {

constexpr int64_t kBlockRows = 256;

// Calls visit(row of f32 values) for every sample of `data`, gathered kBlockRows at a time.
Status for_each_sample(const Dataset& data, const std::function<void(const float*)>& visit) {
  const int64_t features = data.sample_shape.numel();
  std::vector<float> block(static_cast<size_t>(kBlockRows * features));
  std::vector<int32_t> index(kBlockRows), labels(kBlockRows);
  for (int64_t begin = 0; begin < data.size(); begin += kBlockRows) {
    const int64_t count = std::min(kBlockRows, data.size() - begin);
    for (int64_t i = 0; i < count; ++i) index[static_cast<size_t>(i)] = static_cast<int32_t>(begin + i);
    RG_TRY(data.gather(index.data(), count, block.data(), labels.data()));
    for (int64_t i = 0; i < count; ++i) visit(block.data() + i * features);
  }
  return Status();
}

}  // namespace

double best_constant_accuracy(const Dataset& test) {
  const int64_t n = test.size();
  if (n == 0 || test.num_classes <= 0) return 0.0;
  std::vector<int64_t> counts(static_cast<size_t>(test.num_classes), 0);
  const int32_t* labels = test.labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    RG_CHECK(labels[i] >= 0 && labels[i] < test.num_classes, "label " << labels[i] << " of " << test.name);
    ++counts[static_cast<size_t>(labels[i])];
  }
  return static_cast<double>(*std::max_element(counts.begin(), counts.end())) / static_cast<double>(n);
}

Result<double> mean_answer_mse(const Dataset& train, const Dataset& test) {
  RG_CHECK(train.sample_shape == test.sample_shape,
           "" << train.name << " " << train.sample_shape.str() << " against " << test.name << " " << test.sample_shape.str());
  const int64_t features = train.sample_shape.numel();
  if (train.size() == 0 || test.size() == 0 || features == 0) return 0.0;
  std::vector<double> mean(static_cast<size_t>(features), 0.0);
  RG_TRY(for_each_sample(train, [&](const float* row) {
    for (int64_t j = 0; j < features; ++j) mean[static_cast<size_t>(j)] += row[j];
  }));
  for (double& m : mean) m /= static_cast<double>(train.size());
  double squared = 0;
  RG_TRY(for_each_sample(test, [&](const float* row) {
    for (int64_t j = 0; j < features; ++j) {
      const double error = row[j] - mean[static_cast<size_t>(j)];
      squared += error * error;
    }
  }));
  return squared / static_cast<double>(test.size() * features);
}

Result<double> chance_quality(bool classifies, const Dataset& train, const Dataset& test) {
  if (classifies) return best_constant_accuracy(test);
  return mean_answer_mse(train, test);
}

}  // namespace rg
