// Training loop, evaluation and the settings kept in checkpoints.
#include "train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "base/elapsed.h"
#include "nn/finite_check.h"
#include "nn/layer_profile.h"
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "report/progress.h"
#include "train/memory_plan.h"

namespace rg {

namespace {
// sum (reconstruction - target)^2 over a batch; logits go through a sigmoid first.
double reconstruction_squared_error(const Tensor& out, const Tensor& target, bool logits) {
  double sum = 0;
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double v = logits ? 1.0 / (1.0 + std::exp(-double(out.f32()[i]))) : double(out.f32()[i]);
    const double d = v - double(target.f32()[i]);
    sum += d * d;
  }
  return sum;
}

// The fake quantizer's int8 weights in place for a scope: a score, a step's micro-batches (nothing
// when null).
class QuantizedWeights {
 public:
  explicit QuantizedWeights(FakeQuantizer* fq) : fq_(fq) {
    if (fq_) fq_->quantize_weights();
  }
  ~QuantizedWeights() {
    if (fq_) fq_->restore_weights();
  }
  QuantizedWeights(const QuantizedWeights&) = delete;
  QuantizedWeights& operator=(const QuantizedWeights&) = delete;

 private:
  FakeQuantizer* fq_;
};

std::string exact(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

// A checkpoint's setting as text, a number or an integer >= min; errors name the file and key.
Status setting_text(const Checkpoint& checkpoint, const std::string& path, const char* key, std::string* out) {
  const auto it = checkpoint.settings.find(key);
  if (it == checkpoint.settings.end()) return Status::error(path + ": the checkpoint lacks the setting '" + key + "'");
  *out = it->second;
  return Status();
}

Status setting_number(const Checkpoint& checkpoint, const std::string& path, const char* key, double* out) {
  std::string value;
  RG_TRY(setting_text(checkpoint, path, key, &value));
  char* end = nullptr;
  *out = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0') return Status::error(path + ": setting '" + key + "' = '" + value + "' is not a number");
  return Status();
}

Status setting_integer(const Checkpoint& checkpoint, const std::string& path, const char* key, int64_t min,
                       int64_t* out) {
  double v = 0;
  RG_TRY(setting_number(checkpoint, path, key, &v));
  if (v != std::floor(v) || v < static_cast<double>(min)) {
    return Status::error(path + ": setting '" + key + "' must be an integer >= " + std::to_string(min));
  }
  *out = static_cast<int64_t>(v);
  return Status();
}
}  // namespace

const char* train_precision_name(TrainPrecision precision) {
  switch (precision) {
    case TrainPrecision::fp32: return "fp32";
    case TrainPrecision::fp16: return "fp16";
    case TrainPrecision::bf16: return "bf16";
    case TrainPrecision::int8_qat: return "int8-qat";
    case TrainPrecision::fixed_point: return "fixed-point";
  }
  return "?";
}

std::string precision_name(const TrainOptions& options) {
  if (options.precision == TrainPrecision::int8_qat) {
    return int8_export_name(options.qat_weight_bits, options.qat_activation_bits, true);
  }
  return options.precision == TrainPrecision::fixed_point ? options.fixed_point.name
                                                          : train_precision_name(options.precision);
}

Status set_precision(const std::string& name, TrainOptions* options) {
  for (TrainPrecision p : {TrainPrecision::fp32, TrainPrecision::fp16, TrainPrecision::bf16}) {
    if (name == train_precision_name(p)) {
      options->precision = p;
      return Status();
    }
  }
  if (names_int8_export(name)) {
    RG_ASSIGN(const Int8ExportPrecision form, parse_int8_export_precision(name));
    if (!form.qat) {
      return Status::error("'" + name + "' is post-training quantization, not a way to train: train in fp32 and " +
                           "quantize (retrograd precision --precision " + form.name + ")");
    }
    options->precision = TrainPrecision::int8_qat;
    options->qat_weight_bits = form.weight_bits;
    options->qat_activation_bits = form.activation_bits;
    return Status();
  }
  if (!names_fixed_point(name)) {
    return Status::error("unknown training precision '" + name +
                         "' (known: fp32, fp16, bf16, int8-qat, int8-train, fixed-point shorthands such as w8a8e8, "
                         "w16a16g16-sr, and QAT with fewer weight bits, w4a8-qat: docs/quantization.md)");
  }
  RG_ASSIGN(auto fixed, parse_fixed_point_precision(name));
  options->precision = TrainPrecision::fixed_point;
  options->fixed_point = std::move(fixed);
  return Status();
}

namespace {
// Where a precision keeps activations: f16 or bf16 for mixed precision, else f32.
DType storage_for(TrainPrecision precision) {
  return precision == TrainPrecision::fp16 ? DType::f16 : precision == TrainPrecision::bf16 ? DType::bf16 : DType::f32;
}
}  // namespace

Trainer::Trainer(Model& model, ThreadPool& pool, const TrainOptions& options)
    : model_(model),
      pool_(pool),
      options_(options),
      optimizer_(options.optimizer, model.params()),
      loss_scaler_(options.loss_scale) {}

Trainer::~Trainer() {
  if (fake_quant_) model_.set_values_hook(nullptr);
}

LayerContext Trainer::context(bool training) const {
  LayerContext ctx{&pool_, training, false};  // the first micro-batch of a step writes the grads
  if (training) ctx.profile = options_.profile;
  ctx.gemm_seed = options_.seed;  // a layer of a precision of its own may round stochastically
  if (options_.precision == TrainPrecision::fixed_point) {
    ctx.gemm = GemmPrecision::fixed_point;
    ctx.formats = options_.fixed_point.roles;
  }
  return ctx;
}

Status Trainer::place() {
  if (placed_) return Status();
  if (options_.device != nullptr && options_.precision != TrainPrecision::fp32 &&
      options_.precision != TrainPrecision::fp16) {
    return Status::error(std::string("training on an OpenCL device runs in fp32 or fp16 only (for now); ") +
                         precision_name(options_) + " trains on the CPU (--device cpu)");
  }
  for (const auto& layer : model_.layers()) {
    const std::string& own = layer->own_precision().name;
    if (options_.device != nullptr && !own.empty() && own != "fp32") {
      return Status::error("layer " + layer->name() + " has a precision of its own (" + own +
                           "); an OpenCL device trains in fp32 or fp16 only (for now): train it on the CPU (--device cpu)");
    }
  }
  RG_TRY(model_.set_storage(storage_for(options_.precision)));
  if (options_.precision == TrainPrecision::int8_qat && !fake_quant_) {
    fake_quant_ = std::make_unique<FakeQuantizer>(model_, options_.qat_weight_bits, options_.qat_activation_bits);
    RG_TRY(fake_quant_->reserve());
    FakeQuantizer* fq = fake_quant_.get();
    model_.set_values_hook([fq](size_t point, const Tensor& values, const LayerContext& ctx) {
      fq->on_values(point, values, ctx);
    });
  }
  if (ranks() > 1 && options_.device != nullptr) {
    return Status::error("training over MPI runs on the CPU (for now): drop --device, or train on one machine");
  }
  RG_TRY(optimizer_.init());
  if (ranks() > 1) {
    RG_ASSIGN(flat_grads_, Tensor::zeros(Shape{model_.param_count()}, DType::f32, "the gradients summed over the ranks"));
  }
  if (options_.device != nullptr) RG_TRY(place_on_device());
  placed_ = true;
  return Status();
}

Status Trainer::prepare() {
  RG_TRY(place());
  const DeviceNeed device = options_.device != nullptr ? device_need() : DeviceNeed{};
  RG_ASSIGN(const MemoryPlan plan, plan_as_asked(model_, options_, options_.device != nullptr ? &device : nullptr));
  return prepare(plan);
}

Status Trainer::prepare(const MemoryPlan& plan) {
  RG_TRY(place());
  plan_ = std::make_unique<const MemoryPlan>(plan);
  micro_batch_ = plan.micro_batch;
  if (options_.device != nullptr) {
    RG_TRY(reserve_on_device());
  } else {
    RG_TRY(choose_algorithms());  // before the model's buffers: its timing buffers come and go below their peak
    RG_TRY(model_.reserve(micro_batch_));
  }
  const int64_t rows = micro_batch_;
  const Shape& in = model_.input_shape();
  RG_ASSIGN(batches_, BatchPrefetcher::create(in, rows, plan.stream));
  if (model_.target() == TargetKind::onehot) {
    RG_ASSIGN(onehot_, Tensor::zeros(model_.output_shape().batched(rows), DType::f32, "one-hot targets"));
  }
  return Status();
}

int64_t Trainer::prepared_bytes(const Model& model, const TrainOptions& options, int64_t rows) {
  int64_t bytes = Optimizer::state_bytes(options.optimizer, model.param_count());
  if (options.comm != nullptr && options.comm->size() > 1) bytes += model.param_count() * static_cast<int64_t>(sizeof(float));
  const int64_t output_bytes = model.output_shape().numel() * rows * static_cast<int64_t>(sizeof(float));
  if (options.device != nullptr) {  // activations live on the device: here the batches, and the output read back
    bytes += BatchPrefetcher::buffer_bytes(model.input_shape(), rows, options.read_ahead) + output_bytes;
    Shape in = model.input_shape();
    for (size_t i = 0; i < model.layers().size(); ++i) {  // layers run on the CPU: their x, y, dx, dy
      const Shape& out = model.layer_output_shape(i);
      const Layer& layer = *model.layers()[i];
      if (std::find(options.host_layers.begin(), options.host_layers.end(), layer.name()) != options.host_layers.end()) {
        bytes += (2 * (in.numel() + out.numel()) + layer.state_elements_per_sample()) * rows * 4;
      }
      in = out;
    }
    return model.target() == TargetKind::onehot ? bytes + output_bytes : bytes;
  }
  if (options.precision == TrainPrecision::int8_qat) bytes += FakeQuantizer::master_bytes_of(model);
  bytes += model.reserved_bytes_in(storage_for(options.precision), rows).total() +
           BatchPrefetcher::buffer_bytes(model.input_shape(), rows, options.read_ahead);
  if (model.target() == TargetKind::onehot) bytes += model.output_shape().numel() * rows * static_cast<int64_t>(sizeof(float));
  return bytes;
}

namespace {
// A QAT checkpoint's learned activation ranges, checked against `model` (nothing set yet).
Result<std::string> checked_qat_ranges(const Checkpoint& checkpoint, const std::string& path, Model& model) {
  std::string ranges;
  RG_TRY(setting_text(checkpoint, path, "qat_ranges", &ranges));
  FakeQuantizer check(model);
  if (Status s = check.set_ranges_text(ranges); !s.ok()) return s.with_context(path + ": setting 'qat_ranges': ");
  return ranges;
}
}  // namespace

Status Trainer::resume_from(const Checkpoint& checkpoint, const std::string& path) {
  RG_TRY(restore_algorithms(checkpoint, path));
  if (fake_quant_) {  // the learned ranges, checked before anything changes
    RG_ASSIGN(const std::string ranges, checked_qat_ranges(checkpoint, path, model_));
    RG_TRY(restore_training_state(checkpoint, path, model_, optimizer_, &epochs_done_));
    return fake_quant_->set_ranges_text(ranges);
  }
  if (options_.precision == TrainPrecision::fp16) {  // the scaler's state, read before anything changes
    double scale = 0;
    int64_t good = 0, skipped = 0;
    RG_TRY(setting_number(checkpoint, path, "loss_scale", &scale));
    RG_TRY(setting_integer(checkpoint, path, "loss_scale_good_steps", 0, &good));
    RG_TRY(setting_integer(checkpoint, path, "loss_scale_skipped", 0, &skipped));
    if (!(scale >= 1)) return Status::error(path + ": setting 'loss_scale' must be >= 1");
    RG_TRY(restore_training_state(checkpoint, path, model_, optimizer_, &epochs_done_));
    loss_scaler_.restore(scale, good, skipped);
    return runner().sync_to_device();
  }
  RG_TRY(restore_training_state(checkpoint, path, model_, optimizer_, &epochs_done_));
  return runner().sync_to_device();
}

Status Trainer::restore_inference_state(const Checkpoint& checkpoint, const std::string& path) {
  RG_TRY(restore_algorithms(checkpoint, path));
  if (!fake_quant_) return Status();
  RG_ASSIGN(const std::string ranges, checked_qat_ranges(checkpoint, path, model_));
  return fake_quant_->set_ranges_text(ranges);
}

Result<Checkpoint> Trainer::snapshot() {
  RG_TRY(runner().sync_to_host());
  return checkpoint_in_memory(model_, &optimizer_, settings());
}

Status Trainer::start_from(const Checkpoint& snapshot, const std::string& what) {
  RG_TRY(restore_algorithms(snapshot, what));
  RG_TRY(restore_training_state(snapshot, what, model_, optimizer_, &epochs_done_));
  return runner().sync_to_device();
}

Status check_labels_for(const Model& model, const Dataset& data) {
  const bool reads_labels = model.target() != TargetKind::input && model.loss() != LossKind::none;
  return reads_labels ? check_labels(data, model.output_shape().numel()) : Status();
}

Status restore_training_state(const Checkpoint& checkpoint, const std::string& path, Model& model,
                              Optimizer& optimizer, int64_t* epochs_done) {
  int64_t epochs = 0, steps = 0;
  RG_TRY(setting_integer(checkpoint, path, "epochs_done", 0, &epochs));
  RG_TRY(setting_integer(checkpoint, path, "optimizer_steps", 0, &steps));
  RG_TRY(restore_checkpoint(checkpoint, path, model, &optimizer));  // after the checks: nothing changes on error
  *epochs_done = epochs;
  optimizer.set_steps(steps);
  return Status();
}

Result<Tensor> Trainer::next_batch(Tensor* x, Tensor* labels) {
  RG_ASSIGN(const BatchPrefetcher::Piece piece, batches_->next(&pool_));
  *x = piece.x;
  *labels = piece.labels;
  const int64_t count = piece.x.shape()[0];
  switch (model_.target()) {
    case TargetKind::labels: return piece.labels;
    case TargetKind::input: return piece.x.reshaped(model_.output_shape().batched(count));
    case TargetKind::onehot: {
      const int64_t classes = model_.output_shape().numel();
      Tensor t = onehot_.rows(0, count);
      t.fill_zero();
      for (int64_t i = 0; i < count; ++i) {
        const int32_t label = piece.labels.data<int32_t>()[i];
        if (label < classes) t.f32()[i * classes + label] = 1.0f;
      }
      return t;
    }
  }
  return Tensor();
}

// One epoch of fit(), as its steps fill it in.
struct Trainer::EpochState {
  int64_t epoch = 0;  // from 0
  int64_t n = 0, steps_per_epoch = 0;
  LossTally tally;  // the losses and hits collected (the device's arrive one micro-batch late)
  double comm_seconds = 0;  // summing gradients over the ranks
  double lr = 0;
  int64_t seen = 0;
};

Status Trainer::check_fit_data(const Dataset& train, const Dataset* validation) const {
  if (model_.weights_f16()) {
    return Status::error("the model keeps f16 weights, which are for inference; training needs its f32 weights");
  }
  if (model_.loss() == LossKind::none) {
    return Status::error("the model has loss = none: it trains only through another model, as a GAN's generator");
  }
  RG_TRY(check_labels_for(model_, train));
  if (validation != nullptr) RG_TRY(check_labels_for(model_, *validation));
  if (train.sample_shape.numel() != model_.input_shape().numel()) {
    return Status::error("the data's samples are " + train.sample_shape.str() + ", the model takes " +
                         model_.input_shape().str());
  }
  return Status();
}

Result<std::vector<EpochRecord>> Trainer::fit(const Dataset& train, const Dataset* validation) {
  RG_TRY(check_fit_data(train, validation));
  RG_TRY(choose_algorithms());
  LayerContext ctx = context(true);
  std::vector<EpochRecord> records;
  const int64_t last = options_.stop_after > 0 ? std::min(options_.stop_after, options_.epochs) : options_.epochs;
  if (ranks() > 1) {  // one model on every rank: the same settings and data, the root's weights
    RG_TRY(check_ranks_agree(train));
    RG_TRY(share_root_state());
  }
  for (int64_t epoch = epochs_done_; epoch < last; ++epoch) {
    RG_ASSIGN(const EpochRecord record, train_epoch(train, validation, epoch, ctx));
    records.push_back(record);
    epochs_done_ = epoch + 1;
    RG_TRY(save_after_epoch(epoch));
    if (options_.after_epoch) RG_TRY(options_.after_epoch(epochs_done_));
  }
  return records;
}

Result<EpochRecord> Trainer::train_epoch(const Dataset& train, const Dataset* validation, int64_t epoch,
                                         LayerContext& ctx) {
  const bool classifies = model_.target() != TargetKind::input;
  EpochState state;
  state.epoch = epoch;
  state.n = train.size();
  state.steps_per_epoch = (state.n + options_.batch - 1) / options_.batch;
  const int64_t n = state.n, steps_per_epoch = state.steps_per_epoch;
  std::fprintf(options_.log, "Epoch %lld/%lld\n", static_cast<long long>(epoch + 1),
               static_cast<long long>(options_.epochs));
  Rng shuffle_rng(options_.seed, kEpochShuffleStream + static_cast<uint64_t>(epoch));
  // The epoch's order, 4 bytes a sample (counted: a streamed dataset's one cost per sample).
  RG_ASSIGN(const Tensor order, Tensor::zeros(Shape{n}, DType::i32, "the epoch's sample order"));
  shuffle_indices(static_cast<int32_t>(n), shuffle_rng, order.data<int32_t>());
  ProgressBar progress(steps_per_epoch, options_.log, options_.live_progress);
  batches_->start(train, order.data<int32_t>(), n, options_.batch, micro_batch(), rank(), ranks());
  const auto start = std::chrono::steady_clock::now();
  LossTally& tally = state.tally;
  for (int64_t step = 0; step < steps_per_epoch; ++step) {
    RG_TRY(train_step(state, step, ctx));
    Metrics metrics;  // none until a loss has arrived (the device's come a micro-batch late)
    if (tally.rows > 0) {
      metrics.emplace_back("loss", tally.loss_sum / static_cast<double>(tally.rows));
      if (classifies) metrics.emplace_back("acc", static_cast<double>(tally.correct) / static_cast<double>(tally.rows));
    }
    progress.update(step + 1, metrics);
  }
  RG_TRY(runner().collect_losses(/*keep_newest=*/false, &tally));  // the epoch's last micro-batch (a device's)
  RG_TRY(runner().sync_to_host());  // the epoch's weights into the host model, for checkpoints and callers
  if (ranks() > 1) {
    RG_TRY(sum_tally(&tally));
    RG_TRY(share_root_state());
  }
  EpochRecord record;
  record.epoch = epoch + 1;
  record.seconds = seconds_since(start);
  record.steps = steps_per_epoch;
  record.comm_seconds = state.comm_seconds;
  record.loss = tally.loss_sum / static_cast<double>(tally.rows);
  record.accuracy = classifies ? static_cast<double>(tally.correct) / static_cast<double>(tally.rows) : 0.0;
  record.samples_per_s = static_cast<double>(state.seen) / record.seconds;
  record.lr = state.lr;
  train_seconds_ += record.seconds;
  samples_trained_ += state.seen;
  Metrics metrics = {{"loss", record.loss}};
  if (classifies) metrics.emplace_back("acc", record.accuracy);
  if (validation != nullptr && validation->size() > 0) {
    RG_ASSIGN(const EvalResult val, score(*validation, nullptr));
    record.has_validation = true;
    record.val_loss = val.loss;
    record.val_accuracy = val.accuracy;
    metrics.emplace_back("val_loss", val.loss);
    if (classifies) metrics.emplace_back("val_acc", val.accuracy);
  }
  progress.finish(metrics);
  return record;
}

Status Trainer::train_step(EpochState& state, int64_t step, LayerContext& ctx) {
  const int64_t begin = step * options_.batch, count = std::min(options_.batch, state.n - begin);
  const std::string where = "epoch " + std::to_string(state.epoch + 1) + ", step " + std::to_string(step + 1);
  ctx.noise_stream = static_cast<uint64_t>(optimizer_.steps());  // dropout masks follow the step
  const bool scaled = options_.precision == TrainPrecision::fp16;
  const double grad_scale = (scaled ? loss_scaler_.scale() : 1.0) / static_cast<double>(count);
  // The step's samples (this rank's share of them) in micro-batches: each backward adds its
  // share of the mean loss's gradient to what the earlier ones left.
  const RowRange mine = rank_rows(count, rank(), ranks());
  {  // int8_qat: forward and backward on the grid values; their gradient updates the masters
    const QuantizedWeights quantized(fake_quant_.get());
    RG_TRY(run_micro_batches(mine.first, mine.count, grad_scale, where, ctx, &state.tally));
  }
  if (ranks() > 1) {  // the whole batch's gradient on every rank, before loss scaling looks at it
    const double before = options_.comm->totals().seconds;
    if (Status s = sum_gradients(mine.count > 0); !s.ok()) return s.with_context(where + ": ");
    state.comm_seconds += options_.comm->totals().seconds - before;
  }
  RG_TRY(update_weights(scaled, state.steps_per_epoch, where, &state.lr));
  if (options_.profile != nullptr) options_.profile->count_step();
  state.seen += count;
  return Status();
}

Status Trainer::run_micro_batches(int64_t first, int64_t rows, double grad_scale, const std::string& where,
                                  LayerContext& ctx, LossTally* tally) {
  const int64_t micro = micro_batch();
  for (int64_t m0 = 0; m0 < rows; m0 += micro) {
    Tensor x, labels;
    RG_ASSIGN(const Tensor target, next_batch(&x, &labels));
    ctx.row_offset = first + m0;  // the sample's place in the whole step
    ctx.accumulate_grads = m0 > 0;
    RG_TRY(runner().micro_batch(x, labels, target, grad_scale, ctx, where, tally));
  }
  return Status();
}

Status Trainer::update_weights(bool scaled, int64_t steps_per_epoch, const std::string& where, double* lr) {
  bool take_step = true;  // false: the scaled gradients overflowed f16; the scaler backed off
  if (scaled) {
    auto finite = runner().unscale(loss_scaler_);
    if (!finite.ok()) return finite.status().with_context(where + ": ");
    take_step = finite.value();
  }
  *lr = options_.schedule.rate(optimizer_.steps(), steps_per_epoch, options_.epochs);
  return take_step ? runner().update(*lr, where) : Status();
}

Status Trainer::save_after_epoch(int64_t epoch) {
  if (options_.checkpoint_path.empty() || (options_.comm != nullptr && !options_.comm->is_root())) return Status();
  // A finite gradient times a large learning rate can still overflow a weight: never saved.
  if (const Param* bad = first_non_finite_value(model_.params())) {
    return Status::error(bad->name + " holds an Inf or a NaN after epoch " + std::to_string(epoch + 1) +
                         " (an update overflowed: lower the learning rate?); training stopped; " +
                         options_.checkpoint_path + " was not written");
  }
  const Status saved = save_checkpoint(options_.checkpoint_path, model_, &optimizer_, settings());
  if (!saved.ok()) return saved.with_context("writing the checkpoint after epoch " + std::to_string(epoch + 1) + ": ");
  return Status();
}

Result<EvalResult> Trainer::evaluate(const Dataset& data, Executor* engine) {
  RG_TRY(check_labels_for(model_, data));
  RG_TRY(choose_algorithms());
  return score(data, engine);
}

StepRunner& Trainer::runner() {
  RG_CHECK(batches_ != nullptr, "Trainer::prepare() before a step, a score or a resume");  // a device's runner needs it
  if (!runner_ && cl_model_) {
    runner_ = make_device_step_runner(model_, *cl_model_, *cl_optimizer_, host_output_, options_.loss_on_host,
                                      context(false));
  } else if (!runner_) {
    runner_ = std::make_unique<CpuStepRunner>(model_, optimizer_, context(false), precision_name(options_));
  }
  return *runner_;
}

Executor& Trainer::executor() { return runner().executor(); }

namespace {
// An executor of a model other than the trainer's (which sets the targets and the loss): an error.
Status check_runs_same_model(const Executor& engine, const Model& model) {
  const Model& ran = engine.model();
  if (ran.input_shape() == model.input_shape() && ran.output_shape() == model.output_shape() &&
      ran.loss() == model.loss() && ran.target() == model.target()) {
    return Status();
  }
  return Status::error("scoring: the " + engine.description() + " executor runs a model of " + ran.input_shape().str() +
                       " -> " + ran.output_shape().str() + " (" + loss_name(ran.loss()) + "), the trainer's is " +
                       model.input_shape().str() + " -> " + model.output_shape().str() + " (" +
                       loss_name(model.loss()) + ")");
}

}  // namespace

Result<EvalResult> Trainer::score(const Dataset& data, Executor* engine) {
  const auto start = std::chrono::steady_clock::now();
  // Its own executor, however asked for (eval hands it back): QAT's weights go onto their grid.
  const bool own = engine == nullptr || engine == &executor();
  Executor& ran = own ? executor() : *engine;
  RG_TRY(check_runs_same_model(ran, model_));
  const int64_t n = data.size();
  // A data-parallel run scores its share of the samples on each rank and sums (not for another
  // engine: one on this process alone).
  const RowRange mine = own ? rank_rows(n, rank(), ranks()) : RowRange{0, n};
  RG_ASSIGN(const Tensor order, Tensor::zeros(Shape{std::max<int64_t>(mine.count, 1)}, DType::i32, "the evaluation order"));
  for (int64_t i = 0; i < mine.count; ++i) order.data<int32_t>()[i] = static_cast<int32_t>(mine.first + i);
  double loss_sum = 0, squared_sum = 0;
  int64_t correct = 0;
  const int64_t rows = micro_batch();
  batches_->start(data, order.data<int32_t>(), mine.count, rows, rows);
  {
    const QuantizedWeights quantized(own ? fake_quant_.get() : nullptr);
    for (int64_t begin = 0; begin < mine.count; begin += rows) {
      Tensor x, labels;
      RG_ASSIGN(const Tensor target, next_batch(&x, &labels));
      RG_ASSIGN(const Tensor out, ran.forward(x));
      loss_sum += compute_loss(model_.loss(), out, target, 1.0, Tensor());
      if (model_.target() != TargetKind::input) {
        correct += count_correct(out, labels.data<int32_t>());
      } else {
        squared_sum += reconstruction_squared_error(out, target, model_.loss() == LossKind::bce_with_logits);
      }
    }
  }
  if (own && ranks() > 1) {
    double sums[3] = {loss_sum, static_cast<double>(correct), squared_sum};
    RG_TRY(options_.comm->sum(sums, 3));
    loss_sum = sums[0];
    correct = static_cast<int64_t>(sums[1]);
    squared_sum = sums[2];
  }
  EvalResult result;
  result.samples = n;
  result.loss = n > 0 ? loss_sum / static_cast<double>(n) : 0.0;
  result.accuracy = n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  if (model_.target() == TargetKind::input && n > 0) {
    result.mse = squared_sum / static_cast<double>(n * model_.output_shape().numel());
    result.psnr_db = result.mse > 0 ? 10.0 * std::log10(1.0 / result.mse) : INFINITY;
  }
  result.seconds = seconds_since(start);
  return result;
}

std::map<std::string, std::string> Trainer::settings() const {
  auto settings = training_settings(options_, optimizer_, epochs_done_);
  if (options_.precision == TrainPrecision::fp16) {
    settings["loss_scale"] = exact(loss_scaler_.scale());
    settings["loss_scale_good_steps"] = std::to_string(loss_scaler_.good_steps());
    settings["loss_scale_skipped"] = std::to_string(loss_scaler_.skipped_steps());
  }
  if (fake_quant_) settings["qat_ranges"] = fake_quant_->ranges_text();
  settings["conv_algorithms"] = conv_algorithms_text(model_);
  return settings;
}

std::map<std::string, std::string> training_settings(const TrainOptions& options, const Optimizer& optimizer,
                                                     int64_t epochs_done) {
  const OptimizerConfig& o = options.optimizer;
  const Schedule& s = options.schedule;
  std::map<std::string, std::string> settings = options.data_settings;
  settings.insert({
      {"epochs_done", std::to_string(epochs_done)},
      {"epochs", std::to_string(options.epochs)},
      {"batch", std::to_string(options.batch)},
      {"precision", precision_name(options)},
      {"seed", std::to_string(options.seed)},
      {"data", options.data},
      {"validation_split", exact(options.validation_split)},
      {"optimizer", optimizer_name(o.kind)},
      {"optimizer_steps", std::to_string(optimizer.steps())},
      {"momentum", exact(o.momentum)},
      {"nesterov", o.nesterov ? "1" : "0"},
      {"weight_decay", exact(o.weight_decay)},
      {"beta1", exact(o.beta1)},
      {"beta2", exact(o.beta2)},
      {"eps", exact(o.eps)},
      {"schedule", schedule_name(s.kind)},
      {"lr", exact(s.lr)},
      {"step_epochs", std::to_string(s.step_epochs)},
      {"gamma", exact(s.gamma)},
      {"lr_min", exact(s.lr_min)},
  });
  return settings;
}

Status options_from_checkpoint(const Checkpoint& checkpoint, const std::string& path, TrainOptions* options) {
  auto text = [&](const char* key, std::string* out) { return setting_text(checkpoint, path, key, out); };
  auto number = [&](const char* key, double* out) { return setting_number(checkpoint, path, key, out); };
  auto integer = [&](const char* key, int64_t min, int64_t* out) {
    return setting_integer(checkpoint, path, key, min, out);
  };
  int64_t value = 0;
  RG_TRY(integer("epochs_done", 0, &value));
  RG_TRY(integer("optimizer_steps", 0, &value));
  RG_TRY(integer("epochs", 1, &options->epochs));
  RG_TRY(integer("batch", 1, &options->batch));
  options->precision = TrainPrecision::fp32;  // checkpoints from before fp16 training lack the setting
  if (checkpoint.settings.count("precision") != 0) {
    RG_TRY(set_precision(checkpoint.settings.at("precision"), options).with_context(path + ": setting 'precision': "));
  }
  std::string seed_text;
  RG_TRY(text("seed", &seed_text));
  options->seed = std::strtoull(seed_text.c_str(), nullptr, 10);
  RG_TRY(text("data", &options->data));
  RG_TRY(number("validation_split", &options->validation_split));
  std::string name;
  RG_TRY(text("optimizer", &name));
  auto kind = optimizer_from_name(name);
  if (!kind.ok()) return kind.status().with_context(path + ": ");
  options->optimizer.kind = kind.value();
  RG_TRY(number("momentum", &options->optimizer.momentum));
  double flag = 0;
  RG_TRY(number("nesterov", &flag));
  options->optimizer.nesterov = flag != 0;
  RG_TRY(number("weight_decay", &options->optimizer.weight_decay));
  RG_TRY(number("beta1", &options->optimizer.beta1));
  RG_TRY(number("beta2", &options->optimizer.beta2));
  RG_TRY(number("eps", &options->optimizer.eps));
  RG_TRY(text("schedule", &name));
  auto schedule = schedule_from_name(name);
  if (!schedule.ok()) return schedule.status().with_context(path + ": ");
  options->schedule.kind = schedule.value();
  RG_TRY(number("lr", &options->schedule.lr));
  RG_TRY(integer("step_epochs", 1, &options->schedule.step_epochs));
  RG_TRY(number("gamma", &options->schedule.gamma));
  RG_TRY(number("lr_min", &options->schedule.lr_min));
  return Status();
}

}  // namespace rg
