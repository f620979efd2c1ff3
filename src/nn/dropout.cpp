#include "nn/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "base/thread_pool.h"
#include "cpu/kernel_tables.h"
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
  // Value i of the step's sample s is dropped when dropout_draw(state, s * row_size + i) falls
  // below rate * 2^32 (ops/dropout_mask.h): counter-based draws, so the mask depends neither on
  // the thread count nor on how the step's batch was split. Rows are contiguous, so the values of
  // this forward are counters row_offset * row_size + 0, 1, ... in order. State, threshold, f32
  // scale and draws are the device layer's too (opencl/dropout.h), so both draw the same masks.
  const uint64_t threshold = dropout_threshold(rate_);
  const uint64_t state = dropout_state(dropout_step_seed(seed_, ctx.noise_stream));
  const int64_t n = from.numel(), rows = from.shape()[0], row_size = rows > 0 ? n / rows : 0;
  // The counters stay distinct below 2^63; past that is a bug of the caller.
  RG_CHECK(ctx.row_offset >= 0 &&
               (row_size == 0 || ctx.row_offset + rows <= std::numeric_limits<int64_t>::max() / row_size),
           "dropout over samples " << ctx.row_offset << " + " << rows << " of " << row_size << " values");
  RG_CHECK(threshold < (uint64_t{1} << 32), "dropout rate " << rate_ << " drops every value");  // from_cfg: <= 0.99
  const uint64_t first = static_cast<uint64_t>(ctx.row_offset * row_size);
  dispatch_float(from.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = from.data<T>();
    T* out = to.data<T>();
    // 4096 values a chunk at least: a chunk's draws cost about what their memory traffic does.
    parallel_for(ctx.pool, n, 4096, [&](int64_t begin, int64_t end) {
      const uint64_t counter = first + static_cast<uint64_t>(begin);
      if constexpr (std::is_same_v<T, float>) {
        f32_vector().dropout(end - begin, state, counter, static_cast<uint32_t>(threshold), dropout_scale(rate_),
                             in + begin, out + begin);
      } else {
        const T scale = static_cast<T>(1.0 / (1.0 - rate_));
        for (int64_t i = begin; i < end; ++i)
          out[i] = dropout_draw(state, counter + static_cast<uint64_t>(i - begin)) < threshold ? T(0) : in[i] * scale;
      }
    });
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
