// retrograd train for GANs (see train_gan.h): the pair from the [gan] section or the run's
// folder, the judge classifier, and per epoch the losses, a sample grid and the score.
#include <cmath>
#include <cstdio>
#include <memory>

#include "app/commands.h"
#include "app/data_source.h"
#include "app/device_option.h"
#include "app/json_report.h"
#include "app/layer_profile_option.h"
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
  ModelExecutor runner(judge, LayerContext{&pool, false});
  auto score = score_with_classifier(runner, scored, trainer.options().batch, kScoreSplits);
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

namespace {

// One GAN run: what its steps read and fill, in the order run_gan_train calls them.
struct GanRun {
  GanRun(Args& a, const CfgDocument* cfg, TrainOptions o)
      : args(a), gan_cfg(cfg), options(std::move(o)), resuming(cfg == nullptr) {}
  Args& args;
  const CfgDocument* gan_cfg;  // null: resuming from the run's folder
  TrainOptions options;
  bool resuming;
  std::string out_dir;
  GanPair pair;
  Checkpoint g_ck, d_ck;
  std::string resumed_data;  // the checkpoint's source when resuming
  std::vector<std::unique_ptr<OutputLock>> network_locks;  // both checkpoints, held until the run ends
  std::string json_path;
  int thread_count = 0;
  int64_t score_samples = 0;
  DataSplit split;
  Dataset train;
  std::unique_ptr<ocl::Device> train_device;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<GanTrainer> trainer;
  std::unique_ptr<LayerProfile> g_profile, d_profile;  // --profile: one a network
  // The judge, and its score on real test images: the ceiling the samples' score compares with.
  std::unique_ptr<Model> judge;
  Tensor scored;
  nlohmann::json real_score_json;
  double chance_score = NAN;  // the untrained generator's score (a new run only)
  // What training measured.
  nlohmann::json history = nlohmann::json::array();
  double train_seconds = 0, train_cpu_seconds = 0;  // CPU: every thread, while training (not scoring)
  int64_t samples_trained = 0;

  std::string g_path() const { return join_path(out_dir, kGeneratorFile); }
  std::string d_path() const { return join_path(out_dir, kDiscriminatorFile); }
};

// Resuming: both networks, the settings and the data options from the run's folder.
Status read_resumed_pair(GanRun& run) {
  Args& args = run.args;
  if (args.given("out")) return Status::error("--out: a resumed GAN run stays in its folder (--resume DIR)");
  run.out_dir = args.text("resume");
  const std::string g_path = run.g_path(), d_path = run.d_path();
  auto g_read = read_checkpoint(g_path);
  if (!g_read.ok()) return g_read.status().with_context("--resume: ");
  auto d_read = read_checkpoint(d_path);
  if (!d_read.ok()) return d_read.status().with_context("--resume: ");
  run.g_ck = g_read.take();
  run.d_ck = d_read.take();
  RG_TRY(options_from_checkpoint(run.g_ck, g_path, &run.options));
  RG_TRY(resume_data_options(run.g_ck.settings, g_path, args));
  run.resumed_data = run.options.data;
  if (args.given("data")) run.options.data = args.text("data");
  if (args.given("epochs")) {
    RG_ASSIGN(run.options.epochs, args.integer("epochs", 1, 1000000));
  }
  RG_ASSIGN(run.pair.generator, model_from_checkpoint(run.g_ck, g_path, "generator"));
  RG_ASSIGN(run.pair.discriminator, model_from_checkpoint(run.d_ck, d_path, "discriminator"));
  return Status();
}

// A new run: the pair from the [gan] cfg, the run folder from --out or the cfg's name.
Status build_new_pair(GanRun& run) {
  const CfgDocument& gan_cfg = *run.gan_cfg;
  if (run.options.schedule.kind != ScheduleKind::constant) {
    return Status::error("--schedule: GAN training uses a constant rate");
  }
  std::string name = gan_cfg.file.rfind("preset:", 0) == 0 ? gan_cfg.file.substr(7) : last_path_component(gan_cfg.file);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".cfg") == 0) name.resize(name.size() - 4);
  run.out_dir = run.args.given("out") ? run.args.text("out") : name + "-run";
  RG_ASSIGN(run.pair, gan_pair_from_cfg(gan_cfg));
  return Status();
}

