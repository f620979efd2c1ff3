// The report's quality section (precisions and devices compared on what they learn), its claims
// and anomalies (what the measurements can tell apart, by the rule of study/statistics.h), and
// the machine's noise over the rounds.
#include <algorithm>

#include "base/text_format.h"
#include "report/svg_chart.h"
#include "study/report_sections.h"
#include "study/statistics.h"
#include "study/study_claims.h"

namespace rg::report {

namespace {

// The machine's own speed (a fixed piece of work before each run) over the runs that match.
template <class Match>
Spread machine_speed(const StudyResult& result, Match match) {
  std::vector<double> values;
  for (const RunRecord& r : result.runs)
    if (match(r)) values.push_back(r.machine_gbs);
  return spread_of(values);
}

std::string verdict_word(const Claim& c) {
  if (!c.comparison.decidable) return "not decidable";
  if (c.comparison.verdict == 0) return "no measurable difference";
  if (c.kind == "quality") return (c.comparison.verdict > 0) == c.higher_is_better ? "better" : "worse";
  return c.comparison.verdict > 0 ? "faster" : "slower";
}

}  // namespace

void add_quality_section(Document& doc, const StudyResult& result) {
  const std::vector<const RunRecord*> runs = good_runs(result, "quality");
  if (runs.empty()) return;
  doc.heading(2, "quality", "Quality per precision and device");
  doc.paragraph("Each network trained on the same budget of " + num(static_cast<double>(result.config.quality_samples)) +
                " samples (batch 64) in each precision, once a round with the round's seed, and scored on held-out "
                "test samples: the spread is over seeds. A figure no better than chance (the majority class's "
                "accuracy, the MSE of answering the mean) is marked \"did not learn in this budget\" and never used to "
                "accept or refuse a precision.");
  Table t;
  t.caption = "Quality after " + num(static_cast<double>(result.config.quality_samples)) +
              " training samples (median over the rounds' seeds, in brackets their least and greatest)";
  t.group_rows = true;
  t.columns = {{"network"}, {"device"}, {"precision"}, {"quality", true}, {"chance", true}, {"rounds", true},
               {"against fp32", false, false, true}};
  for (const RunRecord* r : runs) {
    std::string against = kNone;
    if (!r->not_learned.empty()) {
      against = "did not learn in this budget: " + r->not_learned;
    } else {
      for (const Claim& c : result.claims)
        if (c.kind == "quality" && c.a_id == r->run.config_id()) against = c.b + ": " + claim_text(c);
    }
    RunRecord chance = *r;
    chance.quality = r->quality_chance;
    t.rows.push_back({r->run.network, device_label(result, r->run.device), r->run.precision,
                      (r->quality_name.empty() ? "" : r->quality_name + " ") + quality_cell(*r), quality_value(chance),
                      std::to_string(r->rounds), against});
  }
  doc.table(t);
}

void add_claims_section(Document& doc, const StudyResult& result) {
  if (result.claims.empty()) return;
  doc.heading(2, "claims", "What the measurements can tell apart");
  doc.paragraph("Every comparison this report and its advice make, decided by one rule (docs/study.md, \"How the "
                "study decides\"): the rounds are resampled (a two-level bootstrap), the ratio of medians (speed) or "
                "the difference (accuracy) gets a 95% interval and a p-value, Holm's method holds the chance of any "
                "false claim among the comparisons of each kind (ISA levels, precisions, threads, ...) to 5%, and a difference under 3% (speed) or half a point (accuracy) is "
                "never claimed. Otherwise: \"no measurable difference\".");
  std::vector<std::string> anomalies, explained, unstable;
  for (const Claim& c : result.claims) {
    if (c.anomaly.empty()) continue;
    (c.explained_by_load ? explained : anomalies)
        .push_back("**" + c.network + "**, " + c.a + " against " + c.b + ": " + claim_text(c) + ". " +
                   sentence_start(c.anomaly) + ".");
  }
  for (const RunRecord& f : result.figures)
    if (f.unstable) {
      const Spread machine = machine_speed(result, [&](const RunRecord& r) { return r.run.config_id() == f.run.config_id(); });
      unstable.push_back(f.run.config_id() + ": " + num(f.samples_per_s) + " samples/s, rounds " + num(f.samples_per_s_low) +
                         " to " + num(f.samples_per_s_high) + " (interquartile range " + percent(f.speed_spread, 0) +
                         " of the median, over " + std::to_string(f.rounds) + " rounds; the machine's fixed work ran at " +
                         num(machine.min) + " to " + num(machine.max) + " GB/s before them)");
    }
  doc.heading(3, "anomalies", "Anomalies");
  if (anomalies.empty() && explained.empty()) {
    doc.paragraph("None: no lower ISA level was faster than a higher one, no precision beyond what its arithmetic "
                  "allows, no more threads slower than fewer, and no speed depended on the values, beyond the noise.");
  }
  if (!anomalies.empty()) {
    doc.warning("Results the hardware cannot explain, with their figures and likely cause; the advice does not use them.");
    doc.list(anomalies);
  }
  if (!explained.empty()) {
    doc.warning("Results the load measured during the study explains (another program held a core): the advice "
                "follows them, and says they hold only while that load does.");
    doc.list(explained);
  }
  if (!unstable.empty()) {
    doc.warning(std::to_string(unstable.size()) + " of " + std::to_string(result.figures.size()) +
                " figures stayed unstable after the extra rounds (their rounds spread more than " +
                percent(result.config.unstable_spread, 0) + " of the median): read them with their range.");
    doc.list(unstable);
  }
  Table t;
  t.caption = "Every comparison, decided";
  t.group_rows = true;
  t.columns = {{"kind"}, {"network"}, {"a"}, {"against b"}, {"verdict"}, {"a / b (or a - b)", false, false, true},
               {"Holm-adjusted p", true}};
  for (const Claim& c : result.claims) {
    t.rows.push_back({c.kind, c.network, c.a, c.b, verdict_word(c), claim_text(c),
                      std::isfinite(c.comparison.p_adjusted) ? num(c.comparison.p_adjusted, 2) : kNone});
  }
  doc.details_begin("All " + std::to_string(result.claims.size()) + " comparisons");
  doc.table(t);
  doc.details_end();
}

void add_noise_table(Document& doc, const StudyResult& result) {
  if (result.round_loads.empty()) return;
  Table t;
  t.caption = "The machine's load during each round (other programs' and the hypervisor's share of all CPUs' time; "
              "the clock measured on one core after the round; the speed of a fixed piece of work, summing 2 MiB on one "
              "core, before each run: it falls when other programs or virtual machines share the core, its caches or "
              "its memory, which the load and steal do not show)";
  t.columns = {{"round", true}, {"duration", true}, {"other programs", true}, {"steal", true}, {"load average", true},
               {"clock (MHz)", true}, {"fixed work before each run: GB/s, median (least-greatest)", true}};
  for (const RoundLoad& l : result.round_loads) {
    const Spread machine = machine_speed(result, [&](const RunRecord& r) { return r.run.round == l.round; });
    t.rows.push_back({std::to_string(l.round), seconds_text(l.seconds), percent(l.others, 0), percent(l.steal, 1),
                      std::isfinite(l.load1) ? fixed(l.load1, 2) : kNone, std::isfinite(l.cpu_mhz) ? fixed(l.cpu_mhz, 0) : kNone,
                      machine.n > 0 ? num(machine.median) + " (" + num(machine.min) + "-" + num(machine.max) + ")" : kNone});
  }
  doc.table(t);
}

}  // namespace rg::report
