// Building a model from cfg, and the forward/backward passes over its layers.
#include "nn/model.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "base/memory.h"
#include "nn/activation.h"
#include "nn/layer_profile.h"
#include "nn/layer_registry.h"

namespace rg {

namespace {
// Adds a layer's `count` of something to the model's `total`; past kMaxModelValues, an error at
// the layer's section.
Status count_model_values(const CfgSection& section, const std::string& layer, int64_t count, const char* what,
                          int64_t* total) {
  if (count >= 0 && count <= kMaxModelValues && *total + count <= kMaxModelValues) {
    *total += count;
    return Status();
  }
  return Status::error(section.where() + "the model reaches more than " + std::to_string(kMaxModelValues) + " " + what +
                       " (2^32) at " + layer + ", past any memory");
}
}  // namespace

Result<std::unique_ptr<Model>> Model::from_cfg(const CfgDocument& doc) {
  std::unique_ptr<Model> model(new Model());
  model->cfg_ = doc;
  const CfgSection& net = doc.sections.front();
  if (net.kind() != "net") {
    return Status::error(net.where() + "the first section must be [net] (with input = ... and loss = ...)");
  }
  RG_ASSIGN(model->input_, net.get_shape("input"));
  RG_ASSIGN(const std::string loss_text, net.get_string_or("loss", "softmax_cross_entropy"));
  auto loss = loss_from_name(loss_text);
  if (!loss.ok()) return Status::error(net.where("loss") + loss.status().message());
  model->loss_ = loss.value();
  RG_ASSIGN(const std::string target_text, net.get_string_or("target", "auto"));
  RG_TRY(net.check_all_used());

  std::map<std::string, int> counts;
  std::vector<size_t> sections;  // each layer's section in doc
  for (size_t i = 1; i < doc.sections.size(); ++i) {
    const CfgSection& section = doc.sections[i];
    if (section.kind() == "net") return Status::error(section.where() + "[net] may appear only once, first");
    if (section.kind() == "train") continue;  // training settings: read by `train` (train_section)
    RG_TRY(section.get_string_or("inputs", "").status());  // the graph's edges: read by resolve_inputs
    RG_ASSIGN(std::unique_ptr<Layer> layer, make_layer(section));
    // A default name: the kind and its number among the layers of that kind (conv3); a kind that
    // ends in a digit gets an underscore between (relu6_1, not relu61).
    const std::string& kind = section.kind();
    const bool digit_end = !kind.empty() && std::isdigit(static_cast<unsigned char>(kind.back())) != 0;
    if (layer->name().empty()) layer->set_name(kind + (digit_end ? "_" : "") + std::to_string(++counts[kind]));
    model->layers_.push_back(std::move(layer));
    sections.push_back(i);
  }
  if (model->layers_.empty()) return Status::error(net.where() + "the model has no layers after [net]");
  model->layer_sections_ = sections;
  RG_TRY(model->resolve_inputs(doc, sections));

  Shape shape = model->input_;
  int64_t values_per_sample = shape.numel(), parameters = 0;  // each kept at most kMaxModelValues
  for (size_t i = 0; i < model->layers_.size(); ++i) {
    const CfgSection& section = doc.sections[sections[i]];
    const Layer& layer = *model->layers_[i];
    RG_ASSIGN(shape, model->configure_layer(i, section));
    RG_TRY(count_model_values(section, layer.name(), shape.numel(), "values per sample in the layers' outputs", &values_per_sample));
    RG_TRY(count_model_values(section, layer.name(), layer.parameter_count(), "parameters", &parameters));
  }

  const int64_t outputs = shape.numel();
  if (model->loss_ == LossKind::none && target_text != "auto") {
    return Status::error(net.where("target") + "a model with loss = none compares its output with nothing");
  }
  if (target_text == "auto") {
    model->target_ = model->loss_ == LossKind::softmax_cross_entropy ? TargetKind::labels
                     : outputs == model->input_.numel()              ? TargetKind::input
                                                                     : TargetKind::onehot;
  } else {
    auto target = target_from_name(target_text);
    if (!target.ok()) return Status::error(net.where("target") + target.status().message());
    model->target_ = target.value();
  }
  if (model->loss_ == LossKind::softmax_cross_entropy && model->target_ != TargetKind::labels) {
    return Status::error(net.where("target") + "softmax_cross_entropy compares with labels");
  }
  if (model->loss_ != LossKind::softmax_cross_entropy && model->target_ == TargetKind::labels) {
    return Status::error(net.where("target") + "target = labels (class indices) is for softmax_cross_entropy; " +
                         loss_name(model->loss_) + " compares with rows of the output's size: target = onehot "
                         "(class labels as one-hot rows) or input");
  }
  if (model->loss_ == LossKind::softmax_cross_entropy && outputs < 2) {
    return Status::error(net.where("loss") + "softmax_cross_entropy needs at least 2 outputs, the last layer gives " +
                         shape.str());
  }
  if (model->target_ == TargetKind::input && shape.numel() != model->input_.numel()) {
    return Status::error(net.where("target") + "target = input needs an output of the input's size " +
                         model->input_.str() + ", the last layer gives " + shape.str());
  }
  return model;
}

Status Model::init(uint64_t seed, DType dtype) {
  dtype_ = dtype;
  RG_TRY(check_host_memory(param_bytes(), cfg_.file + ": the parameters and their gradients (" +
                                              std::to_string(param_count()) + " values each)"));
  // One stream per layer: adding a layer at the end does not change earlier layers' weights.
  for (size_t i = 0; i < layers_.size(); ++i) {
    Rng rng(seed, 1000 + i);
    RG_TRY(layers_[i]->init(rng, dtype));
  }
  reserved_ = 0;
  return Status();
}

Status Model::reserve(int64_t batch) {
  if (batch <= reserved_) return Status();
  acts_.clear();
  grad_a_ = grad_b_ = grad_scratch_ = Tensor();
  grads_.clear();
  RG_TRY(check_host_memory(reserved_bytes(batch).total(), cfg_.file + ": the activations and gradients of a batch of " +
                                                              std::to_string(batch) + " through " +
                                                              std::to_string(layers_.size()) + " layers"));
  int64_t largest = input_.numel(), scratch = 0;
  std::string largest_name = "the input";  // whose gradient sizes the two buffers, for messages
  for (size_t i = 0; i < layers_.size(); ++i) {
    scratch = std::max(scratch, layers_[i]->workspace_elements(batch));
    RG_ASSIGN(Tensor act, Tensor::zeros(shapes_[i].batched(batch), kept_dtype(i), layers_[i]->name() + " output"));
    acts_.push_back(act);
    RG_TRY(layers_[i]->reserve(batch, dtype_));  // state a layer keeps from forward to backward
    if (shapes_[i].numel() > largest) largest = shapes_[i].numel(), largest_name = layers_[i]->name() + "'s output";
  }
  if (is_graph()) {
    RG_TRY(reserve_graph_grads(batch));
  } else {
    RG_TRY(reserve_chain_grads(batch, largest, largest_name));
  }
  if (is_half(storage_)) RG_TRY(reserve_f16_chunks(batch));
  if (scratch > 0) RG_TRY(workspace_.reserve(scratch, dtype_));
  reserved_ = batch;
  return Status();
}

Status Model::reserve_chain_grads(int64_t batch, int64_t largest, const std::string& largest_name) {
  const std::string grad_what = "a gradient buffer between layers (batch " + std::to_string(batch) + " x " +
                                std::to_string(largest) + ", " + largest_name + ")";
  RG_ASSIGN(grad_a_, Tensor::zeros(Shape{batch * largest}, stored_dtype(), grad_what));
  RG_ASSIGN(grad_b_, Tensor::zeros(Shape{batch * largest}, stored_dtype(), grad_what));
  return Status();
}

namespace {
// The caller's context, with the model's workspace unless the caller brought one.
LayerContext with_workspace(const LayerContext& ctx, Workspace& workspace) {
  LayerContext out = ctx;
  if (out.workspace == nullptr) out.workspace = &workspace;
  return out;
}
}  // namespace

Tensor Model::forward(const Tensor& x, const LayerContext& caller_ctx) {
  const LayerContext ctx = with_workspace(caller_ctx, workspace_);
  const int64_t n = x.shape()[0];
  RG_CHECK(n <= reserved_, "batch " << n << " > reserved " << reserved_);
  RG_CHECK(x.numel() == n * input_.numel(), "input " << x.shape().str() << " for " << input_.str());
  input_view_ = x;
  batch_ = n;
  if (is_half(storage_)) {
    RG_CHECK(!values_hook_, "a values hook runs on f32 storage only");
    return forward_f16(x, ctx);
  }
  if (is_graph()) return forward_graph(x, ctx);
  if (values_hook_) values_hook_(0, x, ctx);
  relu_fused_ = ctx.training;
  Tensor in = x;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool fused = relu_fused_ && fuses_relu_after(i);  // then layer i writes the relu's output
    Tensor out = acts_[fused ? i + 1 : i].rows(0, n);
    {
      const WidenedParams widened(*this, i);
      const LayerPhaseScope timed(ctx, i, LayerPhase::forward, n, 0);
      layers_[i]->forward(in, out, fused_relu_context(layers_[i]->in_own_precision(ctx), fused));
    }
    if (values_hook_) values_hook_(i + 1, out, ctx);
    in = out;
    if (fused) ++i;
  }
  return in;
}

