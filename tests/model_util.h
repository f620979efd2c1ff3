// Helpers of the training tests: a model from cfg text, and bit-for-bit weight comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

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

}  // namespace rg
