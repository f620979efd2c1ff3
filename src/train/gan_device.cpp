// The GAN step on an OpenCL device: G's samples stay on the device and feed D directly, D's
// input gradient lands in G's output gradient there; only the logits [n, 1] come back, for the
// BCE losses and their gradients computed here (the CPU step's math, gan.cpp).
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "train/gan.h"

namespace rg {

GanTrainer::~GanTrainer() = default;

Status GanTrainer::prepare_device() {
  ocl::Device& device = *options_.device;
  RG_ASSIGN(g_cl_, ocl::ClModel::create(g_, device));
  RG_ASSIGN(d_cl_, ocl::ClModel::create(d_, device));
  RG_ASSIGN(ocl::ClOptimizer g_opt, ocl::ClOptimizer::create(device, g_opt_, g_cl_->params()));
  RG_ASSIGN(ocl::ClOptimizer d_opt, ocl::ClOptimizer::create(device, d_opt_, d_cl_->params()));
  g_cl_opt_ = std::make_unique<ocl::ClOptimizer>(std::move(g_opt));
  d_cl_opt_ = std::make_unique<ocl::ClOptimizer>(std::move(d_opt));
  RG_TRY(g_cl_->reserve(buffer_rows_).with_context("the generator's device buffers: "));
  RG_TRY(d_cl_->reserve(buffer_rows_).with_context("the discriminator's device buffers: "));
  const int64_t n = buffer_rows_;
  RG_ASSIGN(logits_, Tensor::zeros(Shape{n, 1}, DType::f32, "the discriminator's logits read back"));
  RG_ASSIGN(logits_grad_, Tensor::zeros(Shape{n, 1}, DType::f32, "the logits' gradient"));
  RG_ASSIGN(samples_, Tensor::zeros(g_.output_shape().batched(n), DType::f32, "the generator's samples read back"));
  return Status();
}

Result<double> GanTrainer::device_bce(const Tensor& target, double scale, double* mean_belief) {
  const int64_t n = target.shape()[0];
  const Tensor logits = logits_.rows(0, n), grad = logits_grad_.rows(0, n);
  RG_TRY(d_cl_->read_output(logits));
  const double loss = compute_loss(LossKind::bce_with_logits, logits, target, scale, grad);
  *mean_belief = mean_probability(logits);
  RG_TRY(d_cl_->write_output_grad(grad));
  return loss;
}

Status GanTrainer::device_step(const Tensor& x, const Tensor& z, LayerContext& ctx, StepLosses* out) {
  const int64_t count = x.shape()[0];
  const Tensor ones = ones_.rows(0, count), zeros = zeros_.rows(0, count);
  const double scale = 1.0 / static_cast<double>(count);
  const uint64_t stream = 4 * static_cast<uint64_t>(d_opt_.steps());  // as cpu_step's
  ocl::ClModel& g = *g_cl_;
  ocl::ClModel& d = *d_cl_;

  ctx.noise_stream = stream;
  ctx.accumulate_grads = false;
  RG_TRY(g.upload(z, Tensor()).status());
  RG_TRY(g.forward(ctx));

  ctx.noise_stream = stream + 1;
  RG_TRY(d.upload(x, Tensor()).status());
  RG_TRY(d.forward(ctx));
  RG_ASSIGN(out->real, device_bce(ones, scale, &out->d_real));
  RG_TRY(d.backward(ctx));
  ctx.noise_stream = stream + 2;
  ctx.accumulate_grads = true;
  RG_TRY(d.forward_from(g.output(), count, ctx));
  RG_ASSIGN(out->fake, device_bce(zeros, scale, &out->d_fake));
  RG_TRY(d.backward(ctx));
  RG_TRY(d_cl_opt_->step(options_.schedule.lr));
  d.params_changed();

  ctx.noise_stream = stream + 3;
  ctx.accumulate_grads = false;
  RG_TRY(d.forward_from(g.output(), count, ctx));
  RG_ASSIGN(out->g, device_bce(ones, scale, &out->d_fake_after));
  // D's update flagged its non-finite gradients; read with the logits just waited for.
  RG_ASSIGN(const NonFiniteUpdate d_bad, d_cl_opt_->non_finite_update());
  RG_TRY(d.backward(ctx, g.output_grad()));
  RG_TRY(g.backward(ctx));
  RG_TRY(g_cl_opt_->step(options_.schedule.lr));
  g.params_changed();
  // G's flags: a wait for its update (the step's logits were read back three times already).
  RG_ASSIGN(const NonFiniteUpdate g_bad, g_cl_opt_->non_finite_update());
  out->bad_update = first_bad_update(d_bad, g_bad);
  return Status();
}

ocl::TransferCounts GanTrainer::device_transfers() const {
  ocl::TransferCounts sum;
  for (const auto* model : {g_cl_.get(), d_cl_.get()}) {
    if (model == nullptr) continue;
    const ocl::TransferCounts& t = model->transfers();
    sum.up_bytes += t.up_bytes, sum.down_bytes += t.down_bytes, sum.ups += t.ups, sum.downs += t.downs;
  }
  return sum;
}

Status GanTrainer::sync_to_host() {
  if (!g_cl_) return Status();
  RG_TRY(g_cl_->read_params());
  RG_TRY(g_cl_opt_->read_state());
  RG_TRY(d_cl_->read_params());
  return d_cl_opt_->read_state();
}

Status GanTrainer::sync_to_device() {
  if (!g_cl_) return Status();
  RG_TRY(g_cl_->write_params());
  RG_TRY(g_cl_opt_->write_state());
  RG_TRY(d_cl_->write_params());
  return d_cl_opt_->write_state();
}

}  // namespace rg
