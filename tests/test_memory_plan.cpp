// The memory planner's figures against what the counted allocator really sees: reserve() and
// prepare() allocate exactly what Model::reserved_bytes and Trainer::prepared_bytes say, a
// planned run peaks at its prediction, and the plan picks micro-batches and streaming as the
// budget demands. Streamed datasets give the same batches as in-memory ones.
#include <gtest/gtest.h>

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/files.h"
#include "base/memory.h"
#include "data/batch_prefetch.h"
#include "data/generated_images.h"
#include "data/record_file.h"
#include "model_util.h"
#include "portable.h"
#include "train/checkpoint.h"
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
                        {kAutoencoderCfg, TrainPrecision::fp32, OptimizerKind::adam},
                        {kSmallResidualCfg, TrainPrecision::fp32, OptimizerKind::sgd}};  // a graph model
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
    auto plan = plan_memory(*model, options, RunData{&data.train, nullptr, &data.test}, 0, StreamChoice::never);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    // The data is already allocated: the rest of the prediction is what training adds (with
    // the epoch's and the scoring's visiting orders, counted with the data).
    const int64_t base = host_memory().current_bytes();
    const int64_t orders = std::max(data.train.size(), data.test.size()) * 4;
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
    EXPECT_EQ(host_memory().peak_bytes() - base, plan.value().training + orders) << cfg;
    EXPECT_EQ(plan.value().data, data.train.memory_bytes() + data.test.memory_bytes() + orders);
    std::fclose(options.log);
  }
}

// A new empty folder for this run.
std::string temp_folder(const std::string& name) {
  return make_temp_folder("retrograd_memory_plan_" + name + "_");
}

// A file's bytes gzipped into `to`.
void gzip_file(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gzFile gz = gzopen(to.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  ASSERT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

// The same rows through two datasets, as f32 batches and labels.
void expect_same_rows(const Dataset& a, const Dataset& b) {
  ASSERT_EQ(a.size(), b.size());
  const int64_t row = a.sample_shape.numel();
  std::vector<int32_t> index = {0, static_cast<int32_t>(a.size() - 1), 3, 3, 1};
  std::vector<float> xa(index.size() * row), xb(index.size() * row);
  std::vector<int32_t> la(index.size()), lb(index.size());
  ASSERT_TRUE(a.gather(index.data(), static_cast<int64_t>(index.size()), xa.data(), la.data()).ok());
  ASSERT_TRUE(b.gather(index.data(), static_cast<int64_t>(index.size()), xb.data(), lb.data()).ok());
  EXPECT_EQ(xa, xb);
  EXPECT_EQ(la, lb);
}

// An IDX pair written by write_idx_pair reads back the generated images, in memory and
// streamed, raw and gzipped (inflated once into the cache folder).
TEST(Streaming, IdxFilesStreamTheSameSamples) {
  const std::string dir = temp_folder("idx");
  const ScopedEnv cache("RETROGRAD_CACHE", dir + "/cache");
  const Dataset made = generated_images("made", Shape{28, 28, 1}, 50, 10, 3, 1);
  ASSERT_TRUE(write_idx_pair(made, dir + "/images", dir + "/labels").ok());
  auto in_memory = load_idx_pair(dir + "/images", dir + "/labels", "in memory");
  ASSERT_TRUE(in_memory.ok()) << in_memory.status().message();
  auto streamed = open_idx_pair_streamed(dir + "/images", dir + "/labels", "streamed");
  ASSERT_TRUE(streamed.ok()) << streamed.status().message();
  EXPECT_FALSE(streamed.value().in_memory());
  expect_same_rows(in_memory.value(), made);
  expect_same_rows(streamed.value(), made);

  gzip_file(dir + "/images", dir + "/images.gz");
  auto inflated = open_idx_pair_streamed(dir + "/images.gz", dir + "/labels", "gzipped");
  ASSERT_TRUE(inflated.ok()) << inflated.status().message();
  expect_same_rows(inflated.value(), made);
  auto cached = list_folder(dir + "/cache");
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached.value().size(), 1u) << "one inflated copy, made once";
  auto again = open_idx_pair_streamed(dir + "/images.gz", dir + "/labels", "gzipped again");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(list_folder(dir + "/cache").value().size(), 1u);

  // Slices and validation splits of a streamed set read the right records.
  expect_same_rows(streamed.value().slice(10, 30, "slice"), made.slice(10, 30, "slice"));
  auto split_streamed = split_validation(streamed.value(), 0.2, 9);
  auto split_memory = split_validation(in_memory.value(), 0.2, 9);
  ASSERT_TRUE(split_streamed.ok() && split_memory.ok());
  expect_same_rows(split_streamed.value().test, split_memory.value().test);
  expect_same_rows(split_streamed.value().train.slice(5, 20, "s"), split_memory.value().train.slice(5, 20, "s"));
  auto back = streamed.value().in_memory_copy();
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back.value().in_memory());
  expect_same_rows(back.value(), made);
}

