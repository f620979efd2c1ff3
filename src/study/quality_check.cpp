// Quality beyond chance: the rules of quality_check.h.
#include "study/quality_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rg {

namespace {

std::string printed(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char text[256];
  std::snprintf(text, sizeof text, format, a, b, c, d);
  return text;
}

LearnedVerdict accuracy_verdict(double quality, double chance, int64_t n) {
  if (n < 1) return {false, "no test samples to judge the accuracy on"};
  const double standard_error = std::sqrt(chance * (1 - chance) / static_cast<double>(n));
  const double needed = std::max(kChanceStandardErrors * standard_error, kMinAccuracyGain);
  const double gain = quality - chance;
  const std::string against = printed("chance (%.3f on %.0f test samples)", chance, static_cast<double>(n));
  if (gain > needed) {
    return {true, printed("%.4f is %.1f points above ", quality, 100 * gain) + against};
  }
  if (gain <= kChanceStandardErrors * standard_error) {
    return {false, printed("%.4f is within %.0f standard errors of ", quality, kChanceStandardErrors) + against};
  }
  return {false, printed("%.4f is less than %.0f points above ", quality, 100 * kMinAccuracyGain) + against};
}

LearnedVerdict mse_verdict(double quality, double chance) {
  const std::string against = printed("the MSE of answering the mean (%.5f)", chance);
  if (quality < kMseFraction * chance) {
    return {true, printed("%.5f is %.0f%% of ", quality, 100 * quality / chance) + against};
  }
  return {false, printed("%.5f is not below %.0f%% of ", quality, 100 * kMseFraction) + against};
}

LearnedVerdict gan_verdict(double quality, double chance) {
  const bool measured = std::isfinite(chance);
  const double floor = measured ? chance : kGanScoreFloor;
  const std::string against = measured ? printed("the untrained generator's %.2f", floor)
                                       : printed("the floor %.0f (samples the judge cannot tell apart)", floor);
  if (quality >= floor + kGanScoreMargin) {
    return {true, printed("score %.2f is %.2f above ", quality, quality - floor) + against};
  }
  return {false, printed("score %.2f is less than %.0f above ", quality, kGanScoreMargin) + against};
}

}  // namespace

LearnedVerdict left_chance(const std::string& quality_name, double quality, double chance, int64_t test_samples) {
  if (!std::isfinite(quality)) return {false, "no " + quality_name + " figure"};
  if (quality_name == "GAN score") return gan_verdict(quality, chance);
  if (quality_name != "test accuracy" && quality_name != "test MSE") {
    return {false, "'" + quality_name + "' has no rule for telling it from chance"};
  }
  if (!std::isfinite(chance) || chance < 0) return {false, "no chance figure to compare the " + quality_name + " with"};
  if (quality_name == "test accuracy") return accuracy_verdict(quality, chance, test_samples);
  return mse_verdict(quality, chance);
}

}  // namespace rg
