// Learning-rate schedules.
#include "train/schedule.h"

#include <cmath>
#include <sstream>

namespace rg {

double Schedule::rate(int64_t step, int64_t steps_per_epoch, int64_t total_epochs) const {
  switch (kind) {
    case ScheduleKind::constant: return lr;
    case ScheduleKind::step: {
      const int64_t epoch = steps_per_epoch > 0 ? step / steps_per_epoch : 0;
      return lr * std::pow(gamma, static_cast<double>(epoch / step_epochs));
    }
    case ScheduleKind::cosine: {
      const double total = static_cast<double>(steps_per_epoch * total_epochs);
      const double progress = total > 0 ? std::min(1.0, static_cast<double>(step) / total) : 1.0;
      return lr_min + (lr - lr_min) * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress));
    }
  }
  return lr;
}

std::string Schedule::describe() const {
  std::ostringstream os;
  os << "lr " << lr;
  if (kind == ScheduleKind::step) os << ", x" << gamma << " every " << step_epochs << " epochs";
  if (kind == ScheduleKind::cosine) os << ", cosine to " << lr_min;
  return os.str();
}

Result<ScheduleKind> schedule_from_name(const std::string& name) {
  if (name == "constant") return ScheduleKind::constant;
  if (name == "step") return ScheduleKind::step;
  if (name == "cosine") return ScheduleKind::cosine;
  return Status::error("unknown schedule '" + name + "' (constant, step, cosine)");
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant: return "constant";
    case ScheduleKind::step: return "step";
    case ScheduleKind::cosine: return "cosine";
  }
  return "?";
}

}  // namespace rg
