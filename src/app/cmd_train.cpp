// retrograd train: options -> model, data, trainer; the progress, the summary and --json.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>

#include "app/args.h"
#include "app/commands.h"
#include "app/data_source.h"
#include "app/device_option.h"
#include "app/json_report.h"
#include "app/layer_profile_option.h"
#include "app/mpi_job.h"
#include "app/precision_report.h"
#include "app/precision_sweep.h"
#include "app/train_gan.h"
#include "app/train_options.h"
#include "base/files.h"
#include "base/float_mode.h"
#include "cpu/cpuid.h"
#include "cpu/isa.h"
#include "data/chance.h"
#include "data/image_io.h"
#include "opencl/model/cl_model.h"
#include "report/image_grid.h"
#include "report/process_stats.h"
#include "report/progress.h"
#include "train/memory_plan.h"
#include "nn/layer_precision_option.h"
#include "train/trainer.h"

namespace rg {

namespace {

// Options that a resumed run takes from its checkpoint and so may not be given again.
const char* kFromCheckpoint[] = {"model", "batch", "optimizer", "lr", "momentum", "nesterov", "weight-decay",
                                 "beta1", "beta2", "schedule", "step-epochs", "gamma", "lr-min", "val-split", "seed",
                                 "train-precision", "layer-precision"};

constexpr TrainCommand kTrain = {
    "train",
    "Trains a model and reports test accuracy, speed (samples/s) and memory (peak RSS, peak tensor bytes).\n"
    "Default: the mlp preset on Fashion-MNIST from the Debian package dataset-fashion-mnist.",
    ""};
constexpr TrainCommand kPrecision = {
    "precision",
    "Trains a model in fp32 (train's options), then runs it in each precision of --precision: one table row\n"
    "each of what ran, train and inference samples/s, test accuracy (or MSE) against fp32, weights and memory.",
    "fp32,fp16,int8,int8-qat,int8-train"};

// --samples for target = input models: the first test images in rows of 16, each row of
// inputs above the row of their reconstructions.
Status write_reconstruction_samples(const std::string& path, Model& model, ThreadPool& pool, const Dataset& test,
                                    int64_t batch) {
  constexpr int64_t kPerRow = 16;
  const int64_t count = std::min<int64_t>({2 * kPerRow, test.size(), batch});
  const Shape& in = model.input_shape();
  if (in.rank() != 3) return Status::error("--samples needs image input (h x w x c), the model takes " + in.str());
  RG_ASSIGN(const Tensor first, test.first_samples(count));
  const Tensor x = first.reshaped(in.batched(count));
  RG_ASSIGN(Tensor grid, Tensor::zeros(in.batched(2 * count), DType::f32, "sample grid"));
  const Tensor out = model.forward(x, LayerContext{&pool, false});
  const bool logits = model.loss() == LossKind::bce_with_logits;
  const int64_t size = in.numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t row = i / kPerRow, column = i % kPerRow;
    const int64_t per_row = std::min(kPerRow, count - row * kPerRow);
    float* above = grid.f32() + (2 * row * kPerRow + column) * size;
    float* below = above + per_row * size;
    for (int64_t k = 0; k < size; ++k) {
      const float v = out.f32()[i * size + k];
      above[k] = x.f32()[i * size + k];
      below[k] = logits ? 1.0f / (1.0f + std::exp(-v)) : v;
    }
  }
  return write_image_grid(path, grid, kPerRow);
}

nlohmann::json epoch_json(const EpochRecord& r) {
  nlohmann::json j = {{"epoch", r.epoch},     {"loss", r.loss},       {"accuracy", r.accuracy},
                      {"seconds", r.seconds}, {"samples_per_s", r.samples_per_s}, {"lr", r.lr}};
  if (r.comm_seconds > 0) j["comm_seconds"] = r.comm_seconds;
  if (r.has_validation) {
    j["val_loss"] = r.val_loss;
    j["val_accuracy"] = r.val_accuracy;
  }
  return j;
}

}  // namespace

