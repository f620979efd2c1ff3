// The sections of the study report (study/study_report.h), each appended to one document
// (study/report_doc.h), and the small look-ups they share.
#pragma once

#include <string>
#include <vector>

#include "study/report_doc.h"
#include "study/study_result.h"

namespace rg::report {

// Chart sizes: two side by side on a laptop screen, one per line when printed narrow.
constexpr int kChartWidth = 560, kChartHeight = 340;

std::string device_label(const StudyResult& result, int device);
const StudyDevice* device_at(const StudyResult& result, int device);
// The networks in the order the study names them (config), then any others its runs hold.
std::vector<std::string> study_networks(const StudyResult& result);
// Successful, timed (not profiled) runs of a part.
std::vector<const RunRecord*> good_runs(const StudyResult& result, const std::string& part);
// The quality a run reached, with its name: "test accuracy 85.9%", "test MSE 0.0149".
std::string quality_text(const RunRecord& run);
// The quality's value alone, accuracy as a percentage.
std::string quality_value(const RunRecord& run);
double quality_for_chart(const RunRecord& run);  // accuracy in %, other qualities as they are
// One line per distinct peak among `devices`: the devices, the FP32 GFLOP/s, its basis, its source.
std::vector<std::string> peak_notes(const StudyResult& result, const std::vector<int>& devices);
// A figure's samples/s with its rounds' range: "49.9k (48.1k-51.2k)", "+ unstable" when it is.
std::string speed_cell(const RunRecord& figure);
// A figure's quality with its rounds' range: "85.9% (85.1-86.4%)".
std::string quality_cell(const RunRecord& figure);
// A run's error on one line, cut to `limit` characters.
std::string one_line(const std::string& text, size_t limit = 400);

void add_peaks_section(Document& doc, const StudyResult& result);     // report_speed.cpp
void add_speed_section(Document& doc, const StudyResult& result);     // report_speed.cpp
void add_layers_section(Document& doc, const StudyResult& result);    // report_layers.cpp
void add_batch_section(Document& doc, const StudyResult& result);     // report_sweeps.cpp
void add_lr_section(Document& doc, const StudyResult& result);        // report_sweeps.cpp
void add_estimates_section(Document& doc, const StudyResult& result); // report_estimates.cpp
void add_quality_section(Document& doc, const StudyResult& result);   // report_claims.cpp
void add_claims_section(Document& doc, const StudyResult& result);    // report_claims.cpp
void add_noise_table(Document& doc, const StudyResult& result);       // report_claims.cpp

}  // namespace rg::report
