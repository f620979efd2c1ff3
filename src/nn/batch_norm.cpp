// BatchNorm forward and backward. Per-channel sums and statistics run over blocks of rows in the
// layer's type, the blocks split across threads, then into double in block order within groups of
// blocks and the groups in order, each channel's owned by one thread, so results do not depend on
// the thread count. The f32 passes over the values run on the kernel table's batch-norm kernels.
#include "nn/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "cpu/kernel_tables.h"
#include "nn/cfg.h"
#include "nn/layer_profile.h"
#include "ops/activation.h"
#include "ops/batch_norm_blocks.h"

namespace rg {

namespace {
// The first and the last block of a group, by the block's index.
bool opens_group(int64_t block) { return block % kStatsBlockGroup == 0; }
bool closes_group(int64_t block, int64_t blocks) {
  return block % kStatsBlockGroup == kStatsBlockGroup - 1 || block == blocks - 1;
}

// Chan, Golub and LeVeque's update: mean and m2 of `before` values merged with a part of `added`
// values whose mean is part_mean and M2 part_m2 (w and v: the weights, divided once a part).
// kernels/batch_norm.cl's chan_merge and chan_weights are the same operations.
struct ChanWeights {
  double w, v;
  ChanWeights(double before, double added) : w(added / (before + added)), v(before * (added / (before + added))) {}
};
inline void chan_merge(const ChanWeights& k, double part_mean, double part_m2, double& mean, double& m2) {
  const double delta = part_mean - mean;
  mean += delta * k.w;
  m2 += part_m2 + delta * delta * k.v;
}
constexpr int64_t kStatsPartialValues = int64_t{1} << 16;  // the blocks' partials kept at once (256 KB in f32)
// Partials a thread merges at least when the merges are split over channels: a dense layer's
// batch norm (64 rows, 256 channels: one block, 512 adds) took 0.16 ms forward on 16 threads of
// the Xeon against 0.03 on one, the fork-join costing more than the adds.
constexpr int64_t kMinAddsPerPart = 8192;

// x [rows, channels] in blocks of kStatsRowBlock rows: fill(r0, r1, p) writes block [r0, r1)'s
// `stride` partials (in T) to p; merge(b0, count, partial, c0, c1) then takes the partials of
// blocks b0 .. b0 + count - 1 ([block][stride]) for channels [c0, c1). The blocks are split across
// the pool (as many at a time as kStatsPartialValues holds), the merges across channels: each
// channel's merge has one owner and goes in block order whatever the thread count.
template <class T, class Fill, class Merge>
void over_row_blocks(ThreadPool* pool, int64_t rows, int64_t channels, int64_t stride, const Fill& fill,
                     const Merge& merge) {
  const int64_t blocks = stats_blocks(rows);
  const int64_t at_once = std::min(blocks, std::max<int64_t>(1, kStatsPartialValues / stride));
  std::vector<T> partial(static_cast<size_t>(at_once * stride));
  for (int64_t b0 = 0; b0 < blocks; b0 += at_once) {
    const int64_t count = std::min(blocks - b0, at_once);
    parallel_for(pool, count, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        const int64_t r0 = (b0 + b) * kStatsRowBlock;
        fill(r0, std::min(rows, r0 + kStatsRowBlock), partial.data() + b * stride);
      }
    });
    const int64_t adds_per_channel = std::max<int64_t>(1, count * stride / channels);
    parallel_for(pool, channels, std::max<int64_t>(8, kMinAddsPerPart / adds_per_channel),
                 [&](int64_t c0, int64_t c1) { merge(b0, count, partial.data(), c0, c1); });
  }
}

// sums[k][c] += the sum over the rows of x [rows, channels] of their terms k < K: add(r0, r1, p)
// adds the terms of rows [r0, r1) into p [K][channels] (zeroed) in T, each channel's rows in
// order; the blocks' sums are then added in double in block order within each group of
// kStatsBlockGroup blocks, and the groups' into `sums` in group order.
template <class T, int K, class AddBlock>
void channel_sums(ThreadPool* pool, int64_t rows, int64_t channels, double* const (&sums)[K], const AddBlock& add) {
  const int64_t stride = K * channels, blocks = stats_blocks(rows);
  const auto fill = [&](int64_t r0, int64_t r1, T* p) {
    std::fill(p, p + stride, T(0));
    add(r0, r1, p);
  };
  std::vector<double> group(static_cast<size_t>(stride));  // [K][channels]: the open group's sums
  over_row_blocks<T>(pool, rows, channels, stride, fill, [&](int64_t b0, int64_t count, const T* partial, int64_t c0, int64_t c1) {
    for (int64_t b = 0; b < count; ++b) {
      const bool opens = opens_group(b0 + b), closes = closes_group(b0 + b, blocks);
      for (int k = 0; k < K; ++k) {
        double* g = group.data() + k * channels;
        const T* p = partial + b * stride + k * channels;
        if (opens) std::fill(g + c0, g + c1, 0.0);
        for (int64_t c = c0; c < c1; ++c) g[c] += double(p[c]);
        if (closes)
          for (int64_t c = c0; c < c1; ++c) sums[k][c] += g[c];
      }
    }
  });
}

