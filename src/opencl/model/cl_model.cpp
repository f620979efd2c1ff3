// ClModel: building the device layers, the buffers of a batch, and the step's parts.
#include "opencl/model/cl_model.h"

#include <algorithm>

#include "nn/merge_layers.h"
#include "opencl/fill_copy.h"
#include "opencl/gemm.h"
#include "opencl/loss.h"

namespace rg::ocl {

Result<std::unique_ptr<ClModel>> ClModel::create(Model& model, Device& device, const std::vector<std::string>& on_host) {
  std::string names;
  for (const auto& layer : model.layers()) names += (names.empty() ? "" : ", ") + layer->name();
  for (const std::string& name : on_host) {
    bool found = false;
    for (const auto& layer : model.layers()) found = found || layer->name() == name;
    if (!found) return Status::error("no layer is named '" + name + "' (the model's layers: " + names + ")");
  }
  std::unique_ptr<ClModel> cl(new ClModel(model, device));
  RG_ASSIGN(cl->fuse_, fusion_enabled_by_env());
  cl->input_size_ = model.input_shape().numel();
  cl->largest_ = cl->input_size_;
  cl->reads_alone_ = reads_alone(model);
  RG_ASSIGN(cl->arena_, ParamArena::create(device, model.params(), "the model"));
  const ParamArenaScope in_arena(cl->arena_.get());  // the layers' upload_param places their params there
  for (size_t i = 0; i < model.layers().size(); ++i) {
    Layer& layer = *model.layers()[i];
    const bool host = std::find(on_host.begin(), on_host.end(), layer.name()) != on_host.end();
    if (host && dynamic_cast<MergeLayer*>(&layer) != nullptr) {
      return Status::error("layer " + layer.name() + " (" + layer.kind() + ") joins the outputs of several layers and "
                           "runs on the device only: the layers run on the CPU (--cpu-layers) read one input");
    }
    const int first = model.layer_inputs(i)[0];  // a merge layer's maker takes its first input's shape
    const Shape in = first == Model::kModelInput ? model.input_shape() : model.layer_output_shape(static_cast<size_t>(first));
    auto made = make_cl_layer(layer, in, model.layer_output_shape(i), device, host);
    if (!made.ok()) return made.status();
    cl->layers_.push_back(made.take());
    cl->sizes_.push_back(model.layer_output_shape(i).numel());
    cl->largest_ = std::max(cl->largest_, cl->sizes_.back());
  }
  return cl;
}

int64_t ClModel::target_bytes(int64_t batch) const {
  switch (model_.target()) {
    case TargetKind::labels: return batch * 4;  // int32
    case TargetKind::onehot: return batch * sizes_.back() * 4;
    case TargetKind::input: return 0;  // the input buffer
  }
  return 0;
}

ClModel::ReservedBytes ClModel::reserved_bytes(int64_t batch) const {
  ReservedBytes bytes;
  int64_t scratch = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const bool last = i + 1 == layers_.size();
    bytes.activations += batch * sizes_[i] * (last ? 4 : stored_bytes());
    bytes.layer_state += layers_[i]->state_bytes(batch);
    scratch = std::max(scratch, layers_[i]->workspace_elements(batch));
  }
  bytes.gradients = 2 * batch * largest_ * stored_bytes() + graph_gradient_bytes(batch);
  if (storage_ == DType::f16) {
    bytes.gradients += batch * sizes_.back() * 4;
    bytes.chunks = 4 * chunk_elements(batch) * 4;
  }
  // The GEMM's split-K partials, allocated with the first reserve and kept by the device.
  bytes.workspace = scratch * 4 + (device_.gemm_scratch_slot() ? 0 : gemm_scratch_bytes(device_));
  const int64_t labels = model_.target() == TargetKind::onehot ? batch * 4 : 0;
  bytes.io = 2 * (batch * input_size_ * 4 + target_bytes(batch) + labels) + batch * (8 + 4);
  return bytes;
}

Status ClModel::set_storage(DType storage) {
  RG_CHECK(reserved_ == 0, "set_storage after reserve");
  if (storage != DType::f32 && storage != DType::f16) {
    return Status::error(std::string("device storage is f32 or f16, not ") + dtype_name(storage));
  }
  if (storage == DType::f16) RG_TRY(model_.refuse_graph("the OpenCL device with f16 storage"));
  storage_ = storage;
  return Status();
}

int64_t ClModel::param_bytes() const {
  int64_t bytes = arena_ ? arena_->values().bytes() + arena_->grads().bytes() : 0;
  for (const auto& layer : layers_) {
    for (ClParam* p : layer->params()) bytes += p->value.is_view() ? 0 : p->value.bytes() + p->grad.bytes();
    for (ClParam* p : layer->buffers()) bytes += p->value.bytes();
  }
  return bytes;
}

