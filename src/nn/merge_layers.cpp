// Add and Concat, the layers that join the branches of a graph model (merge_layers.h).
#include "nn/merge_layers.h"

#include <algorithm>

#include "nn/cfg.h"

namespace rg {

Result<Shape> MergeLayer::configure(const Shape& input) {
  return Status::error(kind() + " joins two or more layers (inputs = a, b), not the one before it (" + input.str() + ")");
}

void MergeLayer::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  (void)x, (void)y, (void)ctx;
  RG_CHECK(false, "layer " << name() << " of kind " << kind() << " runs through forward_inputs (a graph model)");
}

void MergeLayer::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  (void)x, (void)y, (void)dy, (void)dx, (void)ctx;
  RG_CHECK(false, "layer " << name() << " of kind " << kind() << " runs through backward_inputs (a graph model)");
}

namespace {
// Rows of `rows` values, [r0, r1) of them at a time on the pool.
template <class Fn>
void for_each_merge_row(const LayerContext& ctx, int64_t rows, Fn&& fn) {
  parallel_for(ctx.pool, rows, 16, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) fn(r);
  });
}
}  // namespace

// ---------------------------------------------------------------- Add

Result<std::unique_ptr<Layer>> Add::from_cfg(const CfgSection& section) {
  (void)section;
  return std::unique_ptr<Layer>(new Add());
}

Result<Shape> Add::configure_inputs(const std::vector<Shape>& inputs, const std::vector<std::string>& names) {
  if (inputs.size() < 2) return Status::error("add sums two or more inputs (inputs = a, b), not " + std::to_string(inputs.size()));
  for (size_t k = 1; k < inputs.size(); ++k) {
    if (inputs[k] != inputs[0]) {
      return Status::error("input " + names[0] + " gives " + inputs[0].str() + ", input " + names[k] + " gives " +
                           inputs[k].str() + ": add sums inputs of one shape (no broadcasting)");
    }
  }
  inputs_ = inputs.size();
  return inputs[0];
}

void Add::forward_inputs(const std::vector<Tensor>& xs, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = y.shape()[0], row = y.numel() / std::max<int64_t>(n, 1);
  dispatch_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for_each_merge_row(ctx, n, [&](int64_t r) {
      T* out = y.data<T>() + r * row;
      const T* first = xs[0].data<T>() + r * row;
      std::copy(first, first + row, out);
      for (size_t k = 1; k < xs.size(); ++k) {
        const T* in = xs[k].data<T>() + r * row;
        for (int64_t i = 0; i < row; ++i) out[i] += in[i];
      }
    });
  });
}

void Add::backward_inputs(const Tensor& dy, const std::vector<Tensor>& dxs, const std::vector<bool>& add_to,
                          const LayerContext& ctx) {
  const int64_t n = dy.shape()[0], row = dy.numel() / std::max<int64_t>(n, 1);
  dispatch_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for_each_merge_row(ctx, n, [&](int64_t r) {
      const T* g = dy.data<T>() + r * row;
      for (size_t k = 0; k < dxs.size(); ++k) {
        if (!dxs[k].defined()) continue;
        T* out = dxs[k].data<T>() + r * row;
        if (add_to[k]) {
          for (int64_t i = 0; i < row; ++i) out[i] += g[i];
        } else {
          std::copy(g, g + row, out);
        }
      }
    });
  });
}

// ---------------------------------------------------------------- Concat

Result<std::unique_ptr<Layer>> Concat::from_cfg(const CfgSection& section) {
  (void)section;
  return std::unique_ptr<Layer>(new Concat());
}

Result<Shape> Concat::configure_inputs(const std::vector<Shape>& inputs, const std::vector<std::string>& names) {
  if (inputs.size() < 2) {
    return Status::error("concat joins two or more inputs (inputs = a, b), not " + std::to_string(inputs.size()));
  }
  widths_.clear();
  width_ = 0;
  const Shape& first = inputs[0];
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Shape& s = inputs[k];
    bool same = s.rank() == first.rank();
    for (int d = 0; same && d + 1 < s.rank(); ++d) same = s[d] == first[d];
    if (!same) {
      return Status::error("input " + names[0] + " gives " + first.str() + ", input " + names[k] + " gives " + s.str() +
                           ": concat joins along the last dimension (channels), every other dimension equal");
    }
    widths_.push_back(s[s.rank() - 1]);
    width_ += widths_.back();
  }
  int64_t dims[Shape::kMaxRank];
  for (int d = 0; d < first.rank(); ++d) dims[d] = first[d];
  dims[first.rank() - 1] = width_;
  return Shape::from_dims(dims, first.rank());
}

void Concat::forward_inputs(const std::vector<Tensor>& xs, const Tensor& y, const LayerContext& ctx) {
  const int64_t positions = y.numel() / width_;  // samples times pixels
  dispatch_float(y.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for_each_merge_row(ctx, positions, [&](int64_t p) {
      T* out = y.data<T>() + p * width_;
      for (size_t k = 0; k < xs.size(); ++k) {
        const T* in = xs[k].data<T>() + p * widths_[k];
        out = std::copy(in, in + widths_[k], out);
      }
    });
  });
}

void Concat::backward_inputs(const Tensor& dy, const std::vector<Tensor>& dxs, const std::vector<bool>& add_to,
                             const LayerContext& ctx) {
  const int64_t positions = dy.numel() / width_;
  dispatch_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for_each_merge_row(ctx, positions, [&](int64_t p) {
      const T* g = dy.data<T>() + p * width_;
      for (size_t k = 0; k < dxs.size(); ++k) {
        if (dxs[k].defined()) {
          T* out = dxs[k].data<T>() + p * widths_[k];
          for (int64_t i = 0; i < widths_[k]; ++i) out[i] = add_to[k] ? out[i] + g[i] : g[i];
        }
        g += widths_[k];
      }
    });
  });
}

std::string Concat::describe() const {
  std::string text;
  for (int64_t w : widths_) text += (text.empty() ? "" : " + ") + std::to_string(w);
  return text + " -> " + std::to_string(width_) + " channels";
}

}  // namespace rg
