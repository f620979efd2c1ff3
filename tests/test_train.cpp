// Training end to end through the library: learning happens, runs are bit-identical for a
// seed whatever the thread count, resume equals an uninterrupted run, checkpoints are
// verified before anything is restored.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "base/memory.h"
#include "base/output_file.h"
#include "base/serial.h"
#include "model_util.h"
#include "nn/layer_profile.h"
#include "train/trainer.h"

#if !defined(_WIN32)
#include <sys/stat.h>
#endif

namespace rg {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "retrograd_test_train_" + name;
}

struct TrainedRun {
  std::unique_ptr<Model> model;
  std::vector<EpochRecord> records;
  EvalResult test;
};

TrainOptions small_options(int64_t epochs) {
  TrainOptions options;
  options.epochs = epochs;
  options.batch = 32;
  options.seed = 7;
  options.log = std::fopen("/dev/null", "w");
  return options;
}


// Every stateful layer: batch norm (running statistics in checkpoints) and dropout (masks
// that follow the step), after a conv, a pool and a dense layer.
const char* kCnnCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\nstride = 2\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n[dropout]\nrate = 0.25\n[dense]\nunits = 16\n[batchnorm]\n[relu]\n[dropout]\nrate = "
    "0.5\n[dense]\nunits = 10\n";


const DataSplit& data() {
  static const DataSplit split = make_synthetic(1200, 400, 10, 3);
  return split;
}

TrainedRun train(TrainOptions options, int threads, const std::string& resume_path = "", const char* cfg = kSmallMlpCfg) {
  TrainedRun run;
  run.model = build_model(options.seed, cfg);
  ThreadPool pool(threads);
  Trainer trainer(*run.model, pool, options);
  EXPECT_TRUE(trainer.prepare().ok());
  if (!resume_path.empty()) {
    auto ck = read_checkpoint(resume_path);
    EXPECT_TRUE(ck.ok()) << ck.status().message();
    EXPECT_TRUE(trainer.resume_from(ck.value(), resume_path).ok());
  }
  auto records = trainer.fit(data().train, nullptr);
  EXPECT_TRUE(records.ok()) << records.status().message();
  run.records = records.value();
  run.test = trainer.evaluate(data().test).value();
  return run;
}


TEST(Train, LearnsSyntheticData) {
  TrainedRun run = train(small_options(2), 1);
  ASSERT_EQ(run.records.size(), 2u);
  EXPECT_LT(run.records[1].loss, run.records[0].loss);
  EXPECT_GT(run.test.accuracy, 0.9) << "an mlp should separate the synthetic classes";
}

TEST(Train, SameSeedSameThreadsGivesBitIdenticalWeights) {
  TrainedRun a = train(small_options(2), 2);
  TrainedRun b = train(small_options(2), 2);
  EXPECT_TRUE(same_weights(*a.model, *b.model));
}

TEST(Train, ThreadCountDoesNotChangeWeights) {
  TrainedRun a = train(small_options(1), 1);
  TrainedRun b = train(small_options(1), 2);
  TrainedRun c = train(small_options(1), 3);
  EXPECT_TRUE(same_weights(*a.model, *b.model));
  EXPECT_TRUE(same_weights(*a.model, *c.model));
}

TEST(Train, DifferentSeedGivesDifferentWeights) {
  TrainOptions other = small_options(1);
  other.seed = 8;
  TrainedRun a = train(small_options(1), 1);
  TrainedRun b = train(other, 1);
  EXPECT_FALSE(same_weights(*a.model, *b.model));
}

TEST(Train, ResumeAfterAnEpochEqualsOneRun) {
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
    const std::string path = temp_path(std::string("resume_") + optimizer_name(kind) + ".ckpt");
    TrainOptions whole = small_options(3);
    whole.optimizer.kind = kind;
    whole.schedule.kind = ScheduleKind::cosine;  // the rate depends on the step count: it must be restored
    TrainOptions first = whole;
    first.stop_after = 1;  // interrupted after epoch 1
    first.checkpoint_path = path;
    TrainedRun interrupted = train(first, 2);
    TrainOptions rest = whole;
    TrainedRun resumed = train(rest, 2, path);
    TrainedRun uninterrupted = train(whole, 2);
    EXPECT_EQ(resumed.records.size(), 2u);
    EXPECT_TRUE(same_weights(*resumed.model, *uninterrupted.model)) << optimizer_name(kind);
    std::remove(path.c_str());
  }
}

