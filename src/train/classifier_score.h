// A quality figure for generated images that needs nothing from outside: a classifier trained
// by retrograd on the real data (the "judge") scores the samples.
//   score       exp(E_x KL(p(y|x) || p(y))): the Inception score's formula (Salimans et al.
//               2016) with the judge in place of Inception v3. 1 when every sample gets the
//               same class distribution; the number of classes at most, when each sample is
//               confidently one class and all classes come equally often. Mean and standard
//               deviation over `splits` equal parts, as the paper reports it.
//   confidence  the mean of each sample's top-class probability.
//   shares      the fraction of samples whose top class is each class (mode collapse shows as
//               a few classes holding most samples).
#pragma once

#include <vector>

#include "nn/executor.h"

namespace rg {

struct ClassifierScore {
  int64_t samples = 0;
  double score = 0, score_std = 0;
  double confidence = 0;
  std::vector<double> shares;  // [classes]
  // Classes holding at least `share` of the samples.
  int classes_with_share(double share) const;
};

// probabilities: n rows of k class probabilities (each row sums to 1); splits >= 1, <= n.
ClassifierScore score_probabilities(const std::vector<double>& probabilities, int64_t n, int64_t k, int splits);

// Runs the judge (an executor of a softmax_cross_entropy model: nn/executor.h) over images
// [n, judge input...] in batches of `batch` and scores its softmax outputs.
Result<ClassifierScore> score_with_classifier(Executor& judge, const Tensor& images, int64_t batch, int splits);

}  // namespace rg
