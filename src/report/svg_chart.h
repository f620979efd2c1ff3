// Line and bar charts as standalone SVG for the hardware-study report (one self-contained HTML
// file, read in a browser and printed). Each chart is one <svg> element with a <title>: no
// scripts, no style sheet, no external fonts (font-family sans-serif), so it works inline in HTML
// and saved as a .svg file alike. Colours are Okabe-Ito (colour-blind safe) and every line series
// also has its own marker shape, so a grey print still tells them apart.
//
// Robust by construction: non-finite values and, on a log axis, zeros and negatives are left out
// (never a "nan" coordinate); a chart with nothing to draw shows its frame and "no data"; every
// text is XML-escaped. The charts are drawn in svg_chart.cpp; xml_escape and format_number, which
// the reports use too, are in chart_text.cpp.
#pragma once

#include <cmath>
#include <string>
#include <vector>

namespace rg {

// & < > " ' as entities: safe in element text and in attribute values.
std::string xml_escape(const std::string& text);

// A number for a reader: "1024", "12.5k", "3.2M", "0.07", "0.001", "2e-5"; `significant` digits
// at most. Non-finite: "n/a".
std::string format_number(double value, int significant = 3);

struct ChartSeries {
  std::string name;
  std::vector<double> x, y;  // same length; a non-finite y (or x) is no point: the line breaks there
  // Optional error bars (empty, or as long as y): a vertical bar with caps from y_low to y_high at
  // each point where both are usable (the spread of repeated measurements).
  std::vector<double> y_low = {}, y_high = {};
  // Optional (empty, or as long as x): each point's name, shown on hover before its values.
  std::vector<std::string> labels = {};
};

struct LineChart {
  std::string title, x_label, y_label;
  bool log_x = false, log_y = false;  // log axes: batch sizes, learning rates, throughput over decades
  bool x_ticks_at_data = false;       // label every distinct x of the data (4 8 16 ... 1024), not 1-2-5
  bool y_from_zero = false;           // linear y: the axis starts at 0 (throughput; ignored on a log axis)
  std::vector<ChartSeries> series;    // points joined in the order given
  std::string note;                   // under the chart, e.g. "higher is better; dashed: estimate"
  std::vector<bool> dashed;           // optional, per series
  std::vector<bool> points_only;      // optional, per series: markers without the joining line (a scatter)
};

// width x height pixels; the legend sits right of the plot, or below it when the names are long.
std::string render_line_chart(const LineChart& chart, int width = 720, int height = 400);

// Horizontal bars: one row per label, one bar per series within a row. Linear bars start at 0;
// log bars at the axis's left end.
struct BarChart {
  std::string title, value_label;             // value_label: the axis title ("samples/s")
  std::vector<std::string> series_names;      // the legend (none when empty)
  std::vector<std::string> labels;            // row labels, e.g. "lenet · avx2"; cut with … past 40 characters
  std::vector<std::vector<double>> values;    // values[row][series]; NaN = not measured: no bar, "n/a"
  std::vector<std::vector<double>> low, high; // optional error bars, shaped like values: a whisker with
                                              // caps across each bar's end where both are usable
  bool log_scale = false;
  std::string note;
  std::string value_format;                   // printf format for the value after each bar ("%.3g");
                                              // empty: format_number ("12.3k", "0.07")
  double reference_value = NAN;               // optional vertical line (e.g. 100% of peak)
  std::string reference_label;
};

// The height grows with the rows.
std::string render_bar_chart(const BarChart& chart, int width = 720);

}  // namespace rg
