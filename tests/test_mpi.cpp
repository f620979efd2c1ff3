// Data-parallel training over MPI. Runs under mpirun only (tests/meson.build starts it with 2
// and with 3 ranks on this machine); every rank runs every case, and each rank writes its own
// report. The reference in each case is one process trained on each rank alone.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "dist/communicator.h"
#include "dist/rank_rows.h"
#include "model_util.h"

namespace rg {
namespace {

Communicator* job = nullptr;  // this process's part of the mpirun job (main)

// A convolution and batch norm: the ranks' micro-batches are the single process's (batch
// statistics alike); the running statistics are averaged over the ranks instead.
const char* kConvBnCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\nstride = 2\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n[dense]\nunits = 10\n";

// 288 samples: 12 steps of 24, which 2 and 3 ranks share evenly.
const DataSplit& data() {
  static const DataSplit split = make_synthetic(288, 96, 10, 3);
  return split;
}

TrainOptions base_options() {
  TrainOptions options;
  options.epochs = 2;
  options.batch = 24;
  options.seed = 7;
  options.schedule.lr = 0.05;
  options.log = std::fopen("/dev/null", "w");
  return options;
}

struct TrainedRun {
  std::unique_ptr<Model> model;
  std::vector<EpochRecord> records;
  Status status;
};

TrainedRun train(const TrainOptions& options, const char* cfg, const Dataset& train_data = data().train) {
  TrainedRun run;
  run.model = build_model(options.seed, cfg);
  ThreadPool pool(1);
  Trainer trainer(*run.model, pool, options);
  run.status = trainer.prepare();
  if (!run.status.ok()) return run;
  auto records = trainer.fit(train_data, nullptr);
  run.status = records.status();
  if (records.ok()) run.records = records.take();
  return run;
}

// The same run on every rank together (each its share of each batch) and on this process alone
// (micro-batches of a rank's share: the same rows in each forward).
struct Pair {
  TrainedRun together, alone;
};
Pair train_both_ways(TrainOptions options, const char* cfg) {
  options.comm = job;
  Pair pair;
  pair.together = train(options, cfg);
  options.comm = nullptr;
  options.micro_batch = rank_rows(options.batch, 0, job->size()).count;
  pair.alone = train(options, cfg);
  EXPECT_TRUE(pair.together.status.ok()) << pair.together.status.message();
  EXPECT_TRUE(pair.alone.status.ok()) << pair.alone.status.message();
  return pair;
}

TEST(MpiCommunicator, SumsEveryRanksValues) {
  const int size = job->size(), scale = job->rank() + 1;
  std::vector<float> floats(1000);
  std::vector<double> doubles(7);
  for (size_t i = 0; i < floats.size(); ++i) floats[i] = static_cast<float>(scale * (i + 1));
  for (size_t i = 0; i < doubles.size(); ++i) doubles[i] = scale * (0.5 + static_cast<double>(i));
  ASSERT_TRUE(job->sum(floats.data(), static_cast<int64_t>(floats.size()), GradientWire::f32).ok());
  ASSERT_TRUE(job->sum(doubles.data(), static_cast<int64_t>(doubles.size())).ok());
  const int ranks_sum = size * (size + 1) / 2;  // 1 + 2 + ... + size
  for (size_t i = 0; i < floats.size(); ++i) ASSERT_EQ(floats[i], static_cast<float>(ranks_sum * (i + 1))) << i;
  for (size_t i = 0; i < doubles.size(); ++i) ASSERT_EQ(doubles[i], ranks_sum * (0.5 + static_cast<double>(i))) << i;
}

// f16 on the wire: values of 1e-6 (below f16's normal range, 6.1e-5) and of 1e3 in one call keep
// f16's relative precision, since they travel scaled by a power of two the ranks agree on.
TEST(MpiCommunicator, F16WireKeepsHalfPrecisionAtEveryMagnitude) {
  const int size = job->size();
  for (const double magnitude : {1e-6, 1.0, 1e3}) {
    std::vector<float> values(512);
    std::vector<double> exact(values.size(), 0.0);
    for (size_t i = 0; i < values.size(); ++i) {
      for (int r = 0; r < size; ++r) exact[i] += magnitude * (1.0 + 0.37 * static_cast<double>((i * 7 + r * 3) % 11)) * (i % 2 ? -1 : 1);
      const int r = job->rank();
      values[i] = static_cast<float>(magnitude * (1.0 + 0.37 * static_cast<double>((i * 7 + r * 3) % 11)) * (i % 2 ? -1 : 1));
    }
    ASSERT_TRUE(job->sum(values.data(), static_cast<int64_t>(values.size()), GradientWire::f16).ok());
    for (size_t i = 0; i < values.size(); ++i) {
      // Each value rounded to f16 (2^-11 relative) and each partial sum again: under 2^-9 for 3 ranks.
      ASSERT_NEAR(values[i], exact[i], std::fabs(exact[i]) * std::ldexp(1.0, -9)) << "magnitude " << magnitude << ", " << i;
    }
  }
}

// An Inf on one rank reaches every rank as it is (the update guard then stops training).
TEST(MpiCommunicator, F16WireCarriesAnInfUnchanged) {
  std::vector<float> values(16, 1.0f);
  if (job->rank() == job->size() - 1) values[5] = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(job->sum(values.data(), 16, GradientWire::f16).ok());
  EXPECT_TRUE(std::isinf(values[5]));
  EXPECT_EQ(values[4], static_cast<float>(job->size()));
}

TEST(MpiCommunicator, BroadcastsTheRootsBytesAndGathersEveryRanksText) {
  std::vector<uint8_t> bytes;
  if (job->is_root()) bytes = {3, 1, 4, 1, 5, 9, 2, 6};
  ASSERT_TRUE(job->broadcast(&bytes).ok());
  EXPECT_EQ(bytes, (std::vector<uint8_t>{3, 1, 4, 1, 5, 9, 2, 6}));
  auto texts = job->gather(std::string(static_cast<size_t>(job->rank()), 'x') + "rank " + std::to_string(job->rank()));
  ASSERT_TRUE(texts.ok()) << texts.status().message();
  if (!job->is_root()) {
    EXPECT_TRUE(texts.value().empty());
    return;
  }
  ASSERT_EQ(texts.value().size(), static_cast<size_t>(job->size()));
  for (int r = 0; r < job->size(); ++r) {
    EXPECT_EQ(texts.value()[static_cast<size_t>(r)], std::string(static_cast<size_t>(r), 'x') + "rank " + std::to_string(r));
  }
}

TEST(MpiCommunicator, AllOkIsFalseEverywhereWhenOneRankIsNot) {
  auto all = job->all_ok(true);
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all.value());
  auto one_failed = job->all_ok(job->rank() != job->size() - 1);
  ASSERT_TRUE(one_failed.ok());
  EXPECT_FALSE(one_failed.value());
}

// The acceptance: the ranks end with the weights of one process with the same batch
// (DESIGN.md's f32 tolerance), for SGD with momentum and for Adam, with dropout (masks follow
// each sample's place in the step), and with batch norm.
TEST(MpiTrain, RanksEndWithTheWeightsOfOneProcessWithTheSameBatch) {
  for (const char* cfg : {kSmallMlpCfg, kSmallDropoutMlpCfg, kConvBnCfg}) {
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
      TrainOptions options = base_options();
      options.optimizer.kind = kind;
      if (kind == OptimizerKind::adam) options.schedule.lr = 0.002;
      Pair runs = train_both_ways(options, cfg);
      if (!runs.together.status.ok() || !runs.alone.status.ok()) return;
      EXPECT_LE(worst_weight_error(*runs.together.model, *runs.alone.model), 1e-5) << cfg << optimizer_name(kind);
      ASSERT_EQ(runs.together.records.size(), 2u);
      EXPECT_NEAR(runs.together.records[1].loss, runs.alone.records[1].loss, 1e-5);
      EXPECT_EQ(runs.together.records[1].accuracy, runs.alone.records[1].accuracy);
      EXPECT_GT(runs.together.records[1].comm_seconds, 0.0);
    }
  }
}

