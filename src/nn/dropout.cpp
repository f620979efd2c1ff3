#include "nn/dropout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "base/thread_pool.h"
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
  // A value is dropped when a 32-bit draw falls below rate * 2^32; one draw per value, in order
  // within its block of kDropoutBlockValues, each block from its own stream (ops/dropout_mask.h), so
  // the mask depends neither on the thread count nor on how the step's batch was split. Seed,
  // threshold, f32 scale and streams are the device layer's too (opencl/dropout.h), so both
  // draw the same masks.
  const uint64_t threshold = dropout_threshold(rate_);
  const uint64_t step_seed = dropout_step_seed(seed_, ctx.noise_stream);
  const int64_t rows = from.shape()[0], row_size = rows > 0 ? from.numel() / rows : 0;
  const int64_t blocks_per_row = dropout_blocks_per_row(row_size);
  // The streams stay distinct below 2^63 (nn/dropout.h); past that is a bug of the caller.
  RG_CHECK(ctx.row_offset >= 0 &&
               (blocks_per_row == 0 || ctx.row_offset + rows <= std::numeric_limits<int64_t>::max() / blocks_per_row),
           "dropout over samples " << ctx.row_offset << " + " << rows << " of " << blocks_per_row << " blocks");
  dispatch_float(from.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T scale = std::is_same_v<T, float> ? dropout_scale(rate_) : static_cast<T>(1.0 / (1.0 - rate_));
    // [rows, row_size] as rows * blocks_per_row blocks, 64 blocks (4096 values) a chunk at least.
    parallel_for(ctx.pool, rows * blocks_per_row, 64, [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t r = g / blocks_per_row, b = g % blocks_per_row;
        Rng rng(step_seed, dropout_block_stream(ctx.row_offset + r, blocks_per_row, b));
        const int64_t i0 = b * kDropoutBlockValues, i1 = std::min(row_size, i0 + kDropoutBlockValues);
        const T* in = from.data<T>() + r * row_size;
        T* out = to.data<T>() + r * row_size;
        for (int64_t i = i0; i < i1; ++i) out[i] = rng.next_u32() < threshold ? T(0) : in[i] * scale;
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