namespace {

// One `train` run as this process's part of `comm`'s job (null: alone): what its steps read and
// fill, in the order train_in_job calls them.
struct TrainRun {
  TrainRun(const TrainCommand& c, Communicator* job, int64_t rss)
      : command(c), comm(job), start_rss(rss), args(c.name, "[options]", c.summary) {}
  const TrainCommand& command;
  Communicator* comm;
  int64_t start_rss;
  Args args;
  bool in_job = false, writes_files = false;  // checkpoints, reports: the root's
  // Settings, from the options or from the checkpoint being resumed.
  TrainOptions options;
  Checkpoint resumed;
  CfgDocument cfg;
  bool resuming = false;
  std::string resume_path, resumed_data;  // resumed_data: the checkpoint's source when resuming
  enum class Gan { no, folder, cfg } gan = Gan::no;  // a GAN run, resumed from its folder or from a cfg
  std::unique_ptr<OutputLock> checkpoint_lock;  // held until the run ends
  std::string samples_path, json_path;
  bool precision_report = false;
  PrecisionSettings precision;
  int thread_count = 0;
  // Device, model, data, memory.
  std::unique_ptr<ocl::Device> train_device;
  std::string stored_model;  // the context of errors in a checkpoint's cfg
  std::unique_ptr<Model> model;
  int64_t budget = 0;
  bool budget_given = false;
  StreamChoice stream = StreamChoice::automatic;
  AvailableMemory available;
  DataSplit split;
  Dataset train, validation;
  MemoryPlan plan;
  // Training: int8-qat rerunning the last epochs starts from the run's state before them, kept here.
  std::unique_ptr<ThreadPool> pool;
  int64_t qat_snapshot_epoch = -1;
  Checkpoint qat_start;
  std::unique_ptr<Trainer> trainer;
  std::unique_ptr<LayerProfile> profile;  // --profile
  // What it measured.
  LayerProfileReport profile_report;
  std::vector<EpochRecord> history;
  EvalResult test;
  bool classifies = false;
  double chance = 0, train_cpu_seconds = 0, samples_per_s = 0, train_gflops = 0;
  int64_t peak_rss = 0, peak_tensors = 0;
  std::vector<PrecisionRow> precision_rows_run;
};

// Resuming: the settings, the data options and the model from the checkpoint (or a GAN's folder).
Status read_resumed_settings(TrainRun& run) {
  Args& args = run.args;
  for (const char* name : kFromCheckpoint) {
    if (args.given(name)) return Status::error("--" + std::string(name) + " comes from the checkpoint when resuming; drop it");
  }
  if (is_directory(run.resume_path)) {  // a GAN run's folder
    run.gan = TrainRun::Gan::folder;
    return Status();
  }
  RG_ASSIGN(run.resumed, read_checkpoint_in_job(run.resume_path, run.comm));
  RG_TRY(options_from_checkpoint(run.resumed, run.resume_path, &run.options));
  RG_TRY(resume_data_options(run.resumed.settings, run.resume_path, args));
  if (args.given("epochs")) {
    RG_ASSIGN(run.options.epochs, args.integer("epochs", 1, 1000000));
  }
  auto parsed = parse_cfg(run.resumed.cfg_text, run.resumed.cfg_name);
  if (!parsed.ok()) return parsed.status().with_context(run.resume_path + ": the stored model: ");
  run.cfg = parsed.take();
  return Status();
}

// parse: the settings, from the options or from the checkpoint being resumed; whether it is a GAN run.
Status read_settings(TrainRun& run) {
  Args& args = run.args;
  run.resuming = args.given("resume");
  run.resume_path = args.text("resume");
  if (run.resuming) {
    RG_TRY(read_resumed_settings(run));
    if (run.gan == TrainRun::Gan::folder) return Status();
  } else {
    RG_ASSIGN(run.cfg, load_model_cfg(args.text("model")));
    if (args.given("layer-precision")) {
      auto with = with_layer_precisions(run.cfg, args.text("layer-precision"));
      if (!with.ok()) return with.status().with_context("--layer-precision: ");
      run.cfg = with.take();
    }
    RG_TRY(apply_train_section(run.cfg, args));
    RG_TRY(options_from_args(args, &run.options));
  }
  run.resumed_data = run.options.data;
  if (args.given("data") || !run.resuming) run.options.data = args.given("data") ? args.text("data") : "";
  if (!run.cfg.sections.empty() && run.cfg.sections.front().kind() == "gan") run.gan = TrainRun::Gan::cfg;
  return Status();
}

// parse: --checkpoint claimed, --samples and --json writable.
Status claim_train_outputs(TrainRun& run) {
  Args& args = run.args;
  TrainOptions& options = run.options;
  options.checkpoint_path = args.given("checkpoint") ? args.text("checkpoint") : (run.resuming ? run.resume_path : "");
  if (!options.checkpoint_path.empty() && run.writes_files) {
    RG_ASSIGN(run.checkpoint_lock,
              claim_checkpoint(options.checkpoint_path, args.given("checkpoint") ? "checkpoint" : "resume",
                               args.given("overwrite"), run.resuming ? run.resume_path : "", options.checkpoint_path));
  }
  run.samples_path = args.text("samples");
  if (args.given("samples") && run.writes_files) {
    RG_TRY(check_png_name(run.samples_path).with_context("--samples: "));
    RG_TRY(check_writable_path(run.samples_path, "samples"));
  }
  run.json_path = args.text("json");
  if (args.given("json") && run.writes_files) RG_TRY(check_writable_path(run.json_path, "json"));
  return Status();
}

// parse: --precision's settings and how they fit the run.
Status read_precision_options(TrainRun& run) {
  Args& args = run.args;
  run.precision_report = args.given("precision");
  if (!run.precision_report) return Status();
  RG_ASSIGN(run.precision, precision_settings(args));
  const PrecisionSettings& precision = run.precision;
  RG_TRY(check_layer_rows(precision, run.cfg));
  if (run.options.precision != TrainPrecision::fp32) {
    return Status::error("--precision compares each precision with the fp32 run and trains the others itself; drop "
                         "--train-precision");
  }
  if (args.given("csv")) RG_TRY(check_writable_path(args.text("csv"), "csv"));
  if (precision.qat_reruns_last_epochs() && precision.qat.epochs > run.options.epochs) {
    return Status::error("--qat-epochs " + std::to_string(precision.qat.epochs) + ": int8-qat reruns the run's last "
                         "epochs, and the run has " + std::to_string(run.options.epochs) + " (--epochs); lower "
                         "--qat-epochs or use --qat-mode extra");
  }
  return Status();
}

// parse: the options of a plain (not GAN) run past the settings: outputs, precision, threads, MPI, --stop-after.
Status read_run_options(TrainRun& run) {
  Args& args = run.args;
  for (const char* name : {"out", "judge", "judge-epochs", "score-samples"}) {
    if (args.given(name)) return Status::error("--" + std::string(name) + " applies to GAN training only (--model dcgan)");
  }
  RG_TRY(claim_train_outputs(run));
  RG_TRY(read_precision_options(run));
  RG_ASSIGN(run.thread_count, threads_option(args));
  RG_TRY(apply_mpi_options(args, run.comm, &run.options, &run.thread_count));
  if (args.given("stop-after")) {
    RG_ASSIGN(run.options.stop_after, args.integer("stop-after", 1, 1000000));
  }
  return Status();
}

// build: the device, the model (initialized) and the memory budget.
Status build_train_model(TrainRun& run) {
  Args& args = run.args;
  RG_ASSIGN(run.train_device, open_train_device(args, &run.options));
  if (run.train_device && run.precision_report) {
    return Status::error("--precision compares precisions on the CPU; drop --device (the OpenCL device trains fp32)");
  }
  run.stored_model = run.resuming ? run.resume_path + ": the stored model: " : "";
  auto built = Model::from_cfg(run.cfg);
  if (!built.ok()) return built.status().with_context(run.stored_model);
  run.model = built.take();
  if (args.given("samples") && run.model->target() != TargetKind::input) {
    return Status::error("--samples shows reconstructions: it needs a model trained on its input (target = input)");
  }
  RG_ASSIGN(std::tie(run.budget, run.stream), memory_options(args));
  run.budget_given = run.budget > 0;
  run.available = available_host_memory();
  if (run.budget_given) {
    const std::string above = budget_above_available(run.budget, run.available);
    if (!above.empty()) std::fprintf(stderr, "retrograd: warning: %s\n", above.c_str());
  }
  RG_TRY(run.model->init(run.options.seed).with_context(run.stored_model));
  const AddressSpace space = address_space();
  if (run.budget == 0 && space.limit_bytes > 0) {
    RG_ASSIGN(run.budget, address_space_budget(space, run.thread_count));
    std::printf("memory:    %s\n", describe_address_space_budget(space, run.budget).c_str());
  }
  return Status();
}

// build: the training, validation and test data, checked against the checkpoint and the model.
Status load_train_data(TrainRun& run) {
  Args& args = run.args;
  TrainOptions& options = run.options;
  const bool open_streamed =
      run.stream == StreamChoice::always || (run.stream == StreamChoice::automatic && run.budget > 0);
  auto data = load_training_data(args, options.data, options.seed, run.model->input_shape(), open_streamed);
  if (!data.ok()) {
    const bool stored = run.resuming && !args.given("data");
    return stored ? note_source_from_checkpoint(data.status(), options.data, run.resume_path) : data.status();
  }
  run.split = data.take();
  if (run.resuming) {
    RG_TRY(
        check_resumed_data(run.resumed.settings, run.resume_path, options.data, run.resumed_data, run.split));
  }
  record_data_options(args, &options.data_settings);
  options.data_settings[kDataIdentitySetting] = data_identity(run.split);
  run.train = run.split.train;
  if (options.validation_split > 0) {
    auto held = split_validation(run.train, options.validation_split, options.seed);
    if (!held.ok()) return held.status().with_context("--val-split: ");
    run.train = held.value().train;
    run.validation = held.value().test;
  }
  for (const Dataset* d : {&run.train, &run.validation, &run.split.test}) {  // before the first step, not after training
    RG_TRY(check_labels_for(*run.model, *d));
  }
  return Status();
}

// build: the trainer; on a device, the model's params, gradients and optimizer state placed
// there already, so that the plan sees what is left of the device's budget.
Status make_trainer(TrainRun& run) {
  TrainOptions& options = run.options;
  run.pool = std::make_unique<ThreadPool>(run.thread_count);
  options.log = stdout;
  options.live_progress = is_terminal(stdout);
  run.qat_snapshot_epoch = run.precision.qat_reruns_last_epochs() ? options.epochs - run.precision.qat.epochs : -1;
  if (run.qat_snapshot_epoch >= 0) {
    options.after_epoch = [&run](int64_t epochs_done) -> Status {
      if (epochs_done != run.qat_snapshot_epoch) return Status();
      RG_ASSIGN(run.qat_start, run.trainer->snapshot());
      return Status();
    };
  }
  RG_ASSIGN(run.profile, layer_profile_for(run.args, options));
  options.profile = run.profile.get();
  if (run.profile && run.profile->clock() == LayerProfile::Clock::device) {
    run.train_device->set_profile_listener([profile = run.profile.get()](double s) { profile->add_device_seconds(s); });
  }
  run.trainer = std::make_unique<Trainer>(*run.model, *run.pool, options);
  if (run.train_device) RG_TRY(run.trainer->place());
  return Status();
}

// plan: the run's one plan, host and device together (micro-batches and streaming within the
// budgets); the host budget given to the counted allocator; the data read in when it may be.
Status plan_run_memory(TrainRun& run) {
  TrainOptions& options = run.options;
  const RunData data{&run.train, &run.validation, &run.split.test};
  const DeviceNeed device = run.train_device ? run.trainer->device_need() : DeviceNeed{};
  RG_ASSIGN(run.plan,
            plan_memory(*run.model, options, data, run.budget, run.stream, run.train_device ? &device : nullptr));
  if (!run.budget_given) {
    RG_TRY(check_plan_fits(*run.model, options, data, run.stream, run.plan, run.available));
  }
  enforce_host_budget(run.plan);
  if (!run.plan.stream) {  // read streamed samples in (a budget that allows it), the labels shared
    for (Dataset* d : {&run.train, &run.validation, &run.split.test}) {
      RG_ASSIGN(*d, d->in_memory_copy());
    }
  }
  // The precision table's other runs (--precision: Trainer::prepare() without a plan, not
  // planned themselves) train in the plan's micro-batches, as this one.
  options.micro_batch = run.plan.micro_batch;
  options.read_ahead = run.plan.stream;
  return Status();
}

// build: the trainer prepared for the plan, resumed, and the int8-qat starting state kept when it is now.
Status start_trainer_for(TrainRun& run) {
  const TrainOptions& options = run.options;
  Trainer& trainer = *run.trainer;
  if (run.resuming) RG_TRY(trainer.restore_algorithms(run.resumed, run.resume_path));  // before prepare() measures
  RG_TRY(trainer.prepare(run.plan));
  if (run.resuming) {
    RG_TRY(trainer.resume_from(run.resumed, run.resume_path));
    run.resumed.tensors.clear();  // restored: the plan counted them until here (MemoryPlan::checkpoint)
    if (trainer.epochs_done() >= options.epochs) {
      return Status::error(run.resume_path + " has " + std::to_string(trainer.epochs_done()) +
                           " epochs done already; pass --epochs with more to continue");
    }
  }
  if (run.qat_snapshot_epoch >= 0 && trainer.epochs_done() > run.qat_snapshot_epoch) {
    return Status::error("int8-qat reruns the run's last " + std::to_string(run.precision.qat.epochs) +
                         " epochs from the state after epoch " + std::to_string(run.qat_snapshot_epoch) +
                         ", and this run resumes after epoch " + std::to_string(trainer.epochs_done()) +
                         "; use --qat-mode extra, or lower --qat-epochs");
  }
  if (run.qat_snapshot_epoch >= 0 && trainer.epochs_done() == run.qat_snapshot_epoch) {
    RG_ASSIGN(run.qat_start, trainer.snapshot());
  }
  return Status();
}

// report: what is about to run, before the first step.
void print_train_header(const TrainRun& run, const CpuInfo& cpu) {
  const TrainOptions& options = run.options;
  Trainer& trainer = *run.trainer;
  std::printf("retrograd train: model %s, %lld parameters\n%s", run.cfg.file.c_str(),
              static_cast<long long>(run.model->param_count()), run.model->summary().c_str());
  std::printf("data:      %s: %lld training samples%s, %lld test samples, %d classes\n", run.train.name.c_str(),
              static_cast<long long>(run.train.size()),
              run.validation.size() > 0 ? (", " + std::to_string(run.validation.size()) + " for validation").c_str() : "",
              static_cast<long long>(run.split.test.size()), run.train.num_classes);
  std::printf("training:  %s, batch %lld, %s, %s, %s schedule, seed %llu, %d threads on %s\n",
              precision_name(options).c_str(), static_cast<long long>(options.batch), describe(options.optimizer).c_str(),
              options.schedule.describe().c_str(), schedule_name(options.schedule.kind),
              static_cast<unsigned long long>(options.seed), run.pool->threads(), cpu.brand.empty() ? "this CPU" : cpu.brand.c_str());
  std::printf("memory:    %s\n", describe_plan(run.plan).c_str());
  if (!trainer.conv_choices().empty()) std::printf("convs:     %s\n", conv_choices_text(trainer.conv_choices()).c_str());
  if (run.train_device) {
    std::printf("device:    %s, micro-batches of %lld, loss on the %s\n", run.train_device->label().c_str(),
                static_cast<long long>(trainer.micro_batch()), trainer.options().loss_on_host ? "CPU" : "device");
  }
  if (run.in_job) {
    std::printf("ranks:     %d (%s), %d on this host, each training its share of every batch of %lld; gradients "
                "summed in %s\n", run.comm->size(), run.comm->library_version().c_str(), run.comm->ranks_on_this_host(),
                static_cast<long long>(options.batch), gradient_wire_name(options.gradient_wire));
  }
  if (run.resuming) {
    std::printf("resuming:  %s after epoch %lld\n", run.resume_path.c_str(), static_cast<long long>(trainer.epochs_done()));
    if (data_source_name(options.data) != data_source_name(run.resumed_data)) {
      std::printf("           its run read %s: the same samples (%s)\n", data_source_name(run.resumed_data).c_str(),
                  options.data_settings.at(kDataIdentitySetting).c_str());
    }
  }
  std::fflush(stdout);
}

// run: train, score the test set, and the figures of the summary.
Status train_and_score(TrainRun& run) {
  Trainer& trainer = *run.trainer;
  const double cpu_seconds_before = process_cpu_seconds();
  auto fitted = trainer.fit(run.train, run.validation.size() > 0 ? &run.validation : nullptr);
  run.train_cpu_seconds = process_cpu_seconds() - cpu_seconds_before;  // every thread, while training
  if (!fitted.ok()) return fitted.status();
  run.history = fitted.take();
  run.options.profile = nullptr;  // the precision table's runs are not the profile's
  if (run.profile) {
    const PeakFigure peak = run.train_device ? layer_profile_device_peak(run.train_device->info().name)
                                             : layer_profile_peak(run.pool->threads());
    run.profile_report = summarize_layer_profile(*run.model, *run.profile, trainer.train_seconds(), peak);
  }
  if (run.train_device) {  // the profiles cover training, not the test
    run.train_device->set_profiling(false);
    run.train_device->set_profile_listener(nullptr);
  }
  RG_ASSIGN(run.test, trainer.evaluate(run.split.test));
  // What learning nothing scores on the same test samples: the figure's yardstick (once, here).
  run.classifies = run.model->target() != TargetKind::input;
  auto chance_figure = chance_quality(run.classifies, run.train, run.split.test);
  if (!chance_figure.ok()) return chance_figure.status().with_context("the chance figure: ");
  run.chance = chance_figure.value();
  run.samples_per_s =
      trainer.train_seconds() > 0 ? static_cast<double>(trainer.samples_trained()) / trainer.train_seconds() : 0;
  run.peak_rss = peak_rss_bytes();
  run.peak_tensors = host_memory().peak_bytes();
  // The products' flops (Model::train_flops_per_sample) at the speed measured; a GAN is not here.
  run.train_gflops = run.samples_per_s * static_cast<double>(run.model->train_flops_per_sample()) / 1e9;
  return Status();
}

// report: the summary after training, and --samples.
Status print_train_summary(TrainRun& run) {
  Trainer& trainer = *run.trainer;
  const EvalResult& test = run.test;
  const double cpu_busy = trainer.train_seconds() > 0 ? run.train_cpu_seconds / trainer.train_seconds() : 0;
  std::printf("\nsummary\n");
  if (run.classifies) {
    std::printf("  test accuracy   %.4f  (loss %.4f, %lld samples, %.2fs; one class for all: %.4f)\n", test.accuracy,
                test.loss, static_cast<long long>(test.samples), test.seconds, run.chance);
  } else {
    std::printf("  test MSE        %.6f  PSNR %.2f dB  (loss %.6f, %lld samples, %.2fs; answering the mean: %.6f)\n",
                test.mse, test.psnr_db, test.loss, static_cast<long long>(test.samples), test.seconds, run.chance);
  }
  std::printf("  training        %lld epochs in %.1fs, %.0f samples/s, %.2f GFLOP/s, %d threads (%.2f cores busy)\n",
              static_cast<long long>(run.history.size()), trainer.train_seconds(), run.samples_per_s, run.train_gflops,
              run.pool->threads(), cpu_busy);
  std::printf("  memory          peak RSS %s: tensors and data %s at their peak (predicted %s%s), the rest the "
              "process's own (%s resident at start: code and libraries; then thread stacks, heap bookkeeping, "
              "GEMM packing)\n",
              format_bytes(run.peak_rss).c_str(), format_bytes(run.peak_tensors).c_str(),
              format_bytes(run.plan.predicted_peak()).c_str(),
              run.budget > 0 ? (", budget " + format_bytes(run.budget)).c_str() : "", format_bytes(run.start_rss).c_str());
  if (run.train_device) {
    std::printf("  device          %s\n",
                describe_device_use(*run.train_device, trainer.device_model()->transfers()).c_str());
    std::printf("  device probe    %s\n", ocl::describe_test_cost(run.train_device->capabilities()).c_str());
    if (run.args.given("profile-device")) {
      std::printf("device time by kernel\n%s", describe_kernel_times(*run.train_device).c_str());
    }
  }
  if (run.in_job) {
    std::printf("  ranks           %s\n",
                describe_job(*run.comm, run.options, run.model->param_count(), run.history).c_str());
  }
  if (!run.options.checkpoint_path.empty()) std::printf("  checkpoint      %s\n", run.options.checkpoint_path.c_str());
  if (run.args.given("samples") && run.writes_files) {
    if (run.train_device) {  // the trained weights are on the host now; its buffers were not reserved
      RG_TRY(run.model->reserve(run.options.batch).with_context("--samples: "));
    }
    RG_TRY(write_reconstruction_samples(run.samples_path, *run.model, *run.pool, run.split.test,
                                                    run.options.batch)
                           .with_context("--samples: "));
    std::printf("  samples         %s (inputs above their reconstructions)\n", run.samples_path.c_str());
  }
  if (run.profile) std::printf("\nlayer profile\n%s", layer_profile_text(run.profile_report).c_str());
  return Status();
}

// report: --precision's table (and --csv), each precision run from the trained model. A run stopped
// before its last epoch (--stop-after) has no trained model yet: its rows wait for the resumed run's end
// (int8-qat rerunning the last epochs would otherwise train epochs the fp32 run has not).
Status report_precisions(TrainRun& run) {
  if (!run.precision_report) return Status();
  const int64_t done = run.trainer->epochs_done();
  if (done < run.options.epochs) {
    std::printf("\nprecision: no rows yet, the fp32 run stopped after epoch %lld of %lld; --resume continues it and "
                "the rows follow its last epoch\n", static_cast<long long>(done),
                static_cast<long long>(run.options.epochs));
    return Status();
  }
  auto rows = precision_rows(*run.model, run.options, *run.pool, run.train, run.split.test, run.samples_per_s,
                             run.precision, run.qat_snapshot_epoch >= 0 ? &run.qat_start : nullptr);
  if (!rows.ok()) return rows.status().with_context("--precision: ");
  run.precision_rows_run = rows.take();
  std::printf("\nprecision\n%s", precision_table(run.precision_rows_run, run.precision.infer_batch).c_str());
  if (run.args.given("csv")) {
    RG_TRY(write_text_report(run.args.text("csv"), precision_csv(run.precision_rows_run))
                           .with_context("--csv "));
    std::printf("  csv             %s\n", run.args.text("csv").c_str());
  }
  return Status();
}

// report: the figures of the run, as --json has them, before the parts some runs add.
nlohmann::json train_json(const TrainRun& run, const CpuInfo& cpu) {
  const TrainOptions& options = run.options;
  Model& model = *run.model;
  const MemoryPlan& plan = run.plan;
  return {
      {"model", run.cfg.file.rfind("preset:", 0) == 0 ? run.cfg.file.substr(7) : run.cfg.file},
      {"epochs", options.epochs},
      {"epochs_run", run.history.size()},                // by this process
      {"epochs_done", run.trainer->epochs_done()},       // by the model: a resumed run's earlier ones too
      {"batch", options.batch},
      {"seed", options.seed},
      {"threads", run.pool->threads()},
      {"optimizer", optimizer_name(options.optimizer.kind)},
      {"lr", options.schedule.lr},
      {"schedule", schedule_name(options.schedule.kind)},
      {"data", data_source_name(options.data)},
      {"train_samples", run.train.size()},
      {"test_samples", run.test.samples},
      {"parameters", model.param_count()},
      {"test_accuracy", run.test.accuracy},
      {"test_loss", run.test.loss},
      {"test_mse", run.test.mse},
      {"test_psnr_db", run.test.psnr_db},
      {"train_seconds", run.trainer->train_seconds()},
      {"train_samples_per_s", run.samples_per_s},
      {"train_precision", precision_name(options)},
      {"isa", isa_name(active_isa())},
      {"denormals", denormals_name(denormals())},
      {"forward_flops_per_sample", model.forward_flops_per_sample()},
      {"train_flops_per_sample", model.train_flops_per_sample()},
      {"train_gflops", run.train_gflops},
      {"train_cpu_seconds", run.train_cpu_seconds},
      {"peak_rss_bytes", run.peak_rss},
      {"peak_tensor_bytes", run.peak_tensors},
      {"start_rss_bytes", run.start_rss},
      {"memory_plan",
       {{"budget_bytes", plan.budget},
        {"batch", plan.batch},
        {"micro_batch", plan.micro_batch},
        {"accumulation_steps", plan.accumulation_steps},
        {"streamed", plan.stream},
        {"predicted_peak_bytes", plan.predicted_peak()},
        {"unplanned_peak_bytes", plan.unplanned_peak}}},
      {"cpu", cpu.brand},
      {"device", run.train_device ? run.train_device->label() : "cpu"},
      {"device_peak_bytes", run.train_device ? run.train_device->memory().peak_bytes() : 0},
      {"history", nlohmann::json::array()},
  };
}

// report: --json.
Status write_train_json(const TrainRun& run, const CpuInfo& cpu) {
  nlohmann::json report = train_json(run, cpu);
  if (run.classifies) {
    report["classes"] = run.model->output_shape().numel();
    report["chance_accuracy"] = run.chance;  // the best constant answer's, on the test samples scored
  } else {
    report["test_mse_baseline"] = run.chance;  // answering every test sample with the training mean
  }
  for (const auto& record : run.history) report["history"].push_back(epoch_json(record));
  ocl::Device* device = run.train_device.get();
  if (device && run.args.given("profile-device")) report["device_profile"] = kernel_times_json(*device);
  if (device) {
    const ocl::Capabilities& probed = device->capabilities();
    report["device_probe"] = {{"test_bytes", probed.test_bytes},
                              {"test_seconds", probed.test_seconds},
                              {"source", probed.source},
                              {"shares_host_memory", device->info().shares_host_memory()}};
  }
  if (run.profile) report["layer_profile"] = layer_profile_json(run.profile_report);
  if (!run.precision_rows_run.empty()) report["precisions"] = precision_json(run.precision_rows_run);  // none: stopped early
  if (run.in_job) {
    Communicator& comm = *run.comm;
    report["ranks"] = {{"count", comm.size()},
                       {"on_this_host", comm.ranks_on_this_host()},
                       {"library", comm.library_version()},
                       {"gradient_format", gradient_wire_name(run.options.gradient_wire)},
                       {"gradient_bytes_per_step", gradient_wire_bytes(run.options.gradient_wire, run.model->param_count())}};
  }
  return write_json_report(run.json_path, report).with_context("--json ");
}

// The steps after the settings of a plain run: build, plan, run, report.
Status build_plan_run_report(TrainRun& run) {
  RG_TRY(read_run_options(run));
  RG_TRY(build_train_model(run));
  RG_TRY(load_train_data(run));
  RG_TRY(make_trainer(run));
  RG_TRY(plan_run_memory(run));
  RG_TRY(start_trainer_for(run));
  const CpuInfo cpu = detect_cpu();
  print_train_header(run, cpu);
  RG_TRY(train_and_score(run));
  RG_TRY(print_train_summary(run));
  RG_TRY(report_precisions(run));
  if (run.args.given("json") && run.writes_files) RG_TRY(write_train_json(run, cpu));
  return Status();
}

// The sweep's own options, refused without --sweep (they would do nothing).
Status check_sweep_only_options(const Args& args) {
  if (args.given("sweep")) return Status();
  for (const char* name : {"quick", "sweep-seeds", "sweep-out", "fit-weights"}) {
    if (args.given(name)) return Status::error("--" + std::string(name) + " belongs to --sweep; add --sweep or drop it");
  }
  return Status();
}

// `train` as this process's part of `comm`'s job (null: alone).
int train_in_job(const TrainCommand& command, int argc, char** argv, Communicator* comm, int64_t start_rss) {
  TrainRun run(command, comm, start_rss);
  Args& args = run.args;
  declare_train_options(args, command);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (std::string(command.name) == "precision") {
    if (Status s = check_sweep_only_options(args); !s.ok()) return fail(s.message());
  }
  if (*command.precisions != '\0') args.assume("precision", command.precisions);  // unless given
  if (Status s = apply_denormals_option(args); !s.ok()) return fail(s.message());
  run.in_job = comm != nullptr && comm->size() > 1;
  run.writes_files = !run.in_job || comm->is_root();
  if (run.in_job) {
    const std::string refused = refused_in_job(args);
    if (!refused.empty()) return fail(refused);
  }
  if (Status s = read_settings(run); !s.ok()) return fail(s.message());
  if (run.gan != TrainRun::Gan::no) {
    if (run.in_job) return fail("GAN training runs on one process: run it without mpirun");
    return run_gan_train(args, run.gan == TrainRun::Gan::cfg ? &run.cfg : nullptr, run.options);
  }
  if (Status s = build_plan_run_report(run); !s.ok()) return fail(s.message());
  return 0;
}

// precision --sweep, options that would clash with it: each seed is a whole run of its own, its
// rows against plain fp32 on the CPU.
Status check_sweep_options(const Args& args) {
  for (const char* name : {"precision", "seed", "resume", "checkpoint", "json", "csv", "samples", "stop-after",
                           "train-precision", "layer-precision", "device", "device-mem", "cpu-layers", "profile-device"}) {
    if (args.given(name)) return Status::error("--" + std::string(name) + " does not go with --sweep (it chooses the "
                                               "rows and seeds, compares them with fp32 on the CPU, and writes its "
                                               "report into --sweep-out)");
  }
  return Status();
}

// One seed of a sweep: the run the command line asks for, its --seed and --precision the sweep's.
Result<std::vector<PrecisionRow>> sweep_seed_rows(const TrainCommand& command, int argc, char** argv, int64_t start_rss,
                                                  const SweepPlan& plan, uint64_t seed) {
  TrainRun run(command, nullptr, start_rss);
  declare_train_options(run.args, command);
  RG_TRY(run.args.parse(argc, argv, 2));
  std::string list;
  for (const std::string& p : plan.precisions) list += (list.empty() ? "" : ",") + p;
  run.args.assume("precision", list);
  run.args.assume("seed", std::to_string(seed));
  run.writes_files = true;
  RG_TRY(read_settings(run));
  RG_TRY(build_plan_run_report(run));
  if (run.precision_rows_run.empty()) return Status::error("seed " + std::to_string(seed) + " made no rows");
  return run.precision_rows_run;
}

// precision --sweep: the plan from the model's cfg (read as a run reads it), its folder checked
// writable before any training, each seed's run, then report.html, report.md and sweep.json.
int run_sweep(const TrainCommand& command, int argc, char** argv, int64_t start_rss) {
  TrainRun probe(command, nullptr, start_rss);
  declare_train_options(probe.args, command);
  if (Status s = probe.args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (probe.args.help_requested()) {
    std::fputs(probe.args.help().c_str(), stdout);
    return 0;
  }
  if (Status s = check_sweep_options(probe.args); !s.ok()) return fail(s.message());
  if (Status s = apply_denormals_option(probe.args); !s.ok()) return fail(s.message());
  if (Status s = read_settings(probe); !s.ok()) return fail(s.message());
  if (probe.gan != TrainRun::Gan::no) return fail("--sweep compares a classifier's precisions, not a GAN's");
  auto plan = sweep_plan(probe.args, probe.cfg);
  if (!plan.ok()) return fail(plan.status().message());
  const std::string& out = plan.value().out;
  if (Status s = make_directories(out); !s.ok()) return fail("--sweep-out: " + s.message());
  for (const char* file : {"report.html", "report.md", "sweep.json"}) {
    if (Status s = check_writable_path(join_path(out, file), "sweep-out"); !s.ok()) return fail(s.message());
  }
  std::vector<SweepSeed> seeds;
  for (uint64_t seed : plan.value().seeds) {
    std::printf("\n== precision sweep: seed %llu (%zu configurations) ==\n", static_cast<unsigned long long>(seed),
                plan.value().precisions.size());
    auto rows = sweep_seed_rows(command, argc, argv, start_rss, plan.value(), seed);
    if (!rows.ok()) return fail(rows.status().message());
    seeds.push_back({seed, rows.take()});
  }
  std::unique_ptr<FitChoice> fit;
  std::vector<SweepSeed> fit_seeds;
  if (plan.value().fit_bytes > 0) {  // the fitted model from each seed, beside fp32 again
    auto chosen = fit_weights(plan.value(), seeds);
    if (!chosen.ok()) return fail(chosen.status().message());
    fit = std::make_unique<FitChoice>(chosen.take());
    SweepPlan fitted = plan.value();
    fitted.precisions = {"fp32", fit->row};
    for (uint64_t seed : fit->row == "fp32" ? std::vector<uint64_t>{} : plan.value().seeds) {
      std::printf("\n== precision sweep: the fitted model %s, seed %llu ==\n", fit->row.c_str(),
                  static_cast<unsigned long long>(seed));
      auto rows = sweep_seed_rows(command, argc, argv, start_rss, fitted, seed);
      if (!rows.ok()) return fail(rows.status().message());
      fit_seeds.push_back({seed, rows.take()});
    }
  }
  const std::string model = probe.cfg.file;
  const report::Document doc = sweep_report(plan.value(), seeds, model, fit.get(), fit_seeds);
  for (const auto& [file, text] : {std::pair<const char*, std::string>{"report.html", report::render_html(doc)},
                                   {"report.md", report::render_markdown(doc)},
                                   {"sweep.json", sweep_json(plan.value(), seeds, model, fit.get(), fit_seeds).dump(2) + "\n"}}) {
    if (Status s = write_text_report(join_path(out, file), text); !s.ok()) return fail(s.message());
  }
  std::printf("\nprecision sweep: %zu configurations x %zu seeds; report: %s\n", plan.value().precisions.size(),
              seeds.size(), join_path(out, "report.html").c_str());
  return 0;
}

int run_train_command(const TrainCommand& command, int argc, char** argv) {
  const int64_t start_rss = current_rss_bytes();  // the binary, its libraries, the C++ runtime
  bool sweep = false;
  for (int i = 2; i < argc; ++i) sweep |= std::string(argv[i]) == "--sweep" && std::string(command.name) == "precision";
  return run_in_job([&](Communicator* comm) {
    if (!sweep) return train_in_job(command, argc, argv, comm, start_rss);
    if (comm != nullptr && comm->size() > 1) return fail("--sweep runs on one process: run it without mpirun");
    return run_sweep(command, argc, argv, start_rss);
  });
}

}  // namespace

int run_train(int argc, char** argv) { return run_train_command(kTrain, argc, argv); }

int run_precision(int argc, char** argv) { return run_train_command(kPrecision, argc, argv); }

int fail(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "retrograd: %s\n", message.c_str());
  return 2;
}

}  // namespace rg
