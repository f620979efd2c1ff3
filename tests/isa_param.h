// Tests run once per ISA level (INSTANTIATE_TEST_SUITE_P over all_isas()): a fixture base that
// skips, with the reason, the levels this CPU lacks, and the case-name suffix of each level.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cpu/isa.h"

namespace rg {

class OnEveryIsa : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam(), detect_cpu().features)) GTEST_SKIP() << isa_name(GetParam()) << " not supported here";
  }
};

// "sse4.1" -> "sse4_1" (GoogleTest names allow no dots); tools/qemu_old_cpus.sh matches these.
inline std::string isa_label(const ::testing::TestParamInfo<Isa>& info) {
  std::string name = isa_name(info.param);
  for (char& c : name)
    if (c == '.') c = '_';
  return name;
}

}  // namespace rg