int64_t ClModel::host_bytes(int64_t batch) const {
  int64_t bytes = 0;
  for (const auto& layer : layers_) bytes += layer->host_bytes(batch);
  return bytes;
}

ClModel::~ClModel() { device_.finish(); }

Status ClModel::reserve(int64_t batch) {
  RG_CHECK(batch > 0, "reserve(" << batch << ")");
  // Loss reads in flight write into the host arrays replaced below; a result left uncollected
  // (a run stopped by an error) is dropped.
  RG_TRY(device_.finish());
  // Free the old batch's buffers first: the budget counts them until then.
  acts_.clear();
  graph_grads_.clear();
  for (Buffer* b : {&grad_a_, &grad_b_, &workspace_, &output_grad_, &chunk_x_, &chunk_y_, &chunk_dy_, &chunk_dx_,
                    &row_loss_, &hits_, &loss_target_}) {
    b->reset();
  }
  for (int k = 0; k < 2; ++k) {
    inputs_[k].reset();
    targets_[k].reset();
    onehot_labels_[k].reset();
  }
  reserved_ = 0;
  for (auto& layer : layers_) layer->release();
  int64_t scratch = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const int64_t bytes = batch * sizes_[i] * (i + 1 == layers_.size() ? 4 : stored_bytes());
    RG_ASSIGN(Buffer act, Buffer::allocate(device_, bytes, "the output of layer " + model_.layers()[i]->name()));
    acts_.push_back(std::move(act));
    RG_TRY(layers_[i]->reserve(batch));
    scratch = std::max(scratch, layers_[i]->workspace_elements(batch));
  }
  RG_ASSIGN(grad_a_, Buffer::allocate(device_, batch * largest_ * stored_bytes(), "gradient buffer A"));
  RG_ASSIGN(grad_b_, Buffer::allocate(device_, batch * largest_ * stored_bytes(), "gradient buffer B"));
  RG_TRY(reserve_graph_grads(batch));
  if (storage_ == DType::f16) {
    RG_ASSIGN(output_grad_, Buffer::allocate(device_, batch * sizes_.back() * 4, "the output's gradient"));
    const int64_t chunk = chunk_elements(batch) * 4;
    RG_ASSIGN(chunk_x_, Buffer::allocate(device_, chunk, "f32 chunk of a layer's input"));
    RG_ASSIGN(chunk_y_, Buffer::allocate(device_, chunk, "f32 chunk of a layer's output"));
    RG_ASSIGN(chunk_dy_, Buffer::allocate(device_, chunk, "f32 chunk of a layer's output gradient"));
    RG_ASSIGN(chunk_dx_, Buffer::allocate(device_, chunk, "f32 chunk of a layer's input gradient"));
  }
  if (scratch > 0) {
    RG_ASSIGN(workspace_, Buffer::allocate(device_, scratch * 4, "the layers' workspace"));
  }
  RG_TRY(reserve_gemm_scratch(device_));
  for (int k = 0; k < 2; ++k) {
    RG_ASSIGN(inputs_[k], Buffer::allocate(device_, batch * input_size_ * 4, "input buffer " + std::to_string(k + 1)));
    if (target_bytes(batch) > 0) {
      RG_ASSIGN(targets_[k], Buffer::allocate(device_, target_bytes(batch), "target buffer " + std::to_string(k + 1)));
    }
    if (model_.target() == TargetKind::onehot) {
      RG_ASSIGN(onehot_labels_[k], Buffer::allocate(device_, batch * 4, "label buffer " + std::to_string(k + 1)));
    }
  }
  RG_ASSIGN(row_loss_, Buffer::allocate(device_, batch * 8, "per-row losses"));
  RG_ASSIGN(hits_, Buffer::allocate(device_, batch * 4, "per-row hits"));
  for (PendingLoss& slot : pending_) {
    slot = PendingLoss();
    slot.row_loss.assign(static_cast<size_t>(batch), 0.0);
    slot.hits.assign(static_cast<size_t>(batch), 0);
  }
  pending_count_ = 0;
  // Drivers that allocate lazily (NVIDIA's) fail at a buffer's first use: touch the large ones
  // now, so that running out of memory shows here, where the caller can retry smaller.
  for (const Buffer* b : {&grad_a_, &grad_b_, &workspace_, &output_grad_, &chunk_x_, &chunk_y_, &chunk_dy_, &chunk_dx_}) {
    if (b->mem() != nullptr) RG_TRY(f32_fill_zero(device_, b->f32()).status());
  }
  for (const std::vector<Buffer>* all : {&acts_, &graph_grads_}) {
    for (const Buffer& b : *all) RG_TRY(f32_fill_zero(device_, b.f32()).status());
  }
  RG_TRY(f32_fill_zero(device_, device_.gemm_scratch_slot()->f32()).status());
  RG_TRY(device_.finish());
  reserved_ = batch;
  return Status();
}

