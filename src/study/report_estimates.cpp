// The report's estimates for the other machines of the hardware table (study/estimates.h):
// marked as estimates in every heading, caption, chart and note.
#include <algorithm>
#include <cmath>

#include "report/svg_chart.h"
#include "study/report_sections.h"

namespace rg::report {

namespace {

double number(const nlohmann::json& row, const char* key) {
  return row.contains(key) && row[key].is_number() ? row[key].get<double>() : NAN;
}

std::string text(const nlohmann::json& row, const char* key) {
  return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : "";
}

// The estimate, or the ceiling where there is none: "287k", "≤ 1.51M (ceiling)".
std::string estimate_cell(const nlohmann::json& row) {
  const double e = number(row, "estimated_samples_per_s"), c = number(row, "ceiling_samples_per_s");
  if (std::isfinite(e)) return num(e);
  return std::isfinite(c) ? "≤ " + num(c) + " (ceiling)" : kNone;
}

// The fastest fp32 samples/s measured here for a network, and where.
std::pair<double, std::string> measured_here(const StudyResult& result, const std::string& network) {
  std::pair<double, std::string> best{NAN, ""};
  for (const RunRecord* r : good_runs(result, "devices")) {
    if (r->run.network != network || r->run.precision != "fp32") continue;
    if (!(r->samples_per_s <= best.first)) best = {r->samples_per_s, device_label(result, r->run.device)};
  }
  return best;
}

const nlohmann::json* estimate_row(const nlohmann::json& rows, const std::string& network, const std::string& machine) {
  for (const nlohmann::json& row : rows)
    if (text(row, "network") == network && text(row, "machine") == machine) return &row;
  return nullptr;
}

// The networks and the machines (with their types) of the estimates, in order of first appearance.
struct EstimateAxes {
  std::vector<std::string> networks, machines, types;
};

EstimateAxes estimate_axes(const nlohmann::json& rows) {
  EstimateAxes axes;
  for (const nlohmann::json& row : rows) {
    const std::string n = text(row, "network"), m = text(row, "machine");
    if (std::find(axes.networks.begin(), axes.networks.end(), n) == axes.networks.end()) axes.networks.push_back(n);
    if (std::find(axes.machines.begin(), axes.machines.end(), m) == axes.machines.end()) {
      axes.machines.push_back(m);
      axes.types.push_back(text(row, "type"));
    }
  }
  return axes;
}

// Machines by networks: this machine's measured speed first, then each machine's estimate.
Table estimate_matrix(const StudyResult& result, const EstimateAxes& axes) {
  const nlohmann::json& rows = result.estimates;
  Table matrix;
  matrix.estimate = true;
  matrix.caption = "ESTIMATED training samples/s (fp32, batch 64) on other machines";
  matrix.columns = {{"machine"}, {"type"}};
  for (const std::string& n : axes.networks) matrix.columns.push_back({n + " (estimate)", true});
  std::vector<std::string> here_row = {"this machine (MEASURED)", "best device"};
  for (const std::string& n : axes.networks) {
    auto [speed, device] = measured_here(result, n);
    here_row.push_back(std::isfinite(speed) ? num(speed) + " on " + device : kNone);
  }
  matrix.rows.push_back(here_row);
  for (size_t i = 0; i < axes.machines.size(); ++i) {
    std::vector<std::string> row = {axes.machines[i], axes.types[i]};
    for (const std::string& n : axes.networks) {
      const nlohmann::json* r = estimate_row(rows, n, axes.machines[i]);
      row.push_back(r ? estimate_cell(*r) : kNone);
    }
    matrix.rows.push_back(row);
  }
  matrix.notes = {"The first row is measured here (the fastest fp32 run); every other row is an estimate. "
                  "\"≤ X (ceiling)\": no estimate, only the roofline ceiling at 100% efficiency."};
  return matrix;
}

// The efficiencies carried over, once per network and class of device.
Table estimate_efficiencies(const nlohmann::json& rows) {
  Table eff;
  eff.estimate = true;
  eff.caption = "The efficiency each estimate applies (measured here against this machine's roofline)";
  eff.columns = {{"network"}, {"carried to"}, {"measured on"}, {"efficiency", true}};
  for (const nlohmann::json& row : rows) {
    if (!std::isfinite(number(row, "efficiency"))) continue;
    const bool gpu = text(row, "type").find("GPU") != std::string::npos;
    std::vector<std::string> cells = {text(row, "network"), gpu ? "GPUs" : "CPUs", text(row, "measured_on"),
                                      percent(number(row, "efficiency"))};
    if (std::find(eff.rows.begin(), eff.rows.end(), cells) == eff.rows.end()) eff.rows.push_back(cells);
  }
  return eff;
}

// The chart: the sweep network and the slowest network, the machines with an estimate, and
// this machine measured.
BarChart estimates_chart(const StudyResult& result, const EstimateAxes& axes) {
  const std::vector<std::string>& networks = axes.networks;
  std::vector<std::string> charted;
  const auto& sweep = result.config.sweep_network;
  charted.push_back(std::find(networks.begin(), networks.end(), sweep) != networks.end() ? sweep : networks[0]);
  std::string slowest;
  double slowest_speed = INFINITY;
  for (const std::string& n : networks) {
    const double v = measured_here(result, n).first;
    if (n == charted[0] || !(v < slowest_speed)) continue;
    slowest = n;
    slowest_speed = v;
  }
  if (!slowest.empty()) charted.push_back(slowest);
  BarChart c;
  c.title = "ESTIMATED fp32 training samples/s on other machines";
  c.value_label = "samples/s (log scale; estimates but the first row)";
  c.log_scale = true;
  c.series_names = charted;
  std::vector<double> here;
  for (const std::string& n : charted) here.push_back(measured_here(result, n).first);
  c.labels.push_back("this machine (MEASURED)");
  c.values.push_back(here);
  std::vector<std::string> ceiling_only;
  for (const std::string& m : axes.machines) {
    std::vector<double> v;
    for (const std::string& n : charted) {
      const nlohmann::json* r = estimate_row(result.estimates, n, m);
      v.push_back(r ? number(*r, "estimated_samples_per_s") : NAN);
    }
    if (std::any_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); })) {
      c.labels.push_back(m);
      c.values.push_back(v);
    } else {
      ceiling_only.push_back(m);
    }
  }
  c.note = "the first row measured here, the others estimated from the roofline" +
           std::string(ceiling_only.empty() ? "" : "; only a ceiling (left out): " + std::to_string(ceiling_only.size()) + " machines");
  return c;
}