// A cut-off image file is refused when opened, naming the file; a corrupt gzip one too, and
// no half-inflated copy is left in the cache.
TEST(Streaming, BadFilesAreNamed) {
  const std::string dir = temp_folder("bad");
  const ScopedEnv cache("RETROGRAD_CACHE", dir + "/cache");
  const Dataset made = generated_images("made", Shape{28, 28, 1}, 20, 10, 3, 1);
  ASSERT_TRUE(write_idx_pair(made, dir + "/images", dir + "/labels").ok());
  std::filesystem::resize_file(dir + "/images", 16 + 19 * 784 + 100);
  auto cut = open_idx_pair_streamed(dir + "/images", dir + "/labels", "cut");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find(dir + "/images"), std::string::npos) << cut.status().message();
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status().message();

  auto short_records = RecordFile::open(dir + "/images", 16, 784, 20);
  ASSERT_FALSE(short_records.ok());
  EXPECT_NE(short_records.status().message().find("truncated"), std::string::npos);

  std::ofstream(dir + "/broken.gz", std::ios::binary) << std::string("\x1f\x8b\x08\x00garbage", 12);
  auto broken = open_idx_pair_streamed(dir + "/broken.gz", dir + "/labels", "broken");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("broken.gz"), std::string::npos) << broken.status().message();
  auto left = list_folder(dir + "/cache");
  EXPECT_TRUE(!left.ok() || left.value().empty()) << "no partial copy stays";
}

// Training on generated images read one micro-batch ahead on the prefetch thread gives the
// weights of training on the same images held in memory.
TEST(Streaming, ReadAheadTrainsAsInMemory) {
  const Dataset streamed = generated_images("train", Shape{28, 28, 1}, 200, 10, 4, 1);
  auto in_memory = streamed.in_memory_copy();
  ASSERT_TRUE(in_memory.ok());
  std::unique_ptr<Model> models[2];
  for (int i = 0; i < 2; ++i) {
    models[i] = build_model(2, kCnnCfg);
    TrainOptions options;
    options.batch = 32;
    options.micro_batch = 12;
    options.epochs = 2;
    options.read_ahead = i == 0;
    options.log = std::fopen("/dev/null", "w");
    ThreadPool pool(2);
    Trainer trainer(*models[i], pool, options);
    ASSERT_TRUE(trainer.prepare().ok());
    auto fitted = trainer.fit(i == 0 ? streamed : in_memory.value(), nullptr);
    ASSERT_TRUE(fitted.ok()) << fitted.status().message();
    std::fclose(options.log);
  }
  EXPECT_TRUE(same_weights(*models[0], *models[1]));
}

