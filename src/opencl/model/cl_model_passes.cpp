// ClModel's forward and backward, layer by layer over row chunks: with f32 storage one chunk of
// the whole batch, read and written in place; with f16 storage each chunk's input (and in
// backward its output and output gradient) widened into f32 chunk buffers, the layer run on them,
// and its output (or input gradient) rounded back into the f16 buffers, as Model's f16 path does.
// Fused groups (cl_fusion.h) run as one forward of their head. A graph model's merge layers and
// its backward are cl_model_graph.cpp's.
#include <algorithm>

#include "nn/f16_chunks.h"
#include "nn/layer_profile.h"
#include "opencl/elementwise.h"
#include "opencl/model/cl_merge_layers.h"
#include "opencl/model/cl_model.h"

namespace rg::ocl {

namespace {

LayerContext at_row(const LayerContext& ctx, int64_t r0) {
  LayerContext out = ctx;
  out.row_offset += r0;  // the chunk's first sample's place in the step: dropout's stream
  return out;
}
}  // namespace

int64_t ClModel::chunk_rows(size_t i, const LayerContext& ctx, int64_t n) const {
  if (storage_ != DType::f16 || model_.layers()[i]->needs_whole_batch(ctx) || layers_[i]->needs_whole_batch()) return n;
  return f16_chunk_rows(n, std::max(input_size_of(i), sizes_[i]), kF16ChunkValuesDevice);
}

int64_t ClModel::chunk_elements(int64_t batch) const {
  LayerContext training;
  training.training = true;
  int64_t most = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    most = std::max(most, chunk_rows(i, training, batch) * std::max(input_size_of(i), sizes_[i]));
  }
  return most;
}

Status ClModel::forward_rows(size_t i, int64_t r0, int64_t rows, DeviceSpan in, const ClContext& ctx) {
  const int64_t in_size = input_size_of(i), out_size = sizes_[i];
  const bool last = i + 1 == layers_.size(), f16 = storage_ == DType::f16;
  DeviceSpan x{in.mem, in.offset + r0 * in_size, rows * in_size};
  if (f16 && i > 0) {  // the input is an f16 activation
    RG_TRY(f32_from_f16(device_, rows * in_size, acts_[i - 1].f16(r0 * in_size, rows * in_size), chunk_x_.f32()).status());
    x = chunk_x_.f32();
  }
  const DeviceSpan y = f16 && !last ? chunk_y_.f32() : acts_[i].f32(r0 * out_size, rows * out_size);
  const LayerContext host = at_row(ctx.host, r0);
  const LayerPhaseScope timed(ctx.host, i, LayerPhase::forward, rows, 0);  // --profile-device: its commands
  RG_TRY(layers_[i]->forward(rows, x, y, ClContext{host, ctx.workspace, ctx.transfers}));
  if (f16 && !last) RG_TRY(f16_from_f32(device_, rows * out_size, y, acts_[i].f16(r0 * out_size, rows * out_size)).status());
  return Status();
}

Status ClModel::forward_group(const FusedGroup& g, const ClContext& ctx) {
  ClEpilogue epilogue;
  if (g.affine >= 0) {
    RG_ASSIGN(epilogue.affine, layers_[static_cast<size_t>(g.affine)]->write_inference_affine());
  }
  if (g.activation >= 0) epilogue.activation = layers_[static_cast<size_t>(g.activation)]->fusion_tail().activation;
  if (dynamic_cast<ClMergeLayer*>(layers_[g.head].get()) != nullptr) return forward_merge(g, ctx, epilogue);
  // f32 storage only: the whole batch, in place, the head writing the group's last output.
  const LayerPhaseScope timed(ctx.host, g.head, LayerPhase::forward, batch_, 0);  // the group's time: its head's
  const DeviceSpan in = layer_input(g.head);
  const DeviceSpan x{in.mem, in.offset, batch_ * input_size_of(g.head)};
  return layers_[g.head]->forward_fused(batch_, x, acts_[g.last].f32(0, batch_ * sizes_[g.last]), ctx, epilogue);
}

