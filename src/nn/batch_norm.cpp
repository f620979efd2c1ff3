// BatchNorm forward and backward. Per-channel sums run over blocks of rows in the layer's type,
// the blocks split across threads, then into double in block order, each channel's sum owned by
// one thread, so results do not depend on the thread count.
#include "nn/batch_norm.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "nn/cfg.h"
#include "nn/layer_profile.h"

namespace rg {

namespace {
constexpr int64_t kStatsRowBlock = 64;
constexpr int64_t kStatsPartialValues = int64_t{1} << 16;  // the blocks' partials kept at once (256 KB in f32)
// Partials a thread adds at least when the final sums are split over channels: a dense layer's
// batch norm (64 rows, 256 channels: one block, 512 adds) took 0.16 ms forward on 16 threads of
// the Xeon against 0.03 on one, the fork-join costing more than the adds.
constexpr int64_t kMinAddsPerPart = 8192;

// sums[k][c] += the sum over rows of term(r, c, t)'s t[k], k < K. Rows go in blocks of
// kStatsRowBlock whose terms are summed in T with the channels of a row innermost (contiguous in
// x [rows, channels]: vectorised), then added into the double sums in block order. The blocks are
// split across the pool (as many at a time as kStatsPartialValues holds), the final sums across
// channels: each sum has one owner and the same order whatever the thread count.
template <class T, int K, class Term>
void channel_sums(ThreadPool* pool, int64_t rows, int64_t channels, double* const (&sums)[K], const Term& term) {
  const int64_t blocks = (rows + kStatsRowBlock - 1) / kStatsRowBlock, stride = K * channels;
  const int64_t at_once = std::min(blocks, std::max<int64_t>(1, kStatsPartialValues / stride));
  std::vector<T> partial(static_cast<size_t>(at_once * stride));  // [block][K][channel]
  for (int64_t b0 = 0; b0 < blocks; b0 += at_once) {
    const int64_t count = std::min(blocks - b0, at_once);
    parallel_for(pool, count, 1, [&](int64_t first, int64_t last) {
      for (int64_t b = first; b < last; ++b) {
        T* p = partial.data() + b * stride;
        std::fill(p, p + stride, T(0));
        const int64_t r0 = (b0 + b) * kStatsRowBlock, r1 = std::min(rows, r0 + kStatsRowBlock);
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = 0; c < channels; ++c) {
            T t[K];
            term(r, c, t);
            for (int k = 0; k < K; ++k) p[k * channels + c] += t[k];
          }
      }
    });
    parallel_for(pool, channels, std::max<int64_t>(8, kMinAddsPerPart / (count * K)), [&](int64_t c0, int64_t c1) {
      for (int64_t b = 0; b < count; ++b)
        for (int k = 0; k < K; ++k)
          for (int64_t c = c0; c < c1; ++c) sums[k][c] += double(partial[static_cast<size_t>(b * stride + k * channels + c)]);
    });
  }
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
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    T* rm = running_mean_.value.data<T>();
    T* rv = running_var_.value.data<T>();
    mean_.assign(static_cast<size_t>(channels), 0.0);
    inv_std_.assign(static_cast<size_t>(channels), 0.0);
    if (ctx.training) {
      // Two passes over x: the mean, then the mean squared deviation from it. The *_c
      // pointers are the [channels] arrays, indexed by channel.
      std::vector<double> sum(static_cast<size_t>(channels), 0.0), square(sum);
      double* sum_c = sum.data();
      double* square_c = square.data();
      double* mean_c = mean_.data();
      channel_sums<T, 1>(ctx.pool, rows, channels, {sum_c}, [&](int64_t r, int64_t c, T* t) { t[0] = in[r * channels + c]; });
      std::vector<T> mean_t(static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c) {
        mean_c[c] = sum_c[c] / double(rows);
        mean_t[static_cast<size_t>(c)] = static_cast<T>(mean_c[c]);
      }
      const T* mean_of = mean_t.data();
      channel_sums<T, 1>(ctx.pool, rows, channels, {square_c}, [&](int64_t r, int64_t c, T* t) {
        const T d = in[r * channels + c] - mean_of[c];
        t[0] = d * d;
      });
      for (int64_t c = 0; c < channels; ++c) {
        const size_t i = static_cast<size_t>(c);
        const double mean = mean_[i], var = square[i] / double(rows);
        inv_std_[i] = 1.0 / std::sqrt(var + eps_);
        const double unbiased = rows > 1 ? var * double(rows) / double(rows - 1) : var;
        rm[c] = static_cast<T>((1 - momentum_) * double(rm[c]) + momentum_ * mean);
        rv[c] = static_cast<T>((1 - momentum_) * double(rv[c]) + momentum_ * unbiased);
      }
    } else {
      for (int64_t c = 0; c < channels; ++c) {
        mean_[static_cast<size_t>(c)] = double(rm[c]);
        inv_std_[static_cast<size_t>(c)] = 1.0 / std::sqrt(double(rv[c]) + eps_);
      }
    }
    // y = (x - mean) * (gamma / std) + beta, as one multiply-add per element
    std::vector<T> scale(static_cast<size_t>(channels)), shift(static_cast<size_t>(channels));
    const T* gamma = gamma_.value.data<T>();
    const T* beta = beta_.value.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      const size_t i = static_cast<size_t>(c);
      scale[i] = static_cast<T>(double(gamma[c]) * inv_std_[i]);
      shift[i] = static_cast<T>(double(beta[c]) - mean_[i] * double(gamma[c]) * inv_std_[i]);
    }
    T* out = y.data<T>();
    parallel_for(ctx.pool, rows, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < channels; ++c)
          out[r * channels + c] = in[r * channels + c] * scale[static_cast<size_t>(c)] + shift[static_cast<size_t>(c)];
    });
  });
}