// The plan: the whole batch when it fits, micro-batches when it does not, streaming when the
// data is what does not fit, and an error naming what one sample needs when nothing fits.
TEST(MemoryPlan, BudgetPicksMicroBatchesAndStreaming) {
  auto model = build_model(1, kCnnCfg);
  TrainOptions options;
  options.batch = 256;
  const Dataset streamed = generated_images("train", Shape{28, 28, 1}, 6000, 10, 4, 1);
  const RunData data{&streamed};

  auto free_plan = plan_memory(*model, options, data, 0, StreamChoice::automatic);
  ASSERT_TRUE(free_plan.ok());
  EXPECT_EQ(free_plan.value().micro_batch, 256);
  EXPECT_FALSE(free_plan.value().stream);
  const int64_t whole = free_plan.value().predicted_peak();
  EXPECT_EQ(whole, free_plan.value().unplanned_peak);

  // Room for the data in memory but not the whole batch: micro-batches, shared out evenly.
  auto tight = plan_memory(*model, options, data, whole - 1, StreamChoice::never);
  ASSERT_TRUE(tight.ok()) << tight.status().message();
  EXPECT_EQ(tight.value().accumulation_steps, 2);
  EXPECT_EQ(tight.value().micro_batch, 128);
  EXPECT_LE(tight.value().predicted_peak(), whole - 1);

  // Less than the data: it streams, and the batch may fit again.
  const int64_t budget = whole - streamed.sample_bytes() / 2;
  auto streaming = plan_memory(*model, options, data, budget, StreamChoice::automatic);
  ASSERT_TRUE(streaming.ok()) << streaming.status().message();
  EXPECT_TRUE(streaming.value().stream);
  EXPECT_LE(streaming.value().predicted_peak(), budget);

  auto none = plan_memory(*model, options, data, 64 * 1024, StreamChoice::automatic);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("one sample"), std::string::npos) << none.status().message();

  const Dataset in_memory = make_synthetic(10, 10, 10, 1).train;
  auto refused = plan_memory(*model, options, RunData{&in_memory}, 0, StreamChoice::always);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("cannot be streamed"), std::string::npos);
}

// The catdog preset: the seed slides' network, planned under 2 GB at batch 32.
TEST(MemoryPlan, CatdogFitsTwoGigabytesInMicroBatches) {
  auto cfg = load_model_cfg("catdog");
  ASSERT_TRUE(cfg.ok());
  auto model = Model::from_cfg(cfg.value());
  ASSERT_TRUE(model.ok()) << model.status().message();
  int convs = 0, pools = 0, dense = 0;
  for (const auto& layer : model.value()->layers()) {
    convs += layer->kind() == "conv";
    pools += layer->kind() == "maxpool";
    dense += layer->kind() == "dense";
  }
  EXPECT_EQ(convs, 15);
  EXPECT_EQ(pools, 6);
  EXPECT_EQ(dense, 3);
  EXPECT_NEAR(static_cast<double>(model.value()->param_count()), 21e6, 0.5e6);
  EXPECT_EQ(model.value()->input_shape(), (Shape{256, 256, 3}));
  ASSERT_TRUE(model.value()->init(1).ok());
  TrainOptions options;
  options.batch = 32;
  const Dataset images = generated_images("train", Shape{256, 256, 3}, 64, 2, 1, 1);
  auto plan = plan_memory(*model.value(), options, RunData{&images}, int64_t{2} << 30, StreamChoice::automatic);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_GT(plan.value().accumulation_steps, 1);
  EXPECT_LE(plan.value().predicted_peak(), int64_t{2} << 30);
  EXPECT_GT(plan.value().unplanned_peak, int64_t{2} << 30) << "batch 32 at once does not fit 2 GB";
}

// Issue 29, section 3: plans checked against the machine; buffers sized by the data; a
// checkpoint's loading counted so a run resumes under the budget it was planned under.