// The same with conv, batch norm and dropout: thread counts agree bit for bit, and a resumed
// run draws the same dropout masks and restores the running statistics.
TEST(Train, CnnWithBatchNormAndDropoutIsDeterministicAndResumes) {
  TrainOptions whole = small_options(2);
  whole.optimizer.kind = OptimizerKind::adam;
  TrainedRun one = train(whole, 1, "", kCnnCfg);
  TrainedRun two = train(whole, 2, "", kCnnCfg);
  EXPECT_TRUE(same_weights(*one.model, *two.model));
  EXPECT_GT(one.test.accuracy, 0.5) << "a small cnn should learn the synthetic classes";
  ASSERT_EQ(one.model->buffers().size(), 4u);

  const std::string path = temp_path("resume_cnn.ckpt");
  TrainOptions first = whole;
  first.stop_after = 1;
  first.checkpoint_path = path;
  train(first, 2, "", kCnnCfg);
  TrainedRun resumed = train(whole, 2, path, kCnnCfg);
  EXPECT_EQ(resumed.records.size(), 1u);
  EXPECT_TRUE(same_weights(*resumed.model, *one.model));
  std::remove(path.c_str());
}

// Fixed-point training (issue 34) keeps the engine's promises: the same bits whatever the thread
// count, a resumed run equal to one run (the gradient and stored-weight roundings are keyed by the
// optimizer's step), on the int8 kernels (w4a6g8-p2) and fake quantized with stored weights
// (w16a16g16-sr-fl10-sw), with per-channel weights and zero-point activations (w4a6g8-pc-zp), zero
// points on both operands of every product (w6a8e8-zpwae).
// Stored weights stay on their grid.
TEST(Train, FixedPointPrecisionsAreDeterministicAndResume) {
  for (const char* precision : {"w4a6g8-p2", "w16a16g16-sr-fl10-sw", "w4a6g8-pc-zp", "w6a8e8-zpwae"}) {
    const char* cfg = precision[1] == '4' ? kCnnCfg : kSmallMlpCfg;
    TrainOptions whole = small_options(2);
    ASSERT_TRUE(set_precision(precision, &whole).ok()) << precision;
    EXPECT_EQ(precision_name(whole), precision);
    TrainedRun one = train(whole, 1, "", cfg);
    TrainedRun two = train(whole, 2, "", cfg);
    EXPECT_TRUE(same_weights(*one.model, *two.model)) << precision;
    EXPECT_GT(one.test.accuracy, 0.3) << precision << " learns";

    const std::string path = temp_path("resume_fixed_point.ckpt");
    TrainOptions first = whole;
    first.stop_after = 1;
    first.checkpoint_path = path;
    train(first, 2, "", cfg);
    const auto checkpoint = read_checkpoint(path);
    ASSERT_TRUE(checkpoint.ok());
    EXPECT_EQ(checkpoint.value().settings.at("precision"), precision) << "the checkpoint names it";
    TrainedRun resumed = train(whole, 2, path, cfg);
    EXPECT_TRUE(same_weights(*resumed.model, *one.model)) << precision;
    std::remove(path.c_str());
  }
}

TEST(Train, StoredWeightsStayOnTheirGrid) {
  TrainOptions options = small_options(1);
  ASSERT_TRUE(set_precision("w8a8g8-fl6-sw", &options).ok());  // step 2^-6, |q| <= 127
  TrainedRun run = train(options, 2);
  for (Param* p : run.model->params()) {
    const float* v = p->value.data<float>();
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      const float q = v[i] * 64.0f;
      ASSERT_EQ(q, std::round(q)) << p->name << "[" << i << "] = " << v[i];
      ASSERT_LE(std::fabs(q), 127.0f) << p->name;
    }
  }
  // Per channel (-pc): each weight's channel (flat index mod its layer's outputs) on its own grid,
  // max_c / 7 at 4 bits; a bias on one grid.
  TrainOptions channels = small_options(1);
  ASSERT_TRUE(set_precision("w4a8g8-pc-sw", &channels).ok());
  TrainedRun channel_run = train(channels, 2);
  int weights_seen = 0;
  for (Param* p : channel_run.model->params()) {
    const int64_t count = p->channels > 0 ? p->channels : 1;
    weights_seen += p->channels > 0;
    const float* v = p->value.data<float>();
    for (int64_t c = 0; c < count; ++c) {
      float max_abs = 0;
      for (int64_t i = c; i < p->value.numel(); i += count) max_abs = std::max(max_abs, std::fabs(v[i]));
      for (int64_t i = c; i < p->value.numel(); i += count) {
        const double q = v[i] / (max_abs / 7.0);
        ASSERT_NEAR(q, std::round(q), 1e-4) << p->name << "[" << i << "]";
      }
    }
  }
  EXPECT_GT(weights_seen, 0);
  // Without -sw the f32 masters keep what the updates add.
  TrainOptions masters = small_options(1);
  ASSERT_TRUE(set_precision("w8a8g8-fl6", &masters).ok());
  TrainedRun free_run = train(masters, 2);
  bool off_grid = false;
  for (Param* p : free_run.model->params())
    for (int64_t i = 0; i < p->value.numel(); ++i) off_grid |= p->value.data<float>()[i] * 64.0f != std::round(p->value.data<float>()[i] * 64.0f);
  EXPECT_TRUE(off_grid);
}

