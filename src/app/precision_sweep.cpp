// precision --sweep: its plan (the configurations for a model), and its report from every seed's
// rows: the statistics over the seeds, the charts, the Pareto fronts, the tables.
#include "app/precision_sweep.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>

#include "base/memory.h"
#include "nn/layer_registry.h"
#include "nn/model.h"
#include "report/svg_chart.h"
#include "study/statistics.h"

namespace rg {

void declare_sweep_options(Args& args) {
  args.flag("sweep", "train once per configuration of a sweep chosen for the model (the bits of weights, activations "
            "and gradients each alone; every layer alone in a low width; int8, w4a8-ptq, w4a8-qat, w4a4-qat; fp16, bf16) from "
            "each of --sweep-seeds, and write an HTML report of accuracy against bits, per-layer sensitivity and "
            "the Pareto fronts of accuracy against weight bytes and speed into --sweep-out");
  args.option("sweep-seeds", "LIST", "--sweep: the seeds, comma-separated (the spread of each point)", "1,2,3 (--quick: 1,2)");
  args.option("sweep-out", "DIR", "--sweep: the report's folder (report.html, report.md, sweep.json)",
              "retrograd-precision-sweep");
  args.flag("quick", "--sweep: widths 4, 8 and 16 only, seeds 1,2, no fp16 or bf16 rows");
  args.option("fit-weights", "SIZE", "--sweep: also pick each conv/dense layer's weight width (2, 4, 8 bits or f32) with "
              "the least accuracy loss whose weights fit SIZE (64K, 1.5M), from each layer's own rows, and train it",
              "none");
}

namespace {

constexpr int kMaxSeeds = 10;

Result<std::vector<uint64_t>> parse_seeds(const std::string& text) {
  std::vector<uint64_t> seeds;
  if (!text.empty() && text.back() == ',') return Status::error("--sweep-seeds: '" + text + "' ends in a comma");
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    const bool digits = !item.empty() && item.size() <= 18 &&
                        std::all_of(item.begin(), item.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits) return Status::error("--sweep-seeds: '" + item + "' is not a seed (a whole number, up to 18 digits)");
    const uint64_t seed = std::stoull(item);
    if (std::find(seeds.begin(), seeds.end(), seed) != seeds.end()) {
      return Status::error("--sweep-seeds: seed " + item + " is listed twice");
    }
    seeds.push_back(seed);
  }
  if (seeds.empty() || static_cast<int>(seeds.size()) > kMaxSeeds) {
    return Status::error("--sweep-seeds: 1 to " + std::to_string(kMaxSeeds) + " seeds");
  }
  return seeds;
}

}  // namespace

Result<SweepPlan> sweep_plan(const Args& args, const CfgDocument& cfg) {
  SweepPlan plan;
  plan.quick = args.given("quick");
  plan.out = args.text("sweep-out");
  if (plan.out.empty()) return Status::error("--sweep-out: an empty folder name");
  RG_ASSIGN(plan.seeds, parse_seeds(args.given("sweep-seeds") ? args.text("sweep-seeds") : plan.quick ? "1,2" : "1,2,3"));
  plan.bits = plan.quick ? std::vector<int>{4, 8, 16} : std::vector<int>{2, 4, 6, 8, 12, 16};
  plan.layer_precision = "w4a8e8";
  RG_ASSIGN(std::unique_ptr<Model> model, Model::from_cfg(cfg));
  if (model->target() == TargetKind::input) {
    return Status::error("--sweep compares test accuracy: " + cfg.file + " reconstructs its input (an autoencoder's "
                         "MSE is not swept yet; its --precision rows are)");
  }
  RG_TRY(model->init(1));  // the parameters, to count each layer's weights
  plan.precisions = {"fp32"};
  for (const char* role : {"w", "a", "g"})
    for (int bits : plan.bits) plan.precisions.push_back(role + std::to_string(bits));
  for (const char* name : {"int8", "w4a8-ptq", "w4a8-qat"}) plan.precisions.push_back(name);
  if (!plan.quick) plan.precisions.insert(plan.precisions.end(), {"w4a4-qat", "fp16", "bf16"});
  for (const auto& layer : model->layers()) {
    if (!layer_kind_of(*layer).own_precision) continue;
    plan.precisions.push_back(layer->name() + "=" + plan.layer_precision);
    int64_t weights = 0;
    for (Param* p : layer->params())
      if (p->value.shape().rank() >= 2) weights += p->value.numel();
    plan.layer_weights.emplace_back(layer->name(), weights);
  }
  if (args.given("fit-weights")) {
    auto bytes = parse_bytes(args.text("fit-weights"));
    if (!bytes.ok()) return bytes.status().with_context("--fit-weights: ");
    if (bytes.value() <= 0) return Status::error("--fit-weights: a budget must be above 0 bytes");
    plan.fit_bytes = bytes.value();
    plan.fit_bits = {2, 4, 8};
    int64_t f32_bytes = 0;
    for (const auto& layer : plan.layer_weights) f32_bytes += 4 * layer.second;
    int64_t narrowest = 0;
    for (const auto& layer : plan.layer_weights) narrowest += (layer.second * plan.fit_bits.front() + 7) / 8;
    if (plan.fit_bytes < narrowest) {
      return Status::error("--fit-weights: " + args.text("fit-weights") + " is below the " + std::to_string(narrowest) +
                           " bytes of the conv and dense weights at " + std::to_string(plan.fit_bits.front()) + " bits");
    }
    if (f32_bytes > plan.fit_bytes) {  // else every layer fits in f32: nothing to measure
      for (const auto& [layer, weights] : plan.layer_weights)
        for (int bits : plan.fit_bits) plan.precisions.push_back(layer + "=w" + std::to_string(bits));
    }
  }
  return plan;
}

