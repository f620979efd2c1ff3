// The SVG line and bar charts of svg_chart.h: layout, axes and ticks, markers, legends.
#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rg {

namespace {

// Okabe-Ito, the most distinct first; yellow last (faint on white).
const char* const kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                "#E69F00", "#56B4E9", "#000000", "#F0E442"};
constexpr int kPaletteSize = 8;
constexpr size_t kMaxLabelChars = 40;
constexpr double kPi = 3.14159265358979323846;
constexpr double kCharWidth = 0.58;  // average glyph width of sans-serif per pixel of font size (7 px at 12 px)
const char* const kGrid = "#e3e3e3";
const char* const kFrame = "#aaaaaa";
const char* const kInk = "#222222";
const char* const kMuted = "#666666";

// ---- text ----

size_t utf8_length(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count lead bytes only
  return n;
}

// At most `max_chars` characters, the last one an ellipsis when cut; never splits a UTF-8 sequence.
std::string truncate(const std::string& s, size_t max_chars) {
  if (utf8_length(s) <= max_chars || max_chars == 0) return s;
  size_t chars = 0, i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && chars++ == max_chars - 1) break;
  }
  return s.substr(0, i) + "\xE2\x80\xA6";
}

double text_width(const std::string& s, double font_px) { return utf8_length(s) * font_px * kCharWidth; }

// Greedy word wrap to lines of at most `max_chars` characters (a longer word is cut).
std::vector<std::string> wrap(const std::string& text, size_t max_chars) {
  std::vector<std::string> lines;
  std::string line;
  size_t pos = 0;
  max_chars = std::max<size_t>(max_chars, 10);
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && utf8_length(line) + 1 + utf8_length(word) > max_chars) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
    if (utf8_length(line) > max_chars) line = truncate(line, max_chars);
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// A pixel coordinate; a non-finite one (a bug upstream) becomes 0 rather than "nan" in the file.
std::string px(double v) {
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// The SVG being written: a string with helpers for the elements every chart uses.
struct Svg {
  std::string out;
  Svg(int width, int height, const std::string& title) {
    out += "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + std::to_string(width) + " " +
           std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
           std::to_string(height) +
           "\" role=\"img\" font-family=\"sans-serif\" font-size=\"12\" style=\"max-width:100%;height:auto\">\n";
    out += "<title>" + xml_escape(title.empty() ? "chart" : title) + "</title>\n";
    // White ground: the chart stays readable in a dark-themed viewer and prints the same.
    rect(0, 0, width, height, "#ffffff");
    if (!title.empty()) text(width / 2.0, 22, title, "middle", "font-size=\"15\" font-weight=\"bold\"");
  }
  void rect(double x, double y, double w, double h, const char* fill, const std::string& extra = "") {
    out += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" + px(h) +
           "\" fill=\"" + fill + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
  }
  void line(double x1, double y1, double x2, double y2, const char* stroke, const std::string& extra = "") {
    out += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) +
           "\" stroke=\"" + stroke + "\"" + (extra.empty() ? "" : " " + extra) + "/>\n";
  }
  // `extra`: further attributes, already escaped.
  void text(double x, double y, const std::string& s, const char* anchor, const std::string& extra = "") {
    out += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"";
    if (std::string(anchor) != "start") out += std::string(" text-anchor=\"") + anchor + "\"";
    out += (extra.empty() ? "" : " " + extra) + ">" + xml_escape(s) + "</text>\n";
  }
  std::string finish() { return out + "</svg>\n"; }
};

// ---- scales and ticks, shared by both charts ----

double pow10(int e) { return e >= 0 ? std::pow(10.0, e) : 1.0 / std::pow(10.0, -e); }

struct Axis {
  double lo = 0, hi = 1;   // the domain
  bool log = false;
  double p0 = 0, p1 = 1;   // the pixels of lo and hi
  std::vector<double> ticks;
  std::vector<std::string> labels;

