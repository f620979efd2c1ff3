// ClModel's graph models (cl_model.h; the CPU's is nn/model_graph.cpp): which layers may fuse
// into the one before, one f32 gradient buffer per layer output, the merge layers' forward on the
// outputs they name, and the backward: the layers in reverse, each writing the gradient of every
// input it reads into that input's buffer, or adding it there when a later consumer (earlier in
// this walk) wrote it already (through the scratch grad_b_ for a layer of one input, as the CPU
// adds its dx, or by the layer's own product with beta 1 where it takes that fusion: the same
// bits). Chains never come here: they keep the ping-pong path of cl_model_passes.cpp.
#include "nn/layer_profile.h"
#include "opencl/elementwise.h"
#include "opencl/model/cl_merge_layers.h"
#include "opencl/model/cl_model.h"

namespace rg::ocl {

std::vector<bool> ClModel::reads_alone(const Model& model) {
  std::vector<bool> alone(model.layers().size(), false);
  for (size_t i = 1; i < alone.size(); ++i) alone[i] = model.reads_only_previous(i);
  return alone;
}

int64_t ClModel::graph_gradient_bytes(int64_t batch) const {
  if (!model_.is_graph()) return 0;
  int64_t bytes = 0;
  for (size_t i = 0; i + 1 < layers_.size(); ++i) bytes += batch * sizes_[i] * 4;
  return bytes;
}

Status ClModel::reserve_graph_grads(int64_t batch) {
  if (!model_.is_graph()) return Status();
  RG_CHECK(storage_ == DType::f32, "a graph model with f16 storage (set_storage refuses it)");
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    RG_ASSIGN(Buffer grad, Buffer::allocate(device_, batch * sizes_[i] * 4,
                                            "the gradient of layer " + model_.layers()[i]->name() + "'s output"));
    graph_grads_.push_back(std::move(grad));
  }
  return Status();
}

Status ClModel::forward_merge(const FusedGroup& g, const ClContext& ctx, const ClEpilogue& epilogue) {
  std::vector<DeviceSpan> xs;
  for (size_t k = 0; k < model_.layer_inputs(g.head).size(); ++k) xs.push_back(layer_input(g.head, k));
  auto& merge = static_cast<ClMergeLayer&>(*layers_[g.head]);
  const LayerPhaseScope timed(ctx.host, g.head, LayerPhase::forward, batch_, 0);  // --profile-device: its commands
  return merge.forward_inputs(batch_, xs, acts_[g.last].f32(0, batch_ * sizes_[g.last]), ctx, epilogue);
}

Status ClModel::backward_graph(const ClContext& ctx, const std::vector<LayerBackward>& plan, DeviceSpan input_grad) {
  std::vector<char> written(layers_.size(), 0);  // a gradient is in gradient_of(j) already
  char input_written = 0;
  for (size_t i = layers_.size(); i-- > 0;) {
    if (plan[i].taken_by_head) continue;  // its head reads its dy through it (and its input is read by nothing else)
    std::vector<DeviceSpan> dxs;
    std::vector<bool> add_to;
    for (int j : model_.layer_inputs(i)) {
      const bool model_input = j == Model::kModelInput;
      const DeviceSpan target = model_input ? input_grad : gradient_of(static_cast<size_t>(j));
      char& was = model_input ? input_written : written[static_cast<size_t>(j)];
      dxs.push_back(target);
      add_to.push_back(target.mem != nullptr && was);
      if (target.mem != nullptr) was = 1;
    }
    const Status s = backward_graph_layer(i, dxs, add_to, plan, ctx);
    if (!s.ok()) return s.with_context("layer " + model_.layers()[i]->name() + " backward: ");
  }
  return Status();
}

Status ClModel::backward_graph_layer(size_t i, const std::vector<DeviceSpan>& dxs, const std::vector<bool>& add_to,
                                     const std::vector<LayerBackward>& plan, const ClContext& ctx) {
  const DeviceSpan dy = gradient_of(plan[i].top(i));
  if (auto* merge = dynamic_cast<ClMergeLayer*>(layers_[i].get()); merge != nullptr) {
    const LayerPhaseScope timed = backward_phase_scope(ctx.host, *model_.layers()[i], i, batch_, true);
    return merge->backward_inputs(batch_, dy, dxs, add_to, ctx, backward_fusion(i, plan, false));
  }
  // the layer's x, or a fused activation's y (cl_model_passes.cpp's backward)
  const DeviceSpan in = plan[i].reads_own_output ? acts_[i].f32() : layer_input(i);
  // dx onto a gradient already there: by the layer's own product where it can, else into the scratch then added
  const bool adds_itself = add_to[0] && fuse_ && layers_[i]->fusion_head().add_to_dx;
  const bool add_after = add_to[0] && !adds_itself;
  RG_TRY(backward_rows(i, 0, batch_, in, dy, true, add_after ? grad_b_.f32() : dxs[0], ctx,
                       backward_fusion(i, plan, adds_itself)));
  if (add_after) RG_TRY(f32_add(device_, batch_ * input_size_of(i), dxs[0], grad_b_.f32(), dxs[0]).status());
  return Status();
}

}  // namespace rg::ocl