namespace {

// One configuration over the seeds: accuracy and its change against fp32 of the same seed in
// points, speeds (NaN where it did not train), bytes.
struct Config {
  std::string name, what_ran;
  Spread accuracy, change, train, infer;
  double weight_bytes = NAN;
};

std::vector<Config> configs_of(const std::vector<SweepSeed>& seeds) {
  std::vector<Config> out;
  if (seeds.empty()) return out;
  for (const PrecisionRow& first : seeds[0].rows) {
    std::vector<double> accuracy, change, train, infer;
    for (const SweepSeed& seed : seeds)
      for (const PrecisionRow& row : seed.rows) {
        if (row.precision != first.precision) continue;
        accuracy.push_back(100.0 * row.test_accuracy);
        change.push_back(row.change);
        train.push_back(row.train_samples_per_s > 0 ? row.train_samples_per_s : NAN);
        infer.push_back(row.infer_samples_per_s);
      }
    out.push_back({first.precision, first.what_ran, spread_of(accuracy), spread_of(change), spread_of(train),
                   spread_of(infer), static_cast<double>(first.weight_bytes)});
  }
  return out;
}

const Config* find_config(const std::vector<Config>& configs, const std::string& name) {
  for (const Config& c : configs)
    if (c.name == name) return &c;
  return nullptr;
}

std::string spread_text(const Spread& s, int decimals) {
  if (!std::isfinite(s.median)) return report::kNone;
  if (s.min == s.max) return report::fixed(s.median, decimals);
  return report::fixed(s.median, decimals) + " (" + report::fixed(s.min, decimals) + " to " + report::fixed(s.max, decimals) + ")";
}

// Accuracy's change against bits: one series per role (w, a, g), error bars the seeds' spread.
void bits_section(report::Document& doc, const SweepPlan& plan, const std::vector<Config>& configs) {
  doc.heading(2, "bits", "Accuracy against bits");
  doc.paragraph("Each role alone in a fixed-point training of that width (the rest f32, its products fake quantized "
                "where an operand stays f32: docs/quantization.md), trained from the same seed as fp32. `g` rounds "
                "the errors and the weight gradients.");
  LineChart chart;
  chart.title = "Test accuracy change against fp32 (points)";
  chart.x_label = "bits";
  chart.y_label = "change (points)";
  chart.log_x = chart.x_ticks_at_data = true;
  chart.note = "median over the seeds; bars: the least and most; 0: fp32's accuracy";
  report::Table table{"Change against fp32 (points): median (least to most over the seeds)", {{"bits", true}}, {}, {}, false, false};
  const std::pair<const char*, const char*> roles[] = {{"w", "weights"}, {"a", "activations"}, {"g", "gradients and errors"}};
  for (const auto& [letter, name] : roles) {
    ChartSeries series{name, {}, {}, {}, {}};
    table.columns.push_back({name, true});
    for (int bits : plan.bits) {
      const Config* c = find_config(configs, letter + std::to_string(bits));
      if (c == nullptr) continue;
      series.x.push_back(bits);
      series.y.push_back(c->change.median);
      series.y_low.push_back(c->change.min);
      series.y_high.push_back(c->change.max);
    }
    chart.series.push_back(series);
  }
  for (int bits : plan.bits) {
    std::vector<std::string> row = {std::to_string(bits)};
    for (const auto& role : roles) {
      const Config* c = find_config(configs, role.first + std::to_string(bits));
      row.push_back(c ? spread_text(c->change, 2) : report::kNone);
    }
    table.rows.push_back(row);
  }
  doc.charts({render_line_chart(chart)});
  doc.table(table);
}

// Each layer alone in the plan's layer precision: a bar per layer.
void layer_section(report::Document& doc, const SweepPlan& plan, const std::vector<Config>& configs) {
  doc.heading(2, "layers", "Each layer alone in " + plan.layer_precision);
  doc.paragraph("The model trained again from the same seed in fp32 but for one layer's products (its cfg's "
                "`precision` key): what that layer alone costs. The most sensitive layers keep more bits.");
  BarChart chart;
  chart.title = "Test accuracy change against fp32 (points), one layer in " + plan.layer_precision;
  chart.value_label = "change (points)";
  chart.note = "median over the seeds; whiskers: the least and most";
  chart.value_format = "%+.2f";
  report::Table table{"Each layer alone", {{"layer"}, {"change (points)", true}, {"accuracy (%)", true}}, {}, {}, false, false};
  const std::string suffix = "=" + plan.layer_precision;  // not --fit-weights' LAYER=wB rows
  for (const Config& c : configs) {
    const size_t at = c.name.find('=');
    if (at == std::string::npos || c.name.size() <= suffix.size() ||
        c.name.compare(c.name.size() - suffix.size(), suffix.size(), suffix) != 0 || c.name.find('+') != std::string::npos) {
      continue;
    }
    chart.labels.push_back(c.name.substr(0, at));
    chart.values.push_back({c.change.median});
    chart.low.push_back({c.change.min});
    chart.high.push_back({c.change.max});
    table.rows.push_back({c.name.substr(0, at), spread_text(c.change, 2), spread_text(c.accuracy, 2)});
  }
  doc.charts({render_bar_chart(chart)});
  doc.table(table);
}

// The configurations no other beats on both accuracy and x: sorted by x, best x first (the
// least when `lower_x`; at equal x the more accurate first), each kept when its accuracy is above
// every one before it.
std::vector<const Config*> pareto_front(std::vector<const Config*> points, double (*x)(const Config&), bool lower_x) {
  std::sort(points.begin(), points.end(), [&](const Config* a, const Config* b) {
    if (x(*a) != x(*b)) return lower_x ? x(*a) < x(*b) : x(*a) > x(*b);
    return a->accuracy.median > b->accuracy.median;
  });
  std::vector<const Config*> front;
  double best = -INFINITY;
  for (const Config* c : points)
    if (c->accuracy.median > best) {
      front.push_back(c);
      best = c->accuracy.median;
    }
  return front;
}

double weight_bytes_of(const Config& c) { return c.weight_bytes; }
double train_speed_of(const Config& c) { return c.train.median; }
double infer_speed_of(const Config& c) { return c.infer.median; }

struct ParetoAxis {
  const char* id;
  const char* heading;
  const char* x_label;
  double (*x)(const Config&);
  bool lower_x;  // fewer bytes are better; more samples/s are
};

// Accuracy against one axis: every configuration a point (its seeds' spread as a bar), the front
// joined, and the front's table.
void pareto_section(report::Document& doc, const ParetoAxis& axis, const std::vector<Config>& configs) {
  doc.heading(2, axis.id, axis.heading);
  std::vector<const Config*> points;
  for (const Config& c : configs)
    if (std::isfinite(axis.x(c)) && axis.x(c) > 0 && std::isfinite(c.accuracy.median)) points.push_back(&c);
  const std::vector<const Config*> front = pareto_front(points, axis.x, axis.lower_x);
  LineChart chart;
  chart.title = std::string("Test accuracy (%) against ") + axis.x_label;
  chart.x_label = axis.x_label;
  chart.y_label = "accuracy (%)";
  chart.log_x = true;
  chart.note = "each point a configuration (its name on hover), bars: the least and most over the seeds; line: the front";
  ChartSeries all{"configurations", {}, {}, {}, {}}, line{"Pareto front", {}, {}, {}, {}};
  for (const Config* c : points) {
    all.x.push_back(axis.x(*c));
    all.y.push_back(c->accuracy.median);
    all.y_low.push_back(c->accuracy.min);
    all.y_high.push_back(c->accuracy.max);
    all.labels.push_back(c->name);
  }
  for (const Config* c : front) {
    line.x.push_back(axis.x(*c));
    line.y.push_back(c->accuracy.median);
    line.labels.push_back(c->name);
  }
  chart.series = {all, line};
  chart.points_only = {true, false};
  doc.charts({render_line_chart(chart)});
  report::Table table{std::string("The front: no configuration is both more accurate and better in ") + axis.x_label,
                      {{"precision"}, {"accuracy (%)", true}, {axis.x_label, true}},
                      {},
                      {},
                      false,
                      false};
  for (const Config* c : front) table.rows.push_back({c->name, spread_text(c->accuracy, 2), report::num(axis.x(*c), 4)});
  doc.table(table);
}

void configurations_section(report::Document& doc, const std::vector<Config>& configs) {
  doc.heading(2, "all", "Every configuration");
  report::Table table{"Median (least to most) over the seeds",
                      {{"precision"}, {"what ran", false, false, true}, {"accuracy (%)", true}, {"change (points)", true},
                       {"weight bytes", true}, {"train samples/s", true}, {"inference samples/s", true}},
                      {},
                      {"change: against fp32 trained from the same seed; train samples/s: '—' where the row did not "
                       "train (post-training quantization); weight bytes: as the row's inference holds them (the "
                       "fixed-point training rows keep f32 weights)"},
                      false,
                      false};
  for (const Config& c : configs) {
    table.rows.push_back({c.name, c.what_ran, spread_text(c.accuracy, 2), spread_text(c.change, 2), report::num(c.weight_bytes, 4),
                          spread_text(c.train, 0), spread_text(c.infer, 0)});
  }
  doc.table(table);
}

}  // namespace