  bool usable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  double at(double v) const {
    double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
};

// Labels with enough digits that neighbours differ (1.23M next to 1.24M, not 1.2M twice).
// Where the axis reaches 10k, thousands are written "5k" too, so one axis reads in one unit.
std::vector<std::string> tick_labels(const std::vector<double>& ticks) {
  std::vector<std::string> labels;
  double largest = 0;
  for (double t : ticks) largest = std::max(largest, std::fabs(t));
  for (int digits = 3; digits <= 9; ++digits) {
    labels.clear();
    for (double t : ticks)
      labels.push_back(largest >= 1e4 && std::fabs(t) >= 1e3 && std::fabs(t) < 1e4 ? format_number(t / 1e3, digits) + "k"
                                                                                      : format_number(t, digits));
    bool distinct = true;
    for (size_t i = 1; i < labels.size(); ++i) distinct = distinct && labels[i] != labels[i - 1];
    if (distinct) break;
  }
  return labels;
}

constexpr double kTickFont = 11;

// Neighbouring tick labels keep a gap: side by side on a horizontal axis, a line apart on a vertical one.
bool labels_fit(const Axis& a, bool vertical) {
  for (size_t i = 1; i < a.ticks.size(); ++i) {
    double gap = std::fabs(a.at(a.ticks[i]) - a.at(a.ticks[i - 1]));
    double need = vertical ? kTickFont + 4
                           : (text_width(a.labels[i], kTickFont) + text_width(a.labels[i - 1], kTickFont)) / 2 + 8;
    if (gap < need) return false;
  }
  return true;
}

// The nearest value of the 1-2-5 series at or below (up = false) / at or above v > 0.
double grid_125(double v, bool up) {
  int e0 = static_cast<int>(std::floor(std::log10(v)));
  const double m[] = {1, 2, 5};
  if (up) {
    for (int e = e0 - 1; e <= e0 + 2; ++e)
      for (double k : m)
        if (k * pow10(e) >= v * (1 - 1e-9)) return k * pow10(e);
  } else {
    for (int e = e0 + 1; e >= e0 - 2; --e)
      for (int i = 2; i >= 0; --i)
        if (m[i] * pow10(e) <= v * (1 + 1e-9)) return m[i] * pow10(e);
  }
  return v;
}

void set_ticks(Axis& a, std::vector<double> ticks) {
  a.ticks = std::move(ticks);
  a.labels = tick_labels(a.ticks);
}

// An axis whose ticks are the distinct sorted `values` (lo and hi their ends), thinned while
// the labels would overlap; a little room at the ends so the end markers clear the frame.
void ticks_at_values(Axis& a, const std::vector<double>& values, double lo, double hi, bool vertical) {
  std::vector<double> distinct;
  for (double v : values)
    if (distinct.empty() || std::fabs(v - distinct.back()) > 1e-9 * std::max(std::fabs(v), 1e-300))
      distinct.push_back(v);
  if (a.log) {
    double l0 = std::log10(lo), l1 = std::log10(hi), pad = l1 > l0 ? (l1 - l0) * 0.04 : 0.3;
    a.lo = std::pow(10.0, l0 - pad);
    a.hi = std::pow(10.0, l1 + pad);
  } else {
    double pad = hi > lo ? (hi - lo) * 0.04 : std::max(std::fabs(lo) * 0.1, 1.0);
    a.lo = lo - pad;
    a.hi = hi + pad;
  }
  for (size_t every = 1;; ++every) {
    std::vector<double> kept;
    for (size_t i = 0; i < distinct.size(); i += every) kept.push_back(distinct[i]);
    set_ticks(a, kept);
    if (labels_fit(a, vertical) || kept.size() <= 2) return;
  }
}

// A log axis over [lo, hi] widened to 1-2-5 ends: ticks at 1-2-5 in each decade, or decades
// when those would crowd.
void log_ticks(Axis& a, double lo, double hi, int max_ticks, bool vertical) {
  a.lo = grid_125(lo, false);
  a.hi = grid_125(hi, true);
  // Schemes from fine to coarse: 1-2-5 in each decade, then every decade, every 2nd, ...
  struct Scheme { std::vector<double> mantissas; int every; };
  const Scheme schemes[] = {{{1, 2, 5}, 1}, {{1}, 1}, {{1}, 2}, {{1}, 3}, {{1}, 5}, {{1}, 10}, {{1}, 50}};
  int e0 = static_cast<int>(std::floor(std::log10(a.lo))) - 1, e1 = static_cast<int>(std::ceil(std::log10(a.hi))) + 1;
  for (const Scheme& s : schemes) {
    std::vector<double> ticks;
    for (int e = e0; e <= e1; ++e) {
      if (((e % s.every) + s.every) % s.every != 0) continue;
      for (double m : s.mantissas) {
        double v = m * pow10(e);
        if (v >= a.lo * (1 - 1e-9) && v <= a.hi * (1 + 1e-9)) ticks.push_back(v);
      }
    }
    if (ticks.size() < 2) {  // no decade inside a narrow domain: label its (1-2-5) ends
      ticks.insert(ticks.begin(), a.lo);
      ticks.push_back(a.hi);
      ticks.erase(std::unique(ticks.begin(), ticks.end(),
                              [](double x, double y) { return std::fabs(x - y) <= 1e-9 * std::fabs(y); }),
                  ticks.end());
    }
    set_ticks(a, ticks);
    if (static_cast<int>(ticks.size()) <= max_ticks && labels_fit(a, vertical)) break;
  }
}

// A linear axis over [lo, hi]: the finest 1-2-5 step whose ticks are few enough and whose labels fit.
void linear_ticks(Axis& a, double lo, double hi, int max_ticks, bool vertical) {
  const double mantissas[] = {1, 2, 5};
  int e = static_cast<int>(std::floor(std::log10((hi - lo) / max_ticks))) - 1;
  for (int i = 0; i < 60; ++i) {
    double step = mantissas[i % 3] * pow10(e + i / 3);
    double k0 = std::floor(lo / step + 1e-9), k1 = std::ceil(hi / step - 1e-9);
    if (k1 - k0 + 1 > max_ticks) continue;
    a.lo = k0 * step;
    a.hi = k1 * step;
    std::vector<double> ticks;
    for (int j = 0; j <= static_cast<int>(k1 - k0); ++j)  // counted: ++k stalls past 2^53
      ticks.push_back(std::fabs(k0 + j) < 0.5 ? 0.0 : (k0 + j) * step);
    set_ticks(a, ticks);
    if (labels_fit(a, vertical) || ticks.size() <= 2) break;
  }
}

// An axis over the usable `values` from pixel p0 (low end) to p1: the domain is widened to round
// tick values (1-2-5 steps; decades on a log axis when the 1-2-5 labels would crowd), or with
// `ticks_at_data`, every distinct value is a tick (thinned while the labels would overlap).
Axis make_axis(std::vector<double> values, bool log, double p0, double p1, bool vertical, bool from_zero,
               bool ticks_at_data = false) {
  Axis a;
  a.log = log;
  a.p0 = p0;
  a.p1 = p1;
  values.erase(std::remove_if(values.begin(), values.end(), [&](double v) { return !a.usable(v); }), values.end());
  for (double& v : values)  // keeps hi - lo and 10^e finite; such values only ever sit at an axis end
    v = log ? std::min(std::max(v, 1e-300), 1e300) : std::min(std::max(v, -1e300), 1e300);
  std::sort(values.begin(), values.end());
  double lo = values.empty() ? (log ? 1 : 0) : values.front();
  double hi = values.empty() ? (log ? 10 : 1) : values.back();
  if (!log && from_zero) {
    lo = std::min(lo, 0.0);
    hi = std::max(hi, 0.0);
  }
  if (ticks_at_data && !values.empty()) {
    ticks_at_values(a, values, lo, hi, vertical);
    return a;
  }
  if (hi <= lo) {  // one value v (or only zeros): a range around it
    if (log) {
      lo /= 2;
      hi *= 2;
    } else if (lo == 0) {
      lo = from_zero ? 0 : -1;
      hi = 1;
    } else {
      lo -= std::fabs(lo) / 2;
      hi += std::fabs(hi) / 2;
    }
  }
  const double length = std::fabs(p1 - p0);
  const int max_ticks = std::max(3, static_cast<int>(length / (vertical ? 30 : 45)) + 1);
  if (log) {
    log_ticks(a, lo, hi, max_ticks, vertical);
  } else {
    linear_ticks(a, lo, hi, max_ticks, vertical);
  }
  return a;
}

// ---- markers and legends ----

// Marker outlines around (0,0), about 9 px across; series i gets shape i (so two series never
// share colour and shape, past 8 series the shape shifts against the colour).
std::string marker_path(int shape) {
  auto polygon = [](const std::vector<std::pair<double, double>>& pts) {
    std::string d;
    for (size_t i = 0; i < pts.size(); ++i) d += (i ? "L" : "M") + px(pts[i].first) + "," + px(pts[i].second);
    return d + "Z";
  };
  auto rotated = [](std::vector<std::pair<double, double>> pts, double degrees) {
    double c = std::cos(degrees * kPi / 180), s = std::sin(degrees * kPi / 180);
    for (auto& [x, y] : pts) {
      double nx = x * c - y * s, ny = x * s + y * c;
      x = nx;
      y = ny;
    }
    return pts;
  };
  const std::vector<std::pair<double, double>> plus = {{-1.5, -5}, {1.5, -5}, {1.5, -1.5}, {5, -1.5}, {5, 1.5},
                                                       {1.5, 1.5}, {1.5, 5}, {-1.5, 5}, {-1.5, 1.5}, {-5, 1.5},
                                                       {-5, -1.5}, {-1.5, -1.5}};
  switch (shape % 8) {
    case 0: return "M-4.5,0A4.5,4.5 0 1,0 4.5,0A4.5,4.5 0 1,0 -4.5,0Z";  // circle
    case 1: return "M-4,-4L4,-4L4,4L-4,4Z";                                // square
    case 2: return "M0,-5.5L5,3.5L-5,3.5Z";                                // triangle up
    case 3: return "M0,-5.5L5.5,0L0,5.5L-5.5,0Z";                          // diamond
    case 4: return "M0,5.5L5,-3.5L-5,-3.5Z";                               // triangle down
    case 5: return polygon(plus);
    case 6: return polygon(rotated(plus, 45));                             // cross
    default: {                                                             // star
      std::vector<std::pair<double, double>> pts;
      for (int i = 0; i < 10; ++i) {
        double r = i % 2 ? 2.6 : 6, a = (i * 36 - 90) * kPi / 180;
        pts.push_back({r * std::cos(a), r * std::sin(a)});
      }
      return polygon(pts);
    }
  }
}

const char* colour(size_t series) { return kPalette[series % kPaletteSize]; }
int shape(size_t series) { return static_cast<int>(series + series / kPaletteSize); }

void no_data(Svg& svg, double x, double y, double w, double h) {
  svg.rect(x, y, w, h, "none", std::string("stroke=\"") + kFrame + "\"");
  svg.text(x + w / 2, y + h / 2 + 5, "no data", "middle", std::string("fill=\"") + kMuted + "\" font-size=\"14\"");
}

void note_lines(Svg& svg, const std::vector<std::string>& lines, double x, double y) {
  for (size_t i = 0; i < lines.size(); ++i)
    svg.text(x, y + 15.0 * i, lines[i], "start", std::string("fill=\"") + kMuted + "\" font-size=\"11\"");
}

// Lays out legend items of the given widths in rows no wider than `max_width`: the row of each item.
std::vector<int> flow(const std::vector<double>& widths, double max_width, int* rows) {
  std::vector<int> row_of;
  double x = 0;
  int row = 0;
  for (double w : widths) {
    if (x > 0 && x + w > max_width) {
      ++row;
      x = 0;
    }
    row_of.push_back(row);
    x += w;
  }
  *rows = widths.empty() ? 0 : row + 1;
  return row_of;
}

// Grid lines and tick labels of a horizontal axis (x) under the plot.
void x_axis(Svg& svg, const Axis& a, double top, double bottom) {
  for (size_t i = 0; i < a.ticks.size(); ++i) {
    double x = a.at(a.ticks[i]);
    svg.line(x, top, x, bottom, kGrid);
    svg.text(x, bottom + 15, a.labels[i], "middle", std::string("class=\"xtick\" font-size=\"11\" fill=\"") + kInk + "\"");
  }
}

}  // namespace

