// eval --int8 --profile's table (report/int8_profile_table.h).
#include "report/int8_profile_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nn/layer.h"

namespace rg {

int64_t int8_stage_products_per_sample(const Int8StagePlan& plan) {
  if (plan.kind == Int8StageKind::f32) return plan.layer != nullptr ? plan.layer->forward_flops_per_sample() / 2 : 0;
  if (plan.kind != Int8StageKind::gemm) return 0;
  const ConvGeometry& g = plan.geometry;
  const int64_t per_output = plan.path == Int8GemmPath::depthwise ? g.kernel * g.kernel : g.patch_size();
  return g.patches() * plan.filters() * per_output;
}

Int8ProfileReport summarize_int8_profile(const Int8Model& model, const Int8StageTimes& times) {
  Int8ProfileReport report;
  report.samples = times.samples;
  report.calls = times.calls;
  for (double s : times.seconds) report.stage_seconds += s;
  if (report.calls <= 0) return report;
  const std::vector<Int8StagePlan>& plans = model.plan();
  for (size_t s = 0; s < times.seconds.size() && s < plans.size(); ++s) {
    const double seconds = times.seconds[s];
    Int8ProfileRow row;
    row.layer = plans[s].name;
    row.stage = model.stage_description(s);
    row.ms_per_call = 1e3 * seconds / static_cast<double>(report.calls);
    row.us_per_sample = 1e6 * seconds / static_cast<double>(report.samples);
    row.share = report.stage_seconds > 0 ? seconds / report.stage_seconds : NAN;
    const double products = static_cast<double>(int8_stage_products_per_sample(plans[s]));
    row.gops = products > 0 && seconds > 0 ? 2 * products * static_cast<double>(report.samples) / seconds / 1e9 : NAN;
    report.rows.push_back(row);
  }
  return report;
}

std::string int8_profile_text(const Int8ProfileReport& report) {
  std::string text;
  char line[1024];  // a row (snprintf cuts one longer than this: a layer name of hundreds of characters)
  std::snprintf(line, sizeof line, "int8 profile: %lld samples in %lld calls; GOP/s count the direct products (2 a "
                "multiply-add), an f32 stage's its layer's flops\n", static_cast<long long>(report.samples),
                static_cast<long long>(report.calls));
  text += line;
  int layer_width = 5, stage_width = 5;  // the columns fit the longest name and description
  for (const Int8ProfileRow& r : report.rows) {
    layer_width = std::max(layer_width, static_cast<int>(r.layer.size()));
    stage_width = std::max(stage_width, static_cast<int>(r.stage.size()));
  }
  std::snprintf(line, sizeof line, "  %-3s %-*s %-*s %10s %10s %6s %8s\n", "#", layer_width, "layer", stage_width,
                "stage", "ms/call", "us/sample", "share", "GOP/s");
  text += line;
  for (size_t s = 0; s < report.rows.size(); ++s) {
    const Int8ProfileRow& r = report.rows[s];
    char gops[32] = "-", share[32] = "-";
    if (!std::isnan(r.gops)) std::snprintf(gops, sizeof gops, "%.1f", r.gops);
    if (!std::isnan(r.share)) std::snprintf(share, sizeof share, "%.1f%%", 100 * r.share);
    std::snprintf(line, sizeof line, "  %-3zu %-*s %-*s %10.3f %10.3f %6s %8s\n", s, layer_width,
                  r.layer.empty() ? "-" : r.layer.c_str(), stage_width, r.stage.c_str(), r.ms_per_call,
                  r.us_per_sample, share, gops);
    text += line;
  }
  const double samples = static_cast<double>(report.samples > 0 ? report.samples : 1);
  std::snprintf(line, sizeof line, "  stages together: %.3f s, %.3f us a sample (%.0f samples/s)\n",
                report.stage_seconds, 1e6 * report.stage_seconds / samples,
                report.stage_seconds > 0 ? samples / report.stage_seconds : 0.0);
  text += line;
  return text;
}

nlohmann::json int8_profile_json(const Int8ProfileReport& report) {
  nlohmann::json stages = nlohmann::json::array();
  for (const Int8ProfileRow& r : report.rows) {
    stages.push_back({{"layer", r.layer},
                      {"stage", r.stage},
                      {"ms_per_call", r.ms_per_call},
                      {"us_per_sample", r.us_per_sample},
                      {"share", r.share},
                      {"gops", std::isnan(r.gops) ? nlohmann::json() : nlohmann::json(r.gops)}});
  }
  return {{"samples", report.samples}, {"calls", report.calls}, {"stage_seconds", report.stage_seconds},
          {"stages", stages}};
}

}  // namespace rg
