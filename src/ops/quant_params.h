// Affine int8 quantization of tensors (docs/quantization.md): real = scale * (q - zero_point).
// Activations use one (scale, zero_point) per tensor over [-128, 127], chosen from a range seen
// in calibration; weights are symmetric per output channel over [-qmax, qmax] (weight_qmax).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rg {

// The weights' grid of `bits` (2 to 8) bits: [-qmax, qmax], qmax = 2^(bits - 1) - 1 (127 at 8
// bits, 7 at 4: the QAT/PTQ forms w4a8-qat, w4a8-ptq), scale = max|w| / qmax per output channel.
constexpr int kMinWeightBits = 2, kMaxWeightBits = 8;
inline int weight_qmax(int bits) { return (1 << (bits - 1)) - 1; }
// The grid step of one output channel's weights w[i * stride], i < depth, at `bits`: max|w| / qmax
// at 8 bits (int8's, as it always was); under 8 bits that of the clipped range c max|w|, c from 1
// down to 0.5 by 0.02, whose grid leaves the least squared error (ties: the wider range): with 15
// levels one outlier would leave most weights on three of them. 0 for a channel of zeros. The
// export (int8_model.cpp, on BN-folded doubles) and QAT's fake quantizer (f32) both take it:
// scaling a channel scales every candidate's error alike, so folding keeps the choice.
template <typename T>
double weight_channel_step(const T* w, int64_t depth, int64_t stride, int bits);

struct QuantParams {
  float scale = 1;
  int32_t zero_point = 0;
  int32_t lo = -128, hi = 127;  // the grid's ends: all of int8, or 2^bits levels (activation_params)
};

// The range [lo, hi] widened to hold 0 (zero padding and ReLU's floor must be exact), spread
// over 2^bits - 1 steps (255 at 8 bits) of the grid [-2^(bits-1), 2^(bits-1) - 1] (bits 2 to 8: a
// subrange of int8 the kernels read as int8); zero_point = round(grid's low end - lo / scale). A
// range of one point gets scale 1.
QuantParams activation_params(float lo, float hi, int bits = 8);

// q = clamp(round_half_even(x / scale) + zero_point, p.lo, p.hi), through x * (1 / scale).
void quantize_s8(int64_t n, const float* x, QuantParams p, int8_t* q);
// x = scale * (q - zero_point).
void dequantize_s8(int64_t n, const int8_t* q, QuantParams p, float* x);

// An int8 output's clamp in quantized values: [-128, 127], or narrower where an activation that
// clamps (relu, relu6) is fused into the stage that makes the output.
struct Qs8Clamp {
  int32_t lo = -128, hi = 127;
};
// The real range [lo, hi] on the grid of `out` (hi may be +inf): each end quantized as
// quantize_s8 quantizes a value equal to it, so the clamped int8 output is the quantized clamped
// real one (relu's lo = 0 is out's zero point).
Qs8Clamp qs8_clamp(QuantParams out, float lo, float hi);

// How a calibration range is chosen from the values seen.
enum class CalibrationMethod { minmax, percentile };
const char* calibration_name(CalibrationMethod method);
bool calibration_from_name(const std::string& name, CalibrationMethod* method);

// The values one tensor took over the calibration batches: the exact min and max, and an
// evenly strided sample (at most kSamplePerCall values per call) for percentiles.
class RangeObserver {
 public:
  static constexpr int64_t kSamplePerCall = 16384;
  void observe(const float* x, int64_t n);
  // minmax: [min, max]; percentile p (e.g. 99.99): the (100 - p)th and pth percentiles of the sample.
  void range(CalibrationMethod method, double percentile, float* lo, float* hi) const;
  bool empty() const { return count_ == 0; }

 private:
  int64_t count_ = 0;
  float min_ = 0, max_ = 0;
  std::vector<float> sample_;
};

}  // namespace rg
