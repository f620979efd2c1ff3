// Whether a run's quality figure shows that the network learned: beyond what a network that
// learned nothing scores (train --json's chance figures), by a stated rule. The study compares
// precisions and devices for quality only where every figure compared has left chance; a run
// still at chance "did not learn in this budget" and accepts or refuses nothing.
#pragma once

#include <cstdint>
#include <string>

namespace rg {

struct LearnedVerdict {
  bool learned = false;
  std::string why;  // one sentence for the report
};

// The rules, by quality_name (the RunRecord's):
//   "test accuracy"  chance: train --json's chance_accuracy (the best constant answer on the
//                    test samples scored). Learned when quality - chance exceeds both
//                    kChanceStandardErrors binomial standard errors of chance at test_samples,
//                    sqrt(chance (1 - chance) / n), and kMinAccuracyGain (2 points): a
//                    one-sided false alarm below 0.2% for a network answering at chance, and
//                    no claim from a gain too small to matter on a large test set.
//   "test MSE"       chance: test_mse_baseline (answering every sample with the training mean).
//                    Learned when quality < kMseFraction (0.9) x chance.
//   "GAN score"      chance: chance_score (the untrained generator's), or kGanScoreFloor (1, the
//                    score of samples the judge cannot tell apart) when NaN. Learned when quality
//                    >= chance + kGanScoreMargin (1): the score is exp(I(sample; judged class)),
//                    the number of classes the judge tells apart in G's samples, so the margin is
//                    one whole class more than the untrained generator's.
// Not learned, saying why: a figure or a chance that is not finite, a test size below 1 for
// accuracy, an unknown quality_name.
constexpr double kChanceStandardErrors = 3.0;
constexpr double kMinAccuracyGain = 0.02;
constexpr double kMseFraction = 0.9;
constexpr double kGanScoreFloor = 1.0;
constexpr double kGanScoreMargin = 1.0;

LearnedVerdict left_chance(const std::string& quality_name, double quality, double chance, int64_t test_samples);

}  // namespace rg