// Mixed precision: the loss scaler decides on the summed gradients, alike on every rank.
TEST(MpiTrain, MixedPrecisionMatchesOneProcess) {
  TrainOptions options = base_options();
  options.precision = TrainPrecision::fp16;
  Pair runs = train_both_ways(options, kSmallMlpCfg);
  if (!runs.together.status.ok() || !runs.alone.status.ok()) return;
  EXPECT_LE(worst_weight_error(*runs.together.model, *runs.alone.model), 1e-5);
}

// int8 training: each rank's micro-batch takes its own dynamic scales and rounding noise, as
// the single process's micro-batch of the same rows does, so one step matches to float
// rounding. Over many steps int8 rounding turns those last bits into whole int8 steps (a
// weight one ulp off can round to the next level), so a whole run is compared by its loss.
TEST(MpiTrain, Int8TrainingMatchesOneProcessInAStepAndCloselyOverARun) {
  TrainOptions options = base_options();
  options.precision = TrainPrecision::fixed_point;
  for (int64_t samples : {int64_t{24}, int64_t{288}}) {
    TrainOptions run_options = options;
    run_options.epochs = samples == 24 ? 1 : 2;
    Pair runs;
    run_options.comm = job;
    const Dataset part = data().train.slice(0, samples, "part");
    runs.together = train(run_options, kSmallMlpCfg, part);
    run_options.comm = nullptr;
    run_options.micro_batch = rank_rows(options.batch, 0, job->size()).count;
    runs.alone = train(run_options, kSmallMlpCfg, part);
    ASSERT_TRUE(runs.together.status.ok() && runs.alone.status.ok());
    const double error = worst_weight_error(*runs.together.model, *runs.alone.model);
    if (samples == 24) EXPECT_LE(error, 1e-5);
    else EXPECT_NEAR(runs.together.records.back().loss, runs.alone.records.back().loss, 0.02);
  }
}

