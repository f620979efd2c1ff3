// Helpers of the training tests: a model from cfg text, bit-for-bit weight comparison, and a
// model and data whose loss is finite but whose gradient overflows.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "data/dataset.h"
#include "nn/model.h"

namespace rg {

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

// A finite loss whose gradient overflows: inputs of `input` (3e38 by default), a first layer
// that cancels them (outputs 0, so the loss is ln 2) and a second with weights of 1e30:
// d(dense1.weight) = 3e38 x 1e30 = Inf. With inputs of 1e8 the gradient is finite (about 1e37)
// and a learning rate of 1e6 overflows the update instead. Four samples, two classes.
struct OverflowingGradient {
  std::unique_ptr<Model> model;  // dense1 [2 -> 2], dense2 [2 -> 2]
  Dataset data;
};
inline OverflowingGradient overflowing_gradient(float input = 3e38f) {
  OverflowingGradient out;
  out.model = build_model(1, "[net]\ninput = 2\n[dense]\nunits = 2\n[dense]\nunits = 2\n");
  const std::vector<Param*> params = out.model->params();  // dense1.weight [2, 2], dense1.bias, dense2.weight, dense2.bias
  EXPECT_EQ(params.size(), 4u);
  if (params.size() != 4) return out;
  for (Param* p : params) std::fill(p->value.f32(), p->value.f32() + p->value.numel(), 0.0f);
  float* w1 = params[0]->value.f32();
  w1[0] = w1[1] = 1.0f, w1[2] = w1[3] = -1.0f;  // y = x0 - x1 in both units
  float* w2 = params[2]->value.f32();
  w2[0] = w2[2] = 1e30f;  // both units feed logit 0
  out.data.name = "huge";
  out.data.sample_shape = Shape{2};
  out.data.num_classes = 2;
  out.data.samples = Tensor::zeros(Shape{4, 2}, DType::f32, "samples").take();
  out.data.labels = Tensor::zeros(Shape{4}, DType::i32, "labels").take();
  std::fill(out.data.samples.f32(), out.data.samples.f32() + 8, input);
  return out;
}

// What training says when overflowing_gradient() stops it in its first step: the gradient's
// overflow (inputs of 3e38) or the update's (inputs of 1e8, a rate of 1e6).
inline std::string overflow_message(bool gradient) {
  return std::string(gradient ? "the gradient of dense1.weight held an Inf or a NaN"
                              : "the update of dense1.weight overflowed (its weights hold an Inf or a NaN)") +
         " at epoch 1, step 1; training stopped";
}

}  // namespace rg
