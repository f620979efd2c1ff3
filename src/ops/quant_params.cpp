// Per-tensor quantization parameters, conversions, and calibration ranges.
#include "ops/quant_params.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "cpu/kernel_tables.h"

namespace rg {

QuantParams activation_params(float lo, float hi, int bits) {
  RG_CHECK(bits >= 2 && bits <= 8, "activation_params: " << bits << " bits");
  lo = std::min(lo, 0.0f);
  hi = std::max(hi, 0.0f);
  QuantParams p;
  p.lo = -(1 << (bits - 1));
  p.hi = (1 << (bits - 1)) - 1;
  p.scale = hi > lo ? (hi - lo) / static_cast<float>(p.hi - p.lo) : 1.0f;
  const double zp = std::nearbyint(p.lo - static_cast<double>(lo) / p.scale);
  p.zero_point = static_cast<int32_t>(std::clamp(zp, 1.0 * p.lo, 1.0 * p.hi));
  return p;
}

template <typename T>
double weight_channel_step(const T* w, int64_t depth, int64_t stride, int bits) {
  const double qmax = weight_qmax(bits);
  double max_abs = 0;
  for (int64_t i = 0; i < depth; ++i) max_abs = std::max(max_abs, std::fabs(static_cast<double>(w[i * stride])));
  if (bits >= 8 || max_abs == 0) return max_abs / qmax;
  double best_step = max_abs / qmax, best_error = -1;
  for (int c = 50; c >= 25; --c) {  // c / 50 of the range
    const double step = max_abs * c / 50.0 / qmax;
    double error = 0;
    for (int64_t i = 0; i < depth; ++i) {
      const double v = static_cast<double>(w[i * stride]);
      const double d = v - std::clamp(std::nearbyint(v / step), -qmax, qmax) * step;
      error += d * d;
    }
    if (best_error < 0 || error < best_error) {
      best_error = error;
      best_step = step;
    }
  }
  return best_step;
}
template double weight_channel_step<float>(const float*, int64_t, int64_t, int);
template double weight_channel_step<double>(const double*, int64_t, int64_t, int);

void quantize_s8(int64_t n, const float* x, QuantParams p, int8_t* q) {
  const float inverse = 1.0f / p.scale, lo = static_cast<float>(p.lo), hi = static_cast<float>(p.hi);
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(x[i] * inverse) + static_cast<float>(p.zero_point);
    q[i] = static_cast<int8_t>(v > hi ? hi : (v >= lo ? v : lo));  // NaN -> lo
  }
}

void dequantize_s8(int64_t n, const int8_t* q, QuantParams p, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] = p.scale * static_cast<float>(int32_t{q[i]} - p.zero_point);
}

Qs8Clamp qs8_clamp(QuantParams out, float lo, float hi) {
  const float ends[2] = {lo, hi};
  int8_t q[2];
  quantize_s8(2, ends, out, q);  // within [out.lo, out.hi]
  return Qs8Clamp{q[0], q[1]};
}

const char* calibration_name(CalibrationMethod method) {
  return method == CalibrationMethod::minmax ? "minmax" : "percentile";
}

bool calibration_from_name(const std::string& name, CalibrationMethod* method) {
  if (name == "minmax") {
    *method = CalibrationMethod::minmax;
  } else if (name == "percentile") {
    *method = CalibrationMethod::percentile;
  } else {
    return false;
  }
  return true;
}

// The min/max bounds skip NaN (a tensor of NaN only leaves them at +inf and -inf, which
// activation_params widens to [0, 0]); so does the percentile sample (NaN has no order: sorting
// it is undefined behaviour), which keeps every other value it takes.
void RangeObserver::observe(const float* x, int64_t n) {
  if (n <= 0) return;
  float lo, hi;
  f32_vector().min_max(n, x, &lo, &hi);
  min_ = count_ == 0 ? lo : std::min(min_, lo);
  max_ = count_ == 0 ? hi : std::max(max_, hi);
  count_ += n;
  const int64_t step = std::max<int64_t>(1, n / kSamplePerCall);
  for (int64_t i = 0; i < n; i += step)
    if (!std::isnan(x[i])) sample_.push_back(x[i]);
}

void RangeObserver::range(CalibrationMethod method, double percentile, float* lo, float* hi) const {
  RG_CHECK(count_ > 0, "range of a tensor never observed");
  if (method == CalibrationMethod::minmax || sample_.size() < 2) {
    *lo = min_;
    *hi = max_;
    return;
  }
  std::vector<float> sorted = sample_;
  std::sort(sorted.begin(), sorted.end());
  const double last = static_cast<double>(sorted.size() - 1);
  auto at = [&](double pct) { return sorted[static_cast<size_t>(std::llround(last * pct / 100.0))]; };
  *lo = at(100.0 - percentile);
  *hi = at(percentile);
}

}  // namespace rg
