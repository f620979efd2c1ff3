// Graph models (model.h): a layer may read other layers than the one before it (`inputs = a, b`
// in its section; a layer's name is its `name =` key, else its kind and number: conv3). Here:
// reading and checking the graph, configuring each layer on what it reads, and the passes.
// Layers run in cfg order, so an input must be an earlier layer (no cycles by construction).
// Forward keeps every output until backward (as a chain does); backward walks the layers in
// reverse, and where an output feeds several layers their gradients are summed in its buffer.
#include <algorithm>
#include <map>

#include "nn/layer_profile.h"
#include "nn/merge_layers.h"
#include "nn/model.h"

namespace rg {

namespace {

// "a, b ,c" -> {"a", "b", "c"}; an empty item is an error.
Result<std::vector<std::string>> split_inputs(const CfgSection& section, const std::string& text) {
  std::vector<std::string> names;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) return Status::error(section.where("inputs") + "an empty name in '" + text + "' (inputs = a, b)");
    names.push_back(item);
    if (end == text.size()) return names;
    begin = end + 1;
  }
}

}  // namespace

Status Model::resolve_inputs(const CfgDocument& doc, const std::vector<size_t>& sections) {
  std::vector<std::vector<std::string>> named(layers_.size());  // empty: the layer before
  for (size_t i = 0; i < layers_.size(); ++i) {
    const CfgSection& section = doc.sections[sections[i]];
    RG_ASSIGN(const std::string text, section.get_string_or("inputs", ""));
    if (text.empty()) continue;
    RG_ASSIGN(named[i], split_inputs(section, text));
    if (graph_layer_.empty()) graph_layer_ = layers_[i]->name();
  }
  inputs_.assign(layers_.size(), {});
  if (!is_graph()) {
    for (size_t i = 0; i < layers_.size(); ++i) inputs_[i] = {static_cast<int>(i) - 1};
    return Status();
  }
  std::map<std::string, int> index = {{"input", kModelInput}};  // names of the layers before i
  std::vector<int> consumers(layers_.size(), 0);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const CfgSection& section = doc.sections[sections[i]];
    if (named[i].empty()) inputs_[i] = {static_cast<int>(i) - 1};
    for (const std::string& name : named[i]) {
      auto it = index.find(name);
      if (it == index.end()) {
        bool later = false;  // every layer is named by now
        for (size_t k = i; k < layers_.size(); ++k) later = later || layers_[k]->name() == name;
        return Status::error(section.where("inputs") + "'" + name + "' " +
                             (later ? "is this layer or a later one: a layer reads earlier layers only (no cycles)"
                                    : "names no layer (a layer's name is its name = key, else its kind and number: conv1)"));
      }
      inputs_[i].push_back(it->second);
    }
    for (int j : inputs_[i]) {
      if (j >= 0) ++consumers[j];
    }
    const std::string& name = layers_[i]->name();
    if (!index.emplace(name, static_cast<int>(i)).second) {
      return Status::error(section.where("name") + "the name '" + name + "' is " +
                           (name == "input" ? "the model's input" : "used twice") +
                           ": in a graph model inputs = ... name layers, so each name is one layer's");
    }
  }
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    if (consumers[i] == 0) {
      return Status::error(doc.sections[sections[i]].where() + "the output of " + layers_[i]->name() +
                           " goes to no layer: in a graph model every layer but the last feeds a later one");
    }
  }
  return Status();
}

Result<Shape> Model::configure_layer(size_t i, const CfgSection& section) {
  std::vector<Shape> shapes;
  std::vector<std::string> names;
  for (int j : inputs_[i]) {
    shapes.push_back(j == kModelInput ? input_ : shapes_[j]);
    names.push_back(j == kModelInput ? "input" : layers_[j]->name());
  }
  auto* merge = dynamic_cast<MergeLayer*>(layers_[i].get());
  if (merge == nullptr && shapes.size() != 1) {
    return Status::error(section.where("inputs") + layers_[i]->kind() + " reads one input, not " +
                         std::to_string(shapes.size()) + " (add and concat join several)");
  }
  Result<Shape> out = merge != nullptr ? merge->configure_inputs(shapes, names) : layers_[i]->configure(shapes[0]);
  if (!out.ok()) {
    if (merge != nullptr) return Status::error(section.where(is_graph() ? "inputs" : "") + out.status().message());
    return Status::error(section.where() + "input " + shapes[0].str() + ": " + out.status().message());
  }
  shapes_.push_back(out.value());
  return out;
}

Status Model::refuse_graph(const std::string& executor) const {
  if (!is_graph()) return Status();
  return Status::error(cfg_.file + ": graph models (layer " + graph_layer_ + " names its inputs) do not run on " +
                       executor + " yet: issue 31");
}

bool Model::reads_only_previous(size_t j) const {
  if (j == 0 || j >= layers_.size() || inputs_[j] != std::vector<int>{static_cast<int>(j) - 1}) return false;
  int readers = 0;
  for (const std::vector<int>& inputs : inputs_) readers += static_cast<int>(std::count(inputs.begin(), inputs.end(), j - 1));
  return readers == 1;
}

int64_t Model::input_values(size_t i) const {
  int64_t values = 0;
  for (int j : inputs_[i]) values += j == kModelInput ? input_.numel() : shapes_[j].numel();
  return values;
}

