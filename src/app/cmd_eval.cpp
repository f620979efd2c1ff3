// retrograd eval: a checkpoint scored on test data.
#include <algorithm>
#include <cstdio>

#include "app/args.h"
#include "app/commands.h"
#include "app/data_source.h"
#include "app/device_option.h"
#include "app/json_report.h"
#include "base/float_mode.h"
#include "data/chance.h"
#include "opencl/model/cl_int8_model.h"
#include "quant/int8_model.h"
#include "report/int8_profile_table.h"
#include "train/memory_plan.h"
#include "train/trainer.h"

namespace rg {

namespace {

// What eval scores: a classifier (2 or more outputs compared with class labels: accuracy) or
// an autoencoder (target = input: MSE and PSNR). A model with neither has no test figure of
// its own, and is refused by name rather than given an accuracy that means nothing.
Status check_scorable(const Model& model, const std::string& path) {
  if (model.loss() == LossKind::none) {
    return Status::error(path + ": the model has loss = none (a GAN's generator): it has no test figure of its own; "
                         "a GAN run scores its samples with a judge classifier after each epoch");
  }
  if (model.target() == TargetKind::input || model.output_shape().numel() >= 2) return Status();
  const std::string scores = "eval scores classifiers (test accuracy) and autoencoders (test MSE)";
  if (model.loss() == LossKind::bce_with_logits) {
    return Status::error(path + ": the model has one output, a logit (bce_with_logits): a GAN's discriminator, "
                         "telling real images from generated ones, with no classes to score; " + scores +
                         ". A discriminator is judged beside its generator: a GAN run prints D(x) on real and "
                         "D(G(z)) on generated images each epoch, and --json keeps them");
  }
  return Status::error(path + ": the model has one output (" + loss_name(model.loss()) + " against " +
                       target_name(model.target()) + "): neither a classifier, which needs 2 or more, nor an "
                       "autoencoder (target = input); " + scores);
}

// One `eval` run: what its steps read and fill, in the order run_eval calls them.
struct EvalRun {
  Args args{"eval", "--checkpoint FILE [options]",
            "Scores a checkpoint on the test split of its data: a classifier's test accuracy, an autoencoder's test "
            "MSE and PSNR. A GAN's networks are refused: a GAN run scores them itself."};
  std::string path;  // the checkpoint
  int thread_count = 0;
  int64_t calib_batches = 0;
  Checkpoint checkpoint;
  TrainOptions options;
  std::unique_ptr<ocl::Device> eval_device;
  std::unique_ptr<Model> model;
  DataSplit data;
  int64_t rows = 0;  // scored at a time
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Trainer> trainer;
  // --int8: the model quantized, and what runs it: the CPU's int8 engine or the device's int8 kernels.
  std::unique_ptr<Int8Model> int8;
  std::unique_ptr<Executor> int8_runner;
  Int8StageTimes int8_times;  // --profile's
  Executor* executor = nullptr;  // what scores: the trainer's (the model on the CPU or the device), or int8_runner
  EvalResult result;
};

void declare_eval_options(Args& args) {
  args.option("checkpoint", "FILE", "the checkpoint to score (required)");
  args.option("data", "DIR|synthetic", "the data folder", "the one the checkpoint was trained on");
  add_image_data_options(args);  // not in checkpoints: give the ones training had
  args.option("batch", "N", "evaluation batch size", "256");
  args.option("json", "FILE", "write the figures as JSON");
  args.flag("int8", "score the model quantized to int8 (post-training, percentile calibration on the first "
            "--calib-batches training batches; a QAT checkpoint: the ranges and weight bits it trained with), on "
            "the CPU's int8 engine or the --device's int8 kernels");
  args.option("calib-batches", "N", "--int8: training batches (of --batch) seen in calibration", "8");
  args.flag("profile", "--int8 on the CPU: time each stage of the int8 model (a table after the figures with each "
            "stage's share and int8 GOP/s; in --json: int8_profile)");
  add_device_options(args);
  add_common_options(args);
  add_denormals_option(args);
}

// The checkpoint, its settings and model (restored), and the device.
Status load_checkpoint_model(EvalRun& run) {
  Args& args = run.args;
  if (!args.given("checkpoint")) return Status::error("eval needs --checkpoint FILE");
  run.path = args.text("checkpoint");
  const std::string& path = run.path;
  if (args.given("json")) RG_TRY(check_writable_path(args.text("json"), "json"));
  RG_ASSIGN(run.thread_count, threads_option(args));
  RG_ASSIGN(const int64_t batch, args.integer("batch", 1, 1 << 20));
  RG_ASSIGN(run.calib_batches, args.integer("calib-batches", 1, 1 << 20));
  if (args.given("profile") && (!args.given("int8") || args.text("device") != "cpu")) {  // cpu: --device's CPU
    return Status::error("--profile times the stages of the CPU's int8 model: give it with --int8 and without an "
                         "OpenCL --device (train --profile times the f32 layers, train --profile-device a device's)");
  }
  RG_ASSIGN(run.checkpoint, read_checkpoint(path));
  TrainOptions& options = run.options;
  RG_TRY(options_from_checkpoint(run.checkpoint, path, &options));
  if (args.given("data")) options.data = args.text("data");
  options.batch = batch;
  RG_ASSIGN(run.eval_device, open_train_device(args, &options));
  if (run.eval_device && options.precision != TrainPrecision::fp32 && options.precision != TrainPrecision::fp16) {
    std::printf("note            trained in %s; the device scores the f32 model (it runs fp32 and fp16 only)\n",
                precision_name(options).c_str());
    options.precision = TrainPrecision::fp32;
  }
  if (args.given("int8") && (options.precision == TrainPrecision::fp16 || options.precision == TrainPrecision::bf16)) {
    // calibration runs the f32 model
    std::printf("note            trained in %s; --int8 quantizes the model from its f32 weights and activations\n",
                precision_name(options).c_str());
    options.precision = TrainPrecision::fp32;
  }
  const std::string stored_model = path + ": the stored model: ";
  auto cfg = parse_cfg(run.checkpoint.cfg_text, run.checkpoint.cfg_name);
  if (!cfg.ok()) return cfg.status().with_context(stored_model);
  auto built = Model::from_cfg(cfg.value());
  if (!built.ok()) return built.status().with_context(stored_model);
  run.model = built.take();
  RG_TRY(check_scorable(*run.model, path));
  RG_TRY(run.model->init(options.seed).with_context(stored_model));
  return restore_checkpoint(run.checkpoint, path, *run.model, nullptr);
}

// The data, and the trainer that scores it with buffers checked against the memory left.
Status load_data_and_trainer(EvalRun& run) {
  Args& args = run.args;
  TrainOptions& options = run.options;
  RG_ASSIGN(const DataSourceOptions source_options, data_source_options(args, run.model->input_shape()));
  auto data = load_data_source(options.data, options.seed, source_options);
  if (!data.ok()) return args.given("data") ? data.status() : note_source_from_checkpoint(data.status(), options.data, run.path);
  run.data = data.take();
  RG_TRY(check_labels_for(*run.model, run.data.test));
  // Buffers for at most the test set's samples, checked against the memory left before they are taken.
  run.rows = max_rows(options.batch, RunData{nullptr, nullptr, &run.data.test});
  options.micro_batch = run.rows;
  const AvailableMemory available = available_host_memory();
  const int64_t buffers = Trainer::prepared_bytes(*run.model, options, run.rows);
  if (available.bytes > 0 && buffers > available.bytes) {
    return Status::error("--batch " + std::to_string(options.batch) + ": scoring " + std::to_string(run.rows) +
                         " samples at a time needs " + format_bytes(buffers) + " of buffers, more than the " +
                         format_bytes(available.bytes) + " available (" + available.source + "); give a smaller --batch");
  }
  run.pool = std::make_unique<ThreadPool>(run.thread_count);
  run.trainer = std::make_unique<Trainer>(*run.model, *run.pool, options);
  RG_TRY(run.trainer->restore_algorithms(run.checkpoint, run.path));  // before prepare() measures
  RG_TRY(run.trainer->prepare());
  return run.trainer->restore_inference_state(run.checkpoint, run.path);
}

// The executor that scores: the trainer's; with --int8 the model quantized on the first
// training batches, on the CPU's int8 engine or the device's.
Status choose_executor(EvalRun& run) {
  run.executor = &run.trainer->executor();
  if (!run.args.given("int8")) return Status();
  const int64_t batch = run.options.batch;
  const Dataset& train = run.data.train;
  Int8Options int8_options;
  int8_options.calibration_batches = run.calib_batches;
  // A QAT run: exported with the activation ranges it learned, as the precision report's QAT rows.
  const FakeQuantizer* learned = run.trainer->fake_quantizer();
  if (learned != nullptr) {
    int8_options.ranges = learned->ranges();
    std::printf("note            trained as %s: --int8 takes the activation ranges it learned (no calibration)\n",
                precision_name(run.options).c_str());
  }
  Tensor calibration;
  if (learned == nullptr) {
    RG_ASSIGN(calibration, train.first_samples(std::min<int64_t>(train.size(), batch * run.calib_batches)));
  }
  // A w<B>a<A>-qat run trained through B-bit weights and A-bit values: exported on those grids.
  if (run.options.precision == TrainPrecision::int8_qat &&
      (run.options.qat_weight_bits != 8 || run.options.qat_activation_bits != 8)) {
    int8_options.weight_bits = run.options.qat_weight_bits;
    int8_options.activation_bits = run.options.qat_activation_bits;
    std::printf("note            trained as %s: --int8 exports it with its %d-bit weights and %d-bit activations\n",
                precision_name(run.options).c_str(), int8_options.weight_bits, int8_options.activation_bits);
  }
  auto quantized = Int8Model::quantize(*run.model, calibration, batch, int8_options, run.pool.get());
  if (!quantized.ok()) return quantized.status().with_context("--int8: ");
  run.int8 = quantized.take();
  if (!run.eval_device) {
    if (run.args.given("profile")) run.int8->set_stage_times(&run.int8_times);
    run.int8_runner = std::make_unique<Int8Executor>(*run.int8, run.pool.get());
  } else {
    auto on_device = ocl::ClInt8Model::create(*run.int8, *run.eval_device);
    if (!on_device.ok()) return on_device.status().with_context("--int8 on the device: ");
    run.int8_runner = on_device.take();
  }
  run.executor = run.int8_runner.get();
  return run.executor->reserve(run.rows);
}

// What was scored and how, the figures, and --json.
Status report_eval(EvalRun& run) {
  const EvalResult& result = run.result;
  const Checkpoint& checkpoint = run.checkpoint;
  Model& model = *run.model;
  std::printf("checkpoint      %s (%s, %s epochs)\n", run.path.c_str(), checkpoint.cfg_name.c_str(),
              checkpoint.settings.at("epochs_done").c_str());
  std::printf("data            %s: %lld test samples\n", run.data.test.name.c_str(),
              static_cast<long long>(result.samples));
  std::printf("run by          %s on %s\n", run.executor->description().c_str(), run.executor->place().c_str());
  const bool autoencoder = model.target() == TargetKind::input;
  auto chance = chance_quality(!autoencoder, run.data.train, run.data.test);
  if (!chance.ok()) return chance.status().with_context("the chance figure: ");
  if (autoencoder) {
    std::printf("test MSE        %.6f  PSNR %.2f dB (reconstructions of the test images; answering the mean: %.6f)\n",
                result.mse, result.psnr_db, chance.value());
  } else {
    std::printf("test accuracy   %.4f  (%lld classes; one class for all: %.4f)\n", result.accuracy,
                static_cast<long long>(model.output_shape().numel()), chance.value());
  }
  std::printf("test loss       %.6f\n", result.loss);
  std::printf("time            %.2fs, %.0f samples/s, %d threads\n", result.seconds,
              static_cast<double>(result.samples) / result.seconds, run.pool->threads());
  const bool profiled = run.args.given("profile");
  const Int8ProfileReport profile = profiled ? summarize_int8_profile(*run.int8, run.int8_times) : Int8ProfileReport();
  if (profiled) std::fputs(int8_profile_text(profile).c_str(), stdout);
  if (!run.args.given("json")) return Status();
  nlohmann::json report = {{"checkpoint", run.path},
                           {"model", checkpoint.cfg_name},
                           {"data", data_source_name(run.options.data)},
                           {"test_samples", result.samples},
                           {"test_loss", result.loss},
                           {"seconds", result.seconds},
                           {"precision", run.executor->storage()},
                           {"device", run.eval_device ? run.eval_device->label() : "cpu"},
                           {"threads", run.pool->threads()},
                           {"denormals", denormals_name(denormals())}};
  if (profiled) report["int8_profile"] = int8_profile_json(profile);
  if (autoencoder) {
    report["test_mse"] = result.mse;
    report["test_psnr_db"] = result.psnr_db;
    report["test_mse_baseline"] = chance.value();
  } else {
    report["test_accuracy"] = result.accuracy;
    report["classes"] = model.output_shape().numel();
    report["chance_accuracy"] = chance.value();
  }
  return write_json_report(run.args.text("json"), report).with_context("--json ");
}

// The steps of `eval` after its options: model, data, the executor (--int8's), scoring, report.
Status eval_steps(EvalRun& run) {
  RG_TRY(load_checkpoint_model(run));
  RG_TRY(load_data_and_trainer(run));
  RG_TRY(choose_executor(run));
  RG_ASSIGN(run.result, run.trainer->evaluate(run.data.test, run.executor));
  return report_eval(run);
}

}  // namespace

int run_eval(int argc, char** argv) {
  EvalRun run;
  Args& args = run.args;
  declare_eval_options(args);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (Status s = apply_denormals_option(args); !s.ok()) return fail(s.message());
  if (Status s = eval_steps(run); !s.ok()) return fail(s.message());
  return 0;
}

}  // namespace rg