DeviceSpan ClModel::target_span() const {
  if (model_.target() == TargetKind::input) return input_span();
  if (model_.target() == TargetKind::labels) return element_span(targets_[current_], 4);
  return targets_[current_].f32();
}

DeviceSpan ClModel::labels_span() const {
  return model_.target() == TargetKind::onehot ? element_span(onehot_labels_[current_], 4) : target_span();
}

Result<Event> ClModel::upload(const Tensor& x, const Tensor& target, const Tensor& labels) {
  const int64_t n = x.shape()[0];
  RG_CHECK(n > 0 && n <= reserved_, "upload of " << n << " samples, reserved " << reserved_);
  RG_CHECK(x.numel() == n * input_size_ && x.dtype() == DType::f32, "input " << x.shape().str());
  current_ = 1 - current_;
  batch_ = n;
  external_input_ = DeviceSpan{};
  RG_ASSIGN(Event event, write_buffer_async(inputs_[current_], 0, x.f32(), x.numel() * 4));
  transfers_.up(x.numel() * 4);
  if (model_.target() == TargetKind::input || !target.defined()) return event;
  transfers_.up(static_cast<int64_t>(target.bytes()));
  if (model_.target() == TargetKind::onehot && labels.defined()) {
    RG_CHECK(labels.numel() == n && labels.dtype() == DType::i32, "labels " << labels.shape().str());
    RG_TRY(write_buffer_async(onehot_labels_[current_], 0, labels.raw_data(), n * 4).status());
    transfers_.up(n * 4);
  }
  RG_CHECK(static_cast<int64_t>(target.bytes()) <= target_bytes(n), "target " << target.shape().str());
  return write_buffer_async(targets_[current_], 0, target.raw_data(), static_cast<int64_t>(target.bytes()));
}

Status ClModel::forward_from(DeviceSpan x, int64_t n, const LayerContext& ctx) {
  RG_CHECK(n > 0 && n <= reserved_ && x.mem != nullptr && x.count >= n * input_size_, "forward_from of " << n << " samples");
  external_input_ = x;
  batch_ = n;
  return forward(ctx);
}

Status ClModel::device_loss(double grad_scale, bool count_hits) {
  const int64_t cols = sizes_.back();
  const DeviceSpan dx = grad_scale != 0 ? output_grad() : DeviceSpan{};
  RG_TRY(f32_loss(device_, model_.loss(), batch_, cols, output_span(), target_span(), static_cast<float>(grad_scale),
                  dx, element_span(row_loss_, 8))
             .status());
  // The device buffers are reused by the next call: the queue is in order, so this read runs
  // before the next loss kernel writes them; the host arrays alternate.
  RG_CHECK(pending_count_ < 2, "device_loss with two results not yet collected (loss_sums)");
  PendingLoss& slot = pending_[next_slot_];
  RG_ASSIGN(slot.loss_read, read_buffer_async(row_loss_, 0, slot.row_loss.data(), batch_ * 8));
  transfers_.down(batch_ * 8);
  slot.rows = batch_;
  slot.counts_hits = count_hits;
  if (count_hits) {
    RG_TRY(f32_argmax_hits(device_, batch_, cols, output_span(), labels_span(), element_span(hits_, 4)).status());
    RG_ASSIGN(slot.hits_read, read_buffer_async(hits_, 0, slot.hits.data(), batch_ * 4));
    transfers_.down(batch_ * 4);
  }
  next_slot_ ^= 1;
  ++pending_count_;
  return Status();
}

Result<ClModel::LossSums> ClModel::loss_sums(bool keep_newest) {
  LossSums sums;
  while (pending_count_ > (keep_newest ? 1 : 0)) {
    PendingLoss& slot = pending_[(next_slot_ + 2 - pending_count_) % 2];  // the oldest
    --pending_count_;
    RG_TRY(slot.loss_read.wait());
    for (int64_t r = 0; r < slot.rows; ++r) sums.loss += slot.row_loss[static_cast<size_t>(r)];
    if (slot.counts_hits) {
      RG_TRY(slot.hits_read.wait());
      for (int64_t r = 0; r < slot.rows; ++r) sums.hits += slot.hits[static_cast<size_t>(r)];
    }
    sums.rows += slot.rows;
  }
  return sums;
}