Status ClModel::forward(const LayerContext& ctx) {
  const ClContext cl_ctx{ctx, workspace_.mem() ? workspace_.f32() : DeviceSpan{}, &transfers_};
  // Not with f16 storage: there each layer's output is rounded to f16 as it is stored, and the
  // next layer reads the rounded value (a leaky relu of it differs from one of the f32 product).
  groups_ = plan_fusion(layers_, reads_alone_, ctx.training, fuse_ && storage_ == DType::f32);
  for (const FusedGroup& g : groups_) {
    const size_t i = g.head;
    if (g.fused()) {
      const Status s = forward_group(g, cl_ctx);
      if (!s.ok()) return s.with_context("layer " + model_.layers()[i]->name() + " forward (" + fused_names(g) + " fused): ");
      continue;
    }
    if (dynamic_cast<ClMergeLayer*>(layers_[i].get()) != nullptr) {  // a graph model's add or concat
      const Status s = forward_merge(g, cl_ctx, ClEpilogue{});
      if (!s.ok()) return s.with_context("layer " + model_.layers()[i]->name() + " forward: ");
      continue;
    }
    const int64_t rows = chunk_rows(i, ctx, batch_);
    for (int64_t r0 = 0; r0 < batch_; r0 += rows) {
      const DeviceSpan in = layer_input(i);  // f16 storage (chains only) widens it instead
      const Status s = forward_rows(i, r0, std::min(rows, batch_ - r0), in, cl_ctx);
      if (!s.ok()) return s.with_context("layer " + model_.layers()[i]->name() + " forward: ");
    }
  }
  return Status();
}

Status ClModel::backward_rows(size_t i, int64_t r0, int64_t rows, DeviceSpan in, DeviceSpan dy_buffer, bool dy_f32,
                              DeviceSpan dx_buffer, const ClContext& ctx, const ClBackwardFusion& fusion) {
  const int64_t in_size = input_size_of(i), out_size = sizes_[i];
  const bool last = i + 1 == layers_.size(), f16 = storage_ == DType::f16;
  const int64_t xs = r0 * in_size, xn = rows * in_size, ys = r0 * out_size, yn = rows * out_size;
  DeviceSpan x{in.mem, in.offset + xs, xn};
  DeviceSpan y = f16 && !last ? DeviceSpan{} : acts_[i].f32(ys, yn);  // an f16 y is widened below
  DeviceSpan dy{dy_buffer.mem, dy_buffer.offset + ys, yn};
  DeviceSpan dx = dx_buffer.mem != nullptr ? DeviceSpan{dx_buffer.mem, dx_buffer.offset + xs, xn} : DeviceSpan{};
  if (f16) {  // widen what is stored in f16 into the chunks; dx goes to its chunk, then back to f16
    if (i > 0) {
      RG_TRY(f32_from_f16(device_, xn, acts_[i - 1].f16(xs, xn), chunk_x_.f32()).status());
      x = chunk_x_.f32();
    }
    if (!last) {
      RG_TRY(f32_from_f16(device_, yn, acts_[i].f16(ys, yn), chunk_y_.f32()).status());
      y = chunk_y_.f32();
    }
    if (!dy_f32) {
      RG_TRY(f32_from_f16(device_, yn, DeviceSpan{dy_buffer.mem, dy_buffer.offset + ys, yn}, chunk_dy_.f32()).status());
      dy = chunk_dy_.f32();
    }
    if (i > 0) dx = chunk_dx_.f32();
  }
  LayerContext host = at_row(ctx.host, r0);
  host.accumulate_grads = ctx.host.accumulate_grads || r0 > 0;  // the chunks after the first add
  const LayerPhaseScope timed = backward_phase_scope(ctx.host, *model_.layers()[i], i, rows, dx.mem != nullptr);
  const ClContext layer_ctx{host, ctx.workspace, ctx.transfers};
  if (fusion.activation.kind != FusedActivation::none || fusion.add_to_dx) {
    ClBackwardFusion rows_fusion = fusion;  // the activation's output over these rows
    const DeviceSpan out = fusion.activation_output;
    if (out.mem != nullptr) rows_fusion.activation_output = DeviceSpan{out.mem, out.offset + ys, yn};
    RG_TRY(layers_[i]->backward_fused(rows, x, y, dy, dx, layer_ctx, rows_fusion));
  } else {
    RG_TRY(layers_[i]->backward(rows, x, y, dy, dx, layer_ctx));
  }
  if (f16 && i > 0) RG_TRY(f16_from_f32(device_, xn, dx, DeviceSpan{dx_buffer.mem, dx_buffer.offset + xs, xn}).status());
  return Status();
}

