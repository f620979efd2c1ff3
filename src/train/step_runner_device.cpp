// The OpenCL device's step runner (train/step_runner.h): the model's layers, its optimizer and
// the loss on a device (opencl/model/), the data gathered on the host and uploaded a
// micro-batch at a time. Losses and the optimizer's non-finite flags are read back without
// waiting, so each arrives with the next micro-batch: where the step they belong to is kept.
#include <cmath>

#include "nn/finite_check.h"
#include "nn/loss.h"
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "train/step_runner.h"

namespace rg {

namespace {

class DeviceStepRunner : public StepRunner {
 public:
  DeviceStepRunner(Model& host, ocl::ClModel& model, ocl::ClOptimizer& optimizer, const Tensor& output,
                   bool loss_on_host, const LayerContext& inference)
      : host_(host),
        cl_(model),
        optimizer_(optimizer),
        output_(output),
        loss_on_host_(loss_on_host),
        executor_(model, inference, output) {}
  ~DeviceStepRunner() override {  // no read left writing into freed host memory
    for (const PendingOutputLoss& p : pending_) (void)p.done.wait();
  }
  Executor& executor() override { return executor_; }
  Status micro_batch(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale,
                     const LayerContext& ctx, const std::string& where, LossTally* tally) override {
    const Status s = step(x, labels, target, grad_scale, ctx, where, tally);
    return s.ok() ? s : s.with_context(where + ": ");
  }
  Status collect_losses(bool keep_newest, LossTally* tally) override;
  Result<bool> unscale(LossScaler& scaler) override {
    RG_ASSIGN(const std::string non_finite, optimizer_.unscale(static_cast<float>(1.0 / scaler.scale())));
    return scaler.after_unscale(non_finite);
  }
  Status update(double lr, const std::string& where) override {
    // The kernels flag a non-finite gradient or updated weight; check_updates reads the flags
    // with the next micro-batch (no wait here) and stops naming the param and this step.
    RG_TRY(optimizer_.step(lr));
    step_where_ = where;
    cl_.params_changed();
    return Status();
  }
  Status sync_to_host() override {
    RG_TRY(cl_.read_params());
    return optimizer_.read_state();
  }
  Status sync_to_device() override {
    RG_TRY(cl_.write_params());
    return optimizer_.write_state();
  }
  Status forward(const Tensor& x, const LayerContext& ctx) override {
    RG_TRY(cl_.upload(x, Tensor()).status());
    return cl_.forward(ctx);
  }
  Status forward_from(StepRunner& upstream, int64_t rows, const LayerContext& ctx) override {
    return cl_.forward_from(device_runner(upstream).cl_.output(), rows, ctx);
  }
  Status output_loss(const Tensor& target, double grad_scale, const Tensor& output, double* loss) override;
  Status settle(size_t keep_newest) override;
  Status backward(const LayerContext& ctx, StepRunner* upstream) override {
    return cl_.backward(ctx, upstream != nullptr ? device_runner(*upstream).cl_.output_grad() : ocl::DeviceSpan{});
  }
  Status apply_update(double lr) override {
    RG_TRY(optimizer_.step(lr));
    cl_.params_changed();
    return Status();
  }
  Result<NonFiniteUpdate> flags_of_update(bool before_newest) override {
    return optimizer_.non_finite_update(before_newest);
  }

 private:
  // The series operations' upstream: a device runner too (one kind a run).
  static DeviceStepRunner& device_runner(StepRunner& upstream) {
    auto* device = dynamic_cast<DeviceStepRunner*>(&upstream);
    RG_CHECK(device != nullptr, "a device runner's upstream network runs on the device too");
    return *device;
  }
  // micro_batch's work: with the loss on the device, or on the host.
  Status step(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale, const LayerContext& ctx,
              const std::string& where, LossTally* tally);
  Result<LossTally> step_loss_on_host(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale,
                                      const LayerContext& ctx);
  // Stops training when the last step flagged a gradient or an updated weight that was not
  // finite, naming its param and step_where_.
  Status check_updates();
  // Adds `part` to *tally; a loss that is not finite stops training, naming loss_where_.
  Status add_loss(const LossTally& part, LossTally* tally) const;