// f16 gradients on the wire: weights near the f32 run's (half precision in each step's
// gradient, not in the weights), and the accuracy of the same order.
TEST(MpiTrain, F16GradientsStayCloseToF32Gradients) {
  TrainOptions options = base_options();
  options.comm = job;
  TrainedRun f32 = train(options, kSmallMlpCfg);
  options.gradient_wire = GradientWire::f16;
  TrainedRun f16 = train(options, kSmallMlpCfg);
  ASSERT_TRUE(f32.status.ok() && f16.status.ok()) << f32.status.message() << f16.status.message();
  const double error = worst_weight_error(*f16.model, *f32.model);
  EXPECT_LE(error, 2e-3);
  EXPECT_GT(error, 0.0) << "f16 rounding should show";
  EXPECT_NEAR(f16.records[1].loss, f32.records[1].loss, 0.02);
}

// A batch smaller than the ranks: a rank with no rows in a step adds zeros.
TEST(MpiTrain, ABatchSmallerThanTheRanksLeavesSomeRanksWithoutRows) {
  TrainOptions options = base_options();
  options.epochs = 1;
  options.batch = job->size() - 1;
  options.comm = job;
  const Dataset few = data().train.slice(0, 30, "30 samples");
  TrainedRun together = train(options, kSmallMlpCfg, few);
  options.comm = nullptr;
  options.micro_batch = 1;
  TrainedRun alone = train(options, kSmallMlpCfg, few);
  ASSERT_TRUE(together.status.ok()) << together.status.message();
  ASSERT_TRUE(alone.status.ok()) << alone.status.message();
  EXPECT_LE(worst_weight_error(*together.model, *alone.model), 1e-5);
}

