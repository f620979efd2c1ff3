// The memory planner's figures against what the counted allocator really sees: reserve() and
// prepare() allocate exactly what Model::reserved_bytes and Trainer::prepared_bytes say, a
// planned run peaks at its prediction, and the plan picks micro-batches and streaming as the
// budget demands. Streamed datasets give the same batches as in-memory ones.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "base/memory.h"
#include "data/batch_prefetch.h"
#include "data/record_file.h"
#include "model_util.h"
#include "train/memory_plan.h"

namespace rg {
namespace {

const char* kMlpCfg = "[net]\ninput = 28x28x1\n[dense]\nunits = 32\n[relu]\n[dense]\nunits = 10\n";
const char* kCnnCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\npad = 1\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n[dropout]\nrate = 0.25\n[dense]\nunits = 16\n[relu]\n[dense]\nunits = 10\n";
const char* kRclCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\npad = 1\n[rcl]\nfilters = 4\nsteps = 2\n[maxpool]\nsize "
    "= 2\n[global_avgpool]\n[dense]\nunits = 10\n";
const char* kAutoencoderCfg =
    "[net]\ninput = 28x28x1\nloss = mse\ntarget = input\n[dense]\nunits = 16\n[relu]\n[dense]\nunits = 784\n";

struct Case {
  const char* cfg;
  TrainPrecision precision;
  OptimizerKind optimizer;
};

TEST(MemoryPlan, PrepareAllocatesWhatItPredicts) {
  const Case cases[] = {{kMlpCfg, TrainPrecision::fp32, OptimizerKind::sgd},
                        {kCnnCfg, TrainPrecision::fp32, OptimizerKind::adam},
                        {kCnnCfg, TrainPrecision::fp16, OptimizerKind::sgd},
                        {kCnnCfg, TrainPrecision::int8_qat, OptimizerKind::sgd},
                        {kRclCfg, TrainPrecision::fp32, OptimizerKind::sgd},
                        {kAutoencoderCfg, TrainPrecision::fp32, OptimizerKind::adam}};
  for (const Case& c : cases) {
    for (int64_t rows : {1, 7, 64}) {
      for (bool ahead : {false, true}) {
        auto model = build_model(1, c.cfg);
        TrainOptions options;
        options.batch = 64;
        options.micro_batch = rows;
        options.precision = c.precision;
        options.optimizer.kind = c.optimizer;
        options.read_ahead = ahead;
        ThreadPool pool(1);
        const int64_t predicted = Trainer::prepared_bytes(*model, options, rows);
        const int64_t before = host_memory().current_bytes();
        {
          Trainer trainer(*model, pool, options);
          ASSERT_TRUE(trainer.prepare().ok());
          EXPECT_EQ(host_memory().current_bytes() - before, predicted)
              << c.cfg << " precision " << train_precision_name(c.precision) << " rows " << rows;
        }
      }
    }
  }
}

// A run's counted peak equals the plan's prediction: nothing allocates while training that the
// plan did not count.
TEST(MemoryPlan, TrainingPeaksAtThePrediction) {
  const DataSplit data = make_synthetic(300, 100, 10, 5);
  for (const char* cfg : {kMlpCfg, kCnnCfg, kRclCfg}) {
    auto model = build_model(1, cfg);
    TrainOptions options;
    options.batch = 50;
    options.epochs = 1;
    options.log = std::fopen("/dev/null", "w");
    auto plan = plan_memory(*model, options, {&data.train, &data.test}, 0, StreamChoice::never);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    // The data is already allocated: the rest of the prediction is what training adds.
    const int64_t base = host_memory().current_bytes();
    host_memory().reset_peak();
    ThreadPool pool(2);
    {
      Trainer trainer(*model, pool, options);
      ASSERT_TRUE(trainer.prepare().ok());
      auto fitted = trainer.fit(data.train, nullptr);
      ASSERT_TRUE(fitted.ok()) << fitted.status().message();
      auto scored = trainer.evaluate(data.test);
      ASSERT_TRUE(scored.ok()) << scored.status().message();
    }
    EXPECT_EQ(host_memory().peak_bytes() - base, plan.value().training) << cfg;
    std::fclose(options.log);
  }
}

}  // namespace
}  // namespace rg