// A layer's own precision (cfg `precision`, --layer-precision) runs in a run of another: in an
// fp32 run, a dense layer in w8a8g8-fl6-sw keeps its own weights on its grid and trains alike
// whatever the threads and across a resume; the other layer stays off any grid.
TEST(Train, ALayersOwnPrecisionRunsInsideTheRunsOwn) {
  const char* cfg =
      "[net]\ninput = 28x28x1\n[dense]\nunits = 32\nprecision = w8a8g8-fl6-sw\n[relu]\n[dense]\nunits = 10\n";
  TrainOptions whole = small_options(2);
  TrainedRun one = train(whole, 1, "", cfg);
  TrainedRun two = train(whole, 2, "", cfg);
  EXPECT_TRUE(same_weights(*one.model, *two.model));
  EXPECT_EQ(one.model->layers()[0]->own_precision().name, "w8a8g8-fl6-sw");
  const auto on_grid = [](const Param* p) {
    for (int64_t i = 0; i < p->value.numel(); ++i) {
      const float q = p->value.data<float>()[i] * 64.0f;
      if (q != std::round(q) || std::fabs(q) > 127.0f) return false;
    }
    return true;
  };
  for (const Param* p : one.model->layers()[0]->params()) EXPECT_TRUE(on_grid(p)) << p->name;
  for (const Param* p : one.model->layers()[2]->params()) EXPECT_FALSE(on_grid(p)) << p->name;

  const std::string path = temp_path("resume_own_precision.ckpt");
  TrainOptions first = whole;
  first.stop_after = 1;
  first.checkpoint_path = path;
  train(first, 2, "", cfg);
  TrainedRun resumed = train(whole, 2, path, cfg);
  EXPECT_TRUE(same_weights(*resumed.model, *one.model));
  std::remove(path.c_str());
  // The same layers all in fp32: other weights.
  TrainedRun plain = train(whole, 1, "", kSmallMlpCfg);
  EXPECT_FALSE(same_weights(*plain.model, *one.model));
}

// A snapshot kept in memory after epoch 1 (as the precision report's int8-qat takes it), started
// from by another trainer of another model of the same cfg, ends where the whole run ends: the
// weights, batch-norm statistics, optimizer state and epochs are all in it.
TEST(Train, StartingFromASnapshotTakenAfterAnEpochEqualsOneRun) {
  TrainOptions whole = small_options(2);
  whole.optimizer.kind = OptimizerKind::adam;
  whole.schedule.kind = ScheduleKind::cosine;
  Checkpoint after_first;
  Trainer* running = nullptr;
  TrainOptions snapshotting = whole;
  snapshotting.after_epoch = [&](int64_t epochs_done) -> Status {
    if (epochs_done != 1) return Status();
    RG_ASSIGN(after_first, running->snapshot());
    return Status();
  };
  ThreadPool pool(2);
  auto one = build_model(whole.seed, kCnnCfg);
  Trainer trainer(*one, pool, snapshotting);
  running = &trainer;
  ASSERT_TRUE(trainer.prepare().ok());
  ASSERT_TRUE(trainer.fit(data().train, nullptr).ok());
  ASSERT_EQ(after_first.settings.at("epochs_done"), "1");

  auto other = build_model(whole.seed, kCnnCfg);  // the seed gives the dropout streams
  for (Param* p : other->params()) p->value.fill_zero();  // the snapshot's weights replace these
  Trainer continued(*other, pool, whole);
  ASSERT_TRUE(continued.prepare().ok());
  ASSERT_TRUE(continued.start_from(after_first, "the snapshot").ok());
  EXPECT_EQ(continued.epochs_done(), 1);
  auto records = continued.fit(data().train, nullptr);
  ASSERT_TRUE(records.ok()) << records.status().message();
  EXPECT_EQ(records.value().size(), 1u);
  EXPECT_TRUE(same_weights(*other, *one));

  Checkpoint wrong = after_first;
  wrong.tensors.pop_back();
  const Status refused = continued.start_from(wrong, "a short snapshot");
  EXPECT_NE(refused.message().find("a short snapshot: holds"), std::string::npos) << refused.message();
}