// Every estimate with its basis.
Table estimates_with_basis(const nlohmann::json& rows) {
  Table all;
  all.estimate = true;
  all.caption = "ESTIMATES with their basis";
  all.group_rows = true;
  all.columns = {{"network"}, {"machine"}, {"type"}, {"estimate samples/s", true}, {"ceiling samples/s", true},
                 {"efficiency", true}, {"compute-bound share", true}, {"basis", false, false, true}};
  for (const nlohmann::json& row : rows) {
    all.rows.push_back({text(row, "network"), text(row, "machine"), text(row, "type"), num(number(row, "estimated_samples_per_s")),
                        num(number(row, "ceiling_samples_per_s")), percent(number(row, "efficiency")),
                        percent(number(row, "compute_bound_share"), 0), text(row, "basis")});
  }
  return all;
}

}  // namespace

void add_estimates_section(Document& doc, const StudyResult& result) {
  doc.heading(2, "estimates", "Estimates for other machines (ESTIMATES, not measurements)");
  const nlohmann::json& rows = result.estimates;
  if (!rows.is_array() || rows.empty()) {
    doc.paragraph(result.finished ? "No estimates: no network's fp32 speed was measured here."
                                  : "No estimates: they are made when the study ends, and this one stopped before.");
    return;
  }
  doc.warning("ESTIMATES, not measurements. Each network's fp32 speed measured here is carried to the machines of "
              "the published hardware table through the roofline, layer by layer: the estimate is the efficiency "
              "this machine reached against its own roofline, applied to the other machine's roofline (its peak "
              "and memory bandwidth). A CPU measurement is carried to CPUs and a GPU one to GPUs; where no device "
              "of the class was measured here, only the ceiling (100% of the roofline) is given, which no real run "
              "reaches.");
  const EstimateAxes axes = estimate_axes(rows);
  doc.table(estimate_matrix(result, axes));
  doc.table(estimate_efficiencies(rows));
  const BarChart chart = estimates_chart(result, axes);
  if (chart.labels.size() > 1) doc.charts({render_bar_chart(chart, 720)});
  doc.details_begin("Every estimate with its basis (" + std::to_string(rows.size()) + " rows)");
  doc.table(estimates_with_basis(rows));
  doc.details_end();
}

}  // namespace rg::report
