// f16 weights, for inference: the conv and dense kernels (every param of rank >= 2) are rounded
// to f16 and kept so, half their bytes; biases, batch-norm scales and statistics stay f32 (they
// are small). Dense layers read their f16 W themselves, widening a block of rows at a time into
// the workspace (Layer::reads_f16_weights); any other layer's f16 params are widened into one
// shared f32 buffer, the size of the largest such layer's, right before its forward.
#include <algorithm>

#include "cpu/kernel_tables.h"
#include "nn/model.h"

namespace rg {

namespace {
bool kept_in_f16(const Param& p) { return p.value.shape().rank() >= 2; }
}  // namespace

Status Model::store_weights_f16() {
  if (dtype_ != DType::f32) {
    return Status::error("f16 weights are for a model computing in f32 (this one computes in " +
                         std::string(dtype_name(dtype_)) + ")");
  }
  if (weights_f16_) return Status();
  // Allocate everything first, so that a refused allocation changes nothing.
  std::vector<Tensor> narrowed;
  int64_t widest = 0;
  for (const auto& layer : layers_) {
    int64_t widened = 0;
    for (Param* p : layer->params()) {
      if (!kept_in_f16(*p)) continue;
      RG_ASSIGN(Tensor f16, Tensor::zeros(p->value.shape(), DType::f16, p->name + " (f16)"));
      f16_convert().from_f32(p->value.numel(), p->value.f32(), f16.data<uint16_t>());
      narrowed.push_back(f16);
      widened += p->value.numel();
    }
    if (!layer->reads_f16_weights()) widest = std::max(widest, widened);
  }
  Tensor widened;
  if (widest > 0) {
    RG_ASSIGN(widened, Tensor::zeros(Shape{widest}, DType::f32, "f32 params of one layer"));
  }
  widened_params_ = widened;
  size_t next = 0;
  for (const auto& layer : layers_) {
    for (Param* p : layer->params()) {
      p->grad = Tensor();  // forward only from now on
      if (kept_in_f16(*p)) p->value = narrowed[next++];  // the f32 values are released here
    }
  }
  weights_f16_ = true;
  reserved_ = 0;  // a dense layer's workspace grows by its f16 rows' block at the next reserve()
  return Status();
}

Model::WidenedParams::WidenedParams(Model& model, size_t layer) {
  if (!model.weights_f16_ || model.layers_[layer]->reads_f16_weights()) return;
  int64_t at = 0;
  for (Param* p : model.layers_[layer]->params()) {
    if (p->value.dtype() != DType::f16) continue;
    const Tensor f32 = model.widened_params_.rows(at, at + p->value.numel()).reshaped(p->value.shape());
    f16_convert().to_f32(p->value.numel(), p->value.data<uint16_t>(), f32.f32());
    at += p->value.numel();
    swapped_.push_back({p, p->value});
    p->value = f32;
  }
}

Model::WidenedParams::~WidenedParams() {
  for (auto& [param, f16] : swapped_) param->value = f16;
}

int64_t Model::weight_bytes() {
  int64_t bytes = static_cast<int64_t>(widened_params_.bytes());
  int64_t dense_block = 0;  // a dense layer's widened rows, in the shared workspace
  for (const auto& layer : layers_) {
    if (weights_f16_ && layer->reads_f16_weights()) dense_block = std::max(dense_block, layer->workspace_elements(1));
  }
  bytes += dense_block * static_cast<int64_t>(sizeof(float));
  for (Param* p : params()) bytes += static_cast<int64_t>(p->value.bytes());
  for (Param* p : buffers()) bytes += static_cast<int64_t>(p->value.bytes());
  return bytes;
}

}  // namespace rg
