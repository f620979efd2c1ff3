// The options of `train` and `precision`: declared, read into TrainOptions, and a model cfg's
// [train] section taken as options.
#pragma once

#include <cstdint>
#include <utility>

#include "app/args.h"
#include "base/status.h"
#include "nn/cfg.h"
#include "train/memory_plan.h"
#include "train/trainer.h"

namespace rg {

// `train` and `precision`: one command, each with its own usage and --precision default.
struct TrainCommand {
  const char* name;
  const char* summary;
  const char* precisions;  // --precision when not given: the table's precisions; "" for none (no table)
};

// Every option of `command`.
void declare_train_options(Args& args, const TrainCommand& command);

// --mem-budget (0: none) and --stream.
Result<std::pair<int64_t, StreamChoice>> memory_options(const Args& args);

// The training settings given as options (or assumed from a cfg's [train] section).
Status options_from_args(const Args& args, TrainOptions* options);

// A model cfg's [train] section: the settings it was tuned with, taken as if given on the
// command line unless they were. Its keys are option names.
Status apply_train_section(CfgDocument& cfg, Args& args);

}  // namespace rg
