// Helpers of the training tests: a model from cfg text, bit-for-bit weight comparison, and a
// run whose gradient or update overflows.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/output_file.h"
#include "base/serial.h"
#include "base/thread_pool.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "train/trainer.h"

namespace rg {

// The training tests' small models on 28x28x1 input: an mlp, and the same with dropout (whose
// masks must follow each sample's place in the step, however the step is split).
inline constexpr const char* kSmallMlpCfg =
    "[net]\ninput = 28x28x1\n[dense]\nunits = 32\n[relu]\n[dense]\nunits = 10\ninit = glorot\n";
inline constexpr const char* kSmallDropoutMlpCfg =
    "[net]\ninput = 28x28x1\n[dense]\nunits = 32\n[relu]\n[dropout]\nrate = 0.3\n[dense]\nunits = 10\n";

// A graph model (nn/model_graph.cpp) on the same input: relu r0's output feeds a residual
// block (conv, batch norm, relu, conv) and the add after it.
inline constexpr const char* kSmallResidualCfg =
    "[net]\ninput = 28x28x1\n[conv]\nfilters = 4\nsize = 3\nstride = 2\npad = 1\n[relu]\nname = r0\n"
    "[conv]\nfilters = 4\nsize = 3\npad = 1\n[batchnorm]\n[relu]\n[conv]\nfilters = 4\nsize = 3\npad = 1\n"
    "name = c2\n[add]\ninputs = r0, c2\n[relu]\n[flatten]\n[dense]\nunits = 10\n";

// The model of `cfg_text`, its parameters drawn from `seed`; test failures say why not.
inline std::unique_ptr<Model> build_model(uint64_t seed, const char* cfg_text) {
  auto cfg = parse_cfg(cfg_text, "test.cfg");
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto model = Model::from_cfg(cfg.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  EXPECT_TRUE(model.value()->init(seed).ok());
  return model.take();
}

// Params and buffers (batch-norm statistics), bit for bit.
inline bool same_weights(Model& a, Model& b) {
  auto pa = a.params(), pb = b.params();
  for (Param* p : a.buffers()) pa.push_back(p);
  for (Param* p : b.buffers()) pb.push_back(p);
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i]->value.bytes() != pb[i]->value.bytes()) return false;
    if (std::memcmp(pa[i]->value.raw_data(), pb[i]->value.raw_data(), pa[i]->value.bytes()) != 0) return false;
  }
  return true;
}

// The largest |a - b| over two models' params, relative where the value is large: DESIGN.md's
// f32 tolerance is max(1e-5, 1e-6 |ref|).
inline double worst_weight_error(Model& a, Model& b) {
  auto pa = a.params(), pb = b.params();
  EXPECT_EQ(pa.size(), pb.size());
  double worst = 0;
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i) {
    for (int64_t k = 0; k < pa[i]->value.numel(); ++k) {
      const double x = pa[i]->value.f32()[k], ref = pb[i]->value.f32()[k];
      worst = std::max(worst, std::fabs(x - ref) / std::max(1.0, std::fabs(ref)));
    }
  }
  return worst;
}

// `rows` samples of `features` values, each `value`, all of class 0 (of two).
inline Dataset constant_dataset(int64_t rows, int64_t features, float value) {
  Dataset data;
  data.name = "constant";
  data.sample_shape = Shape{features};
  data.num_classes = 2;
  data.samples = Tensor::zeros(Shape{rows, features}, DType::f32, "samples").take();
  data.labels = Tensor::zeros(Shape{rows}, DType::i32, "labels").take();
  std::fill(data.samples.f32(), data.samples.f32() + rows * features, value);
  return data;
}

// A finite loss whose gradient overflows: inputs of 3e38, a first layer that cancels them
// (outputs 0, so the loss is ln 2) and a second with weights of 1e30: d(dense1.weight) =
// 3e38 x 1e30 = Inf. Or (gradient false) inputs of 1e8: a finite gradient (about 1e37) that a
// rate of 1e6 overflows in the update. Four samples, two classes, batch 4. Trained with
// `options` (the device, say), over a checkpoint written first: training must stop in its
// first step saying which overflowed, and leave the checkpoint as it was.
inline void expect_an_overflow_to_stop_training(TrainOptions options, bool gradient) {
  SCOPED_TRACE(gradient ? "an overflowing gradient" : "an overflowing update");
  auto model = build_model(1, "[net]\ninput = 2\n[dense]\nunits = 2\n[dense]\nunits = 2\n");
  const std::vector<Param*> params = model->params();  // dense1.weight [2, 2], dense1.bias, dense2.weight, dense2.bias
  ASSERT_EQ(params.size(), 4u);
  for (Param* p : params) std::fill(p->value.f32(), p->value.f32() + p->value.numel(), 0.0f);
  float* w1 = params[0]->value.f32();
  w1[0] = w1[1] = 1.0f, w1[2] = w1[3] = -1.0f;  // y = x0 - x1 in both units
  float* w2 = params[2]->value.f32();
  w2[0] = w2[2] = 1e30f;  // both units feed logit 0
  const Dataset data = constant_dataset(4, 2, gradient ? 3e38f : 1e8f);

  options.batch = 4;
  if (!gradient) options.schedule.lr = 1e6;
  options.checkpoint_path = ::testing::TempDir() + "before_the_overflow.ckpt";
  const std::vector<uint8_t> before = {'e', 'a', 'r', 'l', 'i', 'e', 'r'};
  ASSERT_TRUE(write_file_atomic(options.checkpoint_path, before).ok());
  ThreadPool pool(1);
  Trainer trainer(*model, pool, options);
  ASSERT_TRUE(trainer.prepare().ok());
  auto records = trainer.fit(data, nullptr);
  ASSERT_FALSE(records.ok());
  const std::string message = records.status().message();
  const std::string want = std::string(gradient ? "the gradient of dense1.weight held an Inf or a NaN"
                                                : "the update of dense1.weight overflowed (its weights hold an Inf or a NaN)") +
                           " at epoch 1, step 1; training stopped";
  EXPECT_NE(message.find(want), std::string::npos) << message;
  EXPECT_NE(message.find("the last checkpoint is unchanged"), std::string::npos) << message;
  auto after = read_file_bytes(options.checkpoint_path);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after.value(), before);
  std::remove(options.checkpoint_path.c_str());
}

}  // namespace rg