// The run folder and both networks' files claimed; --json, threads, --score-samples, --stop-after.
Status claim_gan_outputs(GanRun& run) {
  Args& args = run.args;
  RG_TRY(make_directories(run.out_dir).with_context("--out: "));
  for (const char* file : {kGeneratorFile, kDiscriminatorFile}) {
    const std::string path = join_path(run.out_dir, file);
    RG_ASSIGN(auto lock, claim_checkpoint(path, run.resuming ? "resume" : "out", args.given("overwrite"),
                                          run.resuming ? path : "", run.out_dir));
    run.network_locks.push_back(std::move(lock));
  }
  run.json_path = args.text("json");
  if (args.given("json")) RG_TRY(check_writable_path(run.json_path, "json"));
  RG_ASSIGN(run.thread_count, threads_option(args));
  RG_ASSIGN(run.score_samples, args.integer("score-samples", 0, 1000000));
  if (run.score_samples > 0 && run.score_samples < kScoreSplits) {
    return Status::error("--score-samples: 0 (no score) or at least " + std::to_string(kScoreSplits));
  }
  if (args.given("stop-after")) {
    RG_ASSIGN(run.options.stop_after, args.integer("stop-after", 1, 1000000));
  }
  return Status();
}

// Both networks initialized, the data loaded (and checked against the run resumed), the device opened.
Status init_gan_and_load(GanRun& run) {
  Args& args = run.args;
  TrainOptions& options = run.options;
  Model& g = *run.pair.generator;
  Model& d = *run.pair.discriminator;
  RG_TRY(g.init(options.seed));
  RG_TRY(d.init(options.seed + kDiscriminatorSeedOffset));
  auto data = load_training_data(args, options.data, options.seed, d.input_shape());
  if (!data.ok()) {
    const bool stored = run.resuming && !args.given("data");
    return stored ? note_source_from_checkpoint(data.status(), options.data, run.g_path()) : data.status();
  }
  run.split = data.take();
  if (run.resuming) RG_TRY(check_resumed_data(run.g_ck.settings, run.g_path(), options.data, run.resumed_data, run.split));
  record_data_options(args, &options.data_settings);
  options.data_settings[kDataIdentitySetting] = data_identity(run.split);
  run.train = run.split.train;
  RG_ASSIGN(run.train_device, open_train_device(args, &options));
  if (run.train_device && !options.host_layers.empty()) {
    return Status::error("--cpu-layers applies to classifier and autoencoder training");
  }
  return Status();
}

// The GAN trainer, prepared and resumed; then what is about to run.
Status start_gan_trainer(GanRun& run) {
  TrainOptions& options = run.options;
  Model& g = *run.pair.generator;
  Model& d = *run.pair.discriminator;
  run.pool = std::make_unique<ThreadPool>(run.thread_count);
  options.log = stdout;
  options.live_progress = is_terminal(stdout);
  run.trainer = std::make_unique<GanTrainer>(g, d, *run.pool, options);
  GanTrainer& trainer = *run.trainer;
  RG_ASSIGN(run.g_profile, layer_profile_for(run.args, options));
  if (run.g_profile) {
    run.d_profile = std::make_unique<LayerProfile>(run.g_profile->clock());
    trainer.set_profiles(run.g_profile.get(), run.d_profile.get());
  }
  if (run.g_profile && run.g_profile->clock() == LayerProfile::Clock::device) {  // one network's layer is open
    run.train_device->set_profile_listener([g = run.g_profile.get(), d = run.d_profile.get()](double s) {
      g->add_device_seconds(s);
      d->add_device_seconds(s);
    });
  }
  RG_TRY(trainer.prepare(run.train.size()));
  if (run.resuming) {
    RG_TRY(trainer.resume_from(run.g_ck, run.g_path(), run.d_ck, run.d_path()));
    if (trainer.epochs_done() >= options.epochs) {
      return Status::error(run.out_dir + " has " + std::to_string(trainer.epochs_done()) +
                           " epochs done already; pass --epochs with more to continue");
    }
  }
  std::printf("retrograd train: GAN, generator %s (%lld parameters), discriminator %s (%lld parameters)\n",
              g.cfg().file.c_str(), static_cast<long long>(g.param_count()), d.cfg().file.c_str(),
              static_cast<long long>(d.param_count()));
  std::printf("generator\n%sdiscriminator\n%s", g.summary().c_str(), d.summary().c_str());
  std::printf("data:      %s: %lld training samples\n", run.train.name.c_str(), static_cast<long long>(run.train.size()));
  std::printf("training:  batch %lld, %s, lr %g for both networks, seed %llu, %d threads; run folder %s\n",
              static_cast<long long>(options.batch), describe(options.optimizer).c_str(), options.schedule.lr,
              static_cast<unsigned long long>(options.seed), run.pool->threads(), run.out_dir.c_str());
  if (run.resuming) {
    std::printf("resuming:  %s after epoch %lld\n", run.out_dir.c_str(), static_cast<long long>(trainer.epochs_done()));
  }
  std::fflush(stdout);
  return Status();
}