TEST(Train, CheckpointRoundTripsSettings) {
  const std::string path = temp_path("settings.ckpt");
  TrainOptions options = small_options(1);
  options.optimizer.kind = OptimizerKind::sgd;
  options.optimizer.nesterov = true;
  options.optimizer.weight_decay = 5e-4;
  options.schedule.kind = ScheduleKind::step;
  options.schedule.lr = 0.0123;
  options.checkpoint_path = path;
  train(options, 1);
  auto ck = read_checkpoint(path);
  ASSERT_TRUE(ck.ok()) << ck.status().message();
  TrainOptions back;
  ASSERT_TRUE(options_from_checkpoint(ck.value(), path, &back).ok());
  EXPECT_EQ(back.batch, 32);
  EXPECT_EQ(back.seed, 7u);
  EXPECT_TRUE(back.optimizer.nesterov);
  EXPECT_DOUBLE_EQ(back.optimizer.weight_decay, 5e-4);
  EXPECT_DOUBLE_EQ(back.schedule.lr, 0.0123);
  EXPECT_EQ(back.schedule.kind, ScheduleKind::step);
  std::remove(path.c_str());
}

TEST(Checkpoint, EveryChangedByteIsRefused) {
  const std::string path = temp_path("corrupt.ckpt");
  TrainOptions options = small_options(1);
  options.checkpoint_path = path;
  train(options, 1);
  auto bytes = read_file_bytes(path);
  ASSERT_TRUE(bytes.ok());
  const std::vector<uint8_t> good = bytes.value();
  // Every byte of the header (magic, version, flags, payload size: 24) and of the checksum,
  // and bytes spread over the payload, each changed to another value.
  const std::string bad_path = temp_path("corrupt_copy.ckpt");
  std::vector<size_t> positions;
  for (size_t pos = 0; pos < 24; ++pos) positions.push_back(pos);
  for (size_t pos = 24; pos < good.size() - 4; pos += good.size() / 199 + 1) positions.push_back(pos);
  for (size_t pos = good.size() - 4; pos < good.size(); ++pos) positions.push_back(pos);
  for (size_t pos : positions) {
    std::vector<uint8_t> bad = good;
    bad[pos] ^= static_cast<uint8_t>(1 + pos % 255);
    ASSERT_TRUE(write_file_atomic(bad_path, bad).ok());
    auto ck = read_checkpoint(bad_path);
    EXPECT_FALSE(ck.ok()) << "byte " << pos << " changed and the checkpoint was accepted";
    if (!ck.ok()) {
      EXPECT_NE(ck.status().message().find(bad_path), std::string::npos) << ck.status().message();
    }
  }
  // Truncated at a few places, and with a byte appended.
  for (size_t size : {size_t{0}, size_t{5}, size_t{20}, good.size() / 2, good.size() - 1}) {
    ASSERT_TRUE(write_file_atomic(bad_path, std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(size))).ok());
    EXPECT_FALSE(read_checkpoint(bad_path).ok()) << "truncated to " << size;
  }
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  ASSERT_TRUE(write_file_atomic(bad_path, longer).ok());
  EXPECT_FALSE(read_checkpoint(bad_path).ok());
  EXPECT_TRUE(read_checkpoint(path).ok());
  std::remove(path.c_str());
  std::remove(bad_path.c_str());
}

// A payload size near 2^64: size + 4 wraps round to the bytes left (found by fuzz_checkpoint).
TEST(Checkpoint, APayloadSizeThatWrapsIsRefused) {
  ByteWriter file;
  file.raw("RETROGRD", 8);
  file.u32(kCheckpointVersion);
  file.u32(0);
  file.u64(~uint64_t{0} - 2);  // + 4 = 1 (mod 2^64)
  file.u8(0);
  auto ck = parse_checkpoint(file.bytes().data(), file.bytes().size(), "wrap.ckpt");
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.status().message().find("wrap.ckpt: the header says 18446744073709551613 payload bytes"), std::string::npos)
      << ck.status().message();
}

