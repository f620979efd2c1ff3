// retrograd eval: a checkpoint scored on test data.
#include <algorithm>
#include <cstdio>
#include <functional>

#include "app/args.h"
#include "app/commands.h"
#include "app/data_source.h"
#include "app/device_option.h"
#include "app/json_report.h"
#include "base/float_mode.h"
#include "data/chance.h"
#include "opencl/model/cl_int8_model.h"
#include "quant/int8_model.h"
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

}  // namespace

int run_eval(int argc, char** argv) {
  Args args("eval", "--checkpoint FILE [options]",
            "Scores a checkpoint on the test split of its data: a classifier's test accuracy, an autoencoder's test "
            "MSE and PSNR. A GAN's networks are refused: a GAN run scores them itself.");
  args.option("checkpoint", "FILE", "the checkpoint to score (required)");
  args.option("data", "DIR|synthetic", "the data folder", "the one the checkpoint was trained on");
  add_image_data_options(args);  // not in checkpoints: give the ones training had
  args.option("batch", "N", "evaluation batch size", "256");
  args.option("json", "FILE", "write the figures as JSON");
  args.flag("int8", "score the model quantized to int8 (post-training, percentile calibration on the first "
            "--calib-batches training batches), on the CPU's int8 engine or the --device's int8 kernels");
  args.option("calib-batches", "N", "--int8: training batches (of --batch) seen in calibration", "8");
  add_device_options(args);
  add_common_options(args);
  add_denormals_option(args);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (Status s = apply_denormals_option(args); !s.ok()) return fail(s.message());
  if (!args.given("checkpoint")) return fail("eval needs --checkpoint FILE");
  const std::string path = args.text("checkpoint");
  if (args.given("json")) {
    if (Status s = check_writable_path(args.text("json"), "json"); !s.ok()) return fail(s.message());
  }
  auto threads = threads_option(args);
  if (!threads.ok()) return fail(threads.status().message());
  auto batch = args.integer("batch", 1, 1 << 20);
  if (!batch.ok()) return fail(batch.status().message());
  auto calib_batches = args.integer("calib-batches", 1, 1 << 20);
  if (!calib_batches.ok()) return fail(calib_batches.status().message());

  auto read = read_checkpoint(path);
  if (!read.ok()) return fail(read.status().message());
  const Checkpoint checkpoint = read.take();
  TrainOptions options;
  if (Status s = options_from_checkpoint(checkpoint, path, &options); !s.ok()) return fail(s.message());
  if (args.given("data")) options.data = args.text("data");
  options.batch = batch.value();
  auto device = open_train_device(args, &options);
  if (!device.ok()) return fail(device.status().message());
  const std::unique_ptr<ocl::Device> eval_device = device.take();
  if (eval_device && options.precision != TrainPrecision::fp32 && options.precision != TrainPrecision::fp16) {
    std::printf("note            trained in %s; the device scores the f32 model (no fake int8 there)\n",
                train_precision_name(options.precision));
    options.precision = TrainPrecision::fp32;
  }

  auto cfg = parse_cfg(checkpoint.cfg_text, checkpoint.cfg_name);
  if (!cfg.ok()) return fail(cfg.status().with_context(path + ": the stored model: ").message());
  auto built = Model::from_cfg(cfg.value());
  if (!built.ok()) return fail(built.status().with_context(path + ": the stored model: ").message());
  std::unique_ptr<Model> model = built.take();
  if (Status s = check_scorable(*model, path); !s.ok()) return fail(s.message());
  if (Status s = model->init(options.seed); !s.ok()) return fail(s.with_context(path + ": the stored model: ").message());
  if (Status s = restore_checkpoint(checkpoint, path, *model, nullptr); !s.ok()) return fail(s.message());

  auto source_options = data_source_options(args, model->input_shape());
  if (!source_options.ok()) return fail(source_options.status().message());
  auto data = load_data_source(options.data, options.seed, source_options.value());
  if (!data.ok()) {
    return fail((args.given("data") ? data.status() : note_source_from_checkpoint(data.status(), options.data, path)).message());
  }
  if (Status s = check_labels_for(*model, data.value().test); !s.ok()) return fail(s.message());
  // Buffers for at most the test set's samples, checked against the memory left before they are taken.
  const int64_t rows = max_rows(options.batch, RunData{nullptr, nullptr, &data.value().test});
  options.micro_batch = rows;
  const AvailableMemory available = available_host_memory();
  const int64_t buffers = Trainer::prepared_bytes(*model, options, rows);
  if (available.bytes > 0 && buffers > available.bytes) {
    return fail("--batch " + std::to_string(options.batch) + ": scoring " + std::to_string(rows) + " samples at a " +
                "time needs " + format_bytes(buffers) + " of buffers, more than the " + format_bytes(available.bytes) +
                " available (" + available.source + "); give a smaller --batch");
  }
  ThreadPool pool(threads.value());
  Trainer trainer(*model, pool, options);
  if (Status s = trainer.prepare(); !s.ok()) return fail(s.message());
  // --int8: the model quantized, run by the CPU's int8 engine or the device's int8 kernels.
  std::unique_ptr<Int8Model> int8;
  std::unique_ptr<ocl::ClInt8Model> device_int8;
  std::function<Tensor(const Tensor&)> forward;
  Status forward_failed;
  if (args.given("int8")) {
    const Dataset& train = data.value().train;
    auto calibration = train.first_samples(std::min<int64_t>(train.size(), options.batch * calib_batches.value()));
    if (!calibration.ok()) return fail(calibration.status().message());
    Int8Options int8_options;
    int8_options.calibration_batches = calib_batches.value();
    auto quantized = Int8Model::quantize(*model, calibration.value(), options.batch, int8_options, &pool);
    if (!quantized.ok()) return fail(quantized.status().with_context("--int8: ").message());
    int8 = quantized.take();
    if (Status s = int8->reserve(rows); !s.ok()) return fail(s.message());
    if (eval_device) {
      auto on_device = ocl::ClInt8Model::create(*int8, *eval_device);
      if (!on_device.ok()) return fail(on_device.status().with_context("--int8 on the device: ").message());
      device_int8 = on_device.take();
      if (Status s = device_int8->reserve(rows); !s.ok()) return fail(s.message());
      forward = [&](const Tensor& x) {
        auto out = device_int8->forward(x);
        if (out.ok()) return out.take();
        forward_failed = out.status();
        return Tensor::zeros(model->output_shape().batched(x.shape()[0]), DType::f32, "failed output").take();
      };
    } else {
      forward = [&](const Tensor& x) { return int8->forward(x, &pool); };
    }
  }
  auto scored = trainer.evaluate(data.value().test, forward);
  if (!scored.ok()) return fail(scored.status().message());
  if (!forward_failed.ok()) return fail(forward_failed.message());
  const EvalResult result = scored.value();

  std::printf("checkpoint      %s (%s, %s epochs)\n", path.c_str(), checkpoint.cfg_name.c_str(),
              checkpoint.settings.at("epochs_done").c_str());
  std::printf("data            %s: %lld test samples\n", data.value().test.name.c_str(),
              static_cast<long long>(result.samples));
  std::string precision = "fp32";
  if (int8) {  // "int8 (7 of 8 layers; the rest f32)"
    int64_t in_int8 = 0, layers = 0;
    for (const LayerPrecision& p : int8->precisions()) {
      in_int8 += p.precision == "int8";
      layers += p.precision != "-";
    }
    precision = "int8 (" + std::to_string(in_int8) + " of " + std::to_string(layers) + " computing layers)";
  }
  std::printf("run by          %s on %s\n", precision.c_str(), eval_device ? eval_device->label().c_str() : "the CPU");
  const bool autoencoder = model->target() == TargetKind::input;
  auto chance = chance_quality(!autoencoder, data.value().train, data.value().test);
  if (!chance.ok()) return fail(chance.status().with_context("the chance figure: ").message());
  if (autoencoder) {
    std::printf("test MSE        %.6f  PSNR %.2f dB (reconstructions of the test images; answering the mean: %.6f)\n",
                result.mse, result.psnr_db, chance.value());
  } else {
    std::printf("test accuracy   %.4f  (%lld classes; one class for all: %.4f)\n", result.accuracy,
                static_cast<long long>(model->output_shape().numel()), chance.value());
  }
  std::printf("test loss       %.6f\n", result.loss);
  std::printf("time            %.2fs, %.0f samples/s, %d threads\n", result.seconds,
              static_cast<double>(result.samples) / result.seconds, pool.threads());
  if (args.given("json")) {
    nlohmann::json report = {{"checkpoint", path},
                             {"model", checkpoint.cfg_name},
                             {"data", data_source_name(options.data)},
                             {"test_samples", result.samples},
                             {"test_loss", result.loss},
                             {"seconds", result.seconds},
                             {"precision", int8 ? "int8" : "fp32"},
                             {"device", eval_device ? eval_device->label() : "cpu"},
                             {"threads", pool.threads()},
                             {"denormals", denormals_name(denormals())}};
    if (autoencoder) {
      report["test_mse"] = result.mse;
      report["test_psnr_db"] = result.psnr_db;
      report["test_mse_baseline"] = chance.value();
    } else {
      report["test_accuracy"] = result.accuracy;
      report["classes"] = model->output_shape().numel();
      report["chance_accuracy"] = chance.value();
    }
    if (Status s = write_json_report(args.text("json"), report); !s.ok()) {
      return fail(s.with_context("--json ").message());
    }
  }
  return 0;
}

}  // namespace rg
