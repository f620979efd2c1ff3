// The training loop: shuffled mini-batches, forward, loss, backward, optimizer step,
// a progress line per epoch, optional validation, a checkpoint after each epoch.
// Deterministic: epoch e's order comes from Rng(seed, stream of e) and no kernel's result
// depends on the thread count, so a run resumed after epoch e ends where one run would.
#pragma once

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/batch_prefetch.h"
#include "data/dataset.h"
#include "dist/communicator.h"
#include "nn/conv_tuning.h"
#include "nn/executor.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "quant/fake_quant.h"
#include "train/checkpoint.h"
#include "ops/fixed_point_precision.h"
#include "train/loss_scale.h"
#include "train/schedule.h"
#include "train/step_runner.h"

namespace rg::ocl {
class Device;
class ClModel;
class ClOptimizer;
struct TransferCounts;
}  // namespace rg::ocl

namespace rg {

struct MemoryPlan;  // train/memory_plan.h
struct DeviceNeed;

// The Rng stream of epoch e's sample order is kEpochShuffleStream + e (the GAN trainer's too).
constexpr uint64_t kEpochShuffleStream = 2000;

// The precision training runs in.
enum class TrainPrecision {
  fp32,  // f32 storage and arithmetic
  fp16,  // mixed precision: f16 activations and activation gradients (Model::set_storage), f32
         // arithmetic and master weights, dynamic loss scaling
  bf16,  // the same with bf16 storage (f32's exponent range: no loss scaling), on the CPU
  int8_qat,   // quantization-aware: f32 training through fake int8 weights and values
              // (quant/fake_quant.h), for export to an int8 model
  fixed_point,  // conv and dense GEMMs forward and backward in the fixed-point formats of
                // TrainOptions::fixed_point (int8 training: the int8 kernels with dynamic
                // per-tensor scales and stochastically rounded errors; ops/fixed_point_gemm.h),
                // f32 master weights
};
// "fp32", "fp16", "bf16", "int8-qat"; "fixed-point" for any fixed-point one (precision_name names it).
const char* train_precision_name(TrainPrecision precision);

struct TrainOptions {
  int64_t epochs = 5;  // total, counting epochs done before a resume
  int64_t stop_after = 0;  // stop once this many epochs are done (0: run all); the schedule still spans `epochs`
  int64_t batch = 64;
  // Rows of one forward and backward: a step of `batch` samples runs as micro-batches of this
  // many, their gradients accumulated before the one update (0: the whole batch at once). Equal
  // to the whole batch but for float rounding, except through BatchNorm, whose statistics are
  // each micro-batch's (docs/memory.md). What prepare() without a plan asks for; a planned run
  // takes the plan's (MemoryPlan::micro_batch).
  int64_t micro_batch = 0;
  uint64_t seed = 1;
  TrainPrecision precision = TrainPrecision::fp32;
  FixedPointPrecision fixed_point = int8_training_precision();  // TrainPrecision::fixed_point's formats
  int qat_weight_bits = 8;      // int8_qat: the weights' grid (w4a8-qat: 4; quant_params.h weight_qmax)
  int qat_activation_bits = 8;  // int8_qat: the values' grid (w4a4-qat: 4; activation_params)
  LossScaleConfig loss_scale;  // fp16
  OptimizerConfig optimizer;
  Schedule schedule;
  std::string data;             // the dataset's source, recorded in checkpoints
  // The rest of what decides the samples and their order (the data options, the data's
  // identity: app/data_source.h), recorded in checkpoints beside the settings.
  std::map<std::string, std::string> data_settings;
  double validation_split = 0;  // recorded so a resume splits the same way
  std::string checkpoint_path;  // written after each epoch when not empty
  FILE* log = stdout;
  bool live_progress = false;   // redraw the progress line in place
  bool read_ahead = false;      // gather the next micro-batch on a thread of its own while this one
                                // trains (for data read from disk or generated: not in memory);
                                // as micro_batch, a planned run takes the plan's (MemoryPlan::stream)
  // Called after each epoch (and its checkpoint) with the epochs done; an error stops training.
  std::function<Status(int64_t epochs_done)> after_epoch;
  // An OpenCL device to train on (fp32; trainer_device.cpp), or null: the CPU. The model's
  // values stay on the device during fit() and come back to the host model after each epoch.
  ocl::Device* device = nullptr;
  // With a device: compute the loss and its gradient on the CPU (the output read back, its
  // gradient sent), as devices without cl_khr_fp64 must.
  bool loss_on_host = false;
  // With a device: layers (by name) run on the CPU between the device's (hybrid CPU+GPU).
  std::vector<std::string> host_layers;
  // The processes of a data-parallel run (trainer_dist.cpp), or null: this one alone. Each rank
  // trains its share of every batch (dist/rank_rows.h); the gradients are summed over the ranks
  // before the update, which every rank then makes alike; the root's state is sent to every
  // rank at the start and after each epoch. Only the root writes the checkpoint.
  Communicator* comm = nullptr;
  // Times every layer's forward and backward phases of the training steps on the CPU (train
  // --profile; nn/layer_profile.h), or null. Not the test's or validation's forwards.
  LayerProfile* profile = nullptr;
  GradientWire gradient_wire = GradientWire::f32;  // how the gradients travel
};

// The precision's name as runs record it: "fp32", "int8-train", "w16a16g16-sr", "w4a8-qat".
std::string precision_name(const TrainOptions& options);
// Sets options->precision (and fixed_point) from a name; an error names the rule.
Status set_precision(const std::string& name, TrainOptions* options);

struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  double loss = 0, accuracy = 0;
  bool has_validation = false;
  double val_loss = 0, val_accuracy = 0;
  double seconds = 0, samples_per_s = 0, lr = 0;
  // A data-parallel run: the steps, and the time spent summing gradients over the ranks
  // (transfers, and waiting for the slowest rank).
  int64_t steps = 0;
  double comm_seconds = 0;
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;  // 0..1; for target = input models, 0
  // target = input models (autoencoders): the reconstruction's mean squared error per value
  // (pixels in [0, 1]; through a sigmoid when the loss takes logits) and its PSNR,
  // 10 log10(1 / mse) dB.
  double mse = 0, psnr_db = 0;
  int64_t samples = 0;
  double seconds = 0;
};

