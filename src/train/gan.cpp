// The GAN step (see gan.h), sample generation and the pair's checkpoints.
#include "train/gan.h"

#include <chrono>
#include <cmath>

#include "base/files.h"
#include "nn/layer_profile.h"
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "report/progress.h"
#include "train/checkpoint.h"

namespace rg {

namespace {
constexpr uint64_t kNoiseStream = 3000;  // + epoch: the training noise
}  // namespace

Result<GanPair> gan_pair_from_cfg(const CfgDocument& doc) {
  const CfgSection& gan = doc.sections.front();
  for (size_t i = 1; i < doc.sections.size(); ++i) {
    if (doc.sections[i].kind() != "train") {
      return Status::error(doc.sections[i].where() + "a GAN cfg holds [gan] and [train] only; the networks are " +
                           "presets or cfg files named by generator = and discriminator =");
    }
  }
  GanPair pair;
  for (const char* role : {"generator", "discriminator"}) {
    RG_ASSIGN(std::string name, gan.get_string_or(role, ""));
    if (name.empty()) return Status::error(gan.where(role) + "missing: a preset name or a model cfg file");
    if (preset_cfg(name).empty() && doc.file.rfind("preset:", 0) != 0 && name.find('/') != 0) {
      const std::string beside = join_path(parent_path(doc.file), name);
      if (is_regular_file(beside)) name = beside;
    }
    auto cfg = load_model_cfg(name);
    if (!cfg.ok()) return Status::error(gan.where(role) + cfg.status().message());
    auto model = Model::from_cfg(cfg.value());
    if (!model.ok()) return model.status().with_context(std::string("the ") + role + ": ");
    (role == std::string("generator") ? pair.generator : pair.discriminator) = model.take();
  }
  RG_TRY(gan.check_all_used());
  RG_TRY(check_gan_pair(*pair.generator, *pair.discriminator));
  return pair;
}

double mean_probability(const Tensor& logits) {
  double sum = 0;
  for (int64_t i = 0; i < logits.numel(); ++i) sum += 1.0 / (1.0 + std::exp(-double(logits.f32()[i])));
  return logits.numel() > 0 ? sum / static_cast<double>(logits.numel()) : 0.0;
}

namespace {
std::string last_layer_kind(const Model& model) { return model.layers().back()->kind(); }
}  // namespace

Status check_gan_pair(const Model& generator, const Model& discriminator) {
  const std::string g_where = "the generator (" + generator.cfg().file + ")";
  const std::string d_where = "the discriminator (" + discriminator.cfg().file + ")";
  if (generator.output_shape().numel() != discriminator.input_shape().numel()) {
    return Status::error(g_where + " makes samples " + generator.output_shape().str() + ", " + d_where + " takes " +
                         discriminator.input_shape().str());
  }
  if (discriminator.output_shape().numel() != 1) {
    return Status::error(d_where + " must end in one logit (a dense layer of 1 unit), it gives " +
                         discriminator.output_shape().str());
  }
  if (discriminator.loss() != LossKind::bce_with_logits) {
    return Status::error(d_where + " must have loss = bce_with_logits, it has " + loss_name(discriminator.loss()));
  }
  const std::string last = last_layer_kind(generator);
  if (last != "tanh" && last != "sigmoid") {
    return Status::error(g_where + " must end in tanh (samples in [-1, 1]) or sigmoid ([0, 1]), it ends in [" + last +
                         "]");
  }
  return Status();
}

GanTrainer::GanTrainer(Model& generator, Model& discriminator, ThreadPool& pool, const TrainOptions& options)
    : g_(generator),
      d_(discriminator),
      pool_(pool),
      options_(options),
      g_opt_(options.optimizer, generator.params()),
      d_opt_(options.optimizer, discriminator.params()) {}

Status GanTrainer::prepare(int64_t train_samples) {
  RG_TRY(check_gan_pair(g_, d_));
  buffer_rows_ = train_samples > 0 ? std::min(options_.batch, train_samples) : options_.batch;
  if (options_.precision != TrainPrecision::fp32) {
    return Status::error("--train-precision " + precision_name(options_) +
                         ": GAN training runs in fp32 only (fp16 and int8 training are for classifiers and autoencoders)");
  }
  for (const Model* net : {&g_, &d_}) {
    for (const auto& layer : net->layers()) {
      const std::string& own = layer->own_precision().name;
      if (!own.empty() && own != "fp32") {
        return Status::error("layer " + layer->name() + " has a precision of its own (" + own +
                             "): GAN training runs in fp32 only (fixed-point training is for classifiers and autoencoders)");
      }
    }
  }
  tanh_out_ = last_layer_kind(g_) == "tanh";
  RG_TRY(g_opt_.init());
  RG_TRY(d_opt_.init());
  const int64_t n = buffer_rows_;
  for (auto& step_logits : logits_) {
    for (Tensor& logits : step_logits) {
      RG_ASSIGN(logits, Tensor::zeros(Shape{n, 1}, DType::f32, "the discriminator's logits read back"));
    }
  }
  RG_ASSIGN(d_output_, Tensor::zeros(Shape{n, 1}, DType::f32, "the logits' gradient"));
  const LayerContext inference{&pool_, false};
  if (options_.device != nullptr) {
    RG_TRY(prepare_device(inference));
  } else {
    RG_TRY(g_.reserve(n));
    RG_TRY(d_.reserve(n));
    g_run_ = std::make_unique<CpuStepRunner>(g_, g_opt_, inference, "");
    d_run_ = std::make_unique<CpuStepRunner>(d_, d_opt_, inference, "");
  }
  for (int k = 0; k < 2; ++k) {
    RG_ASSIGN(real_[k], Tensor::zeros(d_.input_shape().batched(n), DType::f32, "real image batch"));
    RG_ASSIGN(z_[k], Tensor::zeros(g_.input_shape().batched(n), DType::f32, "noise batch"));
  }
  RG_ASSIGN(labels_, Tensor::zeros(Shape{n}, DType::i32, "label batch"));
  RG_ASSIGN(ones_, Tensor::zeros(Shape{n, 1}, DType::f32, "BCE targets"));
  RG_ASSIGN(zeros_, Tensor::zeros(Shape{n, 1}, DType::f32, "BCE targets"));
  for (int64_t i = 0; i < n; ++i) ones_.f32()[i] = 1.0f;
  return Status();
}

void GanTrainer::draw_noise(Rng& rng, int64_t count, const Tensor& z) const {
  const int64_t size = g_.input_shape().numel();
  for (int64_t i = 0; i < count * size; ++i) z.f32()[i] = static_cast<float>(rng.normal());
}

Status GanTrainer::queue_step(int64_t step, const Tensor& x, const Tensor& z, LayerContext& ctx, StepLosses* out) {
  const int64_t count = x.shape()[0];
  Tensor* logits = logits_[step % 2];
  const Tensor ones = ones_.rows(0, count), zeros = zeros_.rows(0, count);
  const double scale = 1.0 / static_cast<double>(count);
  StepRunner& g = *g_run_;
  StepRunner& d = *d_run_;
  // Dropout in either network draws per forward: three D forwards and one G forward a step.
  const uint64_t stream = 4 * static_cast<uint64_t>(d_opt_.steps());

  // G(z), kept in G's activations for its backward at the end of the step.
  ctx.noise_stream = stream;
  ctx.accumulate_grads = false;
  ctx.profile = g_profile_;  // each network's calls timed in its own profile (when set)
  RG_TRY(g.forward(z, ctx));

  // D on the real batch (grads written), then on the fake one (grads added); no gradient to G.
  ctx.noise_stream = stream + 1;
  ctx.profile = d_profile_;
  RG_TRY(d.forward(x, ctx));
  RG_TRY(d.output_loss(ones, scale, logits[0].rows(0, count), &out->real));
  RG_TRY(d.backward(ctx, nullptr));
  ctx.noise_stream = stream + 2;
  ctx.accumulate_grads = true;
  RG_TRY(d.forward_from(g, count, ctx));
  RG_TRY(d.output_loss(zeros, scale, logits[1].rows(0, count), &out->fake));
  RG_TRY(d.backward(ctx, nullptr));
  RG_TRY(d.apply_update(options_.schedule.lr));

  // G through the updated D: D's input gradient lands in G's output gradient. D's param grads
  // from this pass are written and then overwritten by the next D step, never applied.
  ctx.noise_stream = stream + 3;
  ctx.accumulate_grads = false;
  RG_TRY(d.forward_from(g, count, ctx));
  RG_TRY(d.output_loss(ones, scale, logits[2].rows(0, count), &out->g));
  RG_TRY(d.backward(ctx, &g));
  ctx.profile = g_profile_;
  RG_TRY(g.backward(ctx, nullptr));
  RG_TRY(g.apply_update(options_.schedule.lr));
  for (LayerProfile* profile : {g_profile_, d_profile_})
    if (profile != nullptr) profile->count_step();
  return Status();
}

Status GanTrainer::finish_step(int64_t step, int64_t count, bool next_queued, StepLosses* out) {
  const size_t keep = next_queued ? kLossesAStep : 0;
  const Status d_settled = d_run_->settle(keep), g_settled = g_run_->settle(keep);  // both, whatever
  RG_TRY(d_settled);
  RG_TRY(g_settled);
  const Tensor* logits = logits_[step % 2];
  out->d_real = mean_probability(logits[0].rows(0, count));
  out->d_fake = mean_probability(logits[1].rows(0, count));
  out->d_fake_after = mean_probability(logits[2].rows(0, count));
  // The optimizers' flags: on a device their reads were queued with the updates (done now).
  RG_ASSIGN(const NonFiniteUpdate d_bad, d_run_->flags_of_update(next_queued));
  RG_ASSIGN(const NonFiniteUpdate g_bad, g_run_->flags_of_update(next_queued));
  out->bad_update = first_bad_update(d_bad, g_bad);
  return Status();
}

Status GanTrainer::gather_batch(const Dataset& real, const std::vector<int32_t>& order, int64_t step, Rng& noise_rng) {
  const int64_t begin = step * options_.batch, count = std::min(options_.batch, real.size() - begin);
  const Tensor x = real_[step % 2].rows(0, count);
  RG_TRY(real.gather(order.data() + begin, count, x.f32(), labels_.data<int32_t>()));
  if (tanh_out_) {
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = 2.0f * x.f32()[i] - 1.0f;
  }
  draw_noise(noise_rng, count, z_[step % 2].rows(0, count));
  return Status();
}

Status GanTrainer::training_stopped(const std::string& what, int64_t epoch, int64_t step) {
  return Status::error(what + " at epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(step + 1) +
                       "; training stopped (lower the learning rate?); the saved networks are unchanged");
}

std::string GanTrainer::first_bad_update(const NonFiniteUpdate& d, const NonFiniteUpdate& g) {
  if (!d.none()) return d.text("the discriminator's ");
  return g.none() ? "" : g.text("the generator's ");
}

namespace {
// An epoch's record: the means of its steps' sums over the `seen` samples.
GanEpochRecord epoch_means(const GanEpochRecord& sums, int64_t seen, int64_t epoch, double seconds) {
  GanEpochRecord record;
  const double s = static_cast<double>(seen);
  record.epoch = epoch;
  record.loss_d = sums.loss_d / s;
  record.loss_g = sums.loss_g / s;
  record.d_real = sums.d_real / s;
  record.d_fake = sums.d_fake / s;
  record.d_fake_after = sums.d_fake_after / s;
  record.seconds = seconds;
  record.samples_per_s = s / seconds;
  return record;
}
}  // namespace

Result<GanEpochRecord> GanTrainer::train_epoch(const Dataset& real) {
  if (real.sample_shape.numel() != d_.input_shape().numel()) {
    return Status::error("the data's samples are " + real.sample_shape.str() + ", the discriminator takes " +
                         d_.input_shape().str());
  }
  const int64_t epoch = epochs_done_;
  const int64_t n = real.size();
  const int64_t steps = (n + options_.batch - 1) / options_.batch;
  Rng shuffle_rng(options_.seed, kEpochShuffleStream + static_cast<uint64_t>(epoch));
  Rng noise_rng(options_.seed, kNoiseStream + static_cast<uint64_t>(epoch));
  const std::vector<int32_t> order = shuffled_indices(static_cast<int32_t>(n), shuffle_rng);
  std::fprintf(options_.log, "Epoch %lld/%lld\n", static_cast<long long>(epoch + 1),
               static_cast<long long>(options_.epochs));
  ProgressBar progress(steps, options_.log, options_.live_progress);
  const auto start = std::chrono::steady_clock::now();

  GanEpochRecord sums;
  int64_t seen = 0;
  auto count_of = [&](int64_t step) { return std::min(options_.batch, n - step * options_.batch); };
  auto where = [&](int64_t step) { return "epoch " + std::to_string(epoch + 1) + ", step " + std::to_string(step + 1) + ": "; };
  // A settled step into the sums and the progress bar; a loss or an update that is not finite stops.
  auto account = [&](int64_t step, const StepLosses& losses) -> Status {
    const int64_t count = count_of(step);
    const double scale = 1.0 / static_cast<double>(count);
    const double loss_d = (losses.real + losses.fake) * scale;
    if (!std::isfinite(loss_d) || !std::isfinite(losses.g)) {
      return training_stopped("a GAN loss became " + std::string(std::isfinite(loss_d) ? "G " : "D ") + "not finite",
                              epoch, step);
    }
    if (!losses.bad_update.empty()) return training_stopped(losses.bad_update, epoch, step);
    const double w = static_cast<double>(count);
    sums.loss_d += loss_d * w;
    sums.loss_g += losses.g * scale * w;
    sums.d_real += losses.d_real * w;
    sums.d_fake += losses.d_fake * w;
    sums.d_fake_after += losses.d_fake_after * w;
    seen += count;
    const double s = static_cast<double>(seen);
    progress.update(step + 1, {{"loss_D", sums.loss_d / s}, {"loss_G", sums.loss_g / s}, {"D(x)", sums.d_real / s},
                               {"D(G(z))", sums.d_fake / s}});
    return Status();
  };
  // Step t is queued, then step t - 1 settled and counted, then batch t + 1 gathered: a device
  // runs step t meanwhile. An error settles whatever is in flight before it returns.
  StepLosses losses[2];
  auto stop = [&](const Status& s) {
    (void)d_run_->settle(0), (void)g_run_->settle(0);
    if (options_.device != nullptr) (void)options_.device->finish();  // the uploads of x and z too
    return s;
  };
  LayerContext ctx{&pool_, true, false};
  if (steps > 0) RG_TRY(gather_batch(real, order, 0, noise_rng));
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t count = count_of(step);
    const Tensor x = real_[step % 2].rows(0, count), z = z_[step % 2].rows(0, count);
    losses[step % 2] = StepLosses();
    Status s = queue_step(step, x, z, ctx, &losses[step % 2]).with_context(where(step));
    if (s.ok() && step > 0) {
      s = finish_step(step - 1, count_of(step - 1), true, &losses[(step - 1) % 2]).with_context(where(step - 1));
      if (s.ok()) s = account(step - 1, losses[(step - 1) % 2]);
    }
    if (s.ok() && step + 1 < steps) s = gather_batch(real, order, step + 1, noise_rng);
    if (!s.ok()) return stop(s);
  }
  if (steps > 0) {
    const int64_t last = steps - 1;
    Status s = finish_step(last, count_of(last), false, &losses[last % 2]).with_context(where(last));
    if (s.ok()) s = account(last, losses[last % 2]);
    if (!s.ok()) return stop(s);
  }
  const GanEpochRecord record = epoch_means(sums, seen, epoch + 1,
                                            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  progress.finish({{"loss_D", record.loss_d}, {"loss_G", record.loss_g}, {"D(x)", record.d_real},
                   {"D(G(z))", record.d_fake}});
  epochs_done_ = epoch + 1;
  return record;
}

Status GanTrainer::generate(uint64_t stream, int64_t count, const Tensor& out) {
  RG_CHECK(out.numel() == count * g_.output_shape().numel(), "sample buffer " << out.shape().str());
  Rng rng(options_.seed, stream);
  Executor& generator = g_run_->executor();
  const int64_t size = g_.output_shape().numel();
  for (int64_t begin = 0; begin < count; begin += buffer_rows_) {
    const int64_t m = std::min(buffer_rows_, count - begin);
    const Tensor z = z_[0].rows(0, m);
    draw_noise(rng, m, z);
    RG_ASSIGN(const Tensor samples, generator.forward(z));
    float* dst = out.f32() + begin * size;
    for (int64_t i = 0; i < m * size; ++i) {
      const float v = samples.f32()[i];
      dst[i] = tanh_out_ ? 0.5f * (v + 1.0f) : v;
    }
  }
  return Status();
}

Status GanTrainer::sync_to_host() {
  if (!g_run_) return Status();  // not prepared: the host models are all there is
  RG_TRY(g_run_->sync_to_host());
  return d_run_->sync_to_host();
}

Status GanTrainer::sync_to_device() {
  if (!g_run_) return Status();
  RG_TRY(g_run_->sync_to_device());
  return d_run_->sync_to_device();
}

Status GanTrainer::save(const std::string& generator_path, const std::string& discriminator_path) {
  RG_TRY(sync_to_host());
  RG_TRY(save_checkpoint(generator_path, g_, &g_opt_, training_settings(options_, g_opt_, epochs_done_)));
  return save_checkpoint(discriminator_path, d_, &d_opt_, training_settings(options_, d_opt_, epochs_done_));
}

Status GanTrainer::resume_from(const Checkpoint& g_ck, const std::string& generator_path, const Checkpoint& d_ck,
                               const std::string& discriminator_path) {
  int64_t g_done = 0, d_done = 0;
  RG_TRY(restore_training_state(g_ck, generator_path, g_, g_opt_, &g_done));
  RG_TRY(restore_training_state(d_ck, discriminator_path, d_, d_opt_, &d_done));
  if (g_done != d_done) {
    return Status::error(generator_path + " and " + discriminator_path +
                         " have different epochs done: they are not from one run");
  }
  epochs_done_ = g_done;
  return sync_to_device();
}

}  // namespace rg
