// `retrograd precision --sweep` (issue 34): the precision command once per seed over
// configurations chosen for the model, then one report of them all in --sweep-out (report.html,
// report.md, sweep.json): accuracy against bits for weights, activations and gradients (each
// alone in a fixed-point training, the rest f32), each layer's sensitivity (that layer alone in
// a low width), and the Pareto fronts of accuracy against weight bytes and against training and
// inference samples/s, every point with its spread over the seeds. With --fit-weights SIZE it
// also measures each layer's weights alone at 2, 4 and 8 bits, picks the widths of least summed
// loss whose weights fit SIZE, and trains that model from each seed. cmd_train.cpp runs the seeds.
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

// Declares --sweep, --sweep-seeds, --sweep-out, --quick, --fit-weights (the precision command's).
void declare_sweep_options(Args& args);

struct SweepPlan {
  std::vector<std::string> precisions;  // the rows, fp32 first (the --precision list each seed runs)
  std::vector<uint64_t> seeds;
  std::vector<int> bits;                // the widths of the bits curves
  std::string layer_precision;          // each layer alone in this ("w4a8e8")
  std::string out;                      // the report's folder
  bool quick = false;
  // --fit-weights: the conv and dense weights' budget at their widths (0: none), the widths a
  // layer may take (32: f32, its training's), and each layer with products with its weight count.
  int64_t fit_bytes = 0;
  std::vector<int> fit_bits;
  std::vector<std::pair<std::string, int64_t>> layer_weights;
};

// The plan for the model of `cfg` (a classifier: the sweep compares accuracy) from the options;
// an error names the option and the rule. Nothing is written.
Result<SweepPlan> sweep_plan(const Args& args, const CfgDocument& cfg);

// One seed's rows, as precision_rows made them.
struct SweepSeed {
  uint64_t seed = 0;
  std::vector<PrecisionRow> rows;
};

// --fit-weights' choice: each layer's width (32: f32), the weight bytes at those widths, the
// summed median change of the layers' own rows (L=wB) it predicts, and the row that trains it
// ("conv1=w4+dense1=w8"; "fp32" when every layer fits in f32).
struct FitChoice {
  std::vector<std::pair<std::string, int>> widths;
  int64_t bytes = 0;
  double predicted_change = 0;
  std::string row;
};
// Greedy from f32: while over the budget, the step down (to the next width) that loses the least
// accuracy per byte saved; an error when even the narrowest widths do not fit.
Result<FitChoice> fit_weights(const SweepPlan& plan, const std::vector<SweepSeed>& seeds);

// The report of every seed's rows (the same configurations each, in the plan's order), and the
// fit's (fit_seeds: each seed's fp32 and fitted rows; empty without --fit-weights).
report::Document sweep_report(const SweepPlan& plan, const std::vector<SweepSeed>& seeds, const std::string& model,
                              const FitChoice* fit = nullptr, const std::vector<SweepSeed>& fit_seeds = {});
nlohmann::json sweep_json(const SweepPlan& plan, const std::vector<SweepSeed>& seeds, const std::string& model,
                          const FitChoice* fit = nullptr, const std::vector<SweepSeed>& fit_seeds = {});

}  // namespace rg