class Trainer {
 public:
  Trainer(Model& model, ThreadPool& pool, const TrainOptions& options);
  ~Trainer();  // takes its hook off the model

  // What does not depend on the micro-batch: the model's storage for the precision, the
  // optimizer's state (QAT's masters, the gradients summed over the ranks) and, on a device,
  // the device model and its optimizer state. prepare() calls it when it was not called.
  Status place();
  // On a device, after place(): what the memory planner needs of it (the lambda reads this
  // trainer's device model: use it while the trainer lives).
  DeviceNeed device_need() const;
  // Allocates the buffers of the plan's micro-batch, its data read as the plan says; the plan is
  // kept as it is (plan()). The one exception to its micro-batch: a device whose driver refuses
  // the planned buffers below the budget gets them once more at half (reported).
  Status prepare(const MemoryPlan& plan);
  // prepare() of the plan these options ask for (plan_as_asked: no host budget; a device's may
  // lower the micro-batch).
  Status prepare();
  // The bytes prepare() allocates for `model` trained with `options` in micro-batches of `rows`
  // (after the model's init), with the storage the precision takes, whatever the model's now:
  // it reads the model's shapes and changes nothing.
  static int64_t prepared_bytes(const Model& model, const TrainOptions& options, int64_t rows);
  // Continues from a checkpoint read with read_checkpoint (after prepare()).
  Status resume_from(const Checkpoint& checkpoint, const std::string& path);
  // Scoring a checkpoint whose model values are restored already (eval; after prepare()): what
  // this precision's inference reads from it besides, QAT's learned activation ranges (without
  // them its activations would pass unrounded while the report says int8-qat). Nothing for the
  // other precisions.
  Status restore_inference_state(const Checkpoint& checkpoint, const std::string& path);
  // This run's state now (weights, buffers, optimizer state, epochs done), held in memory.
  Result<Checkpoint> snapshot();
  // Continues, in this trainer's precision, from the snapshot of a run of the same model and
  // optimizer in another precision (after prepare()): weights, optimizer state and epochs done
  // are taken; what only this precision keeps starts afresh (fake-quant ranges from the first
  // batch, the loss scale at its start). `what` names the snapshot in errors.
  Status start_from(const Checkpoint& snapshot, const std::string& what);

