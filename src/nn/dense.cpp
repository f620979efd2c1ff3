// Dense forward and backward as three GEMMs and a bias sum.
#include "nn/dense.h"

#include "cpu/kernel_tables.h"
#include "nn/cfg.h"
#include "nn/layer_profile.h"
#include "nn/layer_gemm.h"
#include "nn/workspace.h"
#include "ops/elementwise.h"
#include "ops/gemm.h"

namespace rg {

Result<std::unique_ptr<Layer>> Dense::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const int64_t units, section.get_int("units", 1, 1 << 24));
  RG_ASSIGN(const Init init, init_from_section(section));
  RG_ASSIGN(const bool bias, section.get_bool_or("bias", true));
  return std::unique_ptr<Layer>(new Dense(units, init, bias));
}

Result<Shape> Dense::configure(const Shape& input) {
  in_ = input.numel();  // any sample shape is flattened
  return Shape{units_};
}

Status Dense::init(Rng& rng, DType dtype) {
  RG_ASSIGN(weight_.value, Tensor::zeros(Shape{in_, units_}, dtype, name() + ".weight"));
  weight_.channels = units_;
  RG_ASSIGN(weight_.grad, Tensor::zeros(Shape{in_, units_}, dtype, name() + ".weight.grad"));
  weight_.name = name() + ".weight";
  initialise(weight_.value, init_, in_, units_, rng);
  if (has_bias_) {
    RG_ASSIGN(bias_.value, Tensor::zeros(Shape{units_}, dtype, name() + ".bias"));
    RG_ASSIGN(bias_.grad, Tensor::zeros(Shape{units_}, dtype, name() + ".bias.grad"));
    bias_.name = name() + ".bias";
  }
  return Status();
}

namespace {
// Rows of an f16 W widened at a time: a block of 128 x units f32 (128 KB at 256 units), small
// beside the f16 W it saves.
constexpr int64_t kF16WeightRows = 128;
}  // namespace

int64_t Dense::workspace_elements(int64_t n) const {
  (void)n;
  const bool f16 = weight_.value.defined() && weight_.value.dtype() == DType::f16;
  return f16 ? std::min(kF16WeightRows, in_) * units_ : 0;
}

void Dense::forward_f16_weights(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0];
  const uint16_t* w = weight_.value.data<uint16_t>();
  const Tensor block = scratch(ctx, Shape{workspace_elements(n)}, DType::f32);
  for (int64_t k0 = 0; k0 < in_; k0 += kF16WeightRows) {
    const int64_t rows = std::min(kF16WeightRows, in_ - k0);
    f16_convert().to_f32(rows * units_, w + k0 * units_, block.f32());
    // y[n x out] (+)= x[n x k0:k0+rows] * W[k0:k0+rows x out]
    f32_gemm(GemmShape{Trans::no, Trans::no, n, units_, rows, in_, units_, units_}, 1.0f, x.f32() + k0, block.f32(),
             k0 == 0 ? 0.0f : 1.0f, y.f32(), ctx.pool);
  }
  if (has_bias_) add_bias(ctx.pool, n, units_, bias_.value.f32(), y.f32());
}

void Dense::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  if (weight_.value.dtype() == DType::f16) return forward_f16_weights(x, y, ctx);
  const int64_t n = x.shape()[0];
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* out = y.data<T>();
    // y[n x out] = x[n x in] * W[in x out]
    layer_gemm(ctx, kForwardProduct, units_, GemmShape{Trans::no, Trans::no, n, units_, in_, in_, units_, units_}, T(1),
               x.data<T>(), weight_.value.data<T>(), T(0), out);
    if (has_bias_) add_bias(ctx.pool, n, units_, bias_.value.data<T>(), out);
  });
}

void Dense::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)y;
  const int64_t n = x.shape()[0];
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* g = dy.data<T>();
    const T keep = ctx.accumulate_grads ? T(1) : T(0);
    // dW[in x out] (+)= x[n x in]^T * dy[n x out]
    layer_gemm(ctx, kWeightGradProduct, 0, GemmShape{Trans::yes, Trans::no, in_, units_, n, in_, units_, units_}, T(1),
               x.data<T>(), g, keep, weight_.grad.data<T>());
    // db[j] (+)= sum_i dy[i, j], rows in order so the sum does not depend on threads
    if (has_bias_) {
      if (!ctx.accumulate_grads) bias_.grad.fill_zero();
      column_sum(ctx.pool, n, units_, g, bias_.grad.data<T>());
    }
    if (dx.defined()) {
      const InputGradScope timed(ctx);
      // dx[n x in] = dy[n x out] * W[in x out]^T
      layer_gemm(ctx, kInputGradProduct, units_, GemmShape{Trans::no, Trans::yes, n, in_, units_, units_, units_, in_}, T(1), g,
                 weight_.value.data<T>(), T(0), dx.data<T>());
    }
  });
}

std::vector<Param*> Dense::params() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

std::string Dense::describe() const {
  return std::to_string(in_) + " -> " + std::to_string(units_) + ", init " + init_name(init_) +
         (has_bias_ ? "" : ", no bias");
}

}  // namespace rg
