// `retrograd precision --sweep` (issue 34): the precision command once per seed over
// configurations chosen for the model, then one report of them all in --sweep-out (report.html,
// report.md, sweep.json): accuracy against bits for weights, activations and gradients (each
// alone in a fixed-point training, the rest f32), each layer's sensitivity (that layer alone in
// a low width), and the Pareto fronts of accuracy against weight bytes and against training and
// inference samples/s, every point with its spread over the seeds. cmd_train.cpp runs the seeds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/args.h"
#include "app/precision_report.h"
#include "nn/cfg.h"
#include "study/report_doc.h"

namespace rg {

// Declares --sweep, --sweep-seeds, --sweep-out, --quick (the precision command's).
void declare_sweep_options(Args& args);

struct SweepPlan {
  std::vector<std::string> precisions;  // the rows, fp32 first (the --precision list each seed runs)
  std::vector<uint64_t> seeds;
  std::vector<int> bits;                // the widths of the bits curves
  std::string layer_precision;          // each layer alone in this ("w4a8e8")
  std::string out;                      // the report's folder
  bool quick = false;
};

// The plan for the model of `cfg` (a classifier: the sweep compares accuracy) from the options;
// an error names the option and the rule. Nothing is written.
Result<SweepPlan> sweep_plan(const Args& args, const CfgDocument& cfg);

// One seed's rows, as precision_rows made them.
struct SweepSeed {
  uint64_t seed = 0;
  std::vector<PrecisionRow> rows;
};

// The report of every seed's rows (the same configurations each, in the plan's order).
report::Document sweep_report(const SweepPlan& plan, const std::vector<SweepSeed>& seeds, const std::string& model);
nlohmann::json sweep_json(const SweepPlan& plan, const std::vector<SweepSeed>& seeds, const std::string& model);

}  // namespace rg