  // Trains from epochs_done() to options.epochs; returns one record per epoch run. Refuses, before
  // the first step, data whose labels the model cannot take (check_labels_for).
  Result<std::vector<EpochRecord>> fit(const Dataset& train, const Dataset* validation);
  // Scores `data` through `engine` (another executor running a model of the same cfg: the int8
  // engine, quant/int8_model.h), or when null through executor(), this trainer's own (a
  // data-parallel run's ranks each scoring their share). One loop for every executor: the loss,
  // a classifier's accuracy, an autoencoder's MSE and PSNR.
  // The error: a label the model cannot take (check_labels_for), an engine of another model,
  // reading a streamed dataset failed, the engine's forward failed.
  Result<EvalResult> evaluate(const Dataset& data, Executor* engine = nullptr);
  // The model as this trainer runs its inference (after prepare()): the CPU model in the
  // trainer's precision, or the device model. Built on first use.
  Executor& executor();

  // The algorithm of each convolution whose cfg leaves it to auto (nn/conv_tuning.h): from the
  // cache or measured now on the micro-batch, unless a checkpoint's choices were restored
  // (resume_from, restore_inference_state, start_from; a checkpoint without them ran the GEMM).
  // Once per trainer: prepare() calls it on the CPU before the model's buffers are allocated
  // (the timing's buffers stay below their peak), fit() and evaluate() otherwise. On a device or
  // over MPI the GEMM (said so).
  Status choose_algorithms();
  const std::vector<ConvChoice>& conv_choices() const { return conv_choices_; }
  // A checkpoint's "conv_algorithms" onto the model (all GEMM when it has none), the choice
  // made: called before prepare() by a run that resumes or scores a checkpoint, so prepare()
  // neither measures nor writes the cache for choices the checkpoint then overrides.
  Status restore_algorithms(const Checkpoint& checkpoint, const std::string& path);

  int64_t epochs_done() const { return epochs_done_; }
  double train_seconds() const { return train_seconds_; }
  int64_t samples_trained() const { return samples_trained_; }
  const Optimizer& optimizer() const { return optimizer_; }
  const LossScaler& loss_scaler() const { return loss_scaler_; }
  // int8_qat: the fake quantizer whose ranges the int8 export takes (null otherwise).
  const FakeQuantizer* fake_quantizer() const { return fake_quant_.get(); }
  // Rows of one forward and backward: the plan's micro-batch (after prepare()).
  int64_t micro_batch() const { return micro_batch_; }
  // The plan prepare() was given (or made), null before.
  const MemoryPlan* plan() const { return plan_.get(); }
  const TrainOptions& options() const { return options_; }
  // The device model when training on OpenCL (null on the CPU).
  ocl::ClModel* device_model() const { return cl_model_.get(); }

 private:
  // evaluate() of data whose labels are checked already (fit's validation set, every epoch).
  Result<EvalResult> score(const Dataset& data, Executor* engine);
  // What runs each step (step_runner.h): the device's after prepare() placed the model there,
  // else the CPU's; built on first use, holding executor()'s executor.
  StepRunner& runner();
  std::unique_ptr<StepRunner> runner_;
  // The prefetcher's next piece: *x [count, input...] and *labels [count], and the loss target.
  Result<Tensor> next_batch(Tensor* x, Tensor* labels);
  std::map<std::string, std::string> settings() const;
  // fit()'s parts (trainer.cpp): the checks before the first step; one epoch (its steps, its
  // record, the validation score); one step (micro-batches, the gradients summed over the ranks,
  // the update); one step's micro-batches, rows [first, first + rows) of it; the update after
  // them, setting *lr; the checkpoint after an epoch (from 0).
  struct EpochState;
  Status check_fit_data(const Dataset& train, const Dataset* validation) const;
  Result<EpochRecord> train_epoch(const Dataset& train, const Dataset* validation, int64_t epoch, LayerContext& ctx);
  Status train_step(EpochState& state, int64_t step, LayerContext& ctx);
  Status run_micro_batches(int64_t first, int64_t rows, double grad_scale, const std::string& where,
                           LayerContext& ctx, LossTally* tally);
  Status update_weights(bool scaled, int64_t steps_per_epoch, const std::string& where, double* lr);
  Status save_after_epoch(int64_t epoch);

