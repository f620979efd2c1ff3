// Errors that travel back to the caller: bad input, missing files, budgets.
// A broken invariant is not a Status: it aborts through RG_CHECK (check.h).
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "base/check.h"

namespace rg {

class Status {
 public:
  Status() = default;  // success
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

  // Prefixes context ("loading checkpoint x: ") to an error; no-op on success.
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(context + message_);
  }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

// Either a value or an error Status.
template <class T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}                    // NOLINT: implicit by design
  Result(Status status) : value_(std::move(status)) {              // NOLINT
    RG_CHECK(!std::get<Status>(value_).ok(), "Result built from an ok Status");
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status() : std::get<Status>(value_); }
  T& value() {
    RG_CHECK(ok(), "value() of a failed Result");
    return std::get<T>(value_);
  }
  const T& value() const {
    RG_CHECK(ok(), "value() of a failed Result");
    return std::get<T>(value_);
  }
  T&& take() { return std::move(value()); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace rg

#define RG_CONCAT_INNER(a, b) a##b
#define RG_CONCAT(a, b) RG_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when it is an error.
#define RG_TRY(expr)                              \
  do {                                            \
    ::rg::Status rg_try_status_ = (expr);         \
    if (!rg_try_status_.ok()) return rg_try_status_; \
  } while (0)

// RG_ASSIGN(auto x, f()) : x = f().value(), or return its error.
#define RG_ASSIGN(lhs, expr) RG_ASSIGN_IMPL(RG_CONCAT(rg_result_, __LINE__), lhs, expr)
#define RG_ASSIGN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                   \
  if (!tmp.ok()) return tmp.status();  \
  lhs = tmp.take()
