// retrograd train for GANs (see train_gan.h): the pair from the [gan] section or the run's
// folder, the judge classifier, and per epoch the losses, a sample grid and the score.
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/data_source.h"
#include "app/device_option.h"
#include "app/json_report.h"
#include "app/train_gan.h"
#include "base/files.h"
#include "base/float_mode.h"
#include "cpu/isa.h"
#include "report/image_grid.h"
#include "report/process_stats.h"
#include "report/progress.h"
#include "report/roofline.h"
#include "train/classifier_score.h"
#include "train/gan.h"

namespace rg {

namespace {

constexpr const char* kGeneratorFile = "generator.ckpt";
constexpr const char* kDiscriminatorFile = "discriminator.ckpt";
constexpr const char* kJudgeFile = "judge.ckpt";
constexpr int64_t kGridSamples = 64, kGridColumns = 8;
constexpr int kScoreSplits = 10;
// D's weights are drawn from another seed than G's: Model::init gives layer i the stream
// 1000 + i, so one seed would give both networks' first layers related draws.
constexpr uint64_t kDiscriminatorSeedOffset = 0x9E3779B97F4A7C15ull;

// The options of `train` that a GAN run has no use for.
const char* kNotForGans[] = {"val-split", "samples", "checkpoint", "nesterov", "step-epochs", "gamma", "lr-min"};

Result<std::unique_ptr<Model>> model_from(const CfgDocument& cfg, const std::string& role) {
  auto model = Model::from_cfg(cfg);
  if (!model.ok()) return model.status().with_context("the " + role + ": ");
  return model;
}

Result<std::unique_ptr<Model>> model_from_checkpoint(const Checkpoint& ck, const std::string& path,
                                                     const std::string& role) {
  auto cfg = parse_cfg(ck.cfg_text, ck.cfg_name);
  if (!cfg.ok()) return cfg.status().with_context(path + ": the stored " + role + ": ");
  auto model = Model::from_cfg(cfg.value());
  if (!model.ok()) return model.status().with_context(path + ": the stored " + role + ": ");
  return model;
}

// The judge: --judge FILE, else the run folder's judge.ckpt, else a `cnn` trained now on the
// same data and saved there.
Result<std::unique_ptr<Model>> get_judge(const Args& args, const std::string& out_dir, const DataSplit& data,
                                         const TrainOptions& gan_options, ThreadPool& pool) {
  const bool given = args.given("judge");
  const std::string path = given ? args.text("judge") : join_path(out_dir, kJudgeFile);
  if (given || is_regular_file(path)) {
    RG_ASSIGN(const Checkpoint ck, read_checkpoint(path));
    RG_ASSIGN(std::unique_ptr<Model> judge, model_from_checkpoint(ck, path, "judge"));
    RG_TRY(judge->init(gan_options.seed));
    RG_TRY(restore_checkpoint(ck, path, *judge, nullptr));
    std::printf("judge:     %s (%s)\n", path.c_str(), ck.cfg_name.c_str());
    return judge;
  }
  RG_ASSIGN(const int64_t epochs, args.integer("judge-epochs", 1, 1000));
  RG_ASSIGN(const CfgDocument cfg, load_model_cfg("cnn"));
  RG_ASSIGN(std::unique_ptr<Model> judge, model_from(cfg, "judge"));
  RG_TRY(judge->init(gan_options.seed));
  TrainOptions options;
  options.epochs = epochs;
  options.batch = 64;
  options.seed = gan_options.seed;
  options.data = gan_options.data;
  options.checkpoint_path = path;
  options.log = stdout;
  options.live_progress = gan_options.live_progress;
  options.device = gan_options.device;  // the judge trains where the GAN does
  std::printf("judge:     training the cnn preset for %lld epochs on %s to score the samples (saved as %s)\n",
              static_cast<long long>(epochs), data.train.name.c_str(), path.c_str());
  std::fflush(stdout);
  RG_TRY(check_labels_for(*judge, data.test));  // before training, as fit checks the training labels
  Trainer trainer(*judge, pool, options);
  RG_TRY(trainer.prepare());
  auto fitted = trainer.fit(data.train, nullptr);
  if (!fitted.ok()) return fitted.status().with_context("training the judge: ");
  RG_ASSIGN(const EvalResult test, trainer.evaluate(data.test));
  std::printf("judge:     test accuracy %.4f\n", test.accuracy);
  return judge;
}

std::string class_name(const Dataset& data, size_t c) {
  return c < data.class_names.size() ? data.class_names[c] : std::to_string(c);
}

void print_score(const char* what, const ClassifierScore& s, const Dataset& data) {
  std::printf("  %-9s %.2f +- %.2f over %d splits of %lld, top-class confidence %.3f, classes holding >= 3%%: %d of %zu\n",
              what, s.score, s.score_std, kScoreSplits, static_cast<long long>(s.samples / kScoreSplits), s.confidence,
              s.classes_with_share(0.03), s.shares.size());
  std::printf("  %-9s", "shares");
  for (size_t c = 0; c < s.shares.size(); ++c) std::printf(" %s %.1f%%", class_name(data, c).c_str(), 100 * s.shares[c]);
  std::printf("\n");
}

// The judge's score of G's samples for the score noise, in `scored` [samples, ...].
Result<ClassifierScore> score_generator(GanTrainer& trainer, Model& judge, ThreadPool& pool, const Tensor& scored) {
  RG_TRY(trainer.generate(kScoreNoiseStream, scored.shape()[0], scored));
  auto score = score_with_classifier(judge, pool, scored, trainer.options().batch, kScoreSplits);
  if (!score.ok()) return score.status().with_context("the judge: ");
  return score;
}

nlohmann::json score_json(const ClassifierScore& s) {
  return {{"score", s.score}, {"score_std", s.score_std}, {"confidence", s.confidence},
          {"classes_over_3_percent", s.classes_with_share(0.03)}, {"class_shares", s.shares}};
}

}  // namespace

void add_gan_options(Args& args) {
  args.option("out", "DIR", "GANs: the run's folder (sample grids, both networks, the judge)", "<model>-run");
  args.option("judge", "FILE", "GANs: a classifier checkpoint that scores the samples",
              "DIR/judge.ckpt, trained on the data first if missing");
  args.option("judge-epochs", "N", "GANs: epochs to train the judge (the cnn preset) when there is none", "3");
  args.option("score-samples", "N", "GANs: samples scored by the judge after each epoch (0: none)", "10000");
}

int run_gan_train(Args& args, const CfgDocument* gan_cfg, TrainOptions options) {
  for (const char* name : kNotForGans) {
    if (args.given(name)) return fail("--" + std::string(name) + " does not apply to GAN training");
  }
  const bool resuming = gan_cfg == nullptr;
  std::string out_dir;
  GanPair pair;
  Checkpoint g_ck, d_ck;
  std::string resumed_data;  // the checkpoint's source when resuming
  if (resuming) {
    if (args.given("out")) return fail("--out: a resumed GAN run stays in its folder (--resume DIR)");
    out_dir = args.text("resume");
    const std::string g_path = join_path(out_dir, kGeneratorFile), d_path = join_path(out_dir, kDiscriminatorFile);
    auto g_read = read_checkpoint(g_path);
    if (!g_read.ok()) return fail(g_read.status().with_context("--resume: ").message());
    auto d_read = read_checkpoint(d_path);
    if (!d_read.ok()) return fail(d_read.status().with_context("--resume: ").message());
    g_ck = g_read.take();
    d_ck = d_read.take();
    if (Status s = options_from_checkpoint(g_ck, g_path, &options); !s.ok()) return fail(s.message());
    if (Status s = resume_data_options(g_ck.settings, g_path, args); !s.ok()) return fail(s.message());
    resumed_data = options.data;
    if (args.given("data")) options.data = args.text("data");
    if (args.given("epochs")) {
      auto epochs = args.integer("epochs", 1, 1000000);
      if (!epochs.ok()) return fail(epochs.status().message());
      options.epochs = epochs.value();
    }
    auto g = model_from_checkpoint(g_ck, g_path, "generator");
    if (!g.ok()) return fail(g.status().message());
    auto d = model_from_checkpoint(d_ck, d_path, "discriminator");
    if (!d.ok()) return fail(d.status().message());
    pair.generator = g.take();
    pair.discriminator = d.take();
  } else {
    if (options.schedule.kind != ScheduleKind::constant) return fail("--schedule: GAN training uses a constant rate");
    std::string name = gan_cfg->file.rfind("preset:", 0) == 0 ? gan_cfg->file.substr(7) : last_path_component(gan_cfg->file);
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".cfg") == 0) name.resize(name.size() - 4);
    out_dir = args.given("out") ? args.text("out") : name + "-run";
    auto built = gan_pair_from_cfg(*gan_cfg);
    if (!built.ok()) return fail(built.status().message());
    pair = built.take();
  }
  if (Status s = make_directories(out_dir); !s.ok()) return fail(s.with_context("--out: ").message());
  std::vector<std::unique_ptr<OutputLock>> network_locks;  // both checkpoints, held until the run ends
  for (const char* file : {kGeneratorFile, kDiscriminatorFile}) {
    const std::string path = join_path(out_dir, file);
    auto claimed = claim_checkpoint(path, resuming ? "resume" : "out", args.given("overwrite"), resuming ? path : "",
                                    out_dir);
    if (!claimed.ok()) return fail(claimed.status().message());
    network_locks.push_back(claimed.take());
  }
  const std::string json_path = args.text("json");
  if (args.given("json")) {
    if (Status s = check_writable_path(json_path, "json"); !s.ok()) return fail(s.message());
  }
  auto threads = threads_option(args);
  if (!threads.ok()) return fail(threads.status().message());
  auto score_samples = args.integer("score-samples", 0, 1000000);
  if (!score_samples.ok()) return fail(score_samples.status().message());
  if (score_samples.value() > 0 && score_samples.value() < kScoreSplits) {
    return fail("--score-samples: 0 (no score) or at least " + std::to_string(kScoreSplits));
  }
  if (args.given("stop-after")) {
    auto stop = args.integer("stop-after", 1, 1000000);
    if (!stop.ok()) return fail(stop.status().message());
    options.stop_after = stop.value();
  }

  Model& g = *pair.generator;
  Model& d = *pair.discriminator;
  if (Status s = g.init(options.seed); !s.ok()) return fail(s.message());
  if (Status s = d.init(options.seed + kDiscriminatorSeedOffset); !s.ok()) return fail(s.message());
  auto data = load_training_data(args, options.data, options.seed, d.input_shape());
  if (!data.ok()) {
    const bool stored = resuming && !args.given("data");
    return fail((stored ? note_source_from_checkpoint(data.status(), options.data, join_path(out_dir, kGeneratorFile))
                        : data.status()).message());
  }
  DataSplit split = data.take();
  if (resuming) {
    const std::string g_path = join_path(out_dir, kGeneratorFile);
    if (Status s = check_resumed_data(g_ck.settings, g_path, options.data, resumed_data, split); !s.ok()) {
      return fail(s.message());
    }
  }
  record_data_options(args, &options.data_settings);
  options.data_settings[kDataIdentitySetting] = data_identity(split);
  Dataset train = split.train;

  auto device = open_train_device(args, &options);
  if (!device.ok()) return fail(device.status().message());
  const std::unique_ptr<ocl::Device> train_device = device.take();
  if (train_device && !options.host_layers.empty()) return fail("--cpu-layers applies to classifier and autoencoder training");

  ThreadPool pool(threads.value());
  options.log = stdout;
  options.live_progress = is_terminal(stdout);
  GanTrainer trainer(g, d, pool, options);
  if (Status s = trainer.prepare(train.size()); !s.ok()) return fail(s.message());
  if (resuming) {
    const Status s = trainer.resume_from(g_ck, join_path(out_dir, kGeneratorFile), d_ck,
                                         join_path(out_dir, kDiscriminatorFile));
    if (!s.ok()) return fail(s.message());
    if (trainer.epochs_done() >= options.epochs) {
      return fail(out_dir + " has " + std::to_string(trainer.epochs_done()) +
                  " epochs done already; pass --epochs with more to continue");
    }
  }

  std::printf("retrograd train: GAN, generator %s (%lld parameters), discriminator %s (%lld parameters)\n",
              g.cfg().file.c_str(), static_cast<long long>(g.param_count()), d.cfg().file.c_str(),
              static_cast<long long>(d.param_count()));
  std::printf("generator\n%sdiscriminator\n%s", g.summary().c_str(), d.summary().c_str());
  std::printf("data:      %s: %lld training samples\n", train.name.c_str(), static_cast<long long>(train.size()));
  std::printf("training:  batch %lld, %s, lr %g for both networks, seed %llu, %d threads; run folder %s\n",
              static_cast<long long>(options.batch), describe(options.optimizer).c_str(), options.schedule.lr,
              static_cast<unsigned long long>(options.seed), pool.threads(), out_dir.c_str());
  if (resuming) std::printf("resuming:  %s after epoch %lld\n", out_dir.c_str(), static_cast<long long>(trainer.epochs_done()));
  std::fflush(stdout);

  // The judge, and its score on real test images: the ceiling the samples' score compares with.
  std::unique_ptr<Model> judge;
  Tensor scored;
  nlohmann::json real_score_json;
  double chance_score = NAN;  // the untrained generator's score (a new run only)
  if (score_samples.value() > 0) {
    auto got = get_judge(args, out_dir, split, options, pool);
    if (!got.ok()) return fail(got.status().with_context("the judge: ").message());
    judge = got.take();
    const int64_t real_count = std::min<int64_t>(score_samples.value(), split.test.size());
    if (real_count >= kScoreSplits) {
      auto real = split.test.first_samples(real_count);
      if (!real.ok()) return fail(real.status().message());
      auto real_score = score_with_classifier(*judge, pool, real.value(), options.batch, kScoreSplits);
      if (!real_score.ok()) return fail(real_score.status().with_context("the judge: ").message());
      std::printf("judge on %lld real test images:\n", static_cast<long long>(real_count));
      print_score("score", real_score.value(), split.test);
      real_score_json = score_json(real_score.value());
    }
    auto buffer = Tensor::zeros(g.output_shape().batched(score_samples.value()), DType::f32, "samples to score");
    if (!buffer.ok()) return fail(buffer.status().message());
    scored = buffer.take();
    if (trainer.epochs_done() == 0) {  // the floor the samples' score compares with: G as initialised
      auto untrained = score_generator(trainer, *judge, pool, scored);
      if (!untrained.ok()) return fail(untrained.status().message());
      std::printf("judge on %lld samples of the untrained generator (the chance level):\n",
                  static_cast<long long>(score_samples.value()));
      print_score("score", untrained.value(), split.train);
      chance_score = untrained.value().score;
    }
  }
  auto grid = Tensor::zeros(g.output_shape().batched(kGridSamples), DType::f32, "sample grid");
  if (!grid.ok()) return fail(grid.status().message());

  nlohmann::json history = nlohmann::json::array();
  double train_seconds = 0, train_cpu_seconds = 0;  // CPU: every thread, while training (not scoring)
  int64_t samples_trained = 0;
  const int64_t last = options.stop_after > 0 ? std::min(options.stop_after, options.epochs) : options.epochs;
  while (trainer.epochs_done() < last) {
    const double cpu_before = process_cpu_seconds();
    auto epoch = trainer.train_epoch(train);
    train_cpu_seconds += process_cpu_seconds() - cpu_before;
    if (!epoch.ok()) return fail(epoch.status().message());
    const GanEpochRecord& r = epoch.value();
    train_seconds += r.seconds;
    samples_trained += train.size();
    if (Status s = trainer.save(join_path(out_dir, kGeneratorFile), join_path(out_dir, kDiscriminatorFile)); !s.ok()) {
      return fail(s.with_context("saving the networks after epoch " + std::to_string(r.epoch) + ": ").message());
    }
    const std::string grid_path = join_path(out_dir, "samples-epoch-" + std::to_string(r.epoch) + ".png");
    if (Status s = trainer.generate(kFixedNoiseStream, kGridSamples, grid.value()); !s.ok()) return fail(s.message());
    if (Status s = write_image_grid(grid_path, grid.value(), kGridColumns); !s.ok()) return fail(s.message());
    std::printf("  D(G(z)) after D's update %.3f, %.0f samples/s; samples %s\n", r.d_fake_after, r.samples_per_s,
                grid_path.c_str());
    nlohmann::json record = {{"epoch", r.epoch},   {"loss_d", r.loss_d},   {"loss_g", r.loss_g},
                             {"d_real", r.d_real}, {"d_fake", r.d_fake},   {"d_fake_after", r.d_fake_after},
                             {"seconds", r.seconds}, {"samples_per_s", r.samples_per_s}, {"sample_grid", grid_path}};
    if (judge) {
      auto score = score_generator(trainer, *judge, pool, scored);
      if (!score.ok()) return fail(score.status().message());
      print_score("score", score.value(), split.train);
      record["score"] = score_json(score.value());
    }
    std::fflush(stdout);
    history.push_back(record);
  }

  std::printf("\nsummary\n  training        %lld epochs in %.1fs, %.0f samples/s, %d threads\n",
              static_cast<long long>(history.size()), train_seconds,
              train_seconds > 0 ? static_cast<double>(samples_trained) / train_seconds : 0.0, pool.threads());
  std::printf("  memory          peak RSS %s, peak tensors %s\n", format_bytes(peak_rss_bytes()).c_str(),
              format_bytes(host_memory().peak_bytes()).c_str());
  if (train_device) std::printf("  device          %s\n", describe_device_use(*train_device, trainer.device_transfers()).c_str());
  if (args.given("profile-device")) std::printf("device time by kernel\n%s", describe_kernel_times(*train_device).c_str());
  std::printf("  networks        %s, %s\n", join_path(out_dir, kGeneratorFile).c_str(),
              join_path(out_dir, kDiscriminatorFile).c_str());
  if (args.given("json")) {
    nlohmann::json report = {
        {"model", "gan"},
        {"generator", g.cfg().file},
        {"discriminator", d.cfg().file},
        {"epochs", options.epochs},
        {"batch", options.batch},
        {"seed", options.seed},
        {"threads", pool.threads()},
        {"lr", options.schedule.lr},
        {"data", data_source_name(options.data)},
        {"train_samples", train.size()},
        {"run_folder", out_dir},
        {"train_seconds", train_seconds},
        {"train_samples_per_s", train_seconds > 0 ? static_cast<double>(samples_trained) / train_seconds : 0.0},
        {"train_cpu_seconds", train_cpu_seconds},
        {"train_flops_per_sample", total_flops(gan_training_costs_per_sample(g, d, options.batch, options.optimizer))},
        {"train_precision", train_precision_name(options.precision)},
        {"isa", isa_name(active_isa())},
        {"denormals", denormals_name(denormals())},
        {"peak_rss_bytes", peak_rss_bytes()},
        {"peak_tensor_bytes", host_memory().peak_bytes()},
        {"judge_on_real_test_images", real_score_json},
        // The untrained generator's score: null when not scored or resumed (the documented floor is 1).
        {"chance_score", std::isfinite(chance_score) ? nlohmann::json(chance_score) : nlohmann::json()},
        {"device", train_device ? train_device->label() : "cpu"},
        {"device_peak_bytes", train_device ? train_device->memory().peak_bytes() : 0},
        {"history", history},
    };
    if (train_device && args.given("profile-device")) report["device_profile"] = kernel_times_json(*train_device);
    if (Status s = write_json_report(json_path, report); !s.ok()) return fail(s.with_context("--json ").message());
  }
  return 0;
}

}  // namespace rg
