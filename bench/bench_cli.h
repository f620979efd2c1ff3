// What the C++ benchmark tools of bench/ share: failing with the tool's name (exit 2 for a bad
// command line, 1 for a run that went wrong), unwrapping a Result, comma lists, strict numbers
// from the command line, and a sample's median and spread.
// Header only: each tool is one file built by its script against the build's libraries.
#pragma once

#include <errno.h>  // program_invocation_short_name (glibc)

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg::bench {

[[noreturn]] inline void fail(const std::string& what, int code = 1) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::exit(code);
}
[[noreturn]] inline void usage_error(const std::string& what) { fail(what, 2); }
template <class T>
T get(Result<T> r, const std::string& doing, int code = 1) {
  if (!r.ok()) fail(doing + ": " + r.status().message(), code);
  return r.take();
}
// A command-line value's Result: its error is the user's (exit 2).
template <class T>
T get_arg(Result<T> r, const std::string& doing) {
  return get(std::move(r), doing, 2);
}
inline void check(const Status& s, const std::string& doing) {
  if (!s.ok()) fail(doing + ": " + s.message());
}

// The value of option argv[*i] (argv[*i + 1], *i moved onto it), or a usage error naming the option.
inline std::string option_value(int argc, char** argv, int* i) {
  if (*i + 1 >= argc) usage_error(std::string(argv[*i]) + " needs a value");
  return argv[++*i];
}

// "a,b,,c" -> {a, b, c}.
inline std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// `text` as a whole decimal integer in [lo, hi], else fail() naming `what` and the rule.
inline long long integer(const std::string& text, const std::string& what, long long lo, long long hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < lo || v > hi) {
    usage_error(what + " '" + text + "': a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
}

// The median of samples and their smallest and largest (seconds, or any unit).
struct Spread {
  double median = 0, low = 0, high = 0;
};
inline Spread spread(std::vector<double> s) {
  if (s.empty()) return {};
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s.front(), s.back()};
}

}  // namespace rg::bench