// One buffer per output, in the dtype the output is kept in (f16 storage: f16 but the last,
// as a chain's gradients between layers), and in f32 storage a scratch where a layer's dx waits
// to be added; on f16 storage the sums are made in the f32 chunk buffers instead.
int64_t Model::graph_gradient_bytes(DType storage, int64_t batch) const {
  int64_t bytes = 0, largest = input_.numel();
  for (size_t i = 0; i < layers_.size(); ++i) {
    bytes += shapes_[i].numel() * batch * static_cast<int64_t>(dtype_size(kept_dtype_in(storage, i)));
    largest = std::max(largest, shapes_[i].numel());
  }
  if (!is_half(storage)) bytes += largest * batch * static_cast<int64_t>(dtype_size(dtype_));
  return bytes;
}

Status Model::reserve_graph_grads(int64_t batch) {
  int64_t largest = input_.numel();
  for (size_t i = 0; i < layers_.size(); ++i) {
    RG_ASSIGN(Tensor grad, Tensor::zeros(shapes_[i].batched(batch), kept_dtype(i), layers_[i]->name() + " output gradient"));
    grads_.push_back(grad);
    largest = std::max(largest, shapes_[i].numel());
  }
  if (is_half(storage_)) return Status();  // sums are made in the chunk buffers (model_f16.cpp)
  RG_ASSIGN(grad_scratch_, Tensor::zeros(Shape{batch * largest}, dtype_, "a layer's input gradient before summing"));
  return Status();
}

Tensor Model::output_grad_of(size_t i) const {
  if (is_graph()) return grads_[i].rows(0, batch_);
  if (i + 1 == layers_.size()) return output_grad();
  // A chain's dx goes to the ping-pong buffer the last one did not: from the output's buffer
  // back (f32: grad_a_ is the output's; f16: the output's is output_grad_, its dx in grad_a_).
  const size_t from_end = layers_.size() - 1 - i - (is_half(storage_) ? 1 : 0);
  const Tensor& buffer = from_end % 2 == 0 ? grad_a_ : grad_b_;
  return buffer.rows(0, batch_ * shapes_[i].numel()).reshaped(shapes_[i].batched(batch_));
}

void Model::gradient_targets(size_t i, const Tensor& model_dx, std::vector<char>& written, std::vector<Tensor>* dxs,
                             std::vector<bool>* add_to) const {
  dxs->clear();
  add_to->clear();
  for (int j : inputs_[i]) {
    const Tensor target = j == kModelInput ? model_dx : output_grad_of(static_cast<size_t>(j));
    char& was = written[static_cast<size_t>(j + 1)];
    dxs->push_back(target);
    add_to->push_back(target.defined() && was);
    if (target.defined()) was = 1;
  }
}

Tensor Model::graph_input(size_t i, size_t k) const {
  const int j = inputs_[i][k];
  return j == kModelInput ? input_view_ : acts_[j].rows(0, batch_);
}

Tensor Model::forward_graph(const Tensor& x, const LayerContext& ctx) {
  if (values_hook_) values_hook_(0, x, ctx);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Tensor out = acts_[i].rows(0, batch_);
    const WidenedParams widened(*this, i);
    const LayerPhaseScope timed(ctx, i, LayerPhase::forward, batch_, 0);
    if (auto* merge = dynamic_cast<MergeLayer*>(layers_[i].get()); merge != nullptr) {
      std::vector<Tensor> xs;
      for (size_t k = 0; k < inputs_[i].size(); ++k) xs.push_back(graph_input(i, k));
      merge->forward_inputs(xs, out, ctx);
    } else {
      layers_[i]->forward(graph_input(i, 0), out, layers_[i]->in_own_precision(ctx));
    }
    if (values_hook_) values_hook_(i + 1, out, ctx);
  }
  return acts_.back().rows(0, batch_);
}

namespace {
// dst += src, elementwise (same element count and dtype).
void add_gradient_into(const Tensor& dst, const Tensor& src) {
  dispatch_float(dst.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* d = dst.data<T>();
    const T* s = src.data<T>();
    for (int64_t i = 0; i < dst.numel(); ++i) d[i] += s[i];
  });
}
}  // namespace

void Model::backward_graph(const LayerContext& ctx, const Tensor& input_grad) {
  std::vector<char> written(layers_.size() + 1, 0);  // gradient_targets
  const Tensor model_dx = input_grad.defined() ? input_grad.reshaped(input_view_.shape()) : Tensor();
  std::vector<Tensor> dxs;
  std::vector<bool> add_to;
  for (size_t i = layers_.size(); i-- > 0;) {
    const Tensor dy = grads_[i].rows(0, batch_);
    gradient_targets(i, model_dx, written, &dxs, &add_to);
    const bool any_dx = std::any_of(dxs.begin(), dxs.end(), [](const Tensor& t) { return t.defined(); });
    const LayerPhaseScope timed = backward_phase_scope(ctx, *layers_[i], i, batch_, any_dx);
    if (auto* merge = dynamic_cast<MergeLayer*>(layers_[i].get()); merge != nullptr) {
      merge->backward_inputs(dy, dxs, add_to, ctx);
      continue;
    }
    const Tensor x = graph_input(i, 0);
    const Tensor dx = add_to[0] ? grad_scratch_.rows(0, x.numel()).reshaped(x.shape()) : dxs[0];
    layers_[i]->backward(x, acts_[i].rows(0, batch_), dy, dx, layers_[i]->in_own_precision(ctx));
    if (add_to[0]) add_gradient_into(dxs[0], dx);
  }
}

}  // namespace rg