// A setting written twice (a hand-edited file: two `conv_algorithms`) is refused, not the last
// one taken: the header and CRC are right, only the payload repeats a key.
TEST(Checkpoint, ARepeatedSettingIsRefused) {
  ByteWriter payload;
  payload.str("preset:mlp");
  payload.str("[net]\ninput = 4\n[dense]\nunits = 2\n");
  payload.u32(2);
  for (const char* value : {"conv1=gemm", "conv1=winograd"}) {
    payload.str("conv_algorithms");
    payload.str(value);
  }
  payload.u32(0);
  ByteWriter file;
  file.raw("RETROGRD", 8);
  file.u32(kCheckpointVersion);
  file.u32(0);
  file.u64(payload.bytes().size());
  file.raw(payload.bytes().data(), payload.bytes().size());
  file.u32(crc32_of(payload.bytes().data(), payload.bytes().size()));
  auto ck = parse_checkpoint(file.bytes().data(), file.bytes().size(), "twice.ckpt");
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.status().message().find("twice.ckpt"), std::string::npos) << ck.status().message();
  EXPECT_NE(ck.status().message().find("the setting 'conv_algorithms' appears twice"), std::string::npos)
      << ck.status().message();
}

TEST(Checkpoint, WrongModelIsRefusedWithoutChangingIt) {
  const std::string path = temp_path("wrong_model.ckpt");
  TrainOptions options = small_options(1);
  options.checkpoint_path = path;
  train(options, 1);
  auto ck = read_checkpoint(path);
  ASSERT_TRUE(ck.ok());
  auto cfg = parse_cfg("[net]\ninput = 28x28x1\n[dense]\nunits = 33\n[relu]\n[dense]\nunits = 10\n", "other.cfg");
  ASSERT_TRUE(cfg.ok());
  auto other = Model::from_cfg(cfg.value());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(other.value()->init(1).ok());
  const float before = other.value()->params()[0]->value.f32()[0];
  const Status restored = restore_checkpoint(ck.value(), path, *other.value(), nullptr);
  EXPECT_FALSE(restored.ok());
  EXPECT_NE(restored.message().find("dense1.weight"), std::string::npos) << restored.message();
  EXPECT_EQ(other.value()->params()[0]->value.f32()[0], before);
  std::remove(path.c_str());
}

TEST(Checkpoint, MissingFileNamesThePath) {
  auto ck = read_checkpoint("/nonexistent/dir/model.ckpt");
  ASSERT_FALSE(ck.ok());
  EXPECT_NE(ck.status().message().find("/nonexistent/dir/model.ckpt"), std::string::npos);
}

TEST(Train, NanLossStopsWithAClearError) {
  TrainOptions options = small_options(1);
  options.schedule.lr = 1e30;  // diverges at once
  auto model = build_model(options.seed, kSmallMlpCfg);
  ThreadPool pool(1);
  Trainer trainer(*model, pool, options);
  ASSERT_TRUE(trainer.prepare().ok());
  auto records = trainer.fit(data().train, nullptr);
  ASSERT_FALSE(records.ok());
  const std::string message = records.status().message();
  EXPECT_NE(message.find("loss became"), std::string::npos) << message;
  // After the huge first update dense1's outputs are large but finite; dense2's overflow.
  EXPECT_NE(message.find("at epoch 1, step 2 (the first Inf or NaN: the output of dense2 (layer 3 of 3))"),
            std::string::npos) << message;
  EXPECT_NE(message.find("the last checkpoint is unchanged"), std::string::npos) << message;
}

// A finite loss whose gradient overflows, and a finite gradient whose update overflows
// (model_util.h): caught by the optimizer in the step it happens; the run stops there, saying
// which, and the checkpoint of before stays as it was.
TEST(Train, AnInfiniteGradientOrUpdateStopsTheRunNamingTheParam) {
  for (const bool gradient : {true, false}) expect_an_overflow_to_stop_training(small_options(1), gradient);
}

TEST(Train, ValidationSplitIsReportedPerEpoch) {
  auto split = split_validation(data().train, 0.25, 7);
  ASSERT_TRUE(split.ok()) << split.status().message();
  auto model = build_model(7, kSmallMlpCfg);
  ThreadPool pool(1);
  TrainOptions options = small_options(1);
  Trainer trainer(*model, pool, options);
  ASSERT_TRUE(trainer.prepare().ok());
  auto records = trainer.fit(split.value().train, &split.value().test);
  ASSERT_TRUE(records.ok());
  ASSERT_TRUE(records.value()[0].has_validation);
  EXPECT_GT(records.value()[0].val_accuracy, 0.5);
}

