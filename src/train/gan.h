// GAN training with DCGAN's recipe (Radford et al. 2016, as PyTorch's example runs it).
// A generator G maps noise z [n, noise...] (standard normal) to samples; a discriminator D maps
// a sample to one logit. One step is one D update and then one G update:
//   D: BCE(D(x), 1) on a real batch plus BCE(D(G(z)), 0) on a fake one (real and fake in
//      separate batches, so D's batch norm sees each alone), then D's optimizer step;
//   G: BCE(D(G(z)), 1) through the updated D (the non-saturating loss), its gradient passed
//      from D's input to G's output, then G's optimizer step.
// Real images in [0, 1] are mapped to G's output range: [-1, 1] when G ends in tanh, [0, 1]
// when it ends in sigmoid. Deterministic: epoch e's order and noise come from (seed, e).
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "nn/executor.h"
#include "nn/finite_check.h"
#include "nn/model.h"
#include "train/step_runner.h"
#include "train/trainer.h"

namespace rg {

// Noise streams of GanTrainer::generate: the grid shown after each epoch, and the samples the
// judge scores (the same noise every epoch, so epochs compare).
constexpr uint64_t kFixedNoiseStream = 4000;
constexpr uint64_t kScoreNoiseStream = 4001;

// A GAN's two networks, built from a GAN cfg:
//   [gan] generator = NAME|FILE, discriminator = NAME|FILE: presets or cfg files, a relative path
//   taken from the GAN cfg's folder.
struct GanPair {
  std::unique_ptr<Model> generator, discriminator;
};
Result<GanPair> gan_pair_from_cfg(const CfgDocument& doc);

// Means over an epoch's steps.
struct GanEpochRecord {
  int64_t epoch = 0;  // 1-based
  double loss_d = 0;  // BCE(D(x), 1) + BCE(D(G(z)), 0)
  double loss_g = 0;  // BCE(D(G(z)), 1) after D's update
  double d_real = 0;  // mean sigmoid(D(x)): D's belief that real images are real
  double d_fake = 0;  // mean sigmoid(D(G(z))) before D's update
  double d_fake_after = 0;  // the same after D's update (what G trains against)
  double seconds = 0, samples_per_s = 0;
};

// Checks that G's samples fit D's input, that D gives one logit, and how G's output range maps
// to pixels; the error names what does not fit.
Status check_gan_pair(const Model& generator, const Model& discriminator);

// mean sigmoid(logit) over a batch of logits [n, 1]: D's belief that the batch is real.
double mean_probability(const Tensor& logits);

class GanTrainer {
 public:
  // options: epochs, batch, seed, the optimizer (one rule for both networks; DCGAN: Adam with
  // beta1 0.5) and schedule.lr (a constant rate), log and live_progress; data is recorded.
  GanTrainer(Model& generator, Model& discriminator, ThreadPool& pool, const TrainOptions& options);
  ~GanTrainer();

  // Allocates optimizer state and batch buffers: of min(batch, train_samples) rows (a batch
  // larger than the data never fills more; 0: the batch).
  Status prepare(int64_t train_samples = 0);
  // Restores both networks and their optimizers from checkpoints written by save() and read
  // with read_checkpoint (after prepare(); on an error the caller stops: one of the two may
  // have been restored).
  Status resume_from(const Checkpoint& generator, const std::string& generator_path, const Checkpoint& discriminator,
                     const std::string& discriminator_path);
  // One epoch over `real` (its images in [0, 1]); a loss that is not finite is an error.
  Result<GanEpochRecord> train_epoch(const Dataset& real);

  // `count` samples of G in inference mode (batch norm's running statistics) for the noise
  // drawn from (seed, stream), as pixels in [0, 1]: out [count, sample...] f32. The same
  // stream gives the same samples whatever the batch.
  Status generate(uint64_t stream, int64_t count, const Tensor& out);

  // Both networks with their optimizers' state and the epochs done, each atomically.
  Status save(const std::string& generator_path, const std::string& discriminator_path);