// The model of `cfg_text` with its shapes known and nothing allocated (Model::init not run).
std::unique_ptr<Model> unallocated_model(const char* cfg_text) {
  auto cfg = parse_cfg(cfg_text, "test.cfg");
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto model = Model::from_cfg(cfg.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.take();
}

TEST(MachineCheck, APlanOverTheAvailableMemoryIsRefusedWithBothFiguresAndABudgetThatFits) {
  auto model = build_model(1, kCnnCfg);
  TrainOptions options;
  options.batch = 512;
  const Dataset streamed = generated_images("train", Shape{28, 28, 1}, 6000, 10, 4, 1);
  const RunData data{&streamed};
  auto plan = plan_memory(*model, options, data, 0, StreamChoice::automatic);
  ASSERT_TRUE(plan.ok());
  const int64_t peak = plan.value().predicted_peak();

  EXPECT_TRUE(check_plan_fits(*model, options, data, StreamChoice::automatic, plan.value(), {peak, "test"}).ok());
  EXPECT_TRUE(check_plan_fits(*model, options, data, StreamChoice::automatic, plan.value(), {0, "unknown"}).ok());

  const AvailableMemory short_of_it{peak / 2, "RETROGRAD_MEM_AVAILABLE"};
  const Status over = check_plan_fits(*model, options, data, StreamChoice::automatic, plan.value(), short_of_it);
  ASSERT_FALSE(over.ok());
  const std::string& text = over.message();
  for (const std::string& part : {"predicted peak, " + format_bytes(peak), format_bytes(peak / 2) + " available",
                                  std::string("(RETROGRAD_MEM_AVAILABLE)"),
                                  "--mem-budget " + std::to_string((peak / 2) >> 20) + "M runs it", std::string("--batch ")}) {
    EXPECT_NE(text.find(part), std::string::npos) << "lacks '" << part << "': " << text;
  }
  // The budget it suggests does fit: planned within it, the run stays under the memory available.
  auto suggested = plan_memory(*model, options, data, ((peak / 2) >> 20) << 20, StreamChoice::automatic);
  ASSERT_TRUE(suggested.ok()) << suggested.status().message();
  EXPECT_LE(suggested.value().predicted_peak(), peak / 2);

  // Not even one sample fits: no budget to suggest, and it says so.
  const Status hopeless =
      check_plan_fits(*model, options, data, StreamChoice::automatic, plan.value(), {64 * 1024, "test"});
  ASSERT_FALSE(hopeless.ok());
  EXPECT_NE(hopeless.message().find("not even one sample at a time fits"), std::string::npos) << hopeless.message();
}

// Samples held in memory (opened without a budget) that alone overflow the memory available:
// the refusal points at streaming them, which the plan could not do, rather than at the model.
TEST(MachineCheck, DataThatAloneOverflowsPointsAtStreaming) {
  auto model = build_model(1, kCnnCfg);
  TrainOptions options;
  options.batch = 8;  // buffers well under the data's size
  const Dataset in_memory = make_synthetic(6000, 100, 10, 1).train;  // 4.5 MiB of u8 samples
  const RunData data{&in_memory};
  auto plan = plan_memory(*model, options, data, 0, StreamChoice::automatic);
  ASSERT_TRUE(plan.ok());
  const MemoryPlan& p = plan.value();
  const AvailableMemory rest_fits{p.predicted_peak() - p.data + (64 << 10), "test"};
  const Status refused = check_plan_fits(*model, options, data, StreamChoice::automatic, p, rest_fits);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("the data alone takes " + format_bytes(p.data)), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("--stream yes"), std::string::npos) << refused.message();
}

TEST(MachineCheck, ABudgetAboveTheAvailableMemoryIsObeyedWithAWarning) {
  EXPECT_EQ(budget_above_available(int64_t{1} << 30, {int64_t{2} << 30, "test"}), "");
  EXPECT_EQ(budget_above_available(int64_t{1} << 30, {0, "unknown"}), "");
  const std::string warning = budget_above_available(int64_t{4} << 30, {int64_t{1} << 30, "MemAvailable in /proc/meminfo"});
  EXPECT_NE(warning.find("--mem-budget 4.0 GiB is more than the 1.0 GiB available (MemAvailable in /proc/meminfo)"),
            std::string::npos) << warning;
}

// The plan works from the model's shapes (the optimizer's state from the parameter count), so it
// can be made before Model::init allocates anything: the same figures as after.
TEST(MachineCheck, APlanIsMadeBeforeTheParametersAreAllocated) {
  TrainOptions options;
  options.optimizer.kind = OptimizerKind::adam;
  auto small = unallocated_model(kCnnCfg);
  const Dataset data = make_synthetic(100, 50, 10, 1).train;
  auto planned_before = plan_memory(*small, options, RunData{&data}, 0, StreamChoice::never);
  ASSERT_TRUE(small->init(1).ok());
  auto planned_after = plan_memory(*small, options, RunData{&data}, 0, StreamChoice::never);
  ASSERT_TRUE(planned_before.ok() && planned_after.ok());
  EXPECT_EQ(planned_before.value().predicted_peak(), planned_after.value().predicted_peak());
  EXPECT_EQ(planned_before.value().training, planned_after.value().training);
}