Status ClModel::read_output(const Tensor& out) {
  RG_CHECK(out.numel() == batch_ * sizes_.back() && out.dtype() == DType::f32, "output " << out.shape().str());
  transfers_.down(out.numel() * 4);
  return read_buffer(acts_.back(), 0, out.f32(), out.numel() * 4);
}

Result<Event> ClModel::output_loss_async(const Tensor& target, double grad_scale, double* row_loss, const Tensor& out) {
  const int64_t cols = sizes_.back(), values = batch_ * cols;
  RG_CHECK(model_.loss() != LossKind::softmax_cross_entropy, "output_loss_async of a softmax cross-entropy");
  RG_CHECK(target.numel() == values && target.dtype() == DType::f32, "target " << target.shape().str());
  RG_CHECK(out.numel() == values && out.dtype() == DType::f32, "output " << out.shape().str());
  if (loss_target_.bytes() < values * 4) {
    RG_ASSIGN(loss_target_, Buffer::allocate(device_, reserved_ * cols * 4, "loss targets"));
  }
  RG_TRY(write_buffer_async(loss_target_, 0, target.f32(), values * 4).status());
  RG_TRY(f32_loss(device_, model_.loss(), batch_, cols, output_span(), loss_target_.f32(), static_cast<float>(grad_scale),
                  output_grad(), element_span(row_loss_, 8))
             .status());
  // The queue is in order: the next call's kernel writes row_loss_ after this read of it.
  RG_TRY(read_buffer_async(row_loss_, 0, row_loss, batch_ * 8).status());
  transfers_.up(values * 4);
  transfers_.down(batch_ * 8);
  transfers_.down(values * 4);
  return read_buffer_async(acts_.back(), 0, out.f32(), values * 4);
}

Status ClModel::write_output_grad(const Tensor& grad) {
  RG_CHECK(grad.numel() == batch_ * sizes_.back() && grad.dtype() == DType::f32, "gradient " << grad.shape().str());
  transfers_.up(grad.numel() * 4);
  return write_buffer(storage_ == DType::f16 ? output_grad_ : grad_a_, 0, grad.f32(), grad.numel() * 4);
}

std::vector<ClParam*> ClModel::params() {
  std::vector<ClParam*> all;
  for (auto& layer : layers_)
    for (ClParam* p : layer->params()) all.push_back(p);
  return all;
}

std::vector<ClParam*> ClModel::buffers() {
  std::vector<ClParam*> all;
  for (auto& layer : layers_)
    for (ClParam* p : layer->buffers()) all.push_back(p);
  return all;
}

void ClModel::params_changed() {
  for (auto& layer : layers_) layer->params_changed();
}

Status ClModel::read_params() {
  for (std::vector<ClParam*> all : {params(), buffers()}) {
    for (ClParam* p : all) {
      RG_TRY(read_param(*p));
      transfers_.down(p->value.bytes());
    }
  }
  return Status();
}

Status ClModel::write_params() {
  for (std::vector<ClParam*> all : {params(), buffers()}) {
    for (ClParam* p : all) {
      RG_TRY(write_param(*p));
      transfers_.up(p->value.bytes());
    }
  }
  return Status();
}

std::string ClModelExecutor::description() const {
  return cl_.storage() == DType::f16 ? storage() + " (f16 activations, f32 math)" : storage();
}

ExecutorBytes ClModelExecutor::reserved_bytes(int64_t rows) const {
  const int64_t output = rows * cl_.host().output_shape().numel() * static_cast<int64_t>(sizeof(float));
  return {cl_.host_bytes(rows) + output, cl_.reserved_bytes(rows).total()};
}

Status ClModelExecutor::reserve_output(int64_t rows) {
  if (output_.defined() && output_.shape()[0] >= rows) return Status();
  RG_ASSIGN(output_, Tensor::zeros(cl_.host().output_shape().batched(rows), DType::f32, "the device's output read back"));
  return Status();
}

Status ClModelExecutor::reserve(int64_t rows) {
  RG_TRY(cl_.reserve(rows));
  return reserve_output(rows);
}

Result<Tensor> ClModelExecutor::forward(const Tensor& x) {
  const int64_t n = x.shape()[0];
  RG_TRY(reserve_output(cl_.reserved_batch()));
  RG_TRY(cl_.upload(x, Tensor()).status());
  RG_TRY(cl_.forward(ctx_));
  const Tensor out = output_.rows(0, n);
  RG_TRY(cl_.read_output(out));
  return out;
}

}  // namespace rg::ocl