bool Model::fuses_relu_after(size_t i) const {
  if (i + 1 >= layers_.size() || is_graph() || is_half(storage_) || weights_f16_ || values_hook_) return false;
  const auto* relu = dynamic_cast<const Activation*>(layers_[i + 1].get());
  return relu != nullptr && relu->activation() == ActivationKind::relu && layers_[i]->fuses_relu();
}

LayerContext Model::fused_relu_context(const LayerContext& ctx, bool fused) {
  LayerContext out = ctx;
  out.fused_relu = fused;
  return out;
}

Tensor Model::output_grad() const {
  if (is_graph()) return grads_.back().rows(0, batch_);  // f32 on f16 storage too (kept_dtype)
  if (is_half(storage_)) return output_grad_.rows(0, batch_);
  return grad_a_.reshaped(Shape{grad_a_.numel()}).rows(0, batch_ * shapes_.back().numel()).reshaped(
      shapes_.back().batched(batch_));
}

Tensor Model::input_grad_of(size_t i, const Tensor& x, const Tensor& input_grad, const Tensor& buffer) const {
  if (i > 0) return buffer.rows(0, x.numel()).reshaped(x.shape());
  if (!input_grad.defined()) return Tensor();
  RG_CHECK(input_grad.numel() == x.numel(), "input gradient " << input_grad.shape().str() << " for input "
                                                              << x.shape().str());
  return input_grad.reshaped(x.shape());
}