// Gradient accumulation: a step of 64 run as 4 micro-batches of 16 updates the weights as one
// batch of 64 does, up to float rounding; dropout masks follow each sample, not the split.
TEST(Train, MicroBatchesGiveTheWeightsOfOneBatch) {
  for (const char* cfg : {kSmallMlpCfg, kSmallDropoutMlpCfg}) {
    TrainOptions whole = small_options(1);
    whole.batch = 64;
    TrainOptions split = whole;
    split.micro_batch = 16;
    TrainedRun one = train(whole, 2, "", cfg);
    TrainedRun four = train(split, 2, "", cfg);
    EXPECT_LE(worst_weight_error(*four.model, *one.model), 1e-5) << cfg;
    EXPECT_FALSE(same_weights(*four.model, *one.model)) << "the sums run in another order: equal bits are unlikely";
    EXPECT_NEAR(four.records[0].loss, one.records[0].loss, 1e-5);
    EXPECT_EQ(four.records[0].accuracy, one.records[0].accuracy);
  }
}

// train --profile's clock (nn/layer_profile.h) changes nothing it times and counts each layer's
// phases: every row of every step forward, both gradients where the layer has weights, no input
// gradient for the first layer (its dx is never computed), nothing for a relu a batch norm ran
// (Model::fuses_relu_after: fp32 chains); chains, f16 storage, graph models.
TEST(LayerProfile, TimesEveryPhaseOfEveryLayerAndChangesNoWeight) {
  const struct {
    const char* cfg;
    TrainPrecision precision;
  } cases[] = {{kCnnCfg, TrainPrecision::fp32}, {kCnnCfg, TrainPrecision::fp16},
               {kSmallResidualCfg, TrainPrecision::fp32}};
  const int64_t rows = data().train.size();  // one epoch
  const int fwd = static_cast<int>(LayerPhase::forward), wg = static_cast<int>(LayerPhase::weight_grad),
            ig = static_cast<int>(LayerPhase::input_grad);
  for (const auto& c : cases) {
    TrainOptions plain = small_options(1);
    plain.precision = c.precision;
    TrainOptions timed = plain;
    LayerProfile profile;
    timed.profile = &profile;
    TrainedRun a = train(plain, 2, "", c.cfg), b = train(timed, 2, "", c.cfg);
    EXPECT_TRUE(same_weights(*a.model, *b.model)) << c.cfg;
    const auto& layers = b.model->layers();
    ASSERT_EQ(profile.entries().size(), layers.size()) << c.cfg;
    EXPECT_EQ(profile.steps(), (rows + 31) / 32) << "the optimizer's steps, the short last one too";
    for (size_t i = 0; i < layers.size(); ++i) {
      const LayerProfile::Entry& e = profile.entries()[i];
      const std::string where = layers[i]->name() + " of " + c.cfg;
      if (i > 0 && b.model->fuses_relu_after(i - 1)) {  // a relu run by the batch norm before it
        EXPECT_EQ(e.samples[fwd] + e.samples[ig], 0) << where;
        EXPECT_EQ(e.seconds[fwd] + e.seconds[ig], 0.0) << where;
        continue;
      }
      EXPECT_EQ(e.samples[fwd], rows) << where << ": not the test's or evaluation's rows";
      EXPECT_GT(e.seconds[fwd], 0.0) << where;
      EXPECT_EQ(e.samples[ig], i == 0 ? 0 : rows) << where;
      EXPECT_EQ(e.seconds[ig] > 0, i > 0) << where;
      EXPECT_EQ(e.seconds[wg] > 0, layers[i]->parameter_count() > 0) << where;
    }
  }
}

// With 2 threads each phase also gets the pool's regions inside it (ThreadPool::RegionTimes):
// their wall time within the phase's, their chunks' time within 2 x that, and the batch norms'
// forward (split over the threads) counts chunk work; the weights as without the profile.
TEST(LayerProfile, CountsEachPhasesParallelRegions) {
  TrainOptions plain = small_options(1);
  TrainOptions timed = plain;
  LayerProfile profile;
  timed.profile = &profile;
  TrainedRun a = train(plain, 2, "", kCnnCfg), b = train(timed, 2, "", kCnnCfg);
  EXPECT_TRUE(same_weights(*a.model, *b.model));
  EXPECT_EQ(profile.threads(), 2);
  const auto& layers = b.model->layers();
  ASSERT_EQ(profile.entries().size(), layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerProfile::Entry& e = profile.entries()[i];
    for (int p = 0; p < kLayerPhases; ++p) {
      const std::string where = layers[i]->name() + " " + layer_phase_name(static_cast<LayerPhase>(p));
      EXPECT_LE(e.region_seconds[p], e.seconds[p] + 1e-6) << where;
      EXPECT_LE(e.chunk_seconds[p], 2 * e.region_seconds[p] + 1e-6) << where;
      EXPECT_GE(e.chunk_seconds[p], 0.0) << where;
    }
    if (layers[i]->kind() == "batchnorm") {  // its sums and scaling split over the threads
      EXPECT_GT(e.chunk_seconds[static_cast<int>(LayerPhase::forward)], 0.0) << layers[i]->name();
    }
  }
}