  int64_t epochs_done() const { return epochs_done_; }
  const TrainOptions& options() const { return options_; }
  // Times the two networks' layers in every training step (train --profile; nn/layer_profile.h),
  // or nothing (null, as at the start). options.profile is not read: one profile a network.
  void set_profiles(LayerProfile* generator, LayerProfile* discriminator) {
    g_profile_ = generator;
    d_profile_ = discriminator;
  }

 private:
  void draw_noise(Rng& rng, int64_t count, const Tensor& z) const;
  // One step's losses (sums over the batch) and D's mean beliefs.
  struct StepLosses {
    double real = 0, fake = 0, g = 0;
    double d_real = 0, d_fake = 0, d_fake_after = 0;
    std::string bad_update;  // NonFiniteUpdate::text of the first param the optimizers flagged, or ""
  };
  // StepLosses::bad_update from what D's and G's optimizers flagged: D's first, as D updates first.
  static std::string first_bad_update(const NonFiniteUpdate& d, const NonFiniteUpdate& g);
  // "<what> at epoch E, step S; training stopped (...); the saved networks are unchanged"
  // (epoch and step counted from 0).
  static Status training_stopped(const std::string& what, int64_t epoch, int64_t step);
  // The D update and the G update of one batch of real images x and noise z, through the two
  // networks' step runners (train/step_runner.h: the CPU models or the device models alike):
  // queue_step queues step `step` whole (on a device it waits only for the step before's
  // optimizer flags, which ClOptimizer::step takes: work queued is left), finish_step settles it: the
  // losses, D's beliefs and the optimizers' flags in *out. train_epoch settles a step after
  // queueing the next (`next_queued`), so a device always has a step's work ahead of it.
  Status queue_step(int64_t step, const Tensor& x, const Tensor& z, LayerContext& ctx, StepLosses* out);
  Status finish_step(int64_t step, int64_t count, bool next_queued, StepLosses* out);
  // Batch `step` of the epoch's order into real_[step % 2] (mapped to G's range) and its noise
  // into z_[step % 2]: the other pair may still be read by the step in flight.
  Status gather_batch(const Dataset& real, const std::vector<int32_t>& order, int64_t step, Rng& noise_rng);

  // [batch, 1] on the host: D's three outputs of a step read back (real, fake, fake after D's
  // update), for two steps in turn; declared before the runners, whose reads end before they go.
  static constexpr size_t kLossesAStep = 3;
  Tensor logits_[2][kLossesAStep];
  Tensor d_output_;  // [batch, 1]: D's output gradient on the host (the loss on the CPU)
  // The runners of G and D: CpuStepRunner, or on an OpenCL device (options.device;
  // gan_device.cpp) both networks and their optimizers there, G's samples feeding D there, the
  // losses there too (unless loss_on_host) and only the logits and the rows' losses read back.
  std::unique_ptr<StepRunner> g_run_, d_run_;
  LayerProfile* g_profile_ = nullptr;  // set_profiles
  LayerProfile* d_profile_ = nullptr;
  std::unique_ptr<ocl::ClModel> g_cl_, d_cl_;
  std::unique_ptr<ocl::ClOptimizer> g_cl_opt_, d_cl_opt_;
  Tensor samples_;               // [batch, G's output...]: a device G's samples read back
  Status prepare_device(const LayerContext& inference);
  Status sync_to_host();
  Status sync_to_device();

 public:
  // On a device: the copies both networks made so far.
  ocl::TransferCounts device_transfers() const;

  Model& g_;
  Model& d_;
  ThreadPool& pool_;
  TrainOptions options_;
  Optimizer g_opt_, d_opt_;
  bool tanh_out_ = false;       // G's samples in [-1, 1] (else [0, 1])
  Tensor real_[2], labels_, z_[2];  // [batch, ...] buffers: a step's pair, the next one's
  Tensor ones_, zeros_;         // BCE targets [batch, 1]
  int64_t epochs_done_ = 0;
  int64_t buffer_rows_ = 0;  // rows of every batch buffer: min(batch, the training samples)
};

}  // namespace rg
