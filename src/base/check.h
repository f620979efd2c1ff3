// Invariant checks: a failure is a bug, so it prints file:line and the values and aborts.
// Bad input never goes through here; it returns a Status (status.h).
#pragma once

#include <sstream>
#include <string>

namespace rg {
[[noreturn]] void check_failed(const char* file, int line, const char* condition, const std::string& detail);
}

// RG_CHECK(cond, "literal" << values...): the message, if any, starts with a string literal.
#define RG_CHECK(cond, ...)                                                   \
  do {                                                                        \
    if (!(cond)) {                                                            \
      std::ostringstream rg_check_os_;                                        \
      rg_check_os_ << "" __VA_ARGS__;                                         \
      ::rg::check_failed(__FILE__, __LINE__, #cond, rg_check_os_.str());      \
    }                                                                         \
  } while (0)

// RG_CHECK_EQ(a, b) prints both values when they differ.
#define RG_CHECK_EQ(a, b)                                                     \
  do {                                                                        \
    auto rg_a_ = (a);                                                         \
    auto rg_b_ = (b);                                                         \
    if (!(rg_a_ == rg_b_)) {                                                  \
      std::ostringstream rg_check_os_;                                        \
      rg_check_os_ << #a << " = " << rg_a_ << ", " << #b << " = " << rg_b_;   \
      ::rg::check_failed(__FILE__, __LINE__, #a " == " #b, rg_check_os_.str()); \
    }                                                                         \
  } while (0)
