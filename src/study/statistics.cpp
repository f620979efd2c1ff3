// The study's statistics: spreads, the two-level bootstrap comparison and Holm's step-down.
// Why the rule is what it is, and its error rates by simulation: docs/study.md, "How the study decides".
#include "study/statistics.h"

#include <algorithm>
#include <numeric>

#include "base/rng.h"

namespace rg {

namespace {

// The quantile q of v[0..n), n >= 1, by selection (R's type 7: linear between order statistics);
// reorders v. q = 0.5 is the median: the middle value, or the mean of the middle two.
double quantile_in_place(double* v, int n, double q) {
  const double h = (n - 1) * q;
  const int lo = static_cast<int>(h);
  const double fraction = h - lo;
  std::nth_element(v, v + lo, v + n);
  if (fraction == 0) return v[lo];
  const double above = *std::min_element(v + lo + 1, v + n);
  return v[lo] + fraction * (above - v[lo]);
}

double median_in_place(double* v, int n) { return quantile_in_place(v, n, 0.5); }

bool usable_for(double value, Effect effect) {
  return std::isfinite(value) && (effect == Effect::difference || value > 0);
}

// One side's usable values grouped by round: round r holds values[begin[r] .. begin[r + 1]).
// sorted holds the same values in order, and rank[i] is where values[i] stands there.
struct RoundedValues {
  std::vector<double> values, sorted;
  std::vector<int> begin{0}, rank;
  int rounds() const { return static_cast<int>(begin.size()) - 1; }
  int round_size(int r) const { return begin[r + 1] - begin[r]; }
};

RoundedValues usable_rounds(const RoundSamples& samples, Effect effect) {
  RoundedValues side;
  for (const std::vector<double>& round : samples) {
    for (double v : round) {
      if (usable_for(v, effect)) side.values.push_back(v);
    }
    if (static_cast<int>(side.values.size()) > side.begin.back()) side.begin.push_back(static_cast<int>(side.values.size()));
  }
  std::vector<int> order(side.values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return side.values[x] < side.values[y]; });
  side.rank.resize(order.size());
  for (size_t place = 0; place < order.size(); ++place) {
    side.sorted.push_back(side.values[order[place]]);
    side.rank[order[place]] = static_cast<int>(place);
  }
  return side;
}

// A median on the comparison's scale: a log for ratios (a ratio's error is symmetric there).
double on_scale(double median, Effect effect) { return effect == Effect::ratio ? std::log(median) : median; }
double from_scale(double x, Effect effect) { return effect == Effect::ratio ? std::exp(x) : x; }

// Uniform in [0, n) by multiply-shift on 32 random bits (Lemire): no division in the bootstrap's
// inner loop; the bias, under n / 2^32, is far below what 2000 replicates can see.
int draw_below(Rng& rng, int n) {
  return static_cast<int>((static_cast<uint64_t>(rng.next_u32()) * static_cast<uint64_t>(n)) >> 32);
}

// The median of the multiset that holds counts[i] copies of sorted[i], n in all.
double median_of_counts(const std::vector<double>& sorted, const int* counts, int n) {
  const int lower = (n - 1) / 2, upper = n / 2;  // the places of the middle value(s)
  int seen = 0;
  double lower_value = 0;
  for (size_t i = 0;; ++i) {
    if (seen <= lower && seen + counts[i] > lower) lower_value = sorted[i];
    seen += counts[i];
    if (seen > upper) return lower == upper ? lower_value : 0.5 * (lower_value + sorted[i]);
  }
}

// One bootstrap replicate of a side's pooled median: its rounds drawn with replacement, then the
// values of each drawn round drawn with replacement, counted by their place in the sorted values
// (no sorting per replicate). counts has room for the side's values.
double resampled_median(const RoundedValues& side, Rng& rng, int* counts) {
  std::fill(counts, counts + side.values.size(), 0);
  int n = 0;
  for (int i = 0; i < side.rounds(); ++i) {
    const int r = draw_below(rng, side.rounds());
    const int size = side.round_size(r);
    const int* ranks = side.rank.data() + side.begin[r];
    for (int j = 0; j < size; ++j) ++counts[ranks[draw_below(rng, size)]];
    n += size;
  }
  return median_of_counts(side.sorted, counts, n);
}

// Each side's replicate medians, on the comparison's scale.
struct BootstrapMedians {
  std::vector<double> a, b;
};

BootstrapMedians bootstrap_medians(const RoundedValues& a, const RoundedValues& b, Effect effect,
                                   const DecisionRule& rule) {
  std::vector<int> counts(std::max(a.values.size(), b.values.size()));
  BootstrapMedians medians;
  const int resamples = std::max(2, rule.resamples);
  medians.a.resize(static_cast<size_t>(resamples));
  medians.b.resize(static_cast<size_t>(resamples));
  Rng rng(rule.seed);
  for (int i = 0; i < resamples; ++i) {
    medians.a[i] = on_scale(resampled_median(a, rng, counts.data()), effect);
    medians.b[i] = on_scale(resampled_median(b, rng, counts.data()), effect);
  }
  return medians;
}

// A variance from the central 80% of values (which reorders): ((q90 - q10) / (2 z90))^2, the variance
// of a normal distribution with those deciles. Unlike the sample variance, a wild round drawn in
// fewer than a tenth of the replicates leaves it alone.
double central_variance(std::vector<double>& v) {
  const double normal_z90 = 1.2815515655446004;
  const int n = static_cast<int>(v.size());
  const double width = quantile_in_place(v.data(), n, 0.9) - quantile_in_place(v.data(), n, 0.1);
  return width * width / (4 * normal_z90 * normal_z90);
}

// The continued fraction of the regularized incomplete beta function (modified Lentz).
double incomplete_beta_fraction(double x, double a, double b) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    for (int odd = 0; odd < 2; ++odd) {
      const double numerator = odd == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                        : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + numerator * d;
      d = 1 / (std::fabs(d) < tiny ? tiny : d);
      c = 1 + numerator / c;
      if (std::fabs(c) < tiny) c = tiny;
      h *= d * c;
      if (odd == 1 && std::fabs(d * c - 1) < 1e-15) return h;
    }
  }
  return h;
}

// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * incomplete_beta_fraction(x, a, b) / a;
  return 1 - front * incomplete_beta_fraction(1 - x, b, a) / b;
}

// P(|T| >= t) for Student's t with df degrees of freedom.
double student_two_sided_tail(double t, double df) {
  return incomplete_beta(df / (df + t * t), df / 2, 0.5);
}

// The t beyond which Student's t with df degrees of freedom has the two-sided tail `tail`.
double student_critical_value(double tail, double df) {
  double lo = 0, hi = 1;
  while (student_two_sided_tail(hi, df) > tail) hi *= 2;
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_two_sided_tail(mid, df) > tail ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// The standard error of the estimate (on the comparison's scale) and its degrees of freedom.
struct StandardError {
  double se = 0, df = 0;
};

// Each side's variance from its replicate medians' central 80% (central_variance); degrees of freedom
// by Welch-Satterthwaite over the rounds, the independent unit. Not widened by R/(R-1), although a
// bootstrap of R rounds alone would underestimate by that much: resampling the values within each
// drawn round too counts their noise a second time, which makes up for it (docs/study.md measures
// both: widening only costs power).
StandardError standard_error(BootstrapMedians& medians, int rounds_a, int rounds_b) {
  const double var_a = central_variance(medians.a), var_b = central_variance(medians.b);
  StandardError error;
  error.se = std::sqrt(var_a + var_b);
  const double welch_denominator = var_a * var_a / (rounds_a - 1) + var_b * var_b / (rounds_b - 1);
  error.df = welch_denominator > 0 ? (var_a + var_b) * (var_a + var_b) / welch_denominator : rounds_a + rounds_b - 2;
  return error;
}

// Sets the p-value and the 95% interval of a decidable comparison, x being its estimate on the
// comparison's scale: x over its standard error referred to Student's t.
void test_estimate(const RoundedValues& a, const RoundedValues& b, double x, const DecisionRule& rule,
                   Comparison& c) {
  BootstrapMedians medians = bootstrap_medians(a, b, c.effect, rule);
  const StandardError error = standard_error(medians, a.rounds(), b.rounds());
  if (error.se == 0) {  // every replicate alike: no noise at all
    c.p = x == 0 ? 1 : 0;
    c.low = c.high = c.estimate;
    return;
  }
  c.p = student_two_sided_tail(std::fabs(x) / error.se, error.df);
  const double half_width = student_critical_value(0.05, error.df) * error.se;
  c.low = from_scale(x - half_width, c.effect);
  c.high = from_scale(x + half_width, c.effect);
}

bool beyond_minimum_effect(const Comparison& c, const DecisionRule& rule) {
  if (c.effect == Effect::ratio) {
    const double floor = 1 + rule.min_ratio_effect;
    return c.estimate > floor || c.estimate < 1 / floor;
  }
  return std::fabs(c.estimate) > rule.min_difference_effect;
}

int direction_of(const Comparison& c) {
  const double none = c.effect == Effect::ratio ? 1 : 0;
  return c.estimate > none ? 1 : c.estimate < none ? -1 : 0;
}

}  // namespace