TEST(MachineCheck, TheAvailableFigureCanBeStatedForTests) {
  {
    const ScopedEnv stated("RETROGRAD_MEM_AVAILABLE", "123M");
    const AvailableMemory available = available_host_memory();
    EXPECT_LE(available.bytes, int64_t{123} << 20);  // a limited address space may be lower still
    if (available.bytes == int64_t{123} << 20) {
      EXPECT_EQ(available.source, "RETROGRAD_MEM_AVAILABLE");
    }
  }
  {
    const ScopedEnv nonsense("RETROGRAD_MEM_AVAILABLE", "lots");
    EXPECT_NE(available_host_memory().source, "RETROGRAD_MEM_AVAILABLE") << "not a size: the system's figure stands";
  }
#if defined(__linux__)
  EXPECT_GT(available_host_memory().bytes, 0) << "MemAvailable is read";
#endif
}

TEST(MachineCheck, BuffersAreSizedByTheSamplesNotAHugeBatch) {
  auto model = build_model(1, kMlpCfg);
  const DataSplit data = make_synthetic(300, 100, 10, 5);
  const RunData run{&data.train, nullptr, &data.test};
  EXPECT_EQ(max_rows(1 << 20, run), 300);
  EXPECT_EQ(max_rows(64, run), 64);
  EXPECT_EQ(max_rows(1 << 20, RunData{nullptr, nullptr, &data.test}), 100);
  TrainOptions options;
  options.batch = 1 << 20;
  auto plan = plan_memory(*model, options, run, 0, StreamChoice::never);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan.value().micro_batch, 300);
  EXPECT_EQ(plan.value().accumulation_steps, 1);
  EXPECT_EQ(plan.value().training, Trainer::prepared_bytes(*model, options, 300));
  EXPECT_NE(describe_plan(plan.value()).find("buffers for 300 samples"), std::string::npos);
  // Under a budget the rows a batch can fill are shared out, not the batch asked for.
  auto tight = plan_memory(*model, options, run, plan.value().predicted_peak() - 1, StreamChoice::never);
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight.value().accumulation_steps, 2);
  EXPECT_EQ(tight.value().micro_batch, 150);

  // Trained with it, the run peaks where planned and learns as with a batch of all the samples.
  options.micro_batch = plan.value().micro_batch;
  options.epochs = 1;
  options.log = std::fopen("/dev/null", "w");
  ThreadPool pool(1);
  const int64_t base = host_memory().current_bytes();
  host_memory().reset_peak();
  Trainer trainer(*model, pool, options);
  ASSERT_TRUE(trainer.prepare().ok());
  ASSERT_TRUE(trainer.fit(data.train, nullptr).ok());
  ASSERT_TRUE(trainer.evaluate(data.test).ok());
  EXPECT_EQ(host_memory().peak_bytes() - base, plan.value().training + 300 * 4);
  std::fclose(options.log);
}

