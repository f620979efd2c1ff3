// The live training line people know from Keras:
//   312/938 [=========>....................] - ETA: 8s - loss: 0.5120 - acc: 0.8125
//   938/938 [==============================] - 12s 13ms/step - loss: 0.4120 - acc: 0.8530
// On a terminal the line redraws in place (at most 10 times a second); into a file or
// pipe only the finished line is written, so logs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace rg {

using Metrics = std::vector<std::pair<std::string, double>>;

class ProgressBar {
 public:
  ProgressBar(int64_t total_steps, FILE* out, bool live);

  void update(int64_t done, const Metrics& metrics);
  // The final line: total time, time per step and the metrics.
  void finish(const Metrics& metrics);
  double elapsed_seconds() const;

 private:
  std::string bar(int64_t done) const;
  static std::string format_metrics(const Metrics& metrics);

  int64_t total_;
  FILE* out_;
  bool live_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// True when `out` is a terminal.
bool is_terminal(FILE* out);
// "12s", "1:05", "1:02:03"
std::string format_duration(double seconds);

}  // namespace rg