Result<std::vector<ClModel::LayerBackward>> ClModel::backward_plan() const {
  // The last forward's fused activations: their head never wrote their x, so they read their y
  // (the same gradient: ClLayer::fusion_tail), or their head takes their backward as it reads dy.
  // A folded batch norm left neither its x nor its statistics.
  std::vector<LayerBackward> plan(layers_.size());
  for (const FusedGroup& g : groups_) {
    if (g.affine >= 0) {
      const std::string& norm = model_.layers()[static_cast<size_t>(g.affine)]->name();
      return Status::error("backward after an inference forward that folded " + norm + " into " +
                           model_.layers()[g.head]->name() + "'s product, whose output was not kept: run the "
                           "forward in training (or with RETROGRAD_CL_FUSE=0)");
    }
    if (g.activation < 0) continue;
    LayerBackward& activation = plan[static_cast<size_t>(g.activation)];
    activation.reads_own_output = true;
    if (layers_[g.head]->fusion_head().activation_backward) {
      activation.taken_by_head = true;
      plan[g.head].tail = g.activation;
    }
  }
  return plan;
}

ClBackwardFusion ClModel::backward_fusion(size_t i, const std::vector<LayerBackward>& plan, bool add_to_dx) const {
  ClBackwardFusion fusion;
  if (plan[i].tail >= 0) {
    const size_t t = static_cast<size_t>(plan[i].tail);
    fusion.activation = layers_[t]->fusion_tail().activation;
    fusion.activation_output = acts_[t].f32();
  }
  fusion.add_to_dx = add_to_dx;
  return fusion;
}

Status ClModel::backward(const LayerContext& ctx, DeviceSpan input_grad) {
  const bool f16 = storage_ == DType::f16;
  RG_CHECK(!f16 || input_grad.mem == nullptr, "an input gradient with f16 storage");
  const ClContext cl_ctx{ctx, workspace_.mem() ? workspace_.f32() : DeviceSpan{}, &transfers_};
  RG_ASSIGN(const std::vector<LayerBackward> plan, backward_plan());
  if (model_.is_graph()) return backward_graph(cl_ctx, plan, input_grad);
  // Gradient buffers: the loss wrote the output's into A (f32 storage) or output_grad_ (f16).
  auto stored = [&](const Buffer& b) { return f16 ? b.f16() : b.f32(); };
  bool dy_in_a = true;
  for (size_t i = layers_.size(); i-- > 0;) {
    if (plan[i].taken_by_head) continue;  // its head reads its dy (in the buffer where it is) through it
    const bool last = plan[i].top(i) + 1 == layers_.size();
    const DeviceSpan dy = last ? output_grad() : stored(dy_in_a ? grad_a_ : grad_b_);
    const DeviceSpan dx = i == 0 ? input_grad : stored(dy_in_a ? grad_b_ : grad_a_);
    // the layer's x (f16 storage widens it instead), or a fused activation's y
    const DeviceSpan in = i == 0 ? input_span() : acts_[plan[i].reads_own_output ? i : i - 1].f32();
    const int64_t rows = chunk_rows(i, ctx, batch_);
    const ClBackwardFusion fusion = backward_fusion(i, plan, false);
    for (int64_t r0 = 0; r0 < batch_; r0 += rows) {
      const Status s = backward_rows(i, r0, std::min(rows, batch_ - r0), in, dy, last || !f16, dx, cl_ctx, fusion);
      if (!s.ok()) return s.with_context("layer " + model_.layers()[i]->name() + " backward: ");
    }
    dy_in_a = !dy_in_a;
  }
  return Status();
}

std::string ClModel::fused_names(const FusedGroup& g) const {
  std::string names;
  for (size_t i = g.head + 1; i <= g.last; ++i) names += (names.empty() ? "" : ", ") + model_.layers()[i]->name();
  return "with " + names;
}

}  // namespace rg::ocl
