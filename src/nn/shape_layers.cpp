#include "nn/shape_layers.h"

#include <algorithm>

#include "nn/cfg.h"

namespace rg {

// ---------------------------------------------------------------- Flatten, Reshape

Result<std::unique_ptr<Layer>> Reshape::from_cfg(const CfgSection& section) {
  if (section.kind() == "flatten") return std::unique_ptr<Layer>(new Reshape(Shape{}));
  RG_ASSIGN(const Shape target, section.get_shape("shape"));
  return std::unique_ptr<Layer>(new Reshape(target));
}

Result<Shape> Reshape::configure(const Shape& input) {
  input_ = input;
  output_ = target_.rank() == 0 ? Shape{input.numel()} : target_;
  if (output_.numel() != input.numel()) {
    return Status::error("cannot reshape " + input.str() + " (" + std::to_string(input.numel()) + " values) to " +
                         output_.str() + " (" + std::to_string(output_.numel()) + ")");
  }
  return output_;
}

void Reshape::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) { y.copy_from(x, ctx.pool); }

void Reshape::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)x;
  (void)y;
  if (dx.defined()) dx.copy_from(dy, ctx.pool);
}

// ---------------------------------------------------------------- Upsample

Result<std::unique_ptr<Layer>> Upsample::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const int64_t scale, section.get_int_or("scale", 2, 1, 64));
  return std::unique_ptr<Layer>(new Upsample(scale));
}

Result<Shape> Upsample::configure(const Shape& input) {
  if (input.rank() != 3) return Status::error("upsample takes images (height x width x channels), not " + input.str());
  input_ = input;
  return Shape{input[0] * scale_, input[1] * scale_, input[2]};
}

void Upsample::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0], h = input_[0], w = input_[1], c = input_[2], s = scale_;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    parallel_for(ctx.pool, n * h, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {  // r = (sample, input row)
        const T* in = x.data<T>() + r * w * c;
        T* out = y.data<T>() + r * s * (w * s * c);
        for (int64_t iw = 0; iw < w; ++iw)
          for (int64_t k = 0; k < s; ++k) std::copy(in + iw * c, in + (iw + 1) * c, out + (iw * s + k) * c);
        for (int64_t k = 1; k < s; ++k) std::copy(out, out + w * s * c, out + k * w * s * c);
      }
    });
  });
}

void Upsample::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)x;
  (void)y;
  if (!dx.defined()) return;
  const int64_t n = dy.shape()[0], h = input_[0], w = input_[1], c = input_[2], s = scale_;
  dispatch_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    parallel_for(ctx.pool, n * h, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        T* out = dx.data<T>() + r * w * c;
        std::fill(out, out + w * c, T(0));
        for (int64_t kh = 0; kh < s; ++kh) {
          const T* in = dy.data<T>() + (r * s + kh) * (w * s * c);
          for (int64_t iw = 0; iw < w; ++iw)
            for (int64_t kw = 0; kw < s; ++kw)
              for (int64_t ch = 0; ch < c; ++ch) out[iw * c + ch] += in[(iw * s + kw) * c + ch];
        }
      }
    });
  });
}

}  // namespace rg