Result<FitChoice> fit_weights(const SweepPlan& plan, const std::vector<SweepSeed>& seeds) {
  const std::vector<Config> configs = configs_of(seeds);
  FitChoice fit;
  for (const auto& [layer, weights] : plan.layer_weights) {  // f32 first: fits as it is?
    fit.widths.emplace_back(layer, 32);
    fit.bytes += 4 * weights;
  }
  fit.row = "fp32";
  if (fit.bytes <= plan.fit_bytes) return fit;
  fit = FitChoice();
  std::vector<int> widths = {32};  // f32, then narrower
  for (auto b = plan.fit_bits.rbegin(); b != plan.fit_bits.rend(); ++b) widths.push_back(*b);
  const auto bytes_at = [](int64_t weights, int bits) { return (weights * bits + 7) / 8; };
  // loss[l][w]: layer l at widths[w], the points its own row lost (its median change, negated).
  std::vector<std::vector<double>> loss(plan.layer_weights.size(), std::vector<double>(widths.size(), 0.0));
  for (size_t l = 0; l < plan.layer_weights.size(); ++l)
    for (size_t w = 1; w < widths.size(); ++w) {
      const Config* c = find_config(configs, plan.layer_weights[l].first + "=w" + std::to_string(widths[w]));
      if (c == nullptr || !std::isfinite(c->change.median)) {
        return Status::error("--fit-weights: no row for " + plan.layer_weights[l].first + " at " + std::to_string(widths[w]) + " bits");
      }
      loss[l][w] = -c->change.median;
    }
  std::vector<size_t> at(plan.layer_weights.size(), 0);
  const auto total = [&] {
    int64_t sum = 0;
    for (size_t l = 0; l < at.size(); ++l) sum += bytes_at(plan.layer_weights[l].second, widths[at[l]]);
    return sum;
  };
  while (total() > plan.fit_bytes) {
    size_t best = at.size();
    double best_cost = INFINITY;
    for (size_t l = 0; l < at.size(); ++l) {
      if (at[l] + 1 >= widths.size()) continue;
      const int64_t weights = plan.layer_weights[l].second;
      const double saved = static_cast<double>(bytes_at(weights, widths[at[l]]) - bytes_at(weights, widths[at[l] + 1]));
      const double cost = (loss[l][at[l] + 1] - loss[l][at[l]]) / std::max(saved, 1.0);
      if (cost < best_cost) best_cost = cost, best = l;
    }
    if (best == at.size()) {
      return Status::error("--fit-weights: " + std::to_string(plan.fit_bytes) + " bytes is below the narrowest widths' " +
                           std::to_string(total()) + " bytes (every layer at " + std::to_string(widths.back()) + " bits)");
    }
    ++at[best];
  }
  for (size_t l = 0; l < at.size(); ++l) {
    const std::string& layer = plan.layer_weights[l].first;
    fit.widths.emplace_back(layer, widths[at[l]]);
    fit.predicted_change -= loss[l][at[l]];
    if (at[l] > 0) fit.row += (fit.row.empty() ? "" : "+") + layer + "=w" + std::to_string(widths[at[l]]);
  }
  fit.bytes = total();
  if (fit.row.empty()) fit.row = "fp32";
  return fit;
}