// A micro-batch that does not divide the batch (64 as 24 + 24 + 16) and the last short step.
TEST(Train, UnevenMicroBatchesAccumulateEveryRow) {
  TrainOptions whole = small_options(1);
  whole.batch = 64;
  TrainOptions split = whole;
  split.micro_batch = 24;
  TrainedRun one = train(whole, 1);
  TrainedRun three = train(split, 1);
  EXPECT_LE(worst_weight_error(*three.model, *one.model), 1e-5);
}

}  // namespace
}  // namespace rg

namespace rg {
namespace {
TEST(Model, ParameterCountBeforeInitMatchesAllocatedParams) {
  auto model = build_model(1, kSmallMlpCfg);
  int64_t allocated = 0;
  for (Param* p : model->params()) allocated += p->value.numel();
  EXPECT_EQ(model->param_count(), allocated);
  EXPECT_EQ(allocated, 784 * 32 + 32 + 32 * 10 + 10);
}
}  // namespace
}  // namespace rg

// Issue 29, section 1: the trainer takes no label its model has no output for, in training,
// validation or evaluation, whatever the loss reads them as (class indices or one-hot rows),
// and refuses before the first step, the weights untouched; a model that reads no labels (an
// autoencoder) takes any.
namespace rg {
namespace {

const char* const kFourClassCfgs[] = {
    "[net]\ninput = 28x28x1\n[dense]\nunits = 4\n",                            // softmax against labels
    "[net]\ninput = 28x28x1\nloss = mse\ntarget = onehot\n[dense]\nunits = 4\n",  // one-hot rows
};

TEST(Labels, TrainingValidationAndEvaluationRefuseALabelWithoutAnOutput) {
  const DataSplit four = make_synthetic(64, 16, 4, 3);
  const DataSplit ten = make_synthetic(64, 16, 10, 3);
  Dataset validation = four.test;
  validation.labels = Tensor::zeros(Shape{validation.size()}, DType::i32, "validation labels").take();
  validation.labels.data<int32_t>()[11] = 4;
  for (const char* cfg : kFourClassCfgs) {
    SCOPED_TRACE(cfg);
    auto model = build_model(7, cfg);
    const auto untouched = build_model(7, cfg);
    ThreadPool pool(1);
    Trainer trainer(*model, pool, small_options(1));
    ASSERT_TRUE(trainer.prepare().ok());
    auto on_ten = trainer.fit(ten.train, nullptr);
    ASSERT_FALSE(on_ten.ok());
    EXPECT_NE(on_ten.status().message().find("synthetic train: sample "), std::string::npos) << on_ten.status().message();
    EXPECT_NE(on_ten.status().message().find("the model has 4 outputs (classes 0 to 3)"), std::string::npos);
    auto bad_validation = trainer.fit(four.train, &validation);
    ASSERT_FALSE(bad_validation.ok());
    EXPECT_NE(bad_validation.status().message().find("synthetic test: sample 11 has label 4"), std::string::npos)
        << bad_validation.status().message();
    EXPECT_EQ(trainer.epochs_done(), 0);
    EXPECT_TRUE(same_weights(*model, *untouched)) << "refused before the first step";
    auto scored = trainer.evaluate(ten.test);
    ASSERT_FALSE(scored.ok());
    EXPECT_NE(scored.status().message().find("the model has 4 outputs"), std::string::npos);
    EXPECT_TRUE(trainer.fit(four.train, &four.test).ok());
    EXPECT_TRUE(trainer.evaluate(four.test).ok());
  }
}

TEST(Labels, AnAutoencoderReadsNoLabelsAndTakesAny) {
  auto model = build_model(7, "[net]\ninput = 28x28x1\nloss = mse\n[dense]\nunits = 8\n[dense]\nunits = 784\n");
  ASSERT_EQ(model->target(), TargetKind::input);
  const DataSplit ten = make_synthetic(64, 16, 10, 3);
  EXPECT_TRUE(check_labels_for(*model, ten.test).ok());
  ThreadPool pool(1);
  Trainer trainer(*model, pool, small_options(1));
  ASSERT_TRUE(trainer.prepare().ok());
  EXPECT_TRUE(trainer.fit(ten.train, &ten.test).ok());
  EXPECT_TRUE(trainer.evaluate(ten.test).ok());
}

}  // namespace
}  // namespace rg

