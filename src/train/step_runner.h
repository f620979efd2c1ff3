// A training step's work on one executor (issue 31). The Trainer's loop (trainer.cpp) gathers
// the micro-batches, splits the step over MPI ranks and keeps the schedule; what runs the model
// is its StepRunner, asked for each micro-batch's forward, loss and backward, for loss scaling's
// unscale, the optimizer's update and the values' trip between host and device, never which
// executor it is:
//   CpuStepRunner     the CPU Model (f32 or f16 storage, int8 GEMMs, fake int8 through the
//                     model's values hook), its Optimizer, the loss on the CPU
//   device runner     the OpenCL model (make_device_step_runner, step_runner_device.cpp): the
//                     ClOptimizer, the loss on the device (read back a micro-batch late) or on
//                     the CPU (TrainOptions::loss_on_host)
// Each holds its inference executor (nn/executor.h), which the Trainer scores through. The GAN
// trainer (train/gan.cpp) asks two runners, G's and D's, for one step's operations in series.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "nn/executor.h"
#include "nn/finite_check.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "train/loss_scale.h"

namespace rg::ocl {
class ClModel;
class ClOptimizer;
}  // namespace rg::ocl

namespace rg {

// The losses and hits of the micro-batches collected so far, and how many rows they cover.
struct LossTally {
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t rows = 0;
};

// "<what>; training stopped (lower the learning rate?); the last checkpoint is unchanged"
Status training_stopped(const std::string& what);

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Its inference: the model as it trains, in evaluation mode.
  virtual Executor& executor() = 0;
  // One micro-batch: x [n, input...], its labels [n] (int32) and the loss's target; the forward
  // in training mode (ctx), the loss with its gradient scaled by grad_scale, the backward. Its
  // loss and hits reach *tally now or, a device's, with the next call (collect_losses takes
  // the last). A loss that is not finite stops training, naming `where` (the step).
  virtual Status micro_batch(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale,
                             const LayerContext& ctx, const std::string& where, LossTally* tally) = 0;
  // The losses still pending into *tally: all, or all but the newest micro-batch's.
  virtual Status collect_losses(bool keep_newest, LossTally* tally) = 0;
  // Loss scaling's unscale of the gradients (LossScaler::unscale's rule): false when one was
  // not finite, the scaler then backing off and the step skipped.
  virtual Result<bool> unscale(LossScaler& scaler) = 0;
  // The optimizer's update at rate `lr`; a gradient or updated weight that is not finite stops
  // training, naming its param and `where` (a device's is read back a micro-batch late).
  virtual Status update(double lr, const std::string& where) = 0;
  // The trained values and optimizer state into the host model and Optimizer, and back (a
  // device's; nothing to do on the CPU).
  virtual Status sync_to_host() = 0;
  virtual Status sync_to_device() = 0;

  // Two networks in series (a GAN: G's samples into D, D's input gradient into G's output
  // gradient; train/gan.cpp's step), each on a runner of one kind, a step queued whole and then
  // settled. forward: x [n, input...] from the host (left as it is until settle), in training
  // mode (ctx); forward_from: `upstream`'s last output, where it is (on a device, no copy);
  // output_loss: the model's loss of the last output against `target` [n, output...] (left as it
  // is until settle), its gradient scaled by grad_scale as the output's gradient, the output read
  // back into `output` and the rows' losses summed into *loss (compute_loss's total), both by
  // settle() (a device's: the loss there, unless loss_on_host, and nothing waited for before it;
  // settle(k) leaves the newest k calls pending: a step settled after the next one is queued);
  // backward: the input gradient into `upstream`'s output gradient (nullptr: nowhere).
  virtual Status forward(const Tensor& x, const LayerContext& ctx) = 0;
  virtual Status forward_from(StepRunner& upstream, int64_t rows, const LayerContext& ctx) = 0;
  virtual Status output_loss(const Tensor& target, double grad_scale, const Tensor& output, double* loss) = 0;
  virtual Status settle(size_t keep_newest) = 0;
  virtual Status backward(const LayerContext& ctx, StepRunner* upstream) = 0;
  // The optimizer's update at rate `lr` without the check update() makes; flags_of_update gives
  // what the update flagged (a device's read back: a wait for the update), or with `before_newest`
  // what the update before it flagged (no wait); asked once an update, as the GAN does.
  virtual Status apply_update(double lr) = 0;
  virtual Result<NonFiniteUpdate> flags_of_update(bool before_newest) = 0;
};

class CpuStepRunner : public StepRunner {
 public:
  // `inference`: the context of its executor's forward; `precision` names it (ModelExecutor).
  // A fixed-point context's gradient format rounds every parameter's gradient before the update;
  // with stored weights, its weight format rounds every parameter after it.
  CpuStepRunner(Model& model, Optimizer& optimizer, const LayerContext& inference, const std::string& precision)
      : model_(model),
        optimizer_(optimizer),
        executor_(model, inference, precision),
        pool_(inference.pool),
        roles_(inference.gemm == GemmPrecision::fixed_point ? inference.formats : FixedPointRoles{}),
        seed_(inference.gemm_seed) {}
  Executor& executor() override { return executor_; }
  Status micro_batch(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale,
                     const LayerContext& ctx, const std::string& where, LossTally* tally) override;
  Status collect_losses(bool, LossTally*) override { return Status(); }  // each micro-batch's is added at once
  Result<bool> unscale(LossScaler& scaler) override { return scaler.unscale(model_.params()); }
  Status update(double lr, const std::string& where) override;
  Status sync_to_host() override { return Status(); }
  Status sync_to_device() override { return Status(); }
  Status forward(const Tensor& x, const LayerContext& ctx) override;
  Status forward_from(StepRunner& upstream, int64_t rows, const LayerContext& ctx) override;
  Status output_loss(const Tensor& target, double grad_scale, const Tensor& output, double* loss) override;
  Status settle(size_t) override { return Status(); }  // output_loss's results are there at once
  Status backward(const LayerContext& ctx, StepRunner* upstream) override;
  Status apply_update(double lr) override;
  Result<NonFiniteUpdate> flags_of_update(bool before_newest) override {
    return before_newest ? older_flags_ : flags_;
  }

 private:
  Model& model_;
  Optimizer& optimizer_;
  ModelExecutor executor_;
  ThreadPool* pool_;        // the update's (the inference context's)
  // Each parameter's gradient (before the optimizer's step) or value (after it, stored weights)
  // onto its format's grid, each tensor with its own scale; stochastic draws keyed by the seed,
  // the optimizer's step count, which of the two, and the parameter's place (a resumed run draws
  // alike).
  void round_gradients();
  void round_stored_weights();

  Tensor output_;           // forward's last output (a view of the model's activations)
  NonFiniteUpdate flags_, older_flags_;  // apply_update's: the last one's, the one before
  FixedPointRoles roles_;
  uint64_t seed_;
};

// The device's runner of `model` (the device mirror of `host`, trained by `optimizer`, which
// keeps the host Optimizer's state for checkpoints): `output` [rows, output...] is the host
// buffer outputs are read back into (the loss on the host, evaluation); `loss_on_host`: the loss
// and its gradient on the CPU (devices without cl_khr_fp64).
std::unique_ptr<StepRunner> make_device_step_runner(Model& host, ocl::ClModel& model, ocl::ClOptimizer& optimizer,
                                                    const Tensor& output, bool loss_on_host,
                                                    const LayerContext& inference);

}  // namespace rg