namespace {

// --fit-weights: the widths chosen, the prediction, and the fitted model's measured change.
void fit_section(report::Document& doc, const SweepPlan& plan, const FitChoice& fit, const std::vector<SweepSeed>& fit_seeds) {
  doc.heading(2, "fit", "Weights fitted to " + format_bytes(plan.fit_bytes));
  doc.paragraph("Each layer's weights alone at 2, 4 and 8 bits (rows `LAYER=wB`, the rest f32) give the points it "
                "loses at each width; from f32, the step down that loses the least per byte saved is taken until the "
                "conv and dense weights at their widths fit. The sum of the layers' losses is the prediction; the "
                "fitted model, trained from each seed, is the measurement.");
  report::Table table{"The widths chosen", {{"layer"}, {"weights", true}, {"bits", true}, {"bytes at that width", true}}, {}, {}, false, false};
  for (size_t l = 0; l < fit.widths.size(); ++l) {
    const int64_t weights = plan.layer_weights[l].second;
    const int bits = fit.widths[l].second;
    table.rows.push_back({fit.widths[l].first, std::to_string(weights), bits == 32 ? "32 (f32)" : std::to_string(bits),
                          std::to_string((weights * bits + 7) / 8)});
  }
  doc.table(table);
  const std::vector<Config> configs = configs_of(fit_seeds);
  const Config* measured = find_config(configs, fit.row);
  doc.paragraph("**" + fit.row + "**: the weights at these widths " + std::to_string(fit.bytes) + " bytes (budget " +
                std::to_string(plan.fit_bytes) + "); predicted change " + report::fixed(fit.predicted_change, 2) +
                " points; measured " + (measured ? spread_text(measured->change, 2) : std::string("— (every layer fits in f32)")) +
                " points (median, least to most over the seeds).");
}

}  // namespace

