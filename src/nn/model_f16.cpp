// 16-bit storage (f16, or bf16: f32's exponent range, 8 bits of precision), the memory side of
// mixed-precision training: activations and the gradients between layers are kept in f16 (or
// bf16; "f16" below is either), and every layer computes in f32 on row chunks widened from
// them (Model::set_storage). A stored value is rounded to f16 once, as it is written, so the
// next layer's forward and this layer's backward read the same numbers. Chains and graph models
// run the same passes: a layer's inputs (several for add and concat) are widened one after
// another into the x chunk; where an output feeds several layers, each one's gradient is added
// to its f16 buffer in f32 and rounded again (one rounding per addition). Those buffers are f16
// because they are as many as the activations: f32 there would keep half of what f16 saves.
#include <algorithm>

#include "cpu/kernel_tables.h"
#include "nn/f16_chunks.h"
#include "nn/layer_profile.h"
#include "nn/merge_layers.h"
#include "nn/model.h"

namespace rg {

namespace {

// The first `shape.numel()` elements of `scratch` as a tensor of `shape`.
Tensor scratch_as(const Tensor& scratch, const Shape& shape) {
  return scratch.reshaped(Shape{scratch.numel()}).rows(0, shape.numel()).reshaped(shape);
}

// Rows [r0, r1) of `t` as f32: a view when t is f32, else widened from f16 into `scratch`.
Tensor f32_rows(const Tensor& t, int64_t r0, int64_t r1, const Tensor& scratch) {
  const Tensor rows = t.rows(r0, r1);
  if (rows.dtype() == DType::f32) return rows;
  const Tensor out = scratch_as(scratch, rows.shape());
  half_convert(rows.dtype()).to_f32(rows.numel(), rows.data<uint16_t>(), out.f32());
  return out;
}

// The f32 rows `src` into `dst` from row r0: rounded to f16 when dst is f16, else copied
// (nothing to do when src is already those rows).
void store_rows(const Tensor& src, const Tensor& dst, int64_t r0) {
  const Tensor rows = dst.rows(r0, r0 + src.shape()[0]);
  if (is_half(rows.dtype())) {
    half_convert(rows.dtype()).from_f32(src.numel(), src.f32(), rows.data<uint16_t>());
  } else if (rows.raw_data() != src.raw_data()) {
    rows.copy_from(src);
  }
}

// Adds the f32 rows `src` to dst's rows from r0, rounding to f16 again when dst is f16 (widened
// a block at a time through the stack).
void add_rows(const Tensor& src, const Tensor& dst, int64_t r0) {
  const Tensor rows = dst.rows(r0, r0 + src.shape()[0]);
  const float* s = src.f32();
  if (rows.dtype() == DType::f32) {
    float* d = rows.f32();
    for (int64_t i = 0; i < rows.numel(); ++i) d[i] += s[i];
    return;
  }
  uint16_t* d = rows.data<uint16_t>();
  const HalfConvertKernels& convert = half_convert(rows.dtype());
  float block[256];
  for (int64_t at = 0; at < rows.numel(); at += 256) {
    const int64_t count = std::min<int64_t>(256, rows.numel() - at);
    convert.to_f32(count, d + at, block);
    for (int64_t i = 0; i < count; ++i) block[i] += s[at + i];
    convert.from_f32(count, block, d + at);
  }
}

// Rows [r0, r1) of each of `all` as f32, the widened ones one after another in `scratch`.
std::vector<Tensor> f32_chunks(const std::vector<Tensor>& all, int64_t r0, int64_t r1, const Tensor& scratch) {
  std::vector<Tensor> chunks;
  int64_t at = 0;
  for (const Tensor& t : all) {
    chunks.push_back(f32_rows(t, r0, r1, scratch.rows(at, scratch.numel())));
    if (t.dtype() != DType::f32) at += chunks.back().numel();
  }
  return chunks;
}

}  // namespace

Status Model::set_storage(DType storage) {
  if (storage != DType::f32 && !is_half(storage)) {
    return Status::error(std::string("activations are stored in f32, f16 or bf16, not ") + dtype_name(storage));
  }
  if (is_half(storage) && dtype_ != DType::f32) {
    return Status::error(std::string(dtype_name(storage)) + " storage is for a model computing in f32 (this one computes in " +
                         std::string(dtype_name(dtype_)) + ")");
  }
  storage_ = storage;
  reserved_ = 0;  // the buffers change dtype at the next reserve()
  return Status();
}

int64_t Model::chunk_rows(size_t i, const LayerContext& ctx, int64_t n) const {
  if (layers_[i]->needs_whole_batch(ctx)) return n;
  return f16_chunk_rows(n, std::max(input_values(i), shapes_[i].numel()), kF16ChunkValuesHost);
}

Status Model::reserve_f16_chunks(int64_t batch) {
  LayerContext training;  // the largest chunks: training, when BatchNorm needs the whole batch
  training.training = true;
  const int64_t elements = chunk_elements(training, batch);
  if (!is_graph()) {  // a graph's output gradient is its last buffer (reserve_graph_grads)
    RG_ASSIGN(output_grad_, Tensor::zeros(shapes_.back().batched(batch), DType::f32, "output gradient"));
  }
  RG_ASSIGN(chunk_x_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of a layer's input"));
  RG_ASSIGN(chunk_y_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of a layer's output"));
  RG_ASSIGN(chunk_dy_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of an output gradient"));
  RG_ASSIGN(chunk_dx_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of an input gradient"));
  return Status();
}

Tensor Model::forward_f16(const Tensor& x, const LayerContext& ctx) {
  const int64_t n = x.shape()[0];
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Tensor out = acts_[i].rows(0, n);
    const int64_t step = chunk_rows(i, ctx, n);
    const WidenedParams widened(*this, i);
    auto* merge = dynamic_cast<MergeLayer*>(layers_[i].get());
    std::vector<Tensor> inputs;
    for (size_t k = 0; k < inputs_[i].size(); ++k) inputs.push_back(graph_input(i, k));
    for (int64_t r0 = 0; r0 < n; r0 += step) {
      const int64_t r1 = std::min(n, r0 + step);
      const Tensor y = out.dtype() == DType::f32 ? out.rows(r0, r1) : scratch_as(chunk_y_, out.rows(r0, r1).shape());
      LayerContext chunk_ctx = ctx;
      chunk_ctx.row_offset = ctx.row_offset + r0;
      const LayerPhaseScope timed(ctx, i, LayerPhase::forward, r1 - r0, 0);
      const std::vector<Tensor> xs = f32_chunks(inputs, r0, r1, chunk_x_);
      if (merge != nullptr) {
        merge->forward_inputs(xs, y, chunk_ctx);
      } else {
        layers_[i]->forward(xs[0], y, layers_[i]->in_own_precision(chunk_ctx));
      }
      store_rows(y, out, r0);
    }
  }
  return acts_.back().rows(0, n);
}

void Model::backward_f16(const LayerContext& ctx, const Tensor& input_grad) {
  const int64_t n = batch_;
  std::vector<char> written(layers_.size() + 1, 0);  // gradient_targets
  const Tensor model_dx = input_grad.defined() ? input_grad.reshaped(input_view_.shape()) : Tensor();
  std::vector<Tensor> dx_all;
  std::vector<bool> add_to;
  for (size_t i = layers_.size(); i-- > 0;) {
    const Tensor dy_all = output_grad_of(i);
    gradient_targets(i, model_dx, written, &dx_all, &add_to);
    const int64_t step = chunk_rows(i, ctx, n);
    for (int64_t r0 = 0; r0 < n; r0 += step) {
      LayerContext chunk_ctx = ctx;
      chunk_ctx.accumulate_grads = ctx.accumulate_grads || r0 > 0;  // later chunks add to the first's
      chunk_ctx.row_offset = ctx.row_offset + r0;
      backward_f16_rows(i, r0, std::min(n, r0 + step), dy_all, dx_all, add_to, chunk_ctx);
    }
  }
}

void Model::backward_f16_rows(size_t i, int64_t r0, int64_t r1, const Tensor& dy_all,
                              const std::vector<Tensor>& dx_all, const std::vector<bool>& add_to,
                              const LayerContext& ctx) {
  const bool any_dx = std::any_of(dx_all.begin(), dx_all.end(), [](const Tensor& t) { return t.defined(); });
  const LayerPhaseScope timed = backward_phase_scope(ctx, *layers_[i], i, r1 - r0, any_dx);
  const Tensor dy = f32_rows(dy_all, r0, r1, chunk_dy_);
  // Each input's dx rows in f32: the target's own rows where it is f32 and written whole, else
  // one after another in chunk_dx_, stored (rounded) or added below.
  std::vector<Tensor> dxs;
  int64_t at = 0;
  for (size_t k = 0; k < dx_all.size(); ++k) {
    if (!dx_all[k].defined()) {
      dxs.emplace_back();
      continue;
    }
    const Tensor rows = dx_all[k].rows(r0, r1);
    if (rows.dtype() == DType::f32 && !add_to[k]) {
      dxs.push_back(rows);
    } else {
      dxs.push_back(scratch_as(chunk_dx_.rows(at, chunk_dx_.numel()), rows.shape()));
      at += rows.numel();
    }
  }
  if (auto* merge = dynamic_cast<MergeLayer*>(layers_[i].get()); merge != nullptr) {
    merge->backward_inputs(dy, dxs, std::vector<bool>(dxs.size(), false), ctx);
  } else {
    layers_[i]->backward(f32_rows(graph_input(i, 0), r0, r1, chunk_x_), f32_rows(acts_[i].rows(0, batch_), r0, r1, chunk_y_),
                         dy, dxs[0], layers_[i]->in_own_precision(ctx));
  }
  for (size_t k = 0; k < dxs.size(); ++k) {
    if (!dxs[k].defined()) continue;
    if (add_to[k]) {
      add_rows(dxs[k], dx_all[k], r0);
    } else {
      store_rows(dxs[k], dx_all[k], r0);
    }
  }
}

}  // namespace rg