double Spread::relative_iqr() const {
  return n == 0 || median == 0 ? NAN : (q3 - q1) / std::fabs(median);
}

double Spread::relative_range() const {
  return n == 0 || median == 0 ? NAN : (max - min) / std::fabs(median);
}

Spread spread_of(const std::vector<double>& values) {
  std::vector<double> finite;
  for (double v : values) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  Spread s;
  s.n = static_cast<int>(finite.size());
  if (finite.empty()) return s;
  const auto extremes = std::minmax_element(finite.begin(), finite.end());
  s.min = *extremes.first;
  s.max = *extremes.second;
  s.q1 = quantile_in_place(finite.data(), s.n, 0.25);
  s.median = quantile_in_place(finite.data(), s.n, 0.5);
  s.q3 = quantile_in_place(finite.data(), s.n, 0.75);
  return s;
}

std::vector<double> pooled(const RoundSamples& samples) {
  std::vector<double> all;
  for (const std::vector<double>& round : samples) all.insert(all.end(), round.begin(), round.end());
  return all;
}

Comparison compare(const RoundSamples& a, const RoundSamples& b, Effect effect, const DecisionRule& rule) {
  Comparison c;
  c.effect = effect;
  RoundedValues side_a = usable_rounds(a, effect), side_b = usable_rounds(b, effect);
  c.rounds_a = side_a.rounds();
  c.rounds_b = side_b.rounds();
  if (side_a.values.empty() || side_b.values.empty()) return c;
  std::vector<double> values_a = side_a.values, values_b = side_b.values;
  const double x = on_scale(median_in_place(values_a.data(), static_cast<int>(values_a.size())), effect) -
                   on_scale(median_in_place(values_b.data(), static_cast<int>(values_b.size())), effect);
  c.estimate = from_scale(x, effect);
  const int min_rounds = std::max(2, rule.min_rounds);
  c.decidable = c.rounds_a >= min_rounds && c.rounds_b >= min_rounds;
  if (c.decidable) test_estimate(side_a, side_b, x, rule, c);
  return c;
}

void decide(const std::vector<Comparison*>& family, const DecisionRule& rule) {
  std::vector<Comparison*> tested;
  for (Comparison* c : family) {
    c->p_adjusted = NAN;
    c->verdict = 0;
    if (c->decidable && std::isfinite(c->p)) tested.push_back(c);
  }
  std::stable_sort(tested.begin(), tested.end(), [](const Comparison* x, const Comparison* y) { return x->p < y->p; });
  double running = 0;  // Holm's adjusted p-values never fall along the order
  for (size_t k = 0; k < tested.size(); ++k) {
    Comparison& c = *tested[k];
    running = std::max(running, std::min(1.0, static_cast<double>(tested.size() - k) * c.p));
    c.p_adjusted = running;
    if (running < rule.alpha && beyond_minimum_effect(c, rule)) c.verdict = direction_of(c);
  }
}

}  // namespace rg