report::Document sweep_report(const SweepPlan& plan, const std::vector<SweepSeed>& seeds, const std::string& model,
                              const FitChoice* fit, const std::vector<SweepSeed>& fit_seeds) {
  const std::vector<Config> configs = configs_of(seeds);
  report::Document doc;
  doc.title = "Precision sweep: " + model;
  std::string seed_list;
  for (const SweepSeed& s : seeds) seed_list += (seed_list.empty() ? "" : ", ") + std::to_string(s.seed);
  doc.paragraph("**" + model + "**, " + std::to_string(configs.size()) + " configurations, each trained (or quantized) "
                "from each seed of " + seed_list + "; every change is against fp32 trained from the same seed; each "
                "figure the median over the seeds, with the least and the most. Made by `retrograd precision --sweep" +
                (plan.quick ? " --quick" : "") + "`.");
  doc.toc();
  bits_section(doc, plan, configs);
  layer_section(doc, plan, configs);
  const ParetoAxis axes[] = {
      {"bytes", "Accuracy against weight bytes", "weight bytes", weight_bytes_of, true},
      {"train", "Accuracy against training speed", "train samples/s", train_speed_of, false},
      {"infer", "Accuracy against inference speed", "inference samples/s", infer_speed_of, false}};
  for (const ParetoAxis& axis : axes) pareto_section(doc, axis, configs);
  if (fit != nullptr) fit_section(doc, plan, *fit, fit_seeds);
  configurations_section(doc, configs);
  return doc;
}

nlohmann::json sweep_json(const SweepPlan& plan, const std::vector<SweepSeed>& seeds, const std::string& model,
                          const FitChoice* fit, const std::vector<SweepSeed>& fit_seeds) {
  nlohmann::json out = {{"model", model}, {"bits", plan.bits}, {"layer_precision", plan.layer_precision},
                        {"quick", plan.quick}, {"seeds", nlohmann::json::array()}};
  for (const SweepSeed& s : seeds) out["seeds"].push_back({{"seed", s.seed}, {"rows", precision_json(s.rows)}});
  if (fit != nullptr) {
    nlohmann::json widths = nlohmann::json::object();
    for (const auto& [layer, bits] : fit->widths) widths[layer] = bits;
    out["fit"] = {{"budget_bytes", plan.fit_bytes}, {"bytes", fit->bytes}, {"widths", widths}, {"row", fit->row},
                  {"predicted_change_points", fit->predicted_change}, {"seeds", nlohmann::json::array()}};
    for (const SweepSeed& s : fit_seeds) out["fit"]["seeds"].push_back({{"seed", s.seed}, {"rows", precision_json(s.rows)}});
  }
  return out;
}

}  // namespace rg
