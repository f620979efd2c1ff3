// The study's report, written to one folder:
//   report.html    one self-contained page (inline CSS and SVG charts, no scripts, nothing
//                  fetched): the machine, the peaks and their sources, speed per device and
//                  precision, the ISA ladder, the batch-size and learning-rate curves,
//                  efficiency against peak, the estimates for other machines, the advice, the
//                  published figures the study follows, and how each figure was measured;
//   report.md      the same tables as Markdown (no charts);
//   runs.csv       every run, every figure; estimates.csv; study.json (study/study_result.h).
#pragma once

#include <string>

#include "base/status.h"
#include "study/study_result.h"

namespace rg {

Status write_study_report(const StudyResult& result, const std::string& dir);

std::string study_report_markdown(const StudyResult& result);
std::string study_report_html(const StudyResult& result);

// A few lines for the terminal at the end of `study`: the fastest setting per network and where
// the report is.
std::string study_summary_text(const StudyResult& result);

}  // namespace rg