// Each rank scores its share; the sums are the whole set's.
TEST(MpiTrain, EvaluationOverTheRanksScoresEverySampleOnce) {
  TrainOptions options = base_options();
  auto model = build_model(options.seed, kSmallMlpCfg);
  ThreadPool pool(1);
  options.comm = job;
  Trainer together(*model, pool, options);
  ASSERT_TRUE(together.prepare().ok());
  options.comm = nullptr;
  Trainer alone(*model, pool, options);
  ASSERT_TRUE(alone.prepare().ok());
  const Dataset test = data().test.slice(0, 95, "95 samples");  // not a multiple of 2 or 3
  auto shared = together.evaluate(test);
  auto whole = alone.evaluate(test);
  ASSERT_TRUE(shared.ok() && whole.ok());
  EXPECT_EQ(shared.value().samples, 95);
  EXPECT_NEAR(shared.value().loss, whole.value().loss, 1e-9);
  EXPECT_EQ(shared.value().accuracy, whole.value().accuracy);
}

// Only rank 0 writes the checkpoint.
TEST(MpiTrain, OnlyTheRootWritesTheCheckpoint) {
  TrainOptions options = base_options();
  options.epochs = 1;
  options.comm = job;
  const std::string path = ::testing::TempDir() + "mpi-rank" + std::to_string(job->rank()) + ".ckpt";
  std::remove(path.c_str());
  options.checkpoint_path = path;
  TrainedRun run = train(options, kSmallMlpCfg);
  ASSERT_TRUE(run.status.ok()) << run.status.message();
  std::FILE* written = std::fopen(path.c_str(), "rb");
  EXPECT_EQ(written != nullptr, job->is_root());
  if (written != nullptr) std::fclose(written);
  std::remove(path.c_str());
}

// A rank whose data differ from rank 0's would train another model: every rank stops before
// the first step, the odd rank naming what differs.
TEST(MpiTrain, ARankWithOtherDataStopsEveryRank) {
  TrainOptions options = base_options();
  options.comm = job;
  const bool odd = job->rank() == job->size() - 1;
  TrainedRun run = train(options, kSmallMlpCfg, odd ? data().train.slice(0, 264, "264 samples") : data().train);
  ASSERT_FALSE(run.status.ok());
  EXPECT_TRUE(run.records.empty());
  if (odd) {
    EXPECT_NE(run.status.message().find("train samples is '264' here, '288' on rank 0"), std::string::npos)
        << run.status.message();
  } else {
    EXPECT_NE(run.status.message().find("another rank's data, model or options differ"), std::string::npos)
        << run.status.message();
  }
}

}  // namespace
}  // namespace rg

int main(int argc, char** argv) {
  auto joined = rg::Communicator::join_launched_job();
  if (!joined.ok() || joined.value() == nullptr) {
    std::fprintf(stderr, "test_mpi runs under mpirun (tests/meson.build starts it with 2 and 3 ranks)%s%s\n",
                 joined.ok() ? "" : ": ", joined.ok() ? "" : joined.status().message().c_str());
    return 1;
  }
  const std::unique_ptr<rg::Communicator> comm = joined.take();
  rg::job = comm.get();
  if (!comm->is_root()) {  // a report of its own (name-rankN.xml, set before GoogleTest opens it)
    std::string output = GTEST_FLAG_GET(output);
    const size_t dot = output.rfind(".xml");
    if (dot != std::string::npos) GTEST_FLAG_SET(output, output.insert(dot, "-rank" + std::to_string(comm->rank())));
  }
  testing::InitGoogleTest(&argc, argv);
  if (!comm->is_root()) {  // quiet on the terminal: the root's lines are the run's
    delete testing::UnitTest::GetInstance()->listeners().Release(
        testing::UnitTest::GetInstance()->listeners().default_result_printer());
  }
  return RUN_ALL_TESTS();
}
