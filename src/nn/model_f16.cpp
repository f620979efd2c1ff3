// f16 storage, the memory side of mixed-precision training: activations and the gradients
// between layers are kept in f16, and every layer computes in f32 on row chunks widened from
// them (Model::set_storage). A stored value is rounded to f16 once, as it is written, so the
// next layer's forward and this layer's backward read the same numbers.
#include <algorithm>

#include "cpu/kernel_tables.h"
#include "nn/f16_chunks.h"
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
  f16_convert().to_f32(rows.numel(), rows.data<uint16_t>(), out.f32());
  return out;
}

// The f32 rows `src` into `dst` from row r0: rounded to f16 when dst is f16, else copied
// (nothing to do when src is already those rows).
void store_rows(const Tensor& src, const Tensor& dst, int64_t r0) {
  const Tensor rows = dst.rows(r0, r0 + src.shape()[0]);
  if (rows.dtype() == DType::f16) {
    f16_convert().to_f16(src.numel(), src.f32(), rows.data<uint16_t>());
  } else if (rows.raw_data() != src.raw_data()) {
    rows.copy_from(src);
  }
}

}  // namespace

Status Model::set_storage(DType storage) {
  if (storage != DType::f32 && storage != DType::f16) {
    return Status::error(std::string("activations are stored in f32 or f16, not ") + dtype_name(storage));
  }
  if (storage == DType::f16 && dtype_ != DType::f32) {
    return Status::error("f16 storage is for a model computing in f32 (this one computes in " +
                         std::string(dtype_name(dtype_)) + ")");
  }
  if (storage == DType::f16) RG_TRY(refuse_graph("f16 storage (mixed precision)"));
  storage_ = storage;
  reserved_ = 0;  // the buffers change dtype at the next reserve()
  return Status();
}

int64_t Model::chunk_rows(size_t i, const LayerContext& ctx, int64_t n) const {
  if (layers_[i]->needs_whole_batch(ctx)) return n;
  const int64_t in = i == 0 ? input_.numel() : shapes_[i - 1].numel();
  return f16_chunk_rows(n, std::max(in, shapes_[i].numel()), kF16ChunkValuesHost);
}

Status Model::reserve_f16_chunks(int64_t batch) {
  LayerContext training;  // the largest chunks: training, when BatchNorm needs the whole batch
  training.training = true;
  const int64_t elements = chunk_elements(training, batch);
  RG_ASSIGN(output_grad_, Tensor::zeros(shapes_.back().batched(batch), DType::f32, "output gradient"));
  RG_ASSIGN(chunk_x_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of a layer's input"));
  RG_ASSIGN(chunk_y_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of a layer's output"));
  RG_ASSIGN(chunk_dy_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of an output gradient"));
  RG_ASSIGN(chunk_dx_, Tensor::zeros(Shape{elements}, DType::f32, "f32 chunk of an input gradient"));
  return Status();
}

Tensor Model::forward_f16(const Tensor& x, const LayerContext& ctx) {
  const int64_t n = x.shape()[0];
  Tensor in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Tensor out = acts_[i].rows(0, n);
    const int64_t step = chunk_rows(i, ctx, n);
    const WidenedParams widened(*this, i);
    for (int64_t r0 = 0; r0 < n; r0 += step) {
      const int64_t r1 = std::min(n, r0 + step);
      const Tensor y = out.dtype() == DType::f32 ? out.rows(r0, r1) : scratch_as(chunk_y_, out.rows(r0, r1).shape());
      LayerContext chunk_ctx = ctx;
      chunk_ctx.row_offset = ctx.row_offset + r0;
      layers_[i]->forward(f32_rows(in, r0, r1, chunk_x_), y, chunk_ctx);
      store_rows(y, out, r0);
    }
    in = out;
  }
  return in;
}

void Model::backward_f16(const LayerContext& ctx, const Tensor& input_grad) {
  const int64_t n = batch_;
  Tensor dy_all = output_grad_.rows(0, n);
  bool next_in_a = true;  // the ping-pong buffer the next dx goes to
  for (size_t i = layers_.size(); i-- > 0;) {
    const Tensor x_all = i == 0 ? input_view_ : acts_[i - 1].rows(0, n);
    const Tensor y_all = acts_[i].rows(0, n);
    const Tensor dx_all = input_grad_of(i, x_all, input_grad, next_in_a ? grad_a_ : grad_b_);
    next_in_a = !next_in_a;
    const int64_t step = chunk_rows(i, ctx, n);
    for (int64_t r0 = 0; r0 < n; r0 += step) {
      const int64_t r1 = std::min(n, r0 + step);
      LayerContext chunk_ctx = ctx;
      chunk_ctx.accumulate_grads = ctx.accumulate_grads || r0 > 0;  // later chunks add to the first's
      chunk_ctx.row_offset = ctx.row_offset + r0;
      Tensor dx;
      if (dx_all.defined()) {
        dx = dx_all.dtype() == DType::f32 ? dx_all.rows(r0, r1) : scratch_as(chunk_dx_, dx_all.rows(r0, r1).shape());
      }
      layers_[i]->backward(f32_rows(x_all, r0, r1, chunk_x_), f32_rows(y_all, r0, r1, chunk_y_),
                           f32_rows(dy_all, r0, r1, chunk_dy_), dx, chunk_ctx);
      if (dx.defined()) store_rows(dx, dx_all, r0);
    }
    dy_all = dx_all;
  }
}

}  // namespace rg
