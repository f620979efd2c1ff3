// retrograd train: options -> model, data, trainer; the progress, the summary and --json.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/args.h"
#include "app/commands.h"
#include "app/data_source.h"
#include "app/device_option.h"
#include "app/json_report.h"
#include "app/mpi_job.h"
#include "app/precision_report.h"
#include "app/train_gan.h"
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
#include "train/trainer.h"

namespace rg {

namespace {

// Options that a resumed run takes from its checkpoint and so may not be given again.
const char* kFromCheckpoint[] = {"model", "batch", "optimizer", "lr", "momentum", "nesterov", "weight-decay",
                                 "beta1", "beta2", "schedule", "step-epochs", "gamma", "lr-min", "val-split", "seed",
                                 "train-precision"};

// `train` and `precision`: one command, each with its own usage and --precision default.
struct TrainCommand {
  const char* name;
  const char* summary;
  const char* precisions;  // --precision when not given: the table's precisions; "" for none (no table)
};

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

void declare(Args& args, const TrainCommand& command) {
  std::string presets;
  for (const std::string& name : preset_names()) presets += (presets.empty() ? "" : ", ") + name;
  args.option("model", "NAME|FILE", "a preset (" + presets + ") or a model cfg file", "mlp");
  args.option("data", "DIR|synthetic",
              "a folder: IDX files (MNIST layout), CIFAR-10 binary batches or image class folders; or generated data",
              "/usr/share/datasets/fashion-mnist");
  add_image_data_options(args);
  args.option("epochs", "N", "epochs to train (in all, when resuming)", "5");
  args.option("batch", "N", "mini-batch size", "64");
  args.option("mem-budget", "SIZE",
              "host memory for tensors and data (64M, 1.5G): the batch is split into micro-batches and the data "
              "streamed from disk as needed to stay within it", "none");
  args.option("stream", "auto|yes|no", "read samples from disk batch by batch (IDX files) instead of into memory; "
              "auto: when --mem-budget needs it", "auto");
  args.option("train-precision", "fp32|fp16",
              "fp16: mixed precision (f16 activations and gradients, f32 math and master weights, loss scaling; on "
              "the CPU or an OpenCL --device)",
              "fp32");
  args.option("optimizer", "sgd|adam", "the update rule", "sgd");
  args.option("lr", "RATE", "learning rate", "0.01 for sgd, 0.001 for adam");
  args.option("momentum", "M", "sgd momentum", "0.9");
  args.flag("nesterov", "sgd with Nesterov momentum");
  args.option("weight-decay", "W", "L2 weight decay", "0");
  args.option("beta1", "B", "adam beta1", "0.9");
  args.option("beta2", "B", "adam beta2", "0.999");
  args.option("schedule", "constant|step|cosine", "learning-rate schedule", "constant");
  args.option("step-epochs", "N", "step schedule: decay every N epochs", "10");
  args.option("gamma", "G", "step schedule: decay factor", "0.1");
  args.option("lr-min", "RATE", "cosine schedule: final rate", "0");
  args.option("val-split", "F", "hold out this fraction of the training data for validation", "0");
  args.option("limit", "N", "train on the first N samples only (quick runs)", "all");
  args.option("test-limit", "N", "score on the first N test samples only (quick runs)", "all");
  args.option("stop-after", "N", "stop after epoch N (the schedule still spans --epochs); continue with --resume");
  args.option("checkpoint", "FILE",
              "write a checkpoint after each epoch, atomically (a link: at its target); an existing file only with "
              "--overwrite; a second run writing it is refused");
  args.flag("overwrite", "let --checkpoint (a GAN: the --out folder's networks) replace an earlier run's file");
  args.option("resume", "FILE",
              "continue a run from its checkpoint, on the data it read (--limit and the other data options come "
              "from it; other values or other samples are refused)");
  args.option("json", "FILE", "write every figure of the run as JSON");
  args.option("samples", "FILE.png", "autoencoders: write test inputs beside their reconstructions as a PNG grid");
  args.option("csv", "FILE", "--precision: write the precision table as CSV");
  declare_precision_options(args, *command.precisions != '\0' ? command.precisions : "none: no table");
  add_gan_options(args);
  add_device_options(args);
  add_mpi_options(args);
  add_common_options(args);
  add_denormals_option(args);
}

// --mem-budget (0: none) and --stream.
Result<std::pair<int64_t, StreamChoice>> memory_options(const Args& args) {
  int64_t budget = 0;
  if (args.given("mem-budget")) {
    auto parsed = parse_bytes(args.text("mem-budget"));
    if (!parsed.ok()) return parsed.status().with_context("--mem-budget: ");
    budget = parsed.value();
    if (budget <= 0) return Status::error("--mem-budget: a budget must be above 0 bytes");
  }
  auto stream = stream_choice_from_name(args.text("stream"));
  if (!stream.ok()) return stream.status().with_context("--stream: ");
  return std::make_pair(budget, stream.value());
}

Status options_from_args(const Args& args, TrainOptions* options) {
  RG_ASSIGN(options->epochs, args.integer("epochs", 1, 1000000));
  RG_ASSIGN(options->batch, args.integer("batch", 1, 1 << 20));
  RG_ASSIGN(options->seed, seed_option(args));
  auto precision = train_precision_from_name(args.text("train-precision"));
  if (!precision.ok()) return precision.status().with_context("--train-precision: ");
  options->precision = precision.value();
  auto kind = optimizer_from_name(args.text("optimizer"));
  if (!kind.ok()) return kind.status().with_context("--optimizer: ");
  options->optimizer.kind = kind.value();
  const bool adam = kind.value() == OptimizerKind::adam;
  options->schedule.lr = adam ? 0.001 : 0.01;
  if (args.given("lr")) {
    RG_ASSIGN(options->schedule.lr, args.number("lr", 0.0, 1e3));
  }
  RG_ASSIGN(options->optimizer.momentum, args.number("momentum", 0.0, 0.9999));
  options->optimizer.nesterov = args.given("nesterov");
  if (options->optimizer.nesterov && (adam || options->optimizer.momentum == 0)) {
    return Status::error("--nesterov needs --optimizer sgd with a momentum above 0");
  }
  RG_ASSIGN(options->optimizer.weight_decay, args.number("weight-decay", 0.0, 1.0));
  RG_ASSIGN(options->optimizer.beta1, args.number("beta1", 0.0, 0.9999999));
  RG_ASSIGN(options->optimizer.beta2, args.number("beta2", 0.0, 0.9999999));
  auto schedule = schedule_from_name(args.text("schedule"));
  if (!schedule.ok()) return schedule.status().with_context("--schedule: ");
  options->schedule.kind = schedule.value();
  RG_ASSIGN(options->schedule.step_epochs, args.integer("step-epochs", 1, 1000000));
  RG_ASSIGN(options->schedule.gamma, args.number("gamma", 0.0, 1.0));
  RG_ASSIGN(options->schedule.lr_min, args.number("lr-min", 0.0, 1e3));
  RG_ASSIGN(options->validation_split, args.number("val-split", 0.0, 0.9));
  return Status();
}

// A model cfg's [train] section: the settings it was tuned with, taken as if given on the
// command line unless they were. Its keys are option names.
Status apply_train_section(CfgDocument& cfg, Args& args) {
  static const char* const kKnown[] = {"optimizer", "lr",    "momentum", "nesterov", "weight-decay", "beta1",
                                       "beta2",     "batch", "epochs",   "schedule", "step-epochs",  "gamma", "lr-min"};
  int seen = 0;
  for (CfgSection& section : cfg.sections) {
    if (section.kind() != "train") continue;
    if (++seen > 1) return Status::error(section.where() + "[train] may appear only once");
    for (CfgEntry& entry : section.entries()) {
      bool known = false;
      for (const char* name : kKnown) known = known || entry.key == name;
      if (!known) {
        std::string list;
        for (const char* name : kKnown) list += std::string(list.empty() ? "" : ", ") + name;
        return Status::error(section.where(entry.key) + "not a training setting (known: " + list + ")");
      }
      if (entry.key == "nesterov") {
        if (entry.value != "true" && entry.value != "false") {
          return Status::error(section.where(entry.key) + "'" + entry.value + "' is not true or false");
        }
        if (entry.value == "true") args.assume("nesterov", "");
        continue;
      }
      args.assume(entry.key, entry.value);
    }
  }
  return Status();
}

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
// `train` as this process's part of `comm`'s job (null: alone).
int train_in_job(const TrainCommand& command, int argc, char** argv, Communicator* comm, int64_t start_rss) {
  Args args(command.name, "[options]", command.summary);
  declare(args, command);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (*command.precisions != '\0') args.assume("precision", command.precisions);  // unless given
  if (Status s = apply_denormals_option(args); !s.ok()) return fail(s.message());
  const bool in_job = comm != nullptr && comm->size() > 1;
  const bool writes_files = !in_job || comm->is_root();  // checkpoints, reports: the root's
  if (in_job) {
    const std::string refused = refused_in_job(args);
    if (!refused.empty()) return fail(refused);
  }

  // Settings, from the options or from the checkpoint being resumed.
  TrainOptions options;
  Checkpoint resumed;
  CfgDocument cfg;
  const bool resuming = args.given("resume");
  const std::string resume_path = args.text("resume");
  if (resuming) {
    for (const char* name : kFromCheckpoint) {
      if (args.given(name)) return fail("--" + std::string(name) + " comes from the checkpoint when resuming; drop it");
    }
    if (is_directory(resume_path)) {  // a GAN run's folder
      if (in_job) return fail("GAN training runs on one process: run it without mpirun");
      return run_gan_train(args, nullptr, options);
    }
    auto read = read_checkpoint_in_job(resume_path, comm);
    if (!read.ok()) return fail(read.status().message());
    resumed = read.take();
    if (Status s = options_from_checkpoint(resumed, resume_path, &options); !s.ok()) return fail(s.message());
    if (Status s = resume_data_options(resumed.settings, resume_path, args); !s.ok()) return fail(s.message());
    if (args.given("epochs")) {
      auto epochs = args.integer("epochs", 1, 1000000);
      if (!epochs.ok()) return fail(epochs.status().message());
      options.epochs = epochs.value();
    }
    auto parsed = parse_cfg(resumed.cfg_text, resumed.cfg_name);
    if (!parsed.ok()) return fail(parsed.status().with_context(resume_path + ": the stored model: ").message());
    cfg = parsed.take();
  } else {
    auto parsed = load_model_cfg(args.text("model"));
    if (!parsed.ok()) return fail(parsed.status().message());
    cfg = parsed.take();
    if (Status s = apply_train_section(cfg, args); !s.ok()) return fail(s.message());
    if (Status s = options_from_args(args, &options); !s.ok()) return fail(s.message());
  }
  const std::string resumed_data = options.data;  // the checkpoint's source when resuming
  if (args.given("data") || !resuming) options.data = args.given("data") ? args.text("data") : "";
  if (!cfg.sections.empty() && cfg.sections.front().kind() == "gan") {
    if (in_job) return fail("GAN training runs on one process: run it without mpirun");
    return run_gan_train(args, &cfg, options);
  }
  for (const char* name : {"out", "judge", "judge-epochs", "score-samples"}) {
    if (args.given(name)) return fail("--" + std::string(name) + " applies to GAN training only (--model dcgan)");
  }
  options.checkpoint_path = args.given("checkpoint") ? args.text("checkpoint") : (resuming ? resume_path : "");
  std::unique_ptr<OutputLock> checkpoint_lock;  // held until the run ends
  if (!options.checkpoint_path.empty() && writes_files) {
    auto claimed = claim_checkpoint(options.checkpoint_path, args.given("checkpoint") ? "checkpoint" : "resume",
                                    args.given("overwrite"), resuming ? resume_path : "", options.checkpoint_path);
    if (!claimed.ok()) return fail(claimed.status().message());
    checkpoint_lock = claimed.take();
  }
  const std::string samples_path = args.text("samples");
  if (args.given("samples") && writes_files) {
    if (Status s = check_png_name(samples_path); !s.ok()) return fail(s.with_context("--samples: ").message());
    if (Status s = check_writable_path(samples_path, "samples"); !s.ok()) return fail(s.message());
  }
  const std::string json_path = args.text("json");
  if (args.given("json") && writes_files) {
    if (Status s = check_writable_path(json_path, "json"); !s.ok()) return fail(s.message());
  }
  const bool precision_report = args.given("precision");
  PrecisionSettings precision;
  if (precision_report) {
    auto settings = precision_settings(args);
    if (!settings.ok()) return fail(settings.status().message());
    precision = settings.take();
    if (options.precision != TrainPrecision::fp32) {
      return fail("--precision compares each precision with the fp32 run and trains the others itself; drop "
                  "--train-precision");
    }
    if (args.given("csv")) {
      if (Status s = check_writable_path(args.text("csv"), "csv"); !s.ok()) return fail(s.message());
    }
    if (precision.qat_reruns_last_epochs() && precision.qat.epochs > options.epochs) {
      return fail("--qat-epochs " + std::to_string(precision.qat.epochs) + ": int8-qat reruns the run's last epochs, "
                  "and the run has " + std::to_string(options.epochs) + " (--epochs); lower --qat-epochs or use "
                  "--qat-mode extra");
    }
  }
  auto threads = threads_option(args);
  if (!threads.ok()) return fail(threads.status().message());
  int thread_count = threads.value();
  if (Status s = apply_mpi_options(args, comm, &options, &thread_count); !s.ok()) return fail(s.message());
  if (args.given("stop-after")) {
    auto stop = args.integer("stop-after", 1, 1000000);
    if (!stop.ok()) return fail(stop.status().message());
    options.stop_after = stop.value();
  }

  auto device = open_train_device(args, &options);
  if (!device.ok()) return fail(device.status().message());
  const std::unique_ptr<ocl::Device> train_device = device.take();
  if (train_device && precision_report) {
    return fail("--precision compares precisions on the CPU; drop --device (the OpenCL device trains fp32)");
  }

  // Model, data, trainer.
  const std::string stored_model = resuming ? resume_path + ": the stored model: " : "";  // errors in a checkpoint's cfg
  auto built = Model::from_cfg(cfg);
  if (!built.ok()) return fail(built.status().with_context(stored_model).message());
  std::unique_ptr<Model> model = built.take();
  if (args.given("samples") && model->target() != TargetKind::input) {
    return fail("--samples shows reconstructions: it needs a model trained on its input (target = input)");
  }
  auto memory = memory_options(args);
  if (!memory.ok()) return fail(memory.status().message());
  auto [budget, stream] = memory.value();
  const bool budget_given = budget > 0;
  const AvailableMemory available = available_host_memory();
  if (budget_given) {
    const std::string above = budget_above_available(budget, available);
    if (!above.empty()) std::fprintf(stderr, "retrograd: warning: %s\n", above.c_str());
  }
  if (Status s = model->init(options.seed); !s.ok()) return fail(s.with_context(stored_model).message());
  const AddressSpace space = address_space();
  if (budget == 0 && space.limit_bytes > 0) {
    auto limited = address_space_budget(space, thread_count);
    if (!limited.ok()) return fail(limited.status().message());
    budget = limited.value();
    std::printf("memory:    %s\n", describe_address_space_budget(space, budget).c_str());
  }
  const bool open_streamed = stream == StreamChoice::always || (stream == StreamChoice::automatic && budget > 0);
  auto data = load_training_data(args, options.data, options.seed, model->input_shape(), open_streamed);
  if (!data.ok()) {
    const bool stored = resuming && !args.given("data");
    return fail((stored ? note_source_from_checkpoint(data.status(), options.data, resume_path) : data.status()).message());
  }
  DataSplit split = data.take();
  if (resuming) {
    if (Status s = check_resumed_data(resumed.settings, resume_path, options.data, resumed_data, split); !s.ok()) {
      return fail(s.message());
    }
  }
  record_data_options(args, &options.data_settings);
  options.data_settings[kDataIdentitySetting] = data_identity(split);
  Dataset train = split.train;
  Dataset validation;
  if (options.validation_split > 0) {
    auto held = split_validation(train, options.validation_split, options.seed);
    if (!held.ok()) return fail(held.status().with_context("--val-split: ").message());
    train = held.value().train;
    validation = held.value().test;
  }
  for (const Dataset* d : {&train, &validation, &split.test}) {  // before the first step, not after training
    if (Status s = check_labels_for(*model, *d); !s.ok()) return fail(s.message());
  }
  auto planned = plan_memory(*model, options, RunData{&train, &validation, &split.test}, budget, stream);
  if (!planned.ok()) return fail(planned.status().message());
  const MemoryPlan plan = planned.value();
  if (!budget_given) {
    if (Status s = check_plan_fits(*model, options, RunData{&train, &validation, &split.test}, stream, plan, available);
        !s.ok()) {
      return fail(s.message());
    }
  }
  host_memory().set_budget(budget);
  if (!plan.stream) {  // read streamed samples in (a budget that allows it), the labels shared
    for (Dataset* d : {&train, &validation, &split.test}) {
      auto copy = d->in_memory_copy();
      if (!copy.ok()) return fail(copy.status().message());
      *d = copy.take();
    }
  }
  options.micro_batch = plan.micro_batch;
  options.read_ahead = plan.stream;

  ThreadPool pool(thread_count);
  options.log = stdout;
  options.live_progress = is_terminal(stdout);
  // int8-qat rerunning the last epochs starts from the run's state before them, kept here.
  const int64_t qat_snapshot_epoch = precision.qat_reruns_last_epochs() ? options.epochs - precision.qat.epochs : -1;
  Checkpoint qat_start;
  Trainer* running = nullptr;
  if (qat_snapshot_epoch >= 0) {
    options.after_epoch = [&](int64_t epochs_done) -> Status {
      if (epochs_done != qat_snapshot_epoch) return Status();
      RG_ASSIGN(qat_start, running->snapshot());
      return Status();
    };
  }
  Trainer trainer(*model, pool, options);
  running = &trainer;
  if (Status s = trainer.prepare(); !s.ok()) return fail(s.message());
  if (resuming) {
    if (Status s = trainer.resume_from(resumed, resume_path); !s.ok()) return fail(s.message());
    resumed.tensors.clear();  // restored: the plan counted them until here (MemoryPlan::checkpoint)
    if (trainer.epochs_done() >= options.epochs) {
      return fail(resume_path + " has " + std::to_string(trainer.epochs_done()) +
                  " epochs done already; pass --epochs with more to continue");
    }
  }
  if (qat_snapshot_epoch >= 0 && trainer.epochs_done() > qat_snapshot_epoch) {
    return fail("int8-qat reruns the run's last " + std::to_string(precision.qat.epochs) + " epochs from the state after "
                "epoch " + std::to_string(qat_snapshot_epoch) + ", and this run resumes after epoch " +
                std::to_string(trainer.epochs_done()) + "; use --qat-mode extra, or lower --qat-epochs");
  }
  if (qat_snapshot_epoch >= 0 && trainer.epochs_done() == qat_snapshot_epoch) {
    auto snapshot = trainer.snapshot();
    if (!snapshot.ok()) return fail(snapshot.status().message());
    qat_start = snapshot.take();
  }

  const CpuInfo cpu = detect_cpu();
  std::printf("retrograd train: model %s, %lld parameters\n%s", cfg.file.c_str(),
              static_cast<long long>(model->param_count()), model->summary().c_str());
  std::printf("data:      %s: %lld training samples%s, %lld test samples, %d classes\n", train.name.c_str(),
              static_cast<long long>(train.size()),
              validation.size() > 0 ? (", " + std::to_string(validation.size()) + " for validation").c_str() : "",
              static_cast<long long>(split.test.size()), train.num_classes);
  std::printf("training:  %s, batch %lld, %s, %s, %s schedule, seed %llu, %d threads on %s\n",
              train_precision_name(options.precision), static_cast<long long>(options.batch), describe(options.optimizer).c_str(),
              options.schedule.describe().c_str(), schedule_name(options.schedule.kind),
              static_cast<unsigned long long>(options.seed), pool.threads(), cpu.brand.empty() ? "this CPU" : cpu.brand.c_str());
  std::printf("memory:    %s\n", describe_plan(plan).c_str());
  if (train_device) {
    std::printf("device:    %s, micro-batches of %lld, loss on the %s\n", train_device->label().c_str(),
                static_cast<long long>(trainer.micro_batch()), trainer.options().loss_on_host ? "CPU" : "device");
  }
  if (in_job) {
    std::printf("ranks:     %d (%s), %d on this host, each training its share of every batch of %lld; gradients "
                "summed in %s\n", comm->size(), comm->library_version().c_str(), comm->ranks_on_this_host(),
                static_cast<long long>(options.batch), gradient_wire_name(options.gradient_wire));
  }
  if (resuming) {
    std::printf("resuming:  %s after epoch %lld\n", resume_path.c_str(), static_cast<long long>(trainer.epochs_done()));
    if (data_source_name(options.data) != data_source_name(resumed_data)) {
      std::printf("           its run read %s: the same samples (%s)\n", data_source_name(resumed_data).c_str(),
                  options.data_settings[kDataIdentitySetting].c_str());
    }
  }
  std::fflush(stdout);

  const double cpu_seconds_before = process_cpu_seconds();
  auto fitted = trainer.fit(train, validation.size() > 0 ? &validation : nullptr);
  const double train_cpu_seconds = process_cpu_seconds() - cpu_seconds_before;  // every thread, while training
  if (!fitted.ok()) return fail(fitted.status().message());
  if (train_device) train_device->set_profiling(false);  // the profile covers training, not the test
  auto scored = trainer.evaluate(split.test);
  if (!scored.ok()) return fail(scored.status().message());
  const EvalResult test = scored.value();
  // What learning nothing scores on the same test samples: the figure's yardstick (once, here).
  const bool classifies = model->target() != TargetKind::input;
  auto chance_figure = chance_quality(classifies, train, split.test);
  if (!chance_figure.ok()) return fail(chance_figure.status().with_context("the chance figure: ").message());
  const double chance = chance_figure.value();
  const double samples_per_s = trainer.train_seconds() > 0 ? static_cast<double>(trainer.samples_trained()) / trainer.train_seconds() : 0;
  const int64_t peak_rss = peak_rss_bytes();
  const int64_t peak_tensors = host_memory().peak_bytes();
  // The products' flops (Model::train_flops_per_sample) at the speed measured; a GAN is not here.
  const double train_gflops = samples_per_s * static_cast<double>(model->train_flops_per_sample()) / 1e9;
  const double cpu_busy = trainer.train_seconds() > 0 ? train_cpu_seconds / trainer.train_seconds() : 0;

  std::printf("\nsummary\n");
  if (classifies) {
    std::printf("  test accuracy   %.4f  (loss %.4f, %lld samples, %.2fs; one class for all: %.4f)\n", test.accuracy,
                test.loss, static_cast<long long>(test.samples), test.seconds, chance);
  } else {
    std::printf("  test MSE        %.6f  PSNR %.2f dB  (loss %.6f, %lld samples, %.2fs; answering the mean: %.6f)\n",
                test.mse, test.psnr_db, test.loss, static_cast<long long>(test.samples), test.seconds, chance);
  }
  std::printf("  training        %lld epochs in %.1fs, %.0f samples/s, %.2f GFLOP/s, %d threads (%.2f cores busy)\n",
              static_cast<long long>(fitted.value().size()), trainer.train_seconds(), samples_per_s, train_gflops,
              pool.threads(), cpu_busy);
  std::printf("  memory          peak RSS %s: tensors and data %s at their peak (predicted %s%s), the rest the "
              "process's own (%s resident at start: code and libraries; then thread stacks, heap bookkeeping, "
              "GEMM packing)\n",
              format_bytes(peak_rss).c_str(), format_bytes(peak_tensors).c_str(),
              format_bytes(plan.predicted_peak()).c_str(), budget > 0 ? (", budget " + format_bytes(budget)).c_str() : "",
              format_bytes(start_rss).c_str());
  if (train_device) {
    std::printf("  device          %s\n",
                describe_device_use(*train_device, trainer.device_model()->transfers()).c_str());
    std::printf("  device probe    %s\n", ocl::describe_test_cost(train_device->capabilities()).c_str());
    if (args.given("profile-device")) std::printf("device time by kernel\n%s", describe_kernel_times(*train_device).c_str());
  }
  if (in_job) std::printf("  ranks           %s\n", describe_job(*comm, options, model->param_count(), fitted.value()).c_str());
  if (!options.checkpoint_path.empty()) std::printf("  checkpoint      %s\n", options.checkpoint_path.c_str());
  if (args.given("samples") && writes_files) {
    if (train_device) {  // the trained weights are on the host now; its buffers were not reserved
      if (Status s = model->reserve(options.batch); !s.ok()) return fail(s.with_context("--samples: ").message());
    }
    if (Status s = write_reconstruction_samples(samples_path, *model, pool, split.test, options.batch); !s.ok()) {
      return fail(s.with_context("--samples: ").message());
    }
    std::printf("  samples         %s (inputs above their reconstructions)\n", samples_path.c_str());
  }

  std::vector<PrecisionRow> precision_rows_run;
  if (precision_report) {
    auto rows = precision_rows(*model, options, pool, train, split.test, samples_per_s, precision,
                               qat_snapshot_epoch >= 0 ? &qat_start : nullptr);
    if (!rows.ok()) return fail(rows.status().with_context("--precision: ").message());
    precision_rows_run = rows.take();
    std::printf("\nprecision\n%s", precision_table(precision_rows_run, precision.infer_batch).c_str());
    if (args.given("csv")) {
      if (Status s = write_text_report(args.text("csv"), precision_csv(precision_rows_run)); !s.ok()) {
        return fail(s.with_context("--csv ").message());
      }
      std::printf("  csv             %s\n", args.text("csv").c_str());
    }
  }

  if (args.given("json") && writes_files) {
    nlohmann::json report = {
        {"model", cfg.file.rfind("preset:", 0) == 0 ? cfg.file.substr(7) : cfg.file},
        {"epochs", options.epochs},
        {"epochs_run", fitted.value().size()},
        {"batch", options.batch},
        {"seed", options.seed},
        {"threads", pool.threads()},
        {"optimizer", optimizer_name(options.optimizer.kind)},
        {"lr", options.schedule.lr},
        {"schedule", schedule_name(options.schedule.kind)},
        {"data", data_source_name(options.data)},
        {"train_samples", train.size()},
        {"test_samples", test.samples},
        {"parameters", model->param_count()},
        {"test_accuracy", test.accuracy},
        {"test_loss", test.loss},
        {"test_mse", test.mse},
        {"test_psnr_db", test.psnr_db},
        {"train_seconds", trainer.train_seconds()},
        {"train_samples_per_s", samples_per_s},
        {"train_precision", train_precision_name(options.precision)},
        {"isa", isa_name(active_isa())},
        {"denormals", denormals_name(denormals())},
        {"forward_flops_per_sample", model->forward_flops_per_sample()},
        {"train_flops_per_sample", model->train_flops_per_sample()},
        {"train_gflops", train_gflops},
        {"train_cpu_seconds", train_cpu_seconds},
        {"peak_rss_bytes", peak_rss},
        {"peak_tensor_bytes", peak_tensors},
        {"start_rss_bytes", start_rss},
        {"memory_plan",
         {{"budget_bytes", plan.budget},
          {"batch", plan.batch},
          {"micro_batch", plan.micro_batch},
          {"accumulation_steps", plan.accumulation_steps},
          {"streamed", plan.stream},
          {"predicted_peak_bytes", plan.predicted_peak()},
          {"unplanned_peak_bytes", plan.unplanned_peak}}},
        {"cpu", cpu.brand},
        {"device", train_device ? train_device->label() : "cpu"},
        {"device_peak_bytes", train_device ? train_device->memory().peak_bytes() : 0},
        {"history", nlohmann::json::array()},
    };
    if (classifies) {
      report["classes"] = model->output_shape().numel();
      report["chance_accuracy"] = chance;  // the best constant answer's, on the test samples scored
    } else {
      report["test_mse_baseline"] = chance;  // answering every test sample with the training mean
    }
    for (const auto& record : fitted.value()) report["history"].push_back(epoch_json(record));
    if (train_device && args.given("profile-device")) report["device_profile"] = kernel_times_json(*train_device);
    if (train_device) {
      const ocl::Capabilities& probed = train_device->capabilities();
      report["device_probe"] = {{"test_bytes", probed.test_bytes},
                                {"test_seconds", probed.test_seconds},
                                {"source", probed.source},
                                {"shares_host_memory", train_device->info().shares_host_memory()}};
    }
    if (precision_report) report["precisions"] = precision_json(precision_rows_run);
    if (in_job) {
      report["ranks"] = {{"count", comm->size()},
                         {"on_this_host", comm->ranks_on_this_host()},
                         {"library", comm->library_version()},
                         {"gradient_format", gradient_wire_name(options.gradient_wire)},
                         {"gradient_bytes_per_step", gradient_wire_bytes(options.gradient_wire, model->param_count())}};
    }
    if (Status s = write_json_report(json_path, report); !s.ok()) return fail(s.with_context("--json ").message());
  }
  return 0;
}

int run_train_command(const TrainCommand& command, int argc, char** argv) {
  const int64_t start_rss = current_rss_bytes();  // the binary, its libraries, the C++ runtime
  return run_in_job([&](Communicator* comm) { return train_in_job(command, argc, argv, comm, start_rss); });
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