// --score-samples: the judge, its score on real test images and, for a new run, the untrained generator's.
Status prepare_judge(GanRun& run) {
  if (run.score_samples <= 0) return Status();
  ThreadPool& pool = *run.pool;
  const DataSplit& split = run.split;
  auto got = get_judge(run.args, run.out_dir, split, run.options, pool);
  if (!got.ok()) return got.status().with_context("the judge: ");
  run.judge = got.take();
  const int64_t real_count = std::min<int64_t>(run.score_samples, split.test.size());
  if (real_count >= kScoreSplits) {
    RG_ASSIGN(const Tensor real, split.test.first_samples(real_count));
    ModelExecutor runner(*run.judge, LayerContext{&pool, false});
    auto real_score = score_with_classifier(runner, real, run.options.batch, kScoreSplits);
    if (!real_score.ok()) return real_score.status().with_context("the judge: ");
    std::printf("judge on %lld real test images:\n", static_cast<long long>(real_count));
    print_score("score", real_score.value(), split.test);
    run.real_score_json = score_json(real_score.value());
  }
  RG_ASSIGN(run.scored,
            Tensor::zeros(run.pair.generator->output_shape().batched(run.score_samples), DType::f32, "samples to score"));
  if (run.trainer->epochs_done() == 0) {  // the floor the samples' score compares with: G as initialised
    RG_ASSIGN(const ClassifierScore untrained, score_generator(*run.trainer, *run.judge, pool, run.scored));
    std::printf("judge on %lld samples of the untrained generator (the chance level):\n",
                static_cast<long long>(run.score_samples));
    print_score("score", untrained, split.train);
    run.chance_score = untrained.score;
  }
  return Status();
}

// The epochs: each saves both networks, writes a sample grid and, with a judge, scores G.
Status train_epochs(GanRun& run) {
  GanTrainer& trainer = *run.trainer;
  const TrainOptions& options = run.options;
  RG_ASSIGN(Tensor grid, Tensor::zeros(run.pair.generator->output_shape().batched(kGridSamples), DType::f32, "sample grid"));
  const int64_t last = options.stop_after > 0 ? std::min(options.stop_after, options.epochs) : options.epochs;
  while (trainer.epochs_done() < last) {
    const double cpu_before = process_cpu_seconds();
    auto epoch = trainer.train_epoch(run.train);
    run.train_cpu_seconds += process_cpu_seconds() - cpu_before;
    if (!epoch.ok()) return epoch.status();
    const GanEpochRecord& r = epoch.value();
    run.train_seconds += r.seconds;
    run.samples_trained += run.train.size();
    RG_TRY(trainer.save(run.g_path(), run.d_path())
               .with_context("saving the networks after epoch " + std::to_string(r.epoch) + ": "));
    const std::string grid_path = join_path(run.out_dir, "samples-epoch-" + std::to_string(r.epoch) + ".png");
    RG_TRY(trainer.generate(kFixedNoiseStream, kGridSamples, grid));
    RG_TRY(write_image_grid(grid_path, grid, kGridColumns));
    std::printf("  D(G(z)) after D's update %.3f, %.0f samples/s; samples %s\n", r.d_fake_after, r.samples_per_s,
                grid_path.c_str());
    nlohmann::json record = {{"epoch", r.epoch},   {"loss_d", r.loss_d},   {"loss_g", r.loss_g},
                             {"d_real", r.d_real}, {"d_fake", r.d_fake},   {"d_fake_after", r.d_fake_after},
                             {"seconds", r.seconds}, {"samples_per_s", r.samples_per_s}, {"sample_grid", grid_path}};
    if (run.judge) {
      RG_ASSIGN(const ClassifierScore score, score_generator(trainer, *run.judge, *run.pool, run.scored));
      print_score("score", score, run.split.train);
      record["score"] = score_json(score);
    }
    std::fflush(stdout);
    run.history.push_back(record);
  }
  return Status();
}

// The summary after training.
void print_gan_summary(GanRun& run) {
  std::printf("\nsummary\n  training        %lld epochs in %.1fs, %.0f samples/s, %d threads\n",
              static_cast<long long>(run.history.size()), run.train_seconds,
              run.train_seconds > 0 ? static_cast<double>(run.samples_trained) / run.train_seconds : 0.0,
              run.pool->threads());
  std::printf("  memory          peak RSS %s, peak tensors %s\n", format_bytes(peak_rss_bytes()).c_str(),
              format_bytes(host_memory().peak_bytes()).c_str());
  if (run.train_device) {
    std::printf("  device          %s\n",
                describe_device_use(*run.train_device, run.trainer->device_transfers()).c_str());
  }
  if (run.args.given("profile-device")) {
    std::printf("device time by kernel\n%s", describe_kernel_times(*run.train_device).c_str());
  }
  std::printf("  networks        %s, %s\n", run.g_path().c_str(), run.d_path().c_str());
}

