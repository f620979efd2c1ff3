// Keras-style progress line.
#include "report/progress.h"

#include <cmath>

#if defined(_WIN32)
#include <io.h>
#define RG_ISATTY _isatty
#define RG_FILENO _fileno
#else
#include <unistd.h>
#define RG_ISATTY isatty
#define RG_FILENO fileno
#endif

namespace rg {

namespace {
constexpr int kBarWidth = 30;
}

bool is_terminal(FILE* out) { return RG_ISATTY(RG_FILENO(out)) != 0; }

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(seconds));
  char text[32];
  if (s < 60) {
    std::snprintf(text, sizeof text, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  }
  return text;
}

ProgressBar::ProgressBar(int64_t total_steps, FILE* out, bool live)
    : total_(total_steps), out_(out), live_(live), start_(std::chrono::steady_clock::now()), last_draw_() {}

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string ProgressBar::bar(int64_t done) const {
  const int filled = total_ > 0 ? static_cast<int>(kBarWidth * done / total_) : kBarWidth;
  std::string text = std::to_string(done) + "/" + std::to_string(total_) + " [";
  for (int i = 0; i < kBarWidth; ++i) {
    if (i < filled) {
      text += '=';
    } else if (i == filled && done < total_) {
      text += '>';
    } else {
      text += '.';
    }
  }
  return text + "]";
}

std::string ProgressBar::format_metrics(const Metrics& metrics) {
  std::string text;
  char value[32];
  for (const auto& [name, v] : metrics) {
    std::snprintf(value, sizeof value, "%.4f", v);
    text += " - " + name + ": " + value;
  }
  return text;
}

void ProgressBar::update(int64_t done, const Metrics& metrics) {
  if (!live_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double elapsed = elapsed_seconds();
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - done) : 0.0;
  std::fprintf(out_, "\r%s - ETA: %s%s\033[K", bar(done).c_str(), format_duration(eta).c_str(),
               format_metrics(metrics).c_str());
  std::fflush(out_);
}

void ProgressBar::finish(const Metrics& metrics) {
  const double elapsed = elapsed_seconds();
  const double per_step_ms = total_ > 0 ? 1000.0 * elapsed / static_cast<double>(total_) : 0.0;
  std::fprintf(out_, "%s%s - %s %.0fms/step%s%s\n", live_ ? "\r" : "", bar(total_).c_str(),
               format_duration(elapsed).c_str(), per_step_ms, format_metrics(metrics).c_str(), live_ ? "\033[K" : "");
  std::fflush(out_);
}

}  // namespace rg
