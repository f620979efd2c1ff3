// Learning-rate schedules, evaluated every step from the step count alone (so a resumed
// run continues the same curve):
//   constant: lr
//   step:     lr * gamma^floor(epoch / step_epochs)
//   cosine:   lr_min + (lr - lr_min) (1 + cos(pi * step / total_steps)) / 2
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace rg {

enum class ScheduleKind { constant, step, cosine };

struct Schedule {
  ScheduleKind kind = ScheduleKind::constant;
  double lr = 0.01;
  int64_t step_epochs = 10;  // step: decay every this many epochs
  double gamma = 0.1;        // step: decay factor
  double lr_min = 0.0;       // cosine: final rate

  double rate(int64_t step, int64_t steps_per_epoch, int64_t total_epochs) const;
  std::string describe() const;
};

Result<ScheduleKind> schedule_from_name(const std::string& name);
const char* schedule_name(ScheduleKind kind);

}  // namespace rg
