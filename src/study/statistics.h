// The statistics the study decides with: a figure's spread (median, quartiles, range) and the
// comparison of two figures measured in rounds (a two-level bootstrap of the ratio or difference
// of their medians, a small-sample t reference, Holm over a family of comparisons, and a minimum
// effect), so the report claims "A is faster than B" only beyond the noise it measured.
// docs/study.md ("How the study decides") gives the rule and its error rates, measured by simulation.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace rg {

// A figure's samples summarised: quartiles by linear interpolation (R's type 7); non-finite samples ignored.
struct Spread {
  int n = 0;
  double median = NAN, q1 = NAN, q3 = NAN, min = NAN, max = NAN;
  double relative_iqr() const;    // (q3 - q1) / |median|; NaN when n == 0 or median == 0
  double relative_range() const;  // (max - min) / |median|
};
Spread spread_of(const std::vector<double>& values);

// A figure's samples as measured: one group per round (one child run), the values of that round inside
// (e.g. the speeds of its epochs). Rounds may hold different numbers of values; empty rounds are ignored.
using RoundSamples = std::vector<std::vector<double>>;
std::vector<double> pooled(const RoundSamples& samples);  // all values, in order

enum class Effect { ratio, difference };  // median(a)/median(b) (speeds) or median(a)-median(b) (accuracy points)

struct DecisionRule {
  double alpha = 0.05;               // family-wise error rate, Holm's step-down over the family
  double min_ratio_effect = 0.03;    // a ratio within [1/(1+e), 1+e] is never claimed, however sure
  double min_difference_effect = 0;  // the same for differences, in the values' unit
  int resamples = 2000;
  uint64_t seed = 1;                 // the bootstrap's stream: the same samples give the same answer
  // Rounds (with a usable value) each side needs before a comparison is decidable: rounds are the
  // independent unit (the epochs of one round share its minute of machine load); 2 is the least that
  // gives a standard error, and 3 the least that also finds a 30% difference most of the time.
  int min_rounds = 3;
};

struct Comparison {
  Effect effect = Effect::ratio;
  double estimate = NAN;          // ratio or difference of the pooled medians
  double low = NAN, high = NAN;   // 95% interval of the estimate (decidable comparisons only)
  double p = NAN;                 // two-sided p-value of "no difference" (decidable comparisons only)
  double p_adjusted = NAN;        // after Holm over its family (decide)
  int verdict = 0;                // +1 a above b beyond the noise, -1 below, 0 no measurable difference
  bool decidable = false;         // enough rounds/values that this rule could ever give +1 or -1
  int rounds_a = 0, rounds_b = 0; // rounds with a usable value on each side
};

// Hierarchical (two-level) bootstrap: resample rounds with replacement, then values within each drawn
// round; the spread of each side's replicate medians (on a log scale for ratios; the central 80%, so a
// wild round drawn in a few replicates does not swamp it) gives the estimate's standard error, and the
// estimate over it, referred to Student's t with Welch's degrees of freedom over the rounds (the
// independent unit), gives the 95% interval and the p-value: the t reference, not the replicates'
// percentiles, keeps the false-claim rate under alpha with 3 rounds a side (docs/study.md).
// A ratio is of positive values: non-positive ones are ignored like non-finite ones. Fewer than
// rule.min_rounds rounds a side: the estimate set where both sides have values, p and interval NaN,
// decidable false.
Comparison compare(const RoundSamples& a, const RoundSamples& b, Effect effect, const DecisionRule& rule = {});
// Holm's step-down over the family (pointers into the caller's comparisons): sets p_adjusted and verdict
// (verdict != 0 only when p_adjusted < alpha AND the effect is beyond the rule's minimum AND decidable).
// Comparisons without a p-value (not decidable) are not counted in the family.
void decide(const std::vector<Comparison*>& family, const DecisionRule& rule = {});

}  // namespace rg