// With xhat = (x - mean) * inv_std over m rows:
//   dbeta = sum dy, dgamma = sum dy * xhat,
//   training:  dx = gamma * inv_std / m * (m * dy - dbeta - xhat * dgamma)
//   inference: dx = gamma * inv_std * dy (the statistics are constants)
void BatchNorm::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)y;
  const int64_t channels = channels_, rows = x.numel() / channels;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* in = x.data<T>();
    const T* g = dy.data<T>();
    // Both sums in one pass over dy and x, into the [channels] arrays behind the *_c pointers.
    std::vector<double> sum_dy(static_cast<size_t>(channels), 0.0), sum_dy_xhat(sum_dy);
    double* dy_c = sum_dy.data();
    double* dy_xhat_c = sum_dy_xhat.data();
    const double* mean_c = mean_.data();
    const double* inv_std_c = inv_std_.data();
    std::vector<T> mean_t(static_cast<size_t>(channels)), inv_std_t(mean_t);
    for (int64_t c = 0; c < channels; ++c) {
      mean_t[static_cast<size_t>(c)] = static_cast<T>(mean_c[c]);
      inv_std_t[static_cast<size_t>(c)] = static_cast<T>(inv_std_c[c]);
    }
    const T* mean_of = mean_t.data();
    const T* inv_std_of = inv_std_t.data();
    channel_sums<T, 2>(ctx.pool, rows, channels, {dy_c, dy_xhat_c}, [&](int64_t r, int64_t c, T* t) {
      const T gv = g[r * channels + c];
      t[0] = gv;
      t[1] = gv * (in[r * channels + c] - mean_of[c]) * inv_std_of[c];
    });
    T* dgamma = gamma_.grad.data<T>();
    T* dbeta = beta_.grad.data<T>();
    for (int64_t c = 0; c < channels; ++c) {
      const size_t i = static_cast<size_t>(c);
      dgamma[c] = static_cast<T>((ctx.accumulate_grads ? double(dgamma[c]) : 0.0) + sum_dy_xhat[i]);
      dbeta[c] = static_cast<T>((ctx.accumulate_grads ? double(dbeta[c]) : 0.0) + sum_dy[i]);
    }
    if (!dx.defined()) return;
    const InputGradScope timed(ctx);
    const T* gamma = gamma_.value.data<T>();
    // dx = a[c] * dy + b[c] * x + d[c], folding the per-channel constants
    std::vector<T> a(static_cast<size_t>(channels)), b(a), d(a);
    for (int64_t c = 0; c < channels; ++c) {
      const size_t i = static_cast<size_t>(c);
      const double k = double(gamma[c]) * inv_std_[i];
      if (ctx.training) {
        const double m = double(rows), q = k * inv_std_[i] * sum_dy_xhat[i] / m;
        a[i] = static_cast<T>(k);
        b[i] = static_cast<T>(-q);
        d[i] = static_cast<T>(-k * sum_dy[i] / m + q * mean_[i]);
      } else {
        a[i] = static_cast<T>(k);
      }
    }
    T* out = dx.data<T>();
    parallel_for(ctx.pool, rows, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < channels; ++c) {
          const size_t i = static_cast<size_t>(c);
          out[r * channels + c] = a[i] * g[r * channels + c] + b[i] * in[r * channels + c] + d[i];
        }
    });
  });
}

std::string BatchNorm::describe() const {
  char text[96];
  std::snprintf(text, sizeof text, "%lld channels, momentum %g, eps %g", static_cast<long long>(channels_), momentum_,
                eps_);
  return text;
}

}  // namespace rg