// Each channel's mean and M2 (sum of squared deviations from the mean) over the rows of x
// [rows, channels], reading x from memory once: a block's mean (its sum in T, rows in order, over
// its rows) and its M2 about that mean, in a second pass over the block while it is in cache;
// the blocks merged in block order in double by Chan, Golub and LeVeque's update (mean and M2 of
// the union of two sets from each one's) within each group of kStatsBlockGroup blocks, the groups
// then merged the same way in group order: as safe as two passes over all of x. mean and m2 start
// at 0. The device's batch_norm.cl computes the same, in the same order.
template <class T>
void channel_stats(ThreadPool* pool, const T* x, int64_t rows, int64_t channels, double* mean, double* m2) {
  const auto fill = [&](int64_t r0, int64_t r1, T* p) {
    T* block_mean = p;
    T* block_m2 = p + channels;
    if constexpr (std::is_same_v<T, float>) {
      f32_vector().batch_norm_block_stats(r1 - r0, channels, x + r0 * channels, block_mean, block_m2);
    } else {
      std::fill(p, p + 2 * channels, T(0));
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < channels; ++c) block_mean[c] += x[r * channels + c];
      for (int64_t c = 0; c < channels; ++c) block_mean[c] /= static_cast<T>(r1 - r0);
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < channels; ++c) {
          const T d = x[r * channels + c] - block_mean[c];
          block_m2[c] += d * d;
        }
    }
  };
  const int64_t blocks = stats_blocks(rows);
  std::vector<double> group(static_cast<size_t>(2 * channels));  // the open group's means, then M2s
  const auto merge = [&](int64_t b0, int64_t count, const T* partial, int64_t c0, int64_t c1) {
    for (int64_t b = 0; b < count; ++b) {
      const int64_t block = b0 + b, r0 = block * kStatsRowBlock, r1 = std::min(rows, r0 + kStatsRowBlock);
      const int64_t g0 = block / kStatsBlockGroup * kStatsBlockGroup * kStatsRowBlock;  // the group's first row
      const ChanWeights in_group(double(r0 - g0), double(r1 - r0)), in_total(double(g0), double(r1 - g0));
      const T* p = partial + b * 2 * channels;
      double* g_mean = group.data();
      double* g_m2 = g_mean + channels;
      if (opens_group(block)) std::fill(g_mean + c0, g_mean + c1, 0.0), std::fill(g_m2 + c0, g_m2 + c1, 0.0);
      for (int64_t c = c0; c < c1; ++c) chan_merge(in_group, double(p[c]), double(p[channels + c]), g_mean[c], g_m2[c]);
      if (closes_group(block, blocks))
        for (int64_t c = c0; c < c1; ++c) chan_merge(in_total, g_mean[c], g_m2[c], mean[c], m2[c]);
    }
  };
  over_row_blocks<T>(pool, rows, channels, 2 * channels, fill, merge);
}


// channel_sums' add for terms given by term(i, c, t): t[k] of value i (channel c), channels
// innermost (contiguous in x [rows, channels]: the compiler vectorises where it can).
template <class T, int K, class Term>
auto add_terms(int64_t channels, const Term& term) {
  return [channels, &term](int64_t r0, int64_t r1, T* p) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < channels; ++c) {
        T t[K];
        term(r * channels + c, c, t);
        for (int k = 0; k < K; ++k) p[k * channels + c] += t[k];
      }
  };
}

// The gradient at a batch norm's output: dy, or where a relu was fused (scale set) dy where the
// output, x scale + shift (one product and one sum, rounded apart: the build contracts nothing
// into an FMA), was > 0: the bits of the relu's backward. The f32 kernels' batch_norm_grad_at too.
template <class T>
T batch_norm_grad_at(const T* scale, const T* shift, int64_t c, T x, T dy) {
  return scale == nullptr || x * scale[c] + shift[c] > T(0) ? dy : T(0);
}
}  // namespace