namespace {

// A line chart's usable points: x and y both on their axes (and the error bounds on y's).
void usable_points(const LineChart& chart, std::vector<double>* xs, std::vector<double>* ys) {
  Axis probe_x, probe_y;
  probe_x.log = chart.log_x;
  probe_y.log = chart.log_y;
  for (const ChartSeries& s : chart.series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (probe_x.usable(s.x[i]) && probe_y.usable(s.y[i])) {
        xs->push_back(s.x[i]);
        ys->push_back(s.y[i]);
        for (const std::vector<double>* bound : {&s.y_low, &s.y_high})
          if (i < bound->size() && probe_y.usable((*bound)[i])) ys->push_back((*bound)[i]);
      }
}

// A line chart's legend: right of the plot while it takes under a third of the width, else in rows below.
struct LineLegend {
  std::vector<std::string> names;
  std::vector<double> item_widths;
  double width = 0;  // of the widest item, for a legend on the right
  bool right = false;
  int rows = 0;  // below the plot
  std::vector<int> row_of;
};

LineLegend line_legend(const LineChart& chart, int width) {
  LineLegend legend;
  for (const ChartSeries& s : chart.series) {
    // Cut only what a legend row below the plot could not hold.
    legend.names.push_back(truncate(s.name, static_cast<size_t>((width - 24 - 54) / (12 * kCharWidth))));
    legend.item_widths.push_back(36 + text_width(legend.names.back(), 12) + 18);
    legend.width = std::max(legend.width, 36 + text_width(legend.names.back(), 12));
  }
  legend.right = legend.width + 24 <= width / 3.0;
  legend.row_of = flow(legend.item_widths, width - 24, &legend.rows);
  if (legend.right) legend.rows = 0;
  return legend;
}

// The plot's grid, frame, ticks and axis titles; returns the y under the x axis's title.
double draw_line_axes(Svg& svg, const LineChart& chart, const Axis& x, const Axis& y, double plot_left,
                      double plot_right, double plot_top, double plot_bottom) {
  for (size_t i = 0; i < y.ticks.size(); ++i) {
    double py = y.at(y.ticks[i]);
    svg.line(plot_left, py, plot_right, py, kGrid);
    svg.text(plot_left - 6, py + 4, y.labels[i], "end", std::string("class=\"ytick\" font-size=\"11\" fill=\"") + kInk + "\"");
  }
  x_axis(svg, x, plot_top, plot_bottom);
  svg.rect(plot_left, plot_top, plot_right - plot_left, plot_bottom - plot_top, "none",
           std::string("stroke=\"") + kFrame + "\"");
  double below = plot_bottom + 20;
  if (!chart.x_label.empty()) {
    below += 18;
    svg.text((plot_left + plot_right) / 2, below, chart.x_label, "middle", "font-size=\"12\"");
  }
  if (!chart.y_label.empty()) {
    double cx = 16, cy = (plot_top + plot_bottom) / 2;
    svg.text(cx, cy, chart.y_label, "middle", "transform=\"rotate(-90 " + px(cx) + " " + px(cy) + ")\"");
  }
  return below;
}

// Series si: its line broken at unusable points, then its markers (and error bars) on top.
void draw_series(Svg& svg, const LineChart& chart, size_t si, const Axis& x, const Axis& y, const std::string& name) {
  const ChartSeries& s = chart.series[si];
  const bool dashed = si < chart.dashed.size() && chart.dashed[si];
  std::string d, markers;
  bool pen_down = false;
  const std::string shape_d = marker_path(shape(si));
  for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
    if (!x.usable(s.x[i]) || !y.usable(s.y[i])) {
      pen_down = false;
      continue;
    }
    std::string at = px(x.at(s.x[i])) + "," + px(y.at(s.y[i]));
    if (i < s.y_low.size() && i < s.y_high.size() && y.usable(s.y_low[i]) && y.usable(s.y_high[i])) {
      const double cx = x.at(s.x[i]), lo = y.at(s.y_low[i]), hi = y.at(s.y_high[i]);
      markers += "<path class=\"error-bar\" fill=\"none\" stroke=\"" + std::string(colour(si)) + "\" stroke-width=\"1.5\" d=\"M" +
                 px(cx) + "," + px(lo) + "V" + px(hi) + "M" + px(cx - 4) + "," + px(lo) + "h8M" + px(cx - 4) + "," +
                 px(hi) + "h8\"/>\n";
    }
    d += (pen_down ? "L" : "M") + at;
    pen_down = true;
    const std::string label = i < s.labels.size() ? s.labels[i] + " (" + name + ")" : name;
    markers += "<path class=\"point\" transform=\"translate(" + at + ")\" d=\"" + shape_d + "\"><title>" +
               xml_escape(label + ": " + format_number(s.x[i], 4) + ", " + format_number(s.y[i], 4)) +
               "</title></path>\n";
  }
  svg.out += "<g class=\"series\" fill=\"" + std::string(colour(si)) + "\" stroke=\"" + colour(si) + "\">\n";
  const bool points_only = si < chart.points_only.size() && chart.points_only[si];
  if (!d.empty() && !points_only)
    svg.out += "<path d=\"" + d + "\" fill=\"none\" stroke-width=\"2\"" +
               (dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
  // A thin white edge keeps overlapping markers apart.
  svg.out += "<g stroke=\"#ffffff\" stroke-width=\"0.8\">\n" + markers + "</g>\n</g>\n";
}

// The legend: per series a line sample with the marker, then the name; right of the plot or in rows below it.
void draw_line_legend(Svg& svg, const LineChart& chart, const LineLegend& legend, double plot_right, double plot_top,
                      double below) {
  svg.out += "<g class=\"legend\">\n";
  for (size_t si = 0; si < chart.series.size(); ++si) {
    double lx, ly;
    if (legend.right) {
      lx = plot_right + 14;
      ly = plot_top + 10 + 20.0 * si;
    } else {
      lx = 12;
      for (size_t j = 0; j < si; ++j)
        if (legend.row_of[j] == legend.row_of[si]) lx += legend.item_widths[j];
      ly = below + 22 + 20.0 * legend.row_of[si];
    }
    const bool dashed = si < chart.dashed.size() && chart.dashed[si];
    if (si >= chart.points_only.size() || !chart.points_only[si]) {
      svg.line(lx, ly, lx + 28, ly, colour(si), std::string("stroke-width=\"2\"") + (dashed ? " stroke-dasharray=\"6 4\"" : ""));
    }
    svg.out += "<path transform=\"translate(" + px(lx + 14) + "," + px(ly) + ")\" d=\"" + marker_path(shape(si)) +
               "\" fill=\"" + colour(si) + "\" stroke=\"#ffffff\" stroke-width=\"0.8\"/>\n";
    svg.text(lx + 36, ly + 4, legend.names[si], "start", std::string("fill=\"") + kInk + "\"");
  }
  svg.out += "</g>\n";
}

}  // namespace

std::string render_line_chart(const LineChart& chart, int width, int height) {
  width = std::max(width, 240);
  height = std::max(height, 180);
  Svg svg(width, height, chart.title);
  std::vector<double> xs, ys;
  usable_points(chart, &xs, &ys);
  const double top = chart.title.empty() ? 14 : 36;
  const std::vector<std::string> note = wrap(chart.note, static_cast<size_t>((width - 20) / (11 * kCharWidth)));
  if (xs.empty()) {
    double bottom = 12 + 15.0 * note.size();
    no_data(svg, 12, top, width - 24, height - top - bottom);
    note_lines(svg, note, 12, height - bottom + 16);
    return svg.finish();
  }
  const LineLegend legend = line_legend(chart, width);
  // Under the plot: tick labels, the x title, the legend rows, the note.
  const double bottom = 20 + (chart.x_label.empty() ? 0 : 18) + (legend.rows ? 20.0 * legend.rows + 6 : 0) +
                        (note.empty() ? 0 : 20 + 15.0 * (note.size() - 1)) + 10;
  const double plot_top = top, plot_bottom = std::max(top + 60, height - bottom);
  const double inset = 8;  // markers at the ends of the domain clear the frame
  Axis y = make_axis(ys, chart.log_y, plot_bottom - inset, plot_top + inset, true, chart.y_from_zero);
  double label_w = 0;
  for (const std::string& l : y.labels) label_w = std::max(label_w, text_width(l, kTickFont));
  const double plot_left = 10 + (chart.y_label.empty() ? 0 : 22) + label_w + 8;
  const double plot_right = width - (legend.right ? legend.width + 28 : 14);
  Axis x = make_axis(xs, chart.log_x, plot_left + inset, plot_right - inset, false, false, chart.x_ticks_at_data);
  const double below = draw_line_axes(svg, chart, x, y, plot_left, plot_right, plot_top, plot_bottom);
  for (size_t si = 0; si < chart.series.size(); ++si) draw_series(svg, chart, si, x, y, legend.names[si]);
  draw_line_legend(svg, chart, legend, plot_right, plot_top, below);
  note_lines(svg, note, 12, below + (legend.rows ? 20.0 * legend.rows + 26 : 20));
  return svg.finish();
}

namespace {

double bar_value(const BarChart& chart, size_t r, size_t s) {
  return r < chart.values.size() && s < chart.values[r].size() ? chart.values[r][s] : NAN;
}

// The value printed after each bar ([row][series]), every usable value and bound for the axis,
// and the widest text (the right margin makes room for it).
struct BarTexts {
  std::vector<std::vector<std::string>> texts;
  std::vector<double> all;
  double width = 0;
};

BarTexts bar_texts(const BarChart& chart, size_t rows, size_t n_series) {
  Axis probe;
  probe.log = chart.log_scale;
  BarTexts out;
  out.texts.assign(rows, std::vector<std::string>(n_series));
  for (size_t r = 0; r < rows; ++r)
    for (size_t s = 0; s < n_series; ++s) {
      double v = bar_value(chart, r, s);
      std::string& t = out.texts[r][s];
      if (!std::isfinite(v)) {
        t = "n/a";
      } else if (chart.value_format.empty()) {
        t = format_number(v);
      } else {
        char buf[64];
        std::snprintf(buf, sizeof buf, chart.value_format.c_str(), v);
        t = buf;
      }
      if (probe.usable(v)) out.all.push_back(v);
      for (const auto* bound : {&chart.low, &chart.high})
        if (r < bound->size() && s < (*bound)[r].size() && probe.usable((*bound)[r][s])) out.all.push_back((*bound)[r][s]);
      out.width = std::max(out.width, text_width(t, 11));
    }
  return out;
}

// Where a bar chart's rows and bars sit.
struct BarLayout {
  double bar_h = 0, bar_gap = 0, row_pad = 0, row_h = 0;
  double plot_left = 0, plot_top = 0;
  double base = 0;  // x of the bars' start: 0, or the axis's left end
};

// Row r: its label, and per series a bar with its error bar and value, or the text alone when unusable.
void draw_bar_row(Svg& svg, const BarChart& chart, size_t r, const std::string& label, const BarTexts& texts,
                  const Axis& x, const BarLayout& at) {
  const double row_y = at.plot_top + r * at.row_h, base = at.base;
  std::string label_extra = std::string("fill=\"") + kInk + "\"";
  svg.text(at.plot_left - 8, row_y + at.row_h / 2 + 4, label, "end", label_extra);
  for (size_t s = 0; s < texts.texts[r].size(); ++s) {
    const std::string& text = texts.texts[r][s];
    double v = bar_value(chart, r, s), y = row_y + at.row_pad + s * (at.bar_h + at.bar_gap);
    std::string tip = (r < chart.labels.size() ? chart.labels[r] : "") +
                      (s < chart.series_names.size() ? " · " + chart.series_names[s] : "") + ": " + text;
    if (!x.usable(v)) {  // not measured (or not on a log axis): no bar, the text small and grey
      svg.text(base + 4, y + at.bar_h / 2 + 4, text, "start",
               std::string("font-size=\"10\" font-style=\"italic\" fill=\"") + kMuted + "\"");
      continue;
    }
    double end = x.at(v), left = std::min(base, end), w = std::fabs(end - base);
    svg.out += "<rect class=\"bar\" x=\"" + px(left) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" +
               px(at.bar_h) + "\" fill=\"" + colour(s) + "\"><title>" + xml_escape(tip) + "</title></rect>\n";
    double text_x = v < 0 ? base : end;
    if (r < chart.low.size() && s < chart.low[r].size() && r < chart.high.size() && s < chart.high[r].size() &&
        x.usable(chart.low[r][s]) && x.usable(chart.high[r][s])) {
      const double lo = x.at(chart.low[r][s]), hi = x.at(chart.high[r][s]), cy = y + at.bar_h / 2;
      svg.out += "<path class=\"error-bar\" fill=\"none\" stroke=\"#222222\" stroke-width=\"1.3\" d=\"M" + px(lo) + "," +
                 px(cy) + "H" + px(hi) + "M" + px(lo) + "," + px(cy - 4) + "v8M" + px(hi) + "," + px(cy - 4) + "v8\"/>\n";
      text_x = std::max(text_x, hi);
    }
    svg.text(text_x + 4, y + at.bar_h / 2 + 4, text, "start", std::string("font-size=\"11\" fill=\"") + kInk + "\"");
  }
}

// The swatches of the series, in rows under the title.
void draw_bar_legend(Svg& svg, const BarChart& chart, const std::vector<double>& item_widths,
                     const std::vector<int>& row_of, double title_h) {
  svg.out += "<g class=\"legend\">\n";
  for (size_t s = 0; s < chart.series_names.size(); ++s) {
    double lx = 12;
    for (size_t j = 0; j < s; ++j)
      if (row_of[j] == row_of[s]) lx += item_widths[j];
    double ly = title_h + 20.0 * row_of[s];
    svg.rect(lx, ly - 1, 12, 12, colour(s));
    svg.text(lx + 18, ly + 9, truncate(chart.series_names[s], kMaxLabelChars), "start", std::string("fill=\"") + kInk + "\"");
  }
  svg.out += "</g>\n";
}

// The dashed reference line with its label above the plot.
void draw_reference(Svg& svg, const BarChart& chart, const Axis& x, double plot_top, double plot_bottom, int width) {
  double rx = x.at(chart.reference_value);
  svg.line(rx, plot_top - 4, rx, plot_bottom, "#333333", "stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
  std::string label = chart.reference_label.empty() ? format_number(chart.reference_value) : chart.reference_label;
  double w = text_width(label, 11);
  const char* anchor = rx + w / 2 > width - 4 ? "end" : rx - w / 2 < 4 ? "start" : "middle";
  svg.text(rx, plot_top - 8, label, anchor, "font-size=\"11\" fill=\"#333333\"");
}

}  // namespace

std::string render_bar_chart(const BarChart& chart, int width) {
  width = std::max(width, 240);
  const size_t rows = std::max(chart.labels.size(), chart.values.size());
  size_t n_series = chart.series_names.size();
  for (const auto& row : chart.values) n_series = std::max(n_series, row.size());
  const std::vector<std::string> note = wrap(chart.note, static_cast<size_t>((width - 20) / (11 * kCharWidth)));
  const double title_h = chart.title.empty() ? 14 : 36;
  if (rows == 0 || n_series == 0) {
    const int height = static_cast<int>(title_h + 120 + 15 * note.size() + 12);
    Svg svg(width, height, chart.title);
    no_data(svg, 12, title_h, width - 24, 120);
    note_lines(svg, note, 12, title_h + 120 + 18);
    return svg.finish();
  }
  std::vector<double> item_widths;
  for (const std::string& name : chart.series_names) item_widths.push_back(18 + text_width(truncate(name, kMaxLabelChars), 12) + 18);
  int legend_rows = 0;
  std::vector<int> row_of = flow(item_widths, width - 24, &legend_rows);
  // Row labels, cut to what the left margin (at most half the width) holds.
  const size_t max_chars = std::min(kMaxLabelChars, static_cast<size_t>((width / 2.0 - 18) / (12 * kCharWidth)));
  std::vector<std::string> labels;
  double label_w = 0;
  for (size_t r = 0; r < rows; ++r) {
    labels.push_back(truncate(r < chart.labels.size() ? chart.labels[r] : "", max_chars));
    label_w = std::max(label_w, text_width(labels.back(), 12));
  }
  BarTexts texts = bar_texts(chart, rows, n_series);
  Axis probe;
  probe.log = chart.log_scale;
  const bool has_reference = probe.usable(chart.reference_value);
  if (has_reference) texts.all.push_back(chart.reference_value);
  BarLayout at;
  at.bar_h = n_series <= 2 ? 16 : n_series <= 4 ? 13 : 10;
  at.bar_gap = 2;
  at.row_pad = 7;
  at.row_h = n_series * at.bar_h + (n_series - 1) * at.bar_gap + 2 * at.row_pad;
  const double plot_top = at.plot_top = title_h + 20.0 * legend_rows + (has_reference ? 20 : 4);
  const double plot_bottom = plot_top + at.row_h * rows;
  const double plot_left = at.plot_left = std::max(50.0, label_w + 18);
  const double plot_right = width - std::max(30.0, texts.width + 14);
  const int height = static_cast<int>(std::ceil(plot_bottom + 22 + (chart.value_label.empty() ? 0 : 18) + 15.0 * note.size() + 10));
  Svg svg(width, height, chart.title);
  draw_bar_legend(svg, chart, item_widths, row_of, title_h);
  Axis x = make_axis(texts.all, chart.log_scale, plot_left, plot_right, false, !chart.log_scale);
  // Alternate rows shaded so a long row reads across to its values.
  for (size_t r = 1; r < rows; r += 2) svg.rect(4, plot_top + r * at.row_h, width - 8, at.row_h, "#f3f3f3");
  x_axis(svg, x, plot_top, plot_bottom);
  if (!chart.value_label.empty())
    svg.text((plot_left + plot_right) / 2, plot_bottom + 38, chart.value_label, "middle");
  at.base = chart.log_scale ? plot_left : x.at(std::min(std::max(0.0, x.lo), x.hi));
  for (size_t r = 0; r < rows; ++r) draw_bar_row(svg, chart, r, labels[r], texts, x, at);
  svg.line(at.base, plot_top, at.base, plot_bottom, "#555555");
  svg.line(plot_left, plot_bottom, plot_right, plot_bottom, kFrame);
  if (has_reference) draw_reference(svg, chart, x, plot_top, plot_bottom, width);
  note_lines(svg, note, 12, plot_bottom + 22 + (chart.value_label.empty() ? 0 : 18) + 16);
  return svg.finish();
}

}  // namespace rg