// --profile: each network's table (its rest: the step's time in neither network's layers), and
// --json's layer_profile {"generator", "discriminator"}.
nlohmann::json report_gan_profiles(const GanRun& run) {
  if (!run.g_profile) return nlohmann::json();
  const LayerProfile& g = *run.g_profile;
  const LayerProfile& d = *run.d_profile;
  const PeakFigure peak = run.train_device ? layer_profile_device_peak(run.train_device->info().name)
                                           : layer_profile_peak(run.pool->threads());
  const LayerProfileReport g_report = summarize_layer_profile(*run.pair.generator, g, run.train_seconds - d.seconds(), peak);
  const LayerProfileReport d_report =
      summarize_layer_profile(*run.pair.discriminator, d, run.train_seconds - g.seconds(), peak);
  std::printf("\nlayer profile: generator\n%s", layer_profile_text(g_report).c_str());
  std::printf("\nlayer profile: discriminator (three forwards and backwards a step)\n%s",
              layer_profile_text(d_report).c_str());
  return {{"generator", layer_profile_json(g_report)}, {"discriminator", layer_profile_json(d_report)}};
}

// --json.
Status write_gan_json(GanRun& run, const nlohmann::json& profiles) {
  const TrainOptions& options = run.options;
  Model& g = *run.pair.generator;
  Model& d = *run.pair.discriminator;
  ocl::Device* device = run.train_device.get();
  nlohmann::json report = {
      {"model", "gan"},
      {"generator", g.cfg().file},
      {"discriminator", d.cfg().file},
      {"epochs", options.epochs},
      {"batch", options.batch},
      {"seed", options.seed},
      {"threads", run.pool->threads()},
      {"lr", options.schedule.lr},
      {"data", data_source_name(options.data)},
      {"train_samples", run.train.size()},
      {"run_folder", run.out_dir},
      {"train_seconds", run.train_seconds},
      {"train_samples_per_s", run.train_seconds > 0 ? static_cast<double>(run.samples_trained) / run.train_seconds : 0.0},
      {"train_cpu_seconds", run.train_cpu_seconds},
      {"train_flops_per_sample", total_flops(gan_training_costs_per_sample(g, d, options.batch, options.optimizer))},
      {"train_precision", precision_name(options)},
      {"isa", isa_name(active_isa())},
      {"denormals", denormals_name(denormals())},
      {"peak_rss_bytes", peak_rss_bytes()},
      {"peak_tensor_bytes", host_memory().peak_bytes()},
      {"judge_on_real_test_images", run.real_score_json},
      // The untrained generator's score: null when not scored or resumed (the documented floor is 1).
      {"chance_score", std::isfinite(run.chance_score) ? nlohmann::json(run.chance_score) : nlohmann::json()},
      {"device", device ? device->label() : "cpu"},
      {"device_peak_bytes", device ? device->memory().peak_bytes() : 0},
      {"history", run.history},
  };
  if (device && run.args.given("profile-device")) report["device_profile"] = kernel_times_json(*device);
  if (!profiles.is_null()) report["layer_profile"] = profiles;
  return write_json_report(run.json_path, report).with_context("--json ");
}

// The steps of a GAN run, in order: settings, outputs, data, trainer, judge, epochs, report.
Status gan_steps(GanRun& run) {
  for (const char* name : kNotForGans) {
    if (run.args.given(name)) return Status::error("--" + std::string(name) + " does not apply to GAN training");
  }
  RG_TRY(run.resuming ? read_resumed_pair(run) : build_new_pair(run));
  RG_TRY(claim_gan_outputs(run));
  RG_TRY(init_gan_and_load(run));
  RG_TRY(start_gan_trainer(run));
  RG_TRY(prepare_judge(run));
  RG_TRY(train_epochs(run));
  print_gan_summary(run);
  const nlohmann::json profiles = report_gan_profiles(run);
  if (run.args.given("json")) RG_TRY(write_gan_json(run, profiles));
  return Status();
}

}  // namespace

int run_gan_train(Args& args, const CfgDocument* gan_cfg, TrainOptions options) {
  GanRun run(args, gan_cfg, std::move(options));
  if (Status s = gan_steps(run); !s.ok()) return fail(s.message());
  return 0;
}

}  // namespace rg