Result<std::unique_ptr<Layer>> BatchNorm::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const double momentum, section.get_float_or("momentum", 0.1, 0.0, 1.0));
  RG_ASSIGN(const double eps, section.get_float_or("eps", 1e-5, 1e-12, 1.0));
  return std::unique_ptr<Layer>(new BatchNorm(momentum, eps));
}

Result<Shape> BatchNorm::configure(const Shape& input) {
  if (input.rank() != 1 && input.rank() != 3) {
    return Status::error("batchnorm takes features [f] or images (height x width x channels), not " + input.str());
  }
  channels_ = input[input.rank() - 1];
  return input;
}

Status BatchNorm::init(Rng& rng, DType dtype) {
  (void)rng;
  const Shape shape{channels_};
  struct Slot {
    Param* param;
    const char* suffix;
    double value;
    bool trains;
  };
  for (const Slot& s : {Slot{&gamma_, ".gamma", 1.0, true}, Slot{&beta_, ".beta", 0.0, true},
                        Slot{&running_mean_, ".running_mean", 0.0, false},
                        Slot{&running_var_, ".running_var", 1.0, false}}) {
    s.param->name = name() + s.suffix;
    RG_ASSIGN(s.param->value, Tensor::zeros(shape, dtype, s.param->name));
    if (s.trains) {
      RG_ASSIGN(s.param->grad, Tensor::zeros(shape, dtype, s.param->name + ".grad"));
    }
    dispatch_float(dtype, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t c = 0; c < channels_; ++c) s.param->value.data<T>()[c] = static_cast<T>(s.value);
    });
  }
  return Status();
}

void BatchNorm::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t channels = channels_, rows = x.numel() / channels;
  const size_t nc = static_cast<size_t>(channels);
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    T* rm = running_mean_.value.data<T>();
    T* rv = running_var_.value.data<T>();
    mean_.assign(nc, 0.0);
    inv_std_.assign(nc, 0.0);
    if (ctx.training) {
      std::vector<double> m2(nc, 0.0);
      channel_stats(ctx.pool, in, rows, channels, mean_.data(), m2.data());
      for (size_t c = 0; c < nc; ++c) {
        const double var = m2[c] / double(rows);
        inv_std_[c] = 1.0 / std::sqrt(var + eps_);
        const double unbiased = rows > 1 ? m2[c] / double(rows - 1) : var;
        rm[c] = static_cast<T>((1 - momentum_) * double(rm[c]) + momentum_ * mean_[c]);
        rv[c] = static_cast<T>((1 - momentum_) * double(rv[c]) + momentum_ * unbiased);
      }
    } else {
      for (size_t c = 0; c < nc; ++c) {
        mean_[c] = double(rm[c]);
        inv_std_[c] = 1.0 / std::sqrt(double(rv[c]) + eps_);
      }
    }
    // y = x * (gamma / std) + (beta - mean gamma / std), one product and one sum a value
    const T* gamma = gamma_.value.data<T>();
    const T* beta = beta_.value.data<T>();
    scale_.resize(nc);
    shift_.resize(nc);
    for (size_t c = 0; c < nc; ++c) {
      scale_[c] = double(gamma[c]) * inv_std_[c];
      shift_[c] = double(beta[c]) - mean_[c] * double(gamma[c]) * inv_std_[c];
    }
    const std::vector<T> scale(scale_.begin(), scale_.end()), shift(shift_.begin(), shift_.end());
    T* out = y.data<T>();
    parallel_for(ctx.pool, rows, 64, [&](int64_t r0, int64_t r1) {
      const int64_t i0 = r0 * channels;
      if constexpr (std::is_same_v<T, float>) {
        f32_vector().batch_norm_apply(r1 - r0, channels, in + i0, scale.data(), shift.data(), ctx.fused_relu, out + i0);
      } else {
        for (int64_t i = i0; i < r1 * channels; ++i) {
          const T v = in[i] * scale[static_cast<size_t>(i % channels)] + shift[static_cast<size_t>(i % channels)];
          out[i] = v;
          if (ctx.fused_relu) relu_forward(1, &v, out + i);  // ops/activation.h's
        }
      }
    });
  });
}