  Model& host_;
  ocl::ClModel& cl_;
  ocl::ClOptimizer& optimizer_;
  Tensor output_;  // [rows, output...]: the output read back (the loss on the host)
  bool loss_on_host_;
  ocl::ClModelExecutor executor_;
  std::string loss_where_;  // the step whose loss is still pending
  // output_loss's results in flight on the device: each call's rows' losses, summed into *sum.
  struct PendingOutputLoss {
    std::vector<double> rows;
    double* sum = nullptr;
    ocl::Event done;
  };
  std::vector<PendingOutputLoss> pending_;
  std::string step_where_;  // the step whose update flags are still pending
};

Status DeviceStepRunner::step(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale,
                              const LayerContext& ctx, const std::string& where, LossTally* tally) {
  RG_ASSIGN(const ocl::Event uploaded, cl_.upload(x, target, labels));
  RG_TRY(cl_.forward(ctx));
  if (loss_on_host_) {
    RG_ASSIGN(const LossTally part, step_loss_on_host(x, labels, target, grad_scale, ctx));
    RG_TRY(uploaded.wait());
    loss_where_ = where;
    return add_loss(part, tally);
  }
  RG_TRY(cl_.device_loss(grad_scale, host_.target() != TargetKind::input));
  RG_TRY(cl_.backward(ctx));
  // The host's batch tensors are reused for the next gather: the upload must be done (it is
  // the step's first command, so this waits for little of the step).
  RG_TRY(uploaded.wait());
  RG_TRY(collect_losses(/*keep_newest=*/true, tally));
  loss_where_ = where;
  return Status();
}

// The output back, the loss and its gradient here, the gradient there, and the backward; the
// micro-batch's loss, hits and rows.
Result<LossTally> DeviceStepRunner::step_loss_on_host(const Tensor& x, const Tensor& labels, const Tensor& target,
                                                      double grad_scale, const LayerContext& ctx) {
  const int64_t n = x.shape()[0];
  const Tensor out = output_.rows(0, n);
  RG_TRY(cl_.read_output(out));
  RG_TRY(check_updates());  // queued before this forward: done now
  const Tensor grad = host_.output_shape().numel() > 0 ? out : Tensor();
  const double loss = compute_loss(host_.loss(), out, target, grad_scale, Tensor());
  const int64_t hits = host_.target() != TargetKind::input ? count_correct(out, labels.data<int32_t>()) : 0;
  // The gradient overwrites the output read back (which the loss no longer needs).
  compute_loss(host_.loss(), out, target, grad_scale, grad);
  RG_TRY(cl_.write_output_grad(grad));
  RG_TRY(cl_.backward(ctx));
  return LossTally{loss, hits, n};
}

Status DeviceStepRunner::output_loss(const Tensor& target, double grad_scale, const Tensor& output, double* loss) {
  const int64_t n = output.shape()[0];
  if (loss_on_host_) {  // output_ is the gradient's host buffer here
    RG_TRY(cl_.read_output(output));
    const Tensor grad = output_.rows(0, n);
    *loss = compute_loss(host_.loss(), output, target, grad_scale, grad);
    return cl_.write_output_grad(grad);
  }
  PendingOutputLoss pending{std::vector<double>(static_cast<size_t>(n)), loss, ocl::Event()};
  auto done = cl_.output_loss_async(target, grad_scale, pending.rows.data(), output);
  if (!done.ok()) {
    (void)cl_.device().finish();  // a read queued before the failure lands before `pending` goes
    return done.status();
  }
  pending.done = done.take();
  pending_.push_back(std::move(pending));  // the rows' array moves, its memory stays
  return Status();
}

Status DeviceStepRunner::settle(size_t keep_newest) {
  const size_t settled = pending_.size() > keep_newest ? pending_.size() - keep_newest : 0;
  Status first;
  for (size_t k = 0; k < settled; ++k) {
    PendingOutputLoss& p = pending_[k];
    const Status s = p.done.wait();  // every read waited for, even after an error
    if (!s.ok() && first.ok()) first = s;
    double sum = 0;  // in row order: compute_loss's total
    for (const double row : p.rows) sum += row;
    *p.sum = sum;
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(settled));
  return first;
}

Status DeviceStepRunner::check_updates() {
  RG_ASSIGN(const NonFiniteUpdate bad, optimizer_.non_finite_update());
  if (bad.none()) return Status();
  return training_stopped(bad.text() + " at " + step_where_);
}

Status DeviceStepRunner::collect_losses(bool keep_newest, LossTally* tally) {
  // The last step's update flags first: a bad gradient or weight makes the losses after it bad too.
  RG_TRY(check_updates());
  RG_ASSIGN(const ocl::ClModel::LossSums sums, cl_.loss_sums(keep_newest));
  if (sums.rows == 0) return Status();
  return add_loss({sums.loss, sums.hits, sums.rows}, tally);
}

Status DeviceStepRunner::add_loss(const LossTally& part, LossTally* tally) const {
  if (!std::isfinite(part.loss_sum)) {
    return training_stopped("the loss of " + loss_where_ + " became " +
                            std::string(std::isnan(part.loss_sum) ? "NaN" : "infinite"));
  }
  tally->loss_sum += part.loss_sum;
  tally->correct += part.correct;
  tally->rows += part.rows;
  return Status();
}

}  // namespace

std::unique_ptr<StepRunner> make_device_step_runner(Model& host, ocl::ClModel& model, ocl::ClOptimizer& optimizer,
                                                    const Tensor& output, bool loss_on_host,
                                                    const LayerContext& inference) {
  return std::make_unique<DeviceStepRunner>(host, model, optimizer, output, loss_on_host, inference);
}

}  // namespace rg
