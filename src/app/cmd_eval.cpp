// retrograd eval: a checkpoint scored on test data.
#include <cstdio>

#include "app/args.h"
#include "app/commands.h"
#include "app/data_source.h"
#include "app/json_report.h"
#include "train/trainer.h"

namespace rg {

int run_eval(int argc, char** argv) {
  Args args("eval", "--checkpoint FILE [options]", "Scores a checkpoint on the test split of its data.");
  args.option("checkpoint", "FILE", "the checkpoint to score (required)");
  args.option("data", "DIR|synthetic", "the data folder", "the one the checkpoint was trained on");
  add_image_data_options(args);  // not in checkpoints: give the ones training had
  args.option("batch", "N", "evaluation batch size", "256");
  args.option("json", "FILE", "write the figures as JSON");
  add_common_options(args);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (!args.given("checkpoint")) return fail("eval needs --checkpoint FILE");
  const std::string path = args.text("checkpoint");
  if (args.given("json")) {
    if (Status s = check_writable_path(args.text("json"), "json"); !s.ok()) return fail(s.message());
  }
  auto threads = threads_option(args);
  if (!threads.ok()) return fail(threads.status().message());
  auto batch = args.integer("batch", 1, 1 << 20);
  if (!batch.ok()) return fail(batch.status().message());

  auto read = read_checkpoint(path);
  if (!read.ok()) return fail(read.status().message());
  const Checkpoint checkpoint = read.take();
  TrainOptions options;
  if (Status s = options_from_checkpoint(checkpoint, path, &options); !s.ok()) return fail(s.message());
  if (args.given("data")) options.data = args.text("data");
  options.batch = batch.value();

  auto cfg = parse_cfg(checkpoint.cfg_text, checkpoint.cfg_name);
  if (!cfg.ok()) return fail(cfg.status().with_context(path + ": the stored model: ").message());
  auto built = Model::from_cfg(cfg.value());
  if (!built.ok()) return fail(built.status().with_context(path + ": the stored model: ").message());
  std::unique_ptr<Model> model = built.take();
  if (model->loss() == LossKind::none) {
    return fail(path + ": the model has loss = none (a GAN's generator): it has no test figure of its own; "
                "a GAN run scores its samples with a judge classifier after each epoch");
  }
  if (Status s = model->init(options.seed); !s.ok()) return fail(s.message());
  if (Status s = restore_checkpoint(checkpoint, path, *model, nullptr); !s.ok()) return fail(s.message());

  auto source_options = data_source_options(args, model->input_shape());
  if (!source_options.ok()) return fail(source_options.status().message());
  auto data = load_data_source(options.data, options.seed, source_options.value());
  if (!data.ok()) return fail(data.status().message());
  ThreadPool pool(threads.value());
  Trainer trainer(*model, pool, options);
  if (Status s = trainer.prepare(); !s.ok()) return fail(s.message());
  auto scored = trainer.evaluate(data.value().test);
  if (!scored.ok()) return fail(scored.status().message());
  const EvalResult result = scored.value();

  std::printf("checkpoint      %s (%s, %s epochs)\n", path.c_str(), checkpoint.cfg_name.c_str(),
              checkpoint.settings.at("epochs_done").c_str());
  std::printf("data            %s: %lld test samples\n", data.value().test.name.c_str(),
              static_cast<long long>(result.samples));
  if (model->target() != TargetKind::input) std::printf("test accuracy   %.4f\n", result.accuracy);
  std::printf("test loss       %.6f\n", result.loss);
  std::printf("time            %.2fs, %.0f samples/s, %d threads\n", result.seconds,
              static_cast<double>(result.samples) / result.seconds, pool.threads());
  if (args.given("json")) {
    const nlohmann::json report = {{"checkpoint", path},
                                   {"model", checkpoint.cfg_name},
                                   {"data", data_source_name(options.data)},
                                   {"test_samples", result.samples},
                                   {"test_accuracy", result.accuracy},
                                   {"test_loss", result.loss},
                                   {"seconds", result.seconds},
                                   {"threads", pool.threads()}};
    if (Status s = write_json_report(args.text("json"), report); !s.ok()) return fail(s.message());
  }
  return 0;
}

}  // namespace rg