  Model& model_;
  ThreadPool& pool_;
  TrainOptions options_;
  Optimizer optimizer_;
  LossScaler loss_scaler_;  // fp16 only
  std::unique_ptr<FakeQuantizer> fake_quant_;  // int8_qat only
  // The context of a training or evaluation forward in this precision.
  LayerContext context(bool training) const;
  std::unique_ptr<BatchPrefetcher> batches_;  // the input and label pieces of [micro_batch, ...]
  Tensor onehot_;                             // [micro_batch, classes] targets of onehot models
  int64_t epochs_done_ = 0;
  double train_seconds_ = 0;
  int64_t samples_trained_ = 0;
  bool placed_ = false;                     // place() done
  bool algorithms_chosen_ = false;          // choose_algorithms() done or a checkpoint's restored
  std::vector<ConvChoice> conv_choices_;
  std::unique_ptr<const MemoryPlan> plan_;  // prepare()'s, never changed
  int64_t micro_batch_ = 0;                 // the plan's (a device's driver may have halved it)

  // On an OpenCL device (trainer_device.cpp; its steps: step_runner_device.cpp).
  std::unique_ptr<ocl::ClModel> cl_model_;
  std::unique_ptr<ocl::ClOptimizer> cl_optimizer_;
  Tensor host_output_;  // [micro_batch, output...]: the output read back (loss on the host, evaluation)
  // place() on the device: the device model (in the precision's storage) and the optimizer's
  // device state. reserve_on_device: its buffers for the plan's micro-batch (halved once when
  // the driver refuses them), setting micro_batch_.
  Status place_on_device();
  Status reserve_on_device();

  // A data-parallel run (trainer_dist.cpp).
  int ranks() const { return options_.comm ? options_.comm->size() : 1; }
  int rank() const { return options_.comm ? options_.comm->rank() : 0; }
  Tensor flat_grads_;  // [params] every gradient end to end, summed over the ranks in one call
  // Every rank runs the same model, data and settings (compared with the root's), or all stop.
  Status check_ranks_agree(const Dataset& train);
  // Every param's gradient summed over the ranks (zeros from a rank with no rows this step).
  Status sum_gradients(bool had_rows);
  // The losses and hits of every rank.
  Status sum_tally(LossTally* tally);
  // The root's params and optimizer state to every rank (their ISAs may round updates
  // differently), buffers (BatchNorm's running statistics) averaged over the ranks.
  Status share_root_state();
};

// Every label of `data` is a class `model` has an output for (check_labels against its output
// count) when the model's loss compares with labels (target = labels or onehot); the error names
// the label's file and place. An autoencoder (target = input) or a GAN's generator (loss = none)
// reads no labels: any data passes. Call it where data meets the model, once, not per batch.
Status check_labels_for(const Model& model, const Dataset& data);

// A checkpoint's weights and optimizer state into `model` and `optimizer`, the optimizer's step
// count and the epochs done from its settings; nothing changes when it is refused.
Status restore_training_state(const Checkpoint& checkpoint, const std::string& path, Model& model,
                              Optimizer& optimizer, int64_t* epochs_done);
// The training settings a checkpoint records (the optimizer's step count among them).
std::map<std::string, std::string> training_settings(const TrainOptions& options, const Optimizer& optimizer,
                                                     int64_t epochs_done);
// The training settings a checkpoint records, read back: fills `options` (leaving
// checkpoint_path, log and live_progress alone); unknown or malformed values are errors.
Status options_from_checkpoint(const Checkpoint& checkpoint, const std::string& path, TrainOptions* options);

}  // namespace rg