TEST(MachineCheck, ACheckpointsTensorsArePlannedSoARunResumesUnderItsBudget) {
  const std::string dir = temp_folder("checkpoint");
  for (const char* cfg : {kMlpCfg, kCnnCfg, kRclCfg}) {
    for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam}) {
      auto model = build_model(1, cfg);
      OptimizerConfig config;
      config.kind = kind;
      Optimizer optimizer(config, model->params());
      ASSERT_TRUE(optimizer.init().ok());
      const std::string path = dir + "/run.ckpt";
      ASSERT_TRUE(save_checkpoint(path, *model, &optimizer, {{"epochs_done", "1"}}).ok());
      const int64_t before = host_memory().current_bytes();
      auto read = read_checkpoint(path);
      ASSERT_TRUE(read.ok()) << read.status().message();
      EXPECT_EQ(host_memory().current_bytes() - before, checkpoint_tensor_bytes(*model, config)) << cfg;
    }
  }
  // Planned with a checkpoint, the run holds room for it; without, it does not.
  auto model = build_model(1, kMlpCfg);
  const DataSplit data = make_synthetic(300, 100, 10, 5);
  TrainOptions options;
  auto without = plan_memory(*model, options, RunData{&data.train}, 0, StreamChoice::never);
  options.checkpoint_path = dir + "/run.ckpt";
  auto with = plan_memory(*model, options, RunData{&data.train}, 0, StreamChoice::never);
  ASSERT_TRUE(without.ok() && with.ok());
  EXPECT_EQ(without.value().checkpoint, 0);
  EXPECT_EQ(with.value().checkpoint, checkpoint_tensor_bytes(*model, options.optimizer));
  EXPECT_EQ(with.value().predicted_peak() - without.value().predicted_peak(), with.value().checkpoint);
  std::filesystem::remove_all(dir);
}

// Plans pinned: the micro-batch, the way the data is held and every figure of the plan for a few
// models, precisions and budgets, as the planner gave them before it was made one plan for host
// and device (issue 31). A change to the planner that moves any of them changes what existing
// runs do and print. (The conv layers' figures since grew by their weight gradients' partial
// products, ConvLayer::weight_grad_partials: a few KB of workspace, no micro-batch changed.)
struct Pinned {
  const char* name;
  const char* cfg;
  TrainPrecision precision;
  OptimizerKind optimizer;
  int64_t batch, budget;
  bool streamable;  // generated (streamable) data, or synthetic data in memory
  StreamChoice stream;
  // The plan.
  int64_t micro_batch, accumulation_steps;
  bool streamed;
  int64_t params, data, training, checkpoint, unplanned_peak;
};

