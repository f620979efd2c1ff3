// Two studies' figures against each other, by the rule the study claims with.
#include "study/study_compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "study/report_sections.h"
#include "study/study_claims.h"
#include "study/study_result.h"
#include "study/study_summary.h"

namespace rg {

namespace {

// The settings that must agree for two studies' figures to be the same figures: all but how many
// rounds each made.
nlohmann::json comparable_settings(const StudyConfig& config) {
  nlohmann::json settings = study_config_json(config);
  for (const char* key : {"rounds", "extra_rounds"}) settings.erase(key);
  return settings;
}

// Which parts' speeds and qualities are figures worth comparing: the quality part's and the batch
// sweep's speeds are by-products (study_summary), and the devices and threads parts train for a
// time, not a budget of samples, so their quality follows their speed.
bool speed_compared(const std::string& part) { return part != "quality" && part != "batch"; }
bool quality_compared(const std::string& part) { return part == "quality" || part == "batch" || part == "lr"; }

std::string figure_label(const StudyResult& study, const RunRecord& f, int threads) {
  std::string label = f.run.network + ", " + f.run.part + ", " + study.devices[f.run.device].label + ", " +
                      f.run.precision + ", batch " + std::to_string(f.run.batch);
  if (f.run.lr > 0) label += ", lr " + report::num(f.run.lr);
  return label + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

// More threads than the CPUs other programs left free, by half a core or more.
bool oversubscribed(const RunRecord& f, int threads, int logical_cpus) {
  if (!std::isfinite(f.load_others)) return false;
  return threads > logical_cpus * (1 - f.load_others) + 0.5;
}

class Comparer {
 public:
  Comparer(const StudyResult& a, const StudyResult& b) : a_(a), b_(b), cpus_(a.machine.logical_cpus) {}

  // The figure of b that is f of a (the same settings on the device of the same label), or null.
  const RunRecord* counterpart(const RunRecord& f) const {
    const std::string label = a_.devices[f.run.device].label;
    for (size_t d = 0; d < b_.devices.size(); ++d) {
      if (b_.devices[d].label != label) continue;
      StudyRun run = f.run;
      run.device = static_cast<int>(d);
      for (const RunRecord& g : b_.figures)
        if (g.ok && g.run.config_id() == run.config_id()) return &g;
    }
    return nullptr;
  }

  FigureChange change(const RunRecord& fa, const RunRecord& fb, bool speed) const {
    FigureChange c;
    c.config_id = fa.run.config_id();
    c.speed = speed;
    c.a = fa;
    c.b = fb;
    c.threads = threads_used(fa, cpus_);
    c.label = figure_label(a_, fa, c.threads);
    const bool opencl = a_.devices[fa.run.device].opencl;
    if (speed) {
      c.comparison = compare(round_speeds(b_.runs, fb.run.config_id(), opencl),
                             round_speeds(a_.runs, c.config_id, opencl), Effect::ratio);
      c.within_ranges = within(fa.samples_per_s, fb.samples_per_s_low, fb.samples_per_s_high) &&
                        within(fb.samples_per_s, fa.samples_per_s_low, fa.samples_per_s_high);
    } else {
      c.comparison = compare(round_qualities(b_.runs, fb.run.config_id()), round_qualities(a_.runs, c.config_id),
                             quality_effect(fa.quality_higher_is_better), quality_decision_rule());
      c.within_ranges = within(fa.quality, fb.quality_low, fb.quality_high) && within(fb.quality, fa.quality_low, fa.quality_high);
    }
    return c;
  }

  // After decide(): a speed that differs beyond the noise on the side whose runs had too few CPUs.
  void explain_by_load(FigureChange& c) const {
    const int v = c.comparison.verdict;
    const bool a_short = oversubscribed(c.a, c.threads, cpus_), b_short = oversubscribed(c.b, c.threads, cpus_);
    c.load_explains = c.speed && a_short != b_short && ((v < 0 && b_short) || (v > 0 && a_short));
  }

 private:
  static bool within(double x, double low, double high) { return x >= low && x <= high; }
  const StudyResult& a_;
  const StudyResult& b_;
  int cpus_;
};

void decide_all(std::vector<FigureChange>& changes, const DecisionRule& rule) {
  std::vector<Comparison*> family;
  for (FigureChange& c : changes) family.push_back(&c.comparison);
  decide(family, rule);
}

std::string figure_cell(const FigureChange& c, const RunRecord& f) { return c.speed ? report::speed_cell(f) : report::quality_cell(f); }

std::string load_cell(const RunRecord& f) { return report::percent(f.load_others, 0); }

std::string verdict_text(const FigureChange& c) {
  Claim claim;
  claim.kind = c.speed ? "speed" : "quality";
  claim.higher_is_better = c.a.quality_higher_is_better;
  claim.comparison = c.comparison;
  std::string text = claim_text(claim);
  if (c.load_explains) text += "; the load explains it (fewer CPUs free than the runs' threads on one side)";
  return text;
}

// "49 figures: 45 the same within the noise, 4 differ beyond it (4 of them explained by the load); 3 medians
// outside the other's range"
std::string summary_line(const std::vector<FigureChange>& changes) {
  int differ = 0, explained = 0, undecidable = 0, outside = 0;
  for (const FigureChange& c : changes) {
    differ += c.comparison.verdict != 0;
    explained += c.load_explains;
    undecidable += !c.comparison.decidable;
    outside += !c.within_ranges;
  }
  const int same = static_cast<int>(changes.size()) - differ - undecidable;
  std::string line = std::to_string(changes.size()) + " figures: " + std::to_string(same) +
                     " the same within the noise, " + std::to_string(differ) + " differ beyond it";
  if (differ > 0) line += " (" + std::to_string(explained) + " of them explained by the load)";
  if (undecidable > 0) line += ", " + std::to_string(undecidable) + " not decidable (under 3 rounds a side)";
  return line + "; " + std::to_string(outside) + " with a median outside the other's range";
}

void add_table(std::string& md, const std::string& title, const std::vector<FigureChange>& changes) {
  if (changes.empty()) return;
  md += "\n## " + title + "\n\n" + summary_line(changes) + ".\n\n";
  md += "| figure | A | B | B against A | other programs, A / B |\n|---|---|---|---|---|\n";
  for (const FigureChange& c : changes) {
    md += "| " + c.label + (c.speed ? "" : ", " + c.a.quality_name) + " | " + figure_cell(c, c.a) + " | " + figure_cell(c, c.b) +
          " | " + verdict_text(c) + " | " + load_cell(c.a) + " / " + load_cell(c.b) + " |\n";
  }
}

}  // namespace

Result<StudyComparison> compare_studies(const StudyResult& a, const StudyResult& b, const std::string& a_name,
                                        const std::string& b_name) {
  const nlohmann::json settings_a = comparable_settings(a.config), settings_b = comparable_settings(b.config);
  if (settings_a != settings_b) {
    return Status::error(b_name + " was made with other settings than " + a_name + " (" +
                         config_differences(settings_b, settings_a) + "): only the same study's figures can be compared");
  }
  if (a.machine.cpu != b.machine.cpu || a.machine.logical_cpus != b.machine.logical_cpus) {
    return Status::error(b_name + " is a study of another machine (" + b.machine.cpu + ", " +
                         std::to_string(b.machine.logical_cpus) + " CPUs) than " + a_name + " (" + a.machine.cpu + ", " +
                         std::to_string(a.machine.logical_cpus) + " CPUs)");
  }
  StudyComparison out;
  out.a_name = a_name;
  out.b_name = b_name;
  out.logical_cpus = a.machine.logical_cpus;
  const Comparer comparer(a, b);
  for (const RunRecord& fa : a.figures) {
    const RunRecord* fb = fa.ok ? comparer.counterpart(fa) : nullptr;
    if (!fb) continue;
    if (speed_compared(fa.run.part) && std::isfinite(fa.samples_per_s) && std::isfinite(fb->samples_per_s))
      out.speeds.push_back(comparer.change(fa, *fb, true));
    if (quality_compared(fa.run.part) && std::isfinite(fa.quality) && std::isfinite(fb->quality))
      out.qualities.push_back(comparer.change(fa, *fb, false));
  }
  decide_all(out.speeds, DecisionRule{});
  decide_all(out.qualities, quality_decision_rule());
  for (FigureChange& c : out.speeds) comparer.explain_by_load(c);
  if (out.speeds.empty() && out.qualities.empty())
    return Status::error(a_name + " and " + b_name + " have no successful figure in common");
  return out;
}

std::string comparison_markdown(const StudyComparison& comparison) {
  std::string md = "# " + comparison.b_name + " against " + comparison.a_name + "\n\n";
  md += "A: " + comparison.a_name + "; B: " + comparison.b_name + ". Each figure is its rounds' median (least-greatest); "
        "B against A is decided by the study's own rule (rounds against rounds, a 95% interval, Holm over each table, "
        "3% the least speed difference and half a point the least accuracy difference claimed: docs/study.md). "
        "Other programs: their share of all " + std::to_string(comparison.logical_cpus) +
        " CPUs while the figure's runs ran (median over its rounds).\n";
  add_table(md, "Speeds (samples/s)", comparison.speeds);
  add_table(md, "Qualities (fixed budgets of samples)", comparison.qualities);
  return md;
}

}  // namespace rg
