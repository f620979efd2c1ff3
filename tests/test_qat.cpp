// Quantization-aware training: the fake-quantization points, the weight grid and its masters,
// the learned ranges (and their checkpoint text), training from scratch and as a fine-tune of a
// trained f32 model, and the int8 export.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "model_util.h"
#include "ops/quant_params.h"
#include "quant/fake_quant.h"
#include "quant/int8_model.h"
#include "train/trainer.h"

namespace rg {
namespace {


const char* kCnnCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\nstride = 2\nbias = false\n[batchnorm]\n[relu]\n"
    "[maxpool]\nsize = 2\n[dropout]\nrate = 0.25\n[dense]\nunits = 16\n[relu]\n[dense]\nunits = 10\n";

// Points: 0 input; i + 1 the output of layer i (conv1 bn1 relu1 maxpool1 dropout1 dense1 relu2 dense2).
TEST(FakeQuant, RoundsWhereTheExportQuantizes) {
  auto model = build_model(1, kCnnCfg);
  FakeQuantizer fq(*model);
  const std::vector<bool> expected = {true,  false /*conv1: into bn*/, false /*bn1: into relu*/, true /*relu1*/,
                                      false /*maxpool keeps the grid*/, false /*dropout*/, false /*dense1: into relu*/,
                                      true /*relu2*/, false /*the output: tracked, not rounded*/};
  EXPECT_EQ(fq.rounded_points(), expected);
}

// relu6 fuses where relu does: QAT rounds its output, not the conv's or the batch norm's before it.
TEST(FakeQuant, Relu6RoundsWhereRelusDo) {
  auto model = build_model(1, "[net]\ninput = 8x8x1\n[conv]\nfilters = 2\nsize = 3\n[batchnorm]\n[relu6]\n"
                              "[flatten]\n[dense]\nunits = 4\n[relu6]\n[dense]\nunits = 2\n");
  FakeQuantizer fq(*model);
  const std::vector<bool> expected = {true,  false /*conv1: into bn*/, false /*bn1: into relu6*/, true /*relu6*/,
                                      false /*flatten*/, false /*dense1: into relu6*/, true /*relu6*/,
                                      false /*the output*/};
  EXPECT_EQ(fq.rounded_points(), expected);
}

// A graph model's points (kSmallResidualCfg: conv1 r0 conv2 batchnorm1 relu1 c2 add1 relu2 flatten1
// dense1): r0's output, read by conv2 and the add, is rounded though it ends its stage anyway;
// the add's output like any other layer's, but that the relu after it fuses into its int8 stage.
TEST(FakeQuant, GraphModelsRoundEveryOutputSeveralLayersReadAndTheAdds) {
  auto model = build_model(1, kSmallResidualCfg);
  ASSERT_TRUE(model->is_graph());
  FakeQuantizer fq(*model);
  EXPECT_TRUE(fq.reserve().ok());
  const std::vector<bool> expected = {true,  false /*conv1: into r0*/, true /*r0*/, false /*conv2: into bn*/,
                                      false /*bn: into relu1*/, true /*relu1*/, true /*c2: the add's*/,
                                      false /*add1: into relu2, the int8 add's clamp*/, true /*relu2*/,
                                      false /*flatten keeps the grid*/, false /*the output*/};
  EXPECT_EQ(fq.rounded_points(), expected);
}

// No fusion across a point another layer reads: conv c feeds its batch norm and the add, so
// the batch norm does not fold into it and both outputs are rounded.
TEST(FakeQuant, NoFusionAcrossAnOutputAnotherLayerReads) {
  auto model = build_model(1, "[net]\ninput = 8x8x1\n[conv]\nname = c\nfilters = 2\nsize = 3\npad = 1\n"
                              "[batchnorm]\n[add]\ninputs = c, batchnorm1\n[flatten]\n[dense]\nunits = 2\n");
  FakeQuantizer fq(*model);
  const std::vector<bool> expected = {true, true /*c: read by the add too*/, true /*batchnorm1*/, true /*add1*/,
                                      false /*flatten*/, false /*the output*/};
  EXPECT_EQ(fq.rounded_points(), expected);
}

// At 8 bits ([-127, 127]) and fewer (w4a8-qat's [-7, 7], [-1, 1] at 2).
TEST(FakeQuant, WeightsGoOnAPerChannelGridAndTheMastersComeBackExactly) {
  for (int bits : {8, 4, 2}) {
    auto model = build_model(3, kCnnCfg);
    FakeQuantizer fq(*model, bits);
    const double qmax = weight_qmax(bits);
    ASSERT_TRUE(fq.reserve().ok());
    std::vector<std::vector<float>> masters;
    for (Param* p : model->params()) masters.emplace_back(p->value.f32(), p->value.f32() + p->value.numel());
    fq.quantize_weights();
    const auto params = model->params();
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& v = params[i]->value;
      const bool weight = params[i]->name == "conv1.weight" || params[i]->name == "dense1.weight" ||
                          params[i]->name == "dense2.weight";
      if (!weight) {  // biases and batch norm stay f32
        EXPECT_EQ(std::memcmp(v.f32(), masters[i].data(), masters[i].size() * 4), 0) << params[i]->name;
        continue;
      }
      const int64_t outputs = v.shape()[v.shape().rank() - 1], depth = v.numel() / outputs;
      for (int64_t j = 0; j < outputs; ++j) {
        const double step = weight_channel_step(masters[i].data() + j, depth, outputs, bits);
        for (int64_t p = 0; p < depth; ++p) {
          const double level = v.f32()[p * outputs + j] / step;
          EXPECT_NEAR(level, std::nearbyint(level), 1e-3) << params[i]->name << " on its channel's grid";
          EXPECT_LE(std::fabs(level), qmax + 1e-3);
          const double master = masters[i][p * outputs + j], clipped = std::fabs(master) - qmax * step;
          EXPECT_LE(std::fabs(v.f32()[p * outputs + j] - master), std::max(step / 2, clipped) + 1e-7) << "rounded or clipped";
        }
      }
    }
    fq.restore_weights();
    for (size_t i = 0; i < params.size(); ++i)
      EXPECT_EQ(std::memcmp(params[i]->value.f32(), masters[i].data(), masters[i].size() * 4), 0) << params[i]->name;
  }
}

TEST(FakeQuant, ValuesAreObservedInTrainingAndRoundedToTheirRangesGrid) {
  auto model = build_model(1, kCnnCfg);
  FakeQuantizer fq(*model);
  auto t = Tensor::zeros(Shape{256}, DType::f32, "values").take();
  for (int i = 0; i < 256; ++i) t.f32()[i] = static_cast<float>(i) / 100.0f - 0.5f;  // [-0.5, 2.05]
  LayerContext eval;
  fq.on_values(0, t, eval);
  EXPECT_EQ(t.f32()[7], 7 / 100.0f - 0.5f) << "nothing observed yet: values pass unchanged";
  LayerContext training;
  training.training = true;
  fq.on_values(0, t, training);
  const auto range = fq.ranges()[0];
  EXPECT_FLOAT_EQ(range.first, -0.5f);
  EXPECT_FLOAT_EQ(range.second, 2.05f);
  const QuantParams q = activation_params(range.first, range.second);
  std::set<float> levels;
  for (int i = 0; i < 256; ++i) {
    const double level = t.f32()[i] / q.scale + q.zero_point;
    EXPECT_NEAR(level, std::nearbyint(level), 1e-3);
    levels.insert(t.f32()[i]);
  }
  EXPECT_LE(levels.size(), 256u);
  EXPECT_TRUE(levels.count(0.0f) == 1) << "zero is exact on the grid";
}

TEST(FakeQuant, RangesTextRoundTripsAndBadTextIsNamed) {
  auto model = build_model(1, kCnnCfg);
  FakeQuantizer fq(*model);
  auto t = Tensor::zeros(Shape{4}, DType::f32, "values").take();
  t.f32()[0] = -1.25f;
  t.f32()[3] = 3.5f;
  LayerContext training;
  training.training = true;
  fq.on_values(0, t, training);
  FakeQuantizer back(*model);
  ASSERT_TRUE(back.set_ranges_text(fq.ranges_text()).ok()) << fq.ranges_text();
  EXPECT_EQ(back.ranges(), fq.ranges());
  EXPECT_EQ(back.ranges_text(), fq.ranges_text());
  EXPECT_FALSE(back.set_ranges_text("1:0,-,-,-,-,-,-,-,-").ok()) << "lo > hi";
  EXPECT_FALSE(back.set_ranges_text("-,-").ok()) << "too few points";
  const Status bad = back.set_ranges_text("x:1,-,-,-,-,-,-,-,-");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("'x:1'"), std::string::npos) << bad.message();
  EXPECT_EQ(back.ranges(), fq.ranges()) << "a refused text changes nothing";
}