void Model::backward(const LayerContext& caller_ctx, const Tensor& input_grad) {
  const LayerContext ctx = with_workspace(caller_ctx, workspace_);
  RG_CHECK(!weights_f16_, "backward through a model with f16 weights (they are for inference)");
  if (is_half(storage_)) return backward_f16(ctx, input_grad);
  if (is_graph()) return backward_graph(ctx, input_grad);
  Tensor dy = output_grad();
  bool dy_in_a = true;
  for (size_t i = layers_.size(); i-- > 0;) {
    if (i > 0 && relu_fused_ && fuses_relu_after(i - 1)) continue;  // layer i - 1 takes the relu's dy
    const bool fused = relu_fused_ && fuses_relu_after(i);
    const Tensor x = i == 0 ? input_view_ : acts_[i - 1].rows(0, batch_);
    const Tensor dx = input_grad_of(i, x, input_grad, dy_in_a ? grad_b_ : grad_a_);
    const LayerPhaseScope timed = backward_phase_scope(ctx, *layers_[i], i, batch_, dx.defined());
    layers_[i]->backward(x, acts_[fused ? i + 1 : i].rows(0, batch_), dy, dx,
                         fused_relu_context(layers_[i]->in_own_precision(ctx), fused));
    dy = dx;
    dy_in_a = !dy_in_a;
  }
}

void Model::zero_grads() {
  for (Param* p : params()) p->grad.fill_zero();
}

std::vector<Param*> Model::params() {
  std::vector<Param*> all;
  for (auto& layer : layers_)
    for (Param* p : layer->params()) all.push_back(p);
  return all;
}

std::vector<Param*> Model::buffers() {
  std::vector<Param*> all;
  for (auto& layer : layers_)
    for (Param* p : layer->buffers()) all.push_back(p);
  return all;
}

int64_t Model::param_count() const {
  int64_t n = 0;
  for (const auto& layer : layers_) n += layer->parameter_count();
  return n;
}

int64_t Model::forward_flops_per_sample() const {
  int64_t flops = 0;
  for (const auto& layer : layers_) flops += layer->forward_flops_per_sample();
  return flops;
}

int64_t Model::train_flops_per_sample() const {
  const int64_t first = layers_.empty() ? 0 : layers_.front()->forward_flops_per_sample();
  return 3 * forward_flops_per_sample() - first;
}

std::string Model::summary() const {
  std::ostringstream os;
  char line[320];
  // Training memory per sample (model_memory.cpp): the output kept for backward with the
  // layer's own state, and the gradient it passes back.
  std::snprintf(line, sizeof line, "  %-14s %-16s %10s %11s %11s  %s\n", "layer", "output", "params", "kept/sample",
                "grad/sample", "");
  os << line;
  std::snprintf(line, sizeof line, "  %-14s %-16s\n", "input", input_.str().c_str());
  os << line;
  const std::vector<LayerMemory> memory = layer_memory(1);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const int64_t count = layers_[i]->parameter_count();
    const std::string& own = layers_[i]->own_precision().name;
    const std::string what = layers_[i]->describe() + (own.empty() ? "" : ", precision " + own);
    std::snprintf(line, sizeof line, "  %-14s %-16s %10lld %11s %11s  %s\n", layers_[i]->name().c_str(),
                  shapes_[i].str().c_str(), static_cast<long long>(count),
                  format_bytes(memory[i].kept_per_sample).c_str(), format_bytes(memory[i].gradient_per_sample).c_str(),
                  what.c_str());
    os << line;
  }
  os << "  total parameters: " << param_count() << ", loss " << loss_name(loss_) << " against "
     << target_name(target_) << "\n";
  return os.str();
}

}  // namespace rg