// Issue 29, section 2: a checkpoint identifies itself by its 24-byte header before anything
// else is read, and its size is checked against the file and against memory first.
namespace rg {
namespace {

// A file of `size` bytes whose header is a valid one claiming the rest as payload and checksum.
std::string checkpoint_header_file(const std::string& name, uint64_t size) {
  ByteWriter header;
  header.raw("RETROGRD", 8);
  header.u32(kCheckpointVersion);
  header.u32(0);
  header.u64(size - 24 - 4);
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(header.bytes().data()), 24);
  std::error_code error;
  std::filesystem::resize_file(path, size, error);  // sparse where the file system allows
  return error ? "" : path;
}

struct ScopedBudget {
  explicit ScopedBudget(int64_t bytes) : old(host_memory().budget_bytes()) { host_memory().set_budget(bytes); }
  ~ScopedBudget() { host_memory().set_budget(old); }
  int64_t old;
};

TEST(CheckpointHeader, APayloadClaimLargerThanTheFileIsRefusedFromTheHeader) {
  const std::string path = checkpoint_header_file("claims.ckpt", 1000);
  ASSERT_FALSE(path.empty());
  {  // the header claims 2^40 bytes of a 1000-byte file
    ByteWriter header;
    header.raw("RETROGRD", 8);
    header.u32(kCheckpointVersion);
    header.u32(0);
    header.u64(uint64_t{1} << 40);
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.write(reinterpret_cast<const char*>(header.bytes().data()), 24);
  }
  auto ck = read_checkpoint(path);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().message(), path + ": the header says 1099511627776 payload bytes + 4 checksum bytes, the file has "
                                          "976 after the header (truncated or appended to)");
  std::remove(path.c_str());
}

TEST(CheckpointHeader, AFileLargerThanTheBudgetIsRefusedBeforeItIsRead) {
  const std::string path = checkpoint_header_file("large.ckpt", 8 << 20);
  ASSERT_FALSE(path.empty());
  const ScopedBudget budget(host_memory().current_bytes() + (int64_t{1} << 20));
  auto ck = read_checkpoint(path);
  ASSERT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().message().rfind(path + ": reading the checkpoint (its 8.0 MiB and the tensors parsed out of them): "
                                                "16.0 MiB needed, more than the 1.0 MiB left of the ", 0), 0u)
      << ck.status().message();
  std::remove(path.c_str());
}

TEST(CheckpointHeader, AFileLargerThanTheMachineIsRefusedBeforeItIsRead) {
#if defined(_WIN32)
  GTEST_SKIP() << "NTFS files are not sparse unless asked: a TiB file would take the disk";
#else
  const std::string path = checkpoint_header_file("huge.ckpt", uint64_t{1} << 40);  // sparse: no disk taken
  if (path.empty()) GTEST_SKIP() << "this file system holds no sparse file of 1 TiB";
  auto ck = read_checkpoint(path);
  std::remove(path.c_str());
  ASSERT_FALSE(ck.ok());
  // A 64-bit process: "...(its 1.0 TiB and the tensors parsed out of them): 2.0 TiB needed, more than the
  // 22.6 GiB this machine has available (MemAvailable in /proc/meminfo)"; a 32-bit one: "...: 1.0 TiB, more than
  // this process can address".
  const std::string message = ck.status().message();
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_TRUE(message.find("1.0 TiB") != std::string::npos && message.find("more than") != std::string::npos) << message;
#endif
}

TEST(CheckpointHeader, NonFilesAreRefusedByWhatTheyAre) {
  const std::string folder = temp_path("folder.ckpt");
  std::filesystem::create_directories(folder);
  EXPECT_EQ(read_checkpoint(folder).status().message(), folder + " is a folder, not a checkpoint");
  std::filesystem::remove(folder);
#if !defined(_WIN32)
  EXPECT_EQ(read_checkpoint("/dev/urandom").status().message(), "/dev/urandom is a character device, not a checkpoint");
  EXPECT_EQ(read_checkpoint("/dev/zero").status().message(), "/dev/zero is a character device, not a checkpoint");
  const std::string fifo = temp_path("fifo.ckpt");
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_checkpoint(fifo).status().message(), fifo + " is a FIFO (named pipe), not a checkpoint");
  std::remove(fifo.c_str());
#endif
}

TEST(CheckpointHeader, ReadBytesAreWhatParseCheckpointTakes) {
  const std::string path = temp_path("bytes.ckpt");
  TrainOptions options = small_options(1);
  options.checkpoint_path = path;
  train(options, 1);
  auto bytes = read_checkpoint_bytes(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(bytes.value(), read_file_bytes(path).value());
  EXPECT_TRUE(parse_checkpoint(bytes.value().data(), bytes.value().size(), path).ok());
  std::remove(path.c_str());
}

}  // namespace
}  // namespace rg
