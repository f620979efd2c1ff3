// The classifier-based score of generated images (see classifier_score.h).
#include "train/classifier_score.h"

#include <algorithm>
#include <cmath>

namespace rg {

int ClassifierScore::classes_with_share(double share) const {
  return static_cast<int>(std::count_if(shares.begin(), shares.end(), [&](double s) { return s >= share; }));
}

ClassifierScore score_probabilities(const std::vector<double>& p, int64_t n, int64_t k, int splits) {
  RG_CHECK(n > 0 && k > 0 && splits >= 1 && splits <= n && static_cast<int64_t>(p.size()) == n * k,
           "score of " << n << " x " << k << " probabilities in " << splits << " splits");
  ClassifierScore out;
  out.samples = n;
  out.shares.assign(static_cast<size_t>(k), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const double* row = &p[static_cast<size_t>(i * k)];
    const int64_t top = std::max_element(row, row + k) - row;
    out.confidence += row[top];
    out.shares[static_cast<size_t>(top)] += 1;
  }
  out.confidence /= static_cast<double>(n);
  for (double& s : out.shares) s /= static_cast<double>(n);

  // Per split: the marginal p(y), then exp(mean KL(p(y|x) || p(y))); 0 log 0 = 0.
  std::vector<double> scores;
  for (int s = 0; s < splits; ++s) {
    const int64_t begin = n * s / splits, end = n * (s + 1) / splits;
    std::vector<double> marginal(static_cast<size_t>(k), 0.0);
    for (int64_t i = begin; i < end; ++i)
      for (int64_t c = 0; c < k; ++c) marginal[static_cast<size_t>(c)] += p[static_cast<size_t>(i * k + c)];
    for (double& m : marginal) m /= static_cast<double>(end - begin);
    double kl = 0;
    for (int64_t i = begin; i < end; ++i) {
      for (int64_t c = 0; c < k; ++c) {
        const double q = p[static_cast<size_t>(i * k + c)];
        if (q > 0) kl += q * (std::log(q) - std::log(marginal[static_cast<size_t>(c)]));
      }
    }
    scores.push_back(std::exp(kl / static_cast<double>(end - begin)));
  }
  for (double v : scores) out.score += v;
  out.score /= static_cast<double>(splits);
  for (double v : scores) out.score_std += (v - out.score) * (v - out.score);
  out.score_std = std::sqrt(out.score_std / static_cast<double>(splits));
  return out;
}

Result<ClassifierScore> score_with_classifier(Executor& judge, const Tensor& images, int64_t batch, int splits) {
  const Model& model = judge.model();
  if (model.loss() != LossKind::softmax_cross_entropy) {
    return Status::error("the judge (" + model.cfg().file + ") must be a classifier (loss = softmax_cross_entropy)");
  }
  const int64_t n = images.shape()[0], size = judge.input_shape().numel();
  if (images.numel() != n * size) {
    return Status::error("the judge (" + model.cfg().file + ") takes " + judge.input_shape().str() +
                         ", the samples are " + images.shape().str());
  }
  RG_TRY(judge.reserve(batch));
  const int64_t k = judge.output_shape().numel();
  std::vector<double> probabilities(static_cast<size_t>(n * k));
  for (int64_t begin = 0; begin < n; begin += batch) {
    const int64_t m = std::min(batch, n - begin);
    const Tensor x = images.reshaped(judge.input_shape().batched(n)).rows(begin, begin + m);
    RG_ASSIGN(const Tensor logits, judge.forward(x));
    for (int64_t i = 0; i < m; ++i) {
      const float* row = logits.f32() + i * k;
      const double top = *std::max_element(row, row + k);
      double sum = 0;
      double* out = &probabilities[static_cast<size_t>((begin + i) * k)];
      for (int64_t c = 0; c < k; ++c) sum += out[c] = std::exp(double(row[c]) - top);
      for (int64_t c = 0; c < k; ++c) out[c] /= sum;
    }
  }
  return score_probabilities(probabilities, n, k, splits);
}

}  // namespace rg
