// The int8 model's stages on the device: weights uploaded once from the plan, one output
// buffer per stage (int8 or f32 [batch, out_shape...]), scratch shared by the stages.
#include "opencl/model/cl_int8_model.h"

#include <algorithm>
#include <string>

#include "base/check.h"
#include "opencl/loss.h"
#include "opencl/model/cl_layer.h"
#include "opencl/qs8.h"

namespace rg::ocl {

struct ClInt8Model::Stage {
  Int8StagePlan plan;  // its weights dropped once uploaded
  int64_t in_numel = 0, out_numel = 0, filters = 0;
  bool f32_out = false;
  Buffer weights, bias, multiplier, shift;  // gemm: int8 [k x filters], int32 [filters padded to 32] each
  std::unique_ptr<ClLayer> layer;           // f32
  Buffer output;                            // [batch, out_shape...], int8 or f32

  DeviceSpan out_span(int64_t n) const {
    return f32_out ? output.f32(0, n * out_numel) : element_span(output, 1, 0, n * out_numel);
  }
  bool needs_im2col() const { return plan.kind == Int8StageKind::gemm && !plan.geometry.pointwise(); }
};

ClInt8Model::ClInt8Model(Device& device) : device_(device) {}
ClInt8Model::~ClInt8Model() = default;

Result<std::unique_ptr<ClInt8Model>> ClInt8Model::create(const Int8Model& model, Device& device) {
  const std::vector<Int8StagePlan>& plan = model.plan();
  if (plan.empty()) return Status::error("int8 model on the device: the model has no stages");
  std::unique_ptr<ClInt8Model> cl(new ClInt8Model(device));
  cl->int8_ = &model;
  // The model's input: what the first stage reads (quantize keeps its shape).
  cl->input_shape_ = plan.front().kind == Int8StageKind::f32 ? plan.front().in_shape : plan.front().out_shape;
  for (const Int8StagePlan& p : plan) {
    if (p.kind == Int8StageKind::quantize && (p.params.lo != -128 || p.params.hi != 127)) {
      return Status::error("int8 model on the device: activations of fewer than 8 bits (a grid of [" +
                           std::to_string(p.params.lo) + ", " + std::to_string(p.params.hi) +
                           "]) run on the CPU's int8 engine only (for now)");
    }
    if (p.inputs.size() != (p.kind == Int8StageKind::add ? 2u : 1u)) {  // an f32 add or concat of a graph model
      return Status::error("int8 model on the device: layer " + p.name + " joins " + std::to_string(p.inputs.size()) +
                           " inputs in f32, which the device int8 model does not run yet (issue 31); the CPU's does");
    }
    auto stage = std::make_unique<Stage>();
    stage->plan = p;
    stage->in_numel = p.inputs[0] < 0 ? cl->input_shape_.numel() : cl->stages_[static_cast<size_t>(p.inputs[0])]->out_numel;
    stage->out_numel = p.out_shape.numel();
    stage->f32_out = p.kind == Int8StageKind::dequantize || p.kind == Int8StageKind::f32;
    if (p.kind == Int8StageKind::gemm) {
      stage->filters = p.filters();
      RG_ASSIGN(stage->weights, upload(device, p.gemm_weights(), p.name + " int8 weights"));  // every path as a GEMM
      RG_ASSIGN(stage->bias, upload(device, p.output.bias, p.name + " int32 bias"));
      RG_ASSIGN(stage->multiplier, upload(device, p.output.multiplier, p.name + " multipliers"));
      RG_ASSIGN(stage->shift, upload(device, p.output.shift, p.name + " shifts"));
      stage->plan.weights.clear();
      stage->plan.weights.shrink_to_fit();
    } else if (p.kind == Int8StageKind::f32) {
      RG_ASSIGN(stage->layer, make_cl_layer(*p.layer, p.in_shape, p.out_shape, device));
    }
    cl->stages_.push_back(std::move(stage));
  }
  if (!cl->stages_.back()->f32_out) return Status::error("int8 model on the device: the last stage is not f32");
  return cl;
}

ClInt8Model::Scratch ClInt8Model::scratch(int64_t batch) const {
  Scratch out;
  for (const auto& s : stages_) {
    const ConvGeometry& g = s->plan.geometry;
    if (s->needs_im2col()) out.patches = std::max(out.patches, batch * g.patches() * g.patch_size());
    if (s->plan.kind == Int8StageKind::gemm && s->plan.pool) out.pre_pool = std::max(out.pre_pool, batch * g.patches() * s->filters);
    if (s->layer != nullptr) out.workspace = std::max(out.workspace, s->layer->workspace_elements(batch));
  }
  return out;
}

Status ClInt8Model::reserve(int64_t batch) {
  if (batch <= reserved_) return Status();
  const Scratch sizes = scratch(batch);
  for (auto& s : stages_) {
    if (s->layer != nullptr) RG_TRY(s->layer->reserve(batch));
    RG_ASSIGN(s->output, Buffer::allocate(device_, batch * s->out_numel * (s->f32_out ? 4 : 1),
                                          "int8 model: " + s->plan.name + " output"));
  }
  RG_ASSIGN(input_, Buffer::allocate(device_, batch * input_shape_.numel() * 4, "int8 model: input"));
  RG_ASSIGN(patches_, Buffer::allocate(device_, sizes.patches, "int8 model: patch matrix"));
  RG_ASSIGN(pre_pool_, Buffer::allocate(device_, sizes.pre_pool, "int8 model: conv output before its pooling"));
  RG_ASSIGN(workspace_, Buffer::allocate(device_, sizes.workspace * 4, "int8 model: f32 layers' workspace"));
  workspace_elements_ = sizes.workspace;
  reserved_ = batch;
  return Status();
}

ExecutorBytes ClInt8Model::reserved_bytes(int64_t rows) const {
  const Scratch sizes = scratch(rows);
  ExecutorBytes bytes;
  bytes.device = rows * input_shape_.numel() * 4 + sizes.patches + sizes.pre_pool + sizes.workspace * 4;
  for (const auto& s : stages_) {
    bytes.device += rows * s->out_numel * (s->f32_out ? 4 : 1);
    if (s->layer != nullptr) bytes.device += s->layer->state_bytes(rows);
  }
  bytes.host = rows * stages_.back()->out_numel * 4;  // the output forward returns
  return bytes;
}

Status ClInt8Model::run(Stage& s, int64_t n, const std::vector<DeviceSpan>& xs, DeviceSpan y) {
  const Int8StagePlan& p = s.plan;
  const ConvGeometry& g = p.geometry;
  const DeviceSpan x = xs[0];
  switch (p.kind) {
    case Int8StageKind::add:
      return qs8_add(device_, n * s.out_numel, p.add, x, xs[1], y).status();
    case Int8StageKind::quantize:
      return qs8_quantize(device_, n * s.out_numel, p.params, x, y).status();
    case Int8StageKind::dequantize:
      return qs8_dequantize(device_, n * s.out_numel, p.params, x, y).status();
    case Int8StageKind::max_pool:
      return qs8_max_pool(device_, g, n, x, y).status();
    case Int8StageKind::f32: {
      const LayerContext host{nullptr, false};
      const ClContext ctx{host, workspace_elements_ > 0 ? workspace_.f32(0, workspace_elements_) : DeviceSpan{}};
      return s.layer->forward(n, x, y, ctx);
    }
    case Int8StageKind::gemm:
      break;
  }
  // Patch rows [n * patches, k]: a pointwise conv's (and dense's) are the input rows.
  const int64_t k = g.patch_size(), m = n * g.patches();
  DeviceSpan a = x;
  if (s.needs_im2col()) {
    a = element_span(patches_, 1, 0, m * k);
    RG_TRY(qs8_im2col(device_, g, n, p.params.zero_point, x, a).status());
  }
  const DeviceSpan c = p.pool ? element_span(pre_pool_, 1, 0, m * s.filters) : y;
  RG_TRY(qs8_gemm(device_, m, s.filters, k, a, k, element_span(s.weights, 1), element_span(s.bias, 4),
                  element_span(s.multiplier, 4), element_span(s.shift, 4), p.output.zero_point, p.output.lo,
                  p.output.hi, c, s.filters)
             .status());
  if (p.pool) RG_TRY(qs8_max_pool(device_, p.pool_geometry, n, c, y).status());
  return Status();
}

Result<Tensor> ClInt8Model::forward(const Tensor& x) {
  const int64_t n = x.shape()[0], in_numel = input_shape_.numel();
  RG_CHECK(n > 0 && n <= reserved_ && x.dtype() == DType::f32 && x.numel() == n * in_numel,
           "int8 device forward of " << x.shape().str() << ", reserved " << reserved_);
  RG_TRY(write_buffer(input_, 0, x.f32(), n * in_numel * 4));
  const DeviceSpan input = input_.f32(0, n * in_numel);
  std::vector<DeviceSpan> xs;
  for (auto& s : stages_) {  // each reads the stages its plan names (Int8StagePlan::inputs), or the input
    xs.clear();
    for (int from : s->plan.inputs) xs.push_back(from < 0 ? input : stages_[static_cast<size_t>(from)]->out_span(n));
    RG_TRY(run(*s, n, xs, s->out_span(n)));
  }
  RG_ASSIGN(Tensor y, Tensor::zeros(stages_.back()->plan.out_shape.batched(n), DType::f32, "int8 device output"));
  RG_TRY(read_buffer(stages_.back()->output, 0, y.f32(), n * stages_.back()->out_numel * 4));
  return y;
}

int64_t ClInt8Model::weight_bytes() const {
  int64_t bytes = 0;
  for (const auto& s : stages_) {
    for (const Buffer* b : {&s->weights, &s->bias, &s->multiplier, &s->shift}) bytes += b->bytes();
    if (s->layer == nullptr) continue;
    for (ClParam* p : s->layer->params()) bytes += p->value.bytes();
    for (ClParam* p : s->layer->buffers()) bytes += p->value.bytes();
  }
  return bytes;
}

int64_t ClInt8Model::buffer_bytes() const {
  int64_t bytes = input_.bytes() + patches_.bytes() + pre_pool_.bytes() + workspace_.bytes();
  for (const auto& s : stages_) {
    bytes += s->output.bytes();
    if (s->layer != nullptr) bytes += s->layer->state_bytes(reserved_);
  }
  return bytes;
}

std::string ClInt8Model::description() const { return int8_description(int8_->precisions()); }

std::string ClInt8Model::place() const { return device_.label(); }

}  // namespace rg::ocl