const DataSplit& data() {
  static const DataSplit split = make_synthetic(1200, 400, 10, 3);
  return split;
}

TrainOptions qat_options(int64_t epochs) {
  TrainOptions o;
  o.precision = TrainPrecision::int8_qat;
  o.epochs = epochs;
  o.batch = 32;
  o.seed = 7;
  o.optimizer.kind = OptimizerKind::adam;
  o.schedule.lr = 0.003;
  o.log = std::fopen("/dev/null", "w");
  return o;
}

struct TrainRun {
  std::unique_ptr<Model> model;
  std::unique_ptr<Trainer> trainer;
  EvalResult score;  // on the test split; int8_qat: the f32 model through its fake quantization
};

// Trains `model` with `o` (from `resume` when given) and scores it on the test split.
TrainRun train(std::unique_ptr<Model> model, const TrainOptions& o, ThreadPool& pool, const std::string& resume = "") {
  TrainRun run;
  run.model = std::move(model);
  run.trainer = std::make_unique<Trainer>(*run.model, pool, o);
  EXPECT_TRUE(run.trainer->prepare().ok());
  if (!resume.empty()) {
    auto ck = read_checkpoint(resume);
    EXPECT_TRUE(ck.ok());
    const Status s = run.trainer->resume_from(ck.value(), resume);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  auto records = run.trainer->fit(data().train, nullptr);
  EXPECT_TRUE(records.ok()) << records.status().message();
  run.score = run.trainer->evaluate(data().test).value();
  return run;
}

// The test accuracy of `run`'s model exported to int8 with the ranges it learned (no calibration
// data: an empty tensor is passed).
double exported_accuracy(const TrainRun& run, ThreadPool& pool, int weight_bits = 8, int activation_bits = 8) {
  Int8Options options;
  options.ranges = run.trainer->fake_quantizer()->ranges();
  options.weight_bits = weight_bits;
  options.activation_bits = activation_bits;
  auto net = Int8Model::quantize(*run.model, Tensor(), 32, options, &pool);
  EXPECT_TRUE(net.ok()) << net.status().message();
  if (!net.ok()) return -1;
  Int8Executor runner(*net.value(), &pool);
  if (!runner.reserve(32).ok()) return -1;
  auto scored = run.trainer->evaluate(data().test, &runner);
  EXPECT_TRUE(scored.ok()) << scored.status().message();
  return scored.ok() ? scored.value().accuracy : -1;
}

// The exported int8 model computes what training saw: its accuracy matches the fake-quantized
// f32 model's, and it needs no calibration data (an empty tensor is passed).
TEST(QatTraining, ExportsAnInt8ModelThatScoresLikeTheTrainedOne) {
  ThreadPool pool(2);
  TrainRun run = train(build_model(7, kCnnCfg), qat_options(2), pool);
  EXPECT_GT(run.score.accuracy, 0.8);
  EXPECT_NEAR(exported_accuracy(run, pool), run.score.accuracy, 0.02);
  Int8Options options;
  options.ranges = run.trainer->fake_quantizer()->ranges();
  options.ranges.pop_back();
  EXPECT_FALSE(Int8Model::quantize(*run.model, Tensor(), 32, options, &pool).ok()) << "a range per point";
}

// A residual graph model (conv, batch norm, relu, add) trains through fake quantization and
// exports to the int8 engine, which scores what training saw.
TEST(QatTraining, AGraphModelExportsAnInt8ModelThatScoresLikeTheTrainedOne) {
  ThreadPool pool(2);
  TrainRun run = train(build_model(7, kSmallResidualCfg), qat_options(2), pool);
  EXPECT_GT(run.score.accuracy, 0.8);
  EXPECT_NEAR(exported_accuracy(run, pool), run.score.accuracy, 0.02);
}

// w4a8-qat: trained through 4-bit weights, exported with them held two a byte, the int8
// engine scores what training saw; exported with 8-bit weights instead it is another model.
TEST(QatTraining, FourBitWeightsExportAndScoreLikeTheTrainedModel) {
  ThreadPool pool(2);
  TrainOptions o = qat_options(2);
  ASSERT_TRUE(set_precision("w4a8-qat", &o).ok());
  TrainRun run = train(build_model(7, kCnnCfg), o, pool);
  EXPECT_GT(run.score.accuracy, 0.75);
  EXPECT_NEAR(exported_accuracy(run, pool, 4), run.score.accuracy, 0.02);
  // w4a4-qat: the values on 16 levels too; the export (4-bit grids but the output's) scores the same.
  TrainOptions a4 = qat_options(2);
  ASSERT_TRUE(set_precision("w4a4-qat", &a4).ok());
  TrainRun run4 = train(build_model(7, kCnnCfg), a4, pool);
  EXPECT_GT(run4.score.accuracy, 0.6);
  EXPECT_NEAR(exported_accuracy(run4, pool, 4, 4), run4.score.accuracy, 0.03);
}

TEST(QatTraining, ResumeRestoresTheRangesAndEqualsOneRun) {
  ThreadPool pool(2);
  const std::string path = ::testing::TempDir() + "retrograd_test_qat_resume.ckpt";
  TrainOptions first = qat_options(2);
  first.stop_after = 1;
  first.checkpoint_path = path;
  train(build_model(7, kCnnCfg), first, pool);
  TrainRun resumed = train(build_model(7, kCnnCfg), qat_options(2), pool, path);
  TrainRun whole = train(build_model(7, kCnnCfg), qat_options(2), pool);
  EXPECT_EQ(resumed.trainer->fake_quantizer()->ranges(), whole.trainer->fake_quantizer()->ranges());
  auto a = resumed.model->params(), b = whole.model->params();
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(std::memcmp(a[i]->value.raw_data(), b[i]->value.raw_data(), a[i]->value.bytes()), 0) << a[i]->name;
  std::remove(path.c_str());
}

// QAT as a fine-tune (the precision report's int8-qat): a model trained in f32, then a copy of it
// trained on through fake quantization with the default recipe (QatFineTune).
TrainRun trained_f32(ThreadPool& pool) {
  TrainOptions o = qat_options(2);
  o.precision = TrainPrecision::fp32;
  return train(build_model(o.seed, kCnnCfg), o, pool);
}

TrainRun fine_tune(Model& f32, ThreadPool& pool) {
  const QatFineTune recipe;
  TrainOptions o = qat_options(recipe.epochs);
  o.schedule.lr *= recipe.lr_scale;
  auto copy = qat_copy_of(f32, o.seed);
  EXPECT_TRUE(copy.ok()) << copy.status().message();
  return train(copy.take(), o, pool);
}

TEST(QatFineTune, StartsFromTheTrainedWeightsAndBatchNormStatisticsAndLeavesThemAlone) {
  ThreadPool pool(2);
  TrainRun f32 = trained_f32(pool);
  auto copy = qat_copy_of(*f32.model, 7);
  ASSERT_TRUE(copy.ok()) << copy.status().message();
  EXPECT_TRUE(same_weights(*copy.value(), *f32.model)) << "weights and running statistics taken over";
  EXPECT_FALSE(same_weights(*copy.value(), *build_model(7, kCnnCfg))) << "not the seed's initial weights";
  TrainRun tuned = fine_tune(*f32.model, pool);
  EXPECT_FALSE(same_weights(*tuned.model, *f32.model)) << "the fine-tune trained";
  EXPECT_TRUE(same_weights(*copy.value(), *f32.model)) << "the f32 model is not changed by it";
}

TEST(QatFineTune, ExportsAnInt8ModelThatScoresLikeTheFakeQuantizedAndTheF32Ones) {
  ThreadPool pool(2);
  TrainRun f32 = trained_f32(pool);
  TrainRun tuned = fine_tune(*f32.model, pool);
  EXPECT_GT(f32.score.accuracy, 0.8);
  EXPECT_NEAR(tuned.score.accuracy, f32.score.accuracy, 0.03);
  EXPECT_NEAR(exported_accuracy(tuned, pool), tuned.score.accuracy, 0.02);
}

TEST(QatFineTune, IsDeterministicForASeedWhateverTheThreadCount) {
  ThreadPool one(1), two(2);
  TrainRun f32 = trained_f32(two);
  TrainRun a = fine_tune(*f32.model, one), b = fine_tune(*f32.model, two);
  EXPECT_TRUE(same_weights(*a.model, *b.model));
  EXPECT_EQ(a.trainer->fake_quantizer()->ranges(), b.trainer->fake_quantizer()->ranges());
}

}  // namespace
}  // namespace rg
