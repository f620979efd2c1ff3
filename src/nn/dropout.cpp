#include "nn/dropout.h"

#include <cmath>
#include <cstdio>

#include "nn/cfg.h"

namespace rg {

Result<std::unique_ptr<Layer>> Dropout::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const double rate, section.get_float_or("rate", 0.5, 0.0, 0.99));
  return std::unique_ptr<Layer>(new Dropout(rate));
}

Status Dropout::init(Rng& rng, DType dtype) {
  (void)dtype;
  seed_ = rng.next_u64();
  return Status();
}

void Dropout::apply_mask(const Tensor& from, const Tensor& to, const LayerContext& ctx) const {
  // A value is dropped when a 32-bit draw falls below rate * 2^32; one draw per value, in
  // order, so the mask does not depend on the thread count.
  const uint64_t threshold = static_cast<uint64_t>(std::llround(rate_ * 4294967296.0));
  Rng rng(seed_, ctx.noise_stream);
  dispatch_float(from.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = static_cast<T>(1.0 / (1.0 - rate_));
    const T* in = from.data<T>();
    T* out = to.data<T>();
    const int64_t n = from.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = rng.next_u32() < threshold ? T(0) : in[i] * scale;
  });
}

void Dropout::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  if (ctx.training && rate_ > 0) {
    apply_mask(x, y, ctx);
  } else {
    y.copy_from(x);
  }
}

void Dropout::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)x;
  (void)y;
  if (!dx.defined()) return;
  if (ctx.training && rate_ > 0) {
    apply_mask(dy, dx, ctx);
  } else {
    dx.copy_from(dy);
  }
}

std::string Dropout::describe() const {
  char text[32];
  std::snprintf(text, sizeof text, "rate %g", rate_);
  return text;
}

}  // namespace rg