TEST(MemoryPlan, PinnedPlansStayAsTheyWere) {
  const int64_t M = int64_t{1} << 20;
  const Pinned pins[] = {
      {"cnn", kCnnCfg, TrainPrecision::fp32, OptimizerKind::sgd, 256, 0, true, StreamChoice::automatic,
       256, 1, false, 102192, 4752000, 22731000, 0, 27585192},
      {"cnn", kCnnCfg, TrainPrecision::fp32, OptimizerKind::sgd, 256, 16 * M, true, StreamChoice::automatic,
       128, 2, true, 102192, 48000, 13783048, 0, 27585192},
      {"cnn", kCnnCfg, TrainPrecision::fp32, OptimizerKind::sgd, 256, 8 * M, true, StreamChoice::automatic,
       64, 4, true, 102192, 48000, 6918152, 0, 27585192},
      {"cnn", kCnnCfg, TrainPrecision::fp32, OptimizerKind::adam, 256, 3 * M, true, StreamChoice::automatic,
       26, 10, true, 102192, 48000, 2893216, 0, 27636288},
      {"cnn", kCnnCfg, TrainPrecision::fp32, OptimizerKind::sgd, 256, 8 * M, true, StreamChoice::never,
       32, 8, false, 102192, 4752000, 3385224, 0, 27585192},
      {"cnn fp16", kCnnCfg, TrainPrecision::fp16, OptimizerKind::sgd, 256, 6 * M, true, StreamChoice::automatic,
       43, 6, true, 102192, 48000, 5338816, 0, 31593128},
      {"cnn qat", kCnnCfg, TrainPrecision::int8_qat, OptimizerKind::sgd, 256, 6 * M, true, StreamChoice::automatic,
       52, 5, true, 102192, 48000, 5681944, 0, 27636152},
      {"cnn int8", kCnnCfg, TrainPrecision::fixed_point, OptimizerKind::adam, 100, 2 * M, false, StreamChoice::automatic,
       10, 10, false, 102192, 712800, 1144296, 0, 11331744},
      {"mlp", kMlpCfg, TrainPrecision::fp32, OptimizerKind::adam, 1000, 2 * M, false, StreamChoice::automatic,
       100, 9, false, 203600, 712800, 1174400, 0, 9857200},
      {"rcl", kRclCfg, TrainPrecision::fp32, OptimizerKind::sgd, 64, 2 * M, false, StreamChoice::automatic,
       7, 10, false, 3216, 712800, 1322972, 0, 12795560},  // rcl's 4-channel dx direct (planar) since 2026-12-02
      {"autoencoder", kAutoencoderCfg, TrainPrecision::fp16, OptimizerKind::adam, 300, 2 * M, false, StreamChoice::never,
       38, 8, false, 207104, 712800, 1163032, 0, 7005456},
      {"residual", kSmallResidualCfg, TrainPrecision::fp32, OptimizerKind::sgd, 128, 2 * M, true, StreamChoice::automatic,
       19, 7, true, 65552, 48000, 1900944, 0, 17034840},
      {"residual fp16", kSmallResidualCfg, TrainPrecision::fp16, OptimizerKind::sgd, 128, 2 * M, true, StreamChoice::automatic,
       19, 7, true, 65552, 48000, 1781776, 0, 15103064},
  };
  const Dataset generated = generated_images("train", Shape{28, 28, 1}, 6000, 10, 4, 1);
  const Dataset in_memory = make_synthetic(900, 10, 10, 1).train;
  for (const Pinned& pin : pins) {
    auto model = build_model(1, pin.cfg);
    TrainOptions options;
    options.batch = pin.batch;
    options.precision = pin.precision;
    options.optimizer.kind = pin.optimizer;
    auto planned = plan_memory(*model, options, RunData{pin.streamable ? &generated : &in_memory}, pin.budget, pin.stream);
    ASSERT_TRUE(planned.ok()) << pin.name << ": " << planned.status().message();
    const MemoryPlan& p = planned.value();
    SCOPED_TRACE(std::string(pin.name) + " budget " + std::to_string(pin.budget));
    EXPECT_EQ(p.budget, pin.budget);
    EXPECT_EQ(p.batch, pin.batch);
    EXPECT_EQ(p.micro_batch, pin.micro_batch);
    EXPECT_EQ(p.accumulation_steps, pin.accumulation_steps);
    EXPECT_EQ(p.stream, pin.streamed);
    EXPECT_EQ(p.params, pin.params);
    EXPECT_EQ(p.data, pin.data);
    EXPECT_EQ(p.training, pin.training);
    EXPECT_EQ(p.checkpoint, pin.checkpoint);
    EXPECT_EQ(p.unplanned_peak, pin.unplanned_peak);
  }
}

// Planning reads the model and changes nothing: an fp16 or QAT plan leaves an f32 model's
// storage and buffers alone (the trainer sets the storage when it is built: Trainer::place), and
// the figures are those of the storage asked for.
TEST(MemoryPlan, PlanningChangesNothing) {
  for (const char* cfg : {kCnnCfg, kSmallResidualCfg}) {
    auto model = build_model(1, cfg);
    const Model::ReservedBytes f32 = model->reserved_bytes(32);
    TrainOptions options;
    options.batch = 64;
    options.precision = TrainPrecision::fp16;
    const Dataset data = make_synthetic(100, 10, 10, 1).train;
    auto plan = plan_memory(*model, options, RunData{&data}, 0, StreamChoice::never);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(model->storage(), DType::f32) << cfg;
    EXPECT_EQ(model->reserved_bytes(32).total(), f32.total()) << cfg;
    const int64_t f16 = model->reserved_bytes_in(DType::f16, 64).total();
    EXPECT_NE(f16, model->reserved_bytes(64).total()) << cfg;
    ASSERT_TRUE(model->set_storage(DType::f16).ok());
    EXPECT_EQ(model->reserved_bytes(64).total(), f16) << cfg << ": the storage asked for, figured as if set";
    ASSERT_TRUE(model->set_storage(DType::f32).ok());
    options.precision = TrainPrecision::int8_qat;
    EXPECT_EQ(Trainer::prepared_bytes(*model, options, 8) - Trainer::prepared_bytes(*model, TrainOptions(), 8),
              FakeQuantizer(*model).master_bytes()) << cfg;
  }
}

}  // namespace
}  // namespace rg