// With xhat = (x - mean) * inv_std over m rows:
//   dbeta = sum dy, dgamma = sum dy * xhat,
//   training:  dx = gamma * inv_std / m * (m * dy - dbeta - xhat * dgamma)
//   inference: dx = gamma * inv_std * dy (the statistics are constants)
// With a relu fused (ctx.fused_relu), dy is the relu's output gradient and the batch norm's own is
// dy where its output was > 0, that output recomputed from x as forward computed it (the bits of
// the relu's backward on the output it would have kept).
void BatchNorm::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)y;
  dispatch_float(x.dtype(), [&](auto zero) { backward_as<decltype(zero)>(x, dy, dx, ctx); });
}

template <class T>
void BatchNorm::backward_as(const Tensor& x, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  const int64_t channels = channels_, rows = x.numel() / channels;
  const size_t nc = static_cast<size_t>(channels);
  const T* in = x.data<T>();
  const T* g = dy.data<T>();
  const std::vector<T> mean_t(mean_.begin(), mean_.end()), inv_std_t(inv_std_.begin(), inv_std_.end());
  const std::vector<T> scale_t(scale_.begin(), scale_.end()), shift_t(shift_.begin(), shift_.end());
  const T* mean = mean_t.data();
  const T* inv_std = inv_std_t.data();
  const T* scale = ctx.fused_relu ? scale_t.data() : nullptr;  // set: a relu's gradient to take
  const T* shift = shift_t.data();
  // Both sums in one pass over dy and x: sum g, sum (g (x - mean)) inv_std.
  std::vector<double> sum_dy(nc, 0.0), sum_dy_xhat(nc, 0.0);
  if constexpr (std::is_same_v<T, float>) {
    channel_sums<T, 2>(ctx.pool, rows, channels, {sum_dy.data(), sum_dy_xhat.data()}, [&](int64_t r0, int64_t r1, T* p) {
      f32_vector().batch_norm_grad_sums(r1 - r0, channels, in + r0 * channels, g + r0 * channels, mean, inv_std, scale,
                                        shift, p);
    });
  } else {
    const auto term = [&](int64_t i, int64_t c, T* t) {
      t[0] = batch_norm_grad_at(scale, shift, c, in[i], g[i]);
      t[1] = t[0] * (in[i] - mean[c]) * inv_std[c];
    };
    channel_sums<T, 2>(ctx.pool, rows, channels, {sum_dy.data(), sum_dy_xhat.data()}, add_terms<T, 2>(channels, term));
  }
  T* dgamma = gamma_.grad.data<T>();
  T* dbeta = beta_.grad.data<T>();
  for (size_t c = 0; c < nc; ++c) {
    dgamma[c] = static_cast<T>((ctx.accumulate_grads ? double(dgamma[c]) : 0.0) + sum_dy_xhat[c]);
    dbeta[c] = static_cast<T>((ctx.accumulate_grads ? double(dbeta[c]) : 0.0) + sum_dy[c]);
  }
  if (!dx.defined()) return;
  const InputGradScope timed(ctx);
  const T* gamma = gamma_.value.data<T>();
  // dx = a[c] * g + b[c] * x + d[c], folding the per-channel constants
  std::vector<T> a(nc), b(nc, T(0)), d(nc, T(0));
  for (size_t c = 0; c < nc; ++c) {
    const double k = double(gamma[c]) * inv_std_[c];
    a[c] = static_cast<T>(k);
    if (ctx.training) {
      const double m = double(rows), q = k * inv_std_[c] * sum_dy_xhat[c] / m;
      b[c] = static_cast<T>(-q);
      d[c] = static_cast<T>(-k * sum_dy[c] / m + q * mean_[c]);
    }
  }
  T* out = dx.data<T>();
  parallel_for(ctx.pool, rows, 64, [&](int64_t r0, int64_t r1) {
    const int64_t i0 = r0 * channels;
    if constexpr (std::is_same_v<T, float>) {
      f32_vector().batch_norm_grad(r1 - r0, channels, in + i0, g + i0, a.data(), b.data(), d.data(), scale, shift, out + i0);
    } else {
      for (int64_t i = i0; i < r1 * channels; ++i) {
        const size_t c = static_cast<size_t>(i % channels);
        out[i] = a[c] * batch_norm_grad_at(scale, shift, i % channels, in[i], g[i]) + b[c] * in[i] + d[c];
      }
    }
  });
}

std::string BatchNorm::describe() const {
  char text[96];
  std::snprintf(text, sizeof text, "%lld channels, momentum %g, eps %g", static_cast<long long>(channels_), momentum_,
                eps_);
  return text;
}

}  // namespace rg
