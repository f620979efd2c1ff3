// What a model's buffers cost: the bytes Model::reserve allocates for a batch, and the same
// per layer, which the memory planner (train/memory_plan.h) and the model summary print.
// tests/test_memory_plan.cpp checks these figures against what reserve() really allocates.
#include <algorithm>

#include "nn/model.h"

namespace rg {

namespace {
int64_t bytes_of(int64_t elements, DType dtype) { return elements * static_cast<int64_t>(dtype_size(dtype)); }
}  // namespace

int64_t Model::chunk_elements(const LayerContext& ctx, int64_t batch) const {
  int64_t elements = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    elements = std::max(elements, chunk_rows(i, ctx, batch) * std::max(input_values(i), shapes_[i].numel()));
  }
  return elements;
}

Model::ReservedBytes Model::reserved_bytes_in(DType storage, int64_t batch) const {
  ReservedBytes r;
  int64_t largest = input_.numel(), scratch = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    r.activations += bytes_of(shapes_[i].numel() * batch, kept_dtype_in(storage, i));
    r.layer_state += bytes_of(layers_[i]->state_elements_per_sample() * batch, dtype_);
    scratch = std::max(scratch, layers_[i]->workspace_elements(batch));
    largest = std::max(largest, shapes_[i].numel());
  }
  // A graph model: a buffer per output (and a scratch in f32; model_graph.cpp); a chain: two
  // ping-pong, and on f16 storage the loss's f32 gradient.
  r.gradients = is_graph() ? graph_gradient_bytes(storage, batch)
                            : 2 * bytes_of(batch * largest, stored_dtype_in(storage));
  if (is_half(storage)) {
    LayerContext training;  // the largest chunks: training, when BatchNorm needs the whole batch
    training.training = true;
    if (!is_graph()) r.gradients += bytes_of(shapes_.back().numel() * batch, DType::f32);
    r.chunks = 4 * bytes_of(chunk_elements(training, batch), DType::f32);
  }
  r.workspace = bytes_of(scratch, dtype_);
  return r;
}

int64_t Model::param_bytes() const {
  int64_t bytes = 0;
  for (const auto& layer : layers_) bytes += 2 * bytes_of(layer->parameter_count(), dtype_);  // value and grad
  return bytes;
}

std::vector<Model::LayerMemory> Model::layer_memory(int64_t batch) const {
  std::vector<LayerMemory> rows;
  const int64_t n = std::max<int64_t>(batch, 1);
  for (size_t i = 0; i < layers_.size(); ++i) {
    LayerMemory row;
    row.layer = layers_[i]->name();
    row.kept_per_sample = bytes_of(shapes_[i].numel(), kept_dtype(i)) +
                          bytes_of(layers_[i]->state_elements_per_sample(), dtype_);
    const int64_t in = i == 0 ? input_.numel() : shapes_[i - 1].numel();
    row.gradient_per_sample = is_graph() ? bytes_of(shapes_[i].numel(), kept_dtype(i))  // its output's gradient buffer
                              : i == 0   ? 0
                                         : bytes_of(in, stored_dtype());
    row.workspace_per_sample = bytes_of(layers_[i]->workspace_elements(n), dtype_) / n;
    rows.push_back(row);
  }
  return rows;
}

int64_t Model::inference_activation_bytes(int64_t batch) const {
  int64_t bytes = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    bytes += bytes_of(shapes_[i].numel() * batch, kept_dtype(i));
  }
  if (is_half(storage_)) bytes += 2 * bytes_of(chunk_elements(LayerContext(), batch), dtype_);  // x and y chunks
  return bytes;
}

}  // namespace rg
