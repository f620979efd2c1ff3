// The study report's SVG charts: well-formed XML in every case (empty, one point, NaN, zeros on a
// log axis), never a "nan" or "inf" in the file, text escaped, points and bars where their values
// put them, every series in the legend and the legend clear of the data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "report/svg_chart.h"
#include "xml_check.h"

namespace rg {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The things every chart must be: a standalone accessible <svg>, well-formed, no NaN/Inf anywhere.
void expect_sound(const std::string& svg, const std::string& what) {
  EXPECT_EQ(xml_problem(svg), "") << what << "\n" << svg;
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ", 0), 0u) << what;
  EXPECT_NE(svg.find("role=\"img\""), std::string::npos) << what;
  EXPECT_NE(svg.find("<title>"), std::string::npos) << what;
  EXPECT_EQ(lower(svg).find("nan"), std::string::npos) << what << "\n" << svg;
  EXPECT_EQ(lower(svg).find("inf"), std::string::npos) << what << "\n" << svg;
  EXPECT_EQ(svg.find("<script"), std::string::npos) << what;
}

// The values of `attribute` (e.g. transform="...") of elements whose opening tag starts with `prefix`.
std::vector<std::string> attribute_values(const std::string& svg, const std::string& prefix, const std::string& attribute) {
  std::vector<std::string> out;
  for (size_t at = svg.find(prefix); at != std::string::npos; at = svg.find(prefix, at + 1)) {
    size_t end = svg.find('>', at);
    size_t a = svg.find(" " + attribute + "=\"", at);
    if (a == std::string::npos || a > end) continue;
    a += attribute.size() + 3;
    out.push_back(svg.substr(a, svg.find('"', a) - a));
  }
  return out;
}

struct Point { double x, y; };

std::vector<Point> points(const std::string& svg) {
  std::vector<Point> out;
  for (const std::string& t : attribute_values(svg, "<path class=\"point\"", "transform")) {
    Point p{};
    EXPECT_EQ(std::sscanf(t.c_str(), "translate(%lf,%lf)", &p.x, &p.y), 2) << t;
    out.push_back(p);
  }
  return out;
}

// The texts of <text> elements with the given class.
std::vector<std::string> texts_of_class(const std::string& svg, const std::string& cls) {
  std::vector<std::string> out;
  const std::string key = "class=\"" + cls + "\"";
  for (size_t at = svg.find(key); at != std::string::npos; at = svg.find(key, at + 1)) {
    size_t begin = svg.find('>', at) + 1;
    out.push_back(svg.substr(begin, svg.find('<', begin) - begin));
  }
  return out;
}

LineChart throughput_chart() {
  LineChart c;
  c.title = "Throughput by batch size";
  c.x_label = "batch size";
  c.y_label = "samples/s";
  c.log_x = true;
  c.log_y = true;
  c.x_ticks_at_data = true;
  c.series = {{"lenet · avx2", {4, 8, 16, 32, 64, 128, 256, 512, 1024}, {900, 1700, 3100, 5200, 7400, 8800, 9300, 9400, 9350}},
              {"cnn · sse2", {4, 8, 16, 32, 64, 128, 256, 512, 1024}, {80, 150, 260, 400, 520, 600, NAN, 640, 650}},
              {"rcnn · OpenCL", {4, 16, 64, 256, 1024}, {30, 110, 380, 900, 1300}}};
  c.dashed = {false, false, true};
  c.note = "higher is better; dashed: estimate";
  return c;
}

BarChart peak_chart() {
  BarChart c;
  c.title = "GEMM against the published peak";
  c.value_label = "GFLOP/s";
  c.series_names = {"1 thread", "2 threads"};
  c.labels = {"sgemm 256 · avx2", "sgemm 1024 · avx2", "sgemm 1024 · sse2"};
  c.values = {{40, 70}, {80, 150}, {35, NAN}};
  c.reference_value = 180;
  c.reference_label = "peak 180";
  return c;
}

TEST(SvgChart, XmlEscapeEscapesTheFiveAndKeepsTheRest) {
  EXPECT_EQ(xml_escape("a<b>&\"c'd"), "a&lt;b&gt;&amp;&quot;c&apos;d");
  EXPECT_EQ(xml_escape("lenet · avx2, 1e-3"), "lenet · avx2, 1e-3");
  EXPECT_EQ(xml_escape("&amp;"), "&amp;amp;");  // escaped again: the text is taken literally
  EXPECT_EQ(xml_escape(std::string("a\x01z", 3)), "a z");  // not allowed in XML at all
  EXPECT_EQ(xml_problem("<svg a=\"1\"><g>x &lt; y</g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");  // the checker itself catches what it should
  EXPECT_NE(xml_problem("<svg a=\"1\" a=\"2\"/>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(xml_problem("<svg></svg><svg></svg>"), "");
}

TEST(SvgChart, NumbersReadAsAPersonWritesThem) {
  EXPECT_EQ(format_number(4), "4");
  EXPECT_EQ(format_number(1024), "1024");
  EXPECT_EQ(format_number(9350), "9350");
  EXPECT_EQ(format_number(10000), "10k");
  EXPECT_EQ(format_number(12500), "12.5k");
  EXPECT_EQ(format_number(999999), "1M");
  EXPECT_EQ(format_number(3.2e6), "3.2M");
  EXPECT_EQ(format_number(2.5e9), "2.5G");
  EXPECT_EQ(format_number(0.001), "0.001");
  EXPECT_EQ(format_number(7e-2), "0.07");
  EXPECT_EQ(format_number(0.5), "0.5");
  EXPECT_EQ(format_number(2e-5), "2e-5");
  EXPECT_EQ(format_number(-1500), "-1500");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(3.14159, 4), "3.142");
  EXPECT_EQ(format_number(NAN), "n/a");
  EXPECT_EQ(format_number(INFINITY), "n/a");
}

TEST(SvgChart, EveryCaseIsWellFormedWithNoNanOrInf) {
  std::vector<std::pair<std::string, std::string>> cases;
  cases.push_back({"throughput", render_line_chart(throughput_chart())});
  cases.push_back({"empty line", render_line_chart(LineChart{})});
  LineChart no_points;
  no_points.title = "nothing measured";
  no_points.series = {{"a", {1, 2}, {NAN, NAN}}, {"b", {}, {}}};
  no_points.note = "all runs failed";
  cases.push_back({"no usable points", render_line_chart(no_points)});
  LineChart single;
  single.series = {{"one", {64}, {1234}}};
  cases.push_back({"single point", render_line_chart(single)});
  single.log_x = single.log_y = true;
  single.x_ticks_at_data = true;
  cases.push_back({"single point log", render_line_chart(single)});
  LineChart nan_chart;
  nan_chart.series = {{"gaps", {1, 2, 3, 4, 5}, {1, NAN, 3, INFINITY, 5}}, {"x gaps", {NAN, 2, -INFINITY}, {1, 2, 3}}};
  cases.push_back({"NaN and Inf", render_line_chart(nan_chart)});
  LineChart log_zero;
  log_zero.log_x = log_zero.log_y = true;
  log_zero.series = {{"lr", {0, 1e-3, 3e-3, 1e-2, 7e-2, -1}, {0.9, 0, 0.5, -2, 0.2, 0.1}}};
  cases.push_back({"log with zeros", render_line_chart(log_zero)});
  LineChart equal;
  equal.series = {{"flat", {1, 2, 3}, {5, 5, 5}}, {"zero", {1, 2, 3}, {0, 0, 0}}};
  cases.push_back({"all equal", render_line_chart(equal)});
  equal.y_from_zero = true;
  cases.push_back({"all equal from zero", render_line_chart(equal)});
  LineChart extreme;
  extreme.log_y = true;
  extreme.series = {{"wide", {1, 2, 3}, {1e-30, 1, 1e30}}, {"tiny", {1, 2, 3}, {1e-300, 2e-300, 3e-300}}};
  cases.push_back({"extreme range", render_line_chart(extreme)});
  LineChart hostile;
  hostile.title = "<script>alert('x')</script> & \"q\"";
  hostile.x_label = "a<b";
  hostile.series = {{"s&p <500>", {1, 2}, {3, 4}}};
  hostile.note = "\"quoted\" & <tagged>";
  cases.push_back({"markup in text", render_line_chart(hostile, 100, 50)});

  cases.push_back({"bars", render_bar_chart(peak_chart())});
  cases.push_back({"empty bars", render_bar_chart(BarChart{})});
  BarChart all_nan;
  all_nan.labels = {"not run", "not run either"};
  all_nan.values = {{NAN}, {NAN}};
  cases.push_back({"all NaN bars", render_bar_chart(all_nan)});
  BarChart log_bars = peak_chart();
  log_bars.log_scale = true;
  log_bars.values = {{0, 7}, {-3, 1500}, {INFINITY, 0.02}};
  cases.push_back({"log bars with zero", render_bar_chart(log_bars)});
  BarChart one;
  one.labels = {"only"};
  one.values = {{42}};
  one.value_format = "%.1f";
  cases.push_back({"one bar", render_bar_chart(one)});
  BarChart negative;
  negative.labels = {"gain", "loss"};
  negative.values = {{3}, {-2}};
  cases.push_back({"negative bars", render_bar_chart(negative, 100)});
  BarChart hostile_bars;
  hostile_bars.title = "</svg>";
  hostile_bars.labels = {"<row> & 'x'"};
  hostile_bars.series_names = {"\"s\""};
  hostile_bars.values = {{1}};
  hostile_bars.reference_value = 2;
  hostile_bars.reference_label = "<ref>";
  cases.push_back({"markup in bar text", render_bar_chart(hostile_bars)});

  for (const auto& [what, svg] : cases) expect_sound(svg, what);
  EXPECT_NE(cases[1].second.find("no data"), std::string::npos);
  EXPECT_NE(cases[2].second.find("no data"), std::string::npos);
  EXPECT_NE(cases[12].second.find("no data"), std::string::npos);
  EXPECT_EQ(cases[0].second.find("no data"), std::string::npos);
  EXPECT_EQ(points(cases[3].second).size(), 1u);  // a single point is drawn
  EXPECT_EQ(points(cases[5].second).size(), 4u);  // 3 of "gaps", 1 of "x gaps"
  EXPECT_EQ(points(cases[6].second).size(), 2u);  // the 2 with x > 0 and y > 0
  EXPECT_EQ(cases[10].second.find("<script>"), std::string::npos);
  EXPECT_NE(cases[10].second.find("&lt;script&gt;"), std::string::npos);
}

TEST(SvgChart, LargerYIsHigherUpOnLinearAndLogAxes) {
  for (bool log_y : {false, true}) {
    LineChart c;
    c.log_y = log_y;
    c.series = {{"s", {1, 2, 3, 4}, {3, 10, 0.5, 7}}};
    std::vector<Point> p = points(render_line_chart(c));
    ASSERT_EQ(p.size(), 4u);
    EXPECT_LT(p[1].y, p[3].y) << log_y;  // 10 above 7
    EXPECT_LT(p[3].y, p[0].y) << log_y;  // 7 above 3
    EXPECT_LT(p[0].y, p[2].y) << log_y;  // 3 above 0.5
    EXPECT_LT(p[0].x, p[1].x) << log_y;  // and x grows to the right
  }
}

TEST(SvgChart, DataTicksLabelEveryBatchSize) {
  std::string svg = render_line_chart(throughput_chart());
  std::vector<std::string> ticks = texts_of_class(svg, "xtick");
  for (const char* want : {"4", "8", "16", "32", "64", "128", "256", "512", "1024"})
    EXPECT_NE(std::find(ticks.begin(), ticks.end(), want), ticks.end()) << want << " missing";
  // Without data ticks, a log axis gets 1-2-5 labels: 0.001 .. 0.1 for learning rates.
  LineChart lr;
  lr.log_x = true;
  lr.series = {{"loss", {1e-3, 3e-3, 1e-2, 3e-2, 7e-2}, {0.9, 0.5, 0.3, 0.35, 0.8}}};
  ticks = texts_of_class(render_line_chart(lr), "xtick");
  for (const char* want : {"0.001", "0.01", "0.1"})
    EXPECT_NE(std::find(ticks.begin(), ticks.end(), want), ticks.end()) << want << " missing";
  // Points of a log axis are evenly spaced per doubling.
  std::vector<Point> p = points(svg);
  ASSERT_GE(p.size(), 3u);
  EXPECT_NEAR(p[1].x - p[0].x, p[2].x - p[1].x, 0.2);
}

TEST(SvgChart, LegendNamesEverySeriesAndStaysClearOfTheData) {
  LineChart c = throughput_chart();
  std::string svg = render_line_chart(c);
  size_t legend = svg.find("<g class=\"legend\">");
  ASSERT_NE(legend, std::string::npos);
  std::string legend_text = svg.substr(legend, svg.find("</g>", legend) - legend);
  for (const ChartSeries& s : c.series) EXPECT_NE(legend_text.find(xml_escape(s.name)), std::string::npos) << s.name;
  // Short names: the legend is right of the plot, so right of every point.
  double legend_x = 1e9;
  for (const std::string& x : attribute_values(legend_text, "<text", "x")) legend_x = std::min(legend_x, std::atof(x.c_str()));
  for (const Point& p : points(svg)) EXPECT_LT(p.x + 6, legend_x);
  // Long names: the legend goes below the plot, under every point.
  c.series[0].name = "a rather long series name that would crowd the plot";
  svg = render_line_chart(c);
  legend = svg.find("<g class=\"legend\">");
  legend_text = svg.substr(legend, svg.find("</g>", legend) - legend);
  EXPECT_NE(legend_text.find(c.series[0].name), std::string::npos);
  double legend_y = 1e9;
  for (const std::string& y : attribute_values(legend_text, "<text", "y")) legend_y = std::min(legend_y, std::atof(y.c_str()));
  for (const Point& p : points(svg)) EXPECT_LT(p.y + 6, legend_y - 12);
  // Bars: the legend lists the series names too.
  svg = render_bar_chart(peak_chart());
  legend = svg.find("<g class=\"legend\">");
  legend_text = svg.substr(legend, svg.find("</g>", legend) - legend);
  for (const char* name : {"1 thread", "2 threads"}) EXPECT_NE(legend_text.find(name), std::string::npos) << name;
}

TEST(SvgChart, BarLengthsAreProportionalToValues) {
  BarChart c;
  c.labels = {"a", "b", "c", "not measured"};
  c.values = {{10}, {20}, {40}, {NAN}};
  std::string svg = render_bar_chart(c);
  std::vector<std::string> widths = attribute_values(svg, "<rect class=\"bar\"", "width");
  std::vector<std::string> xs = attribute_values(svg, "<rect class=\"bar\"", "x");
  ASSERT_EQ(widths.size(), 3u);  // nothing drawn for NaN ...
  EXPECT_NE(svg.find(">n/a<"), std::string::npos);  // ... but "n/a" written
  double w10 = std::atof(widths[0].c_str()), w20 = std::atof(widths[1].c_str()), w40 = std::atof(widths[2].c_str());
  EXPECT_GT(w10, 10);
  EXPECT_NEAR(w20, 2 * w10, 0.2);
  EXPECT_NEAR(w40, 4 * w10, 0.3);
  EXPECT_EQ(xs[0], xs[2]);  // all from the same zero line
  // Two series: rows keep their order, bars of one row side by side.
  svg = render_bar_chart(peak_chart());
  widths = attribute_values(svg, "<rect class=\"bar\"", "width");
  ASSERT_EQ(widths.size(), 5u);
  EXPECT_NEAR(std::atof(widths[1].c_str()) / std::atof(widths[0].c_str()), 70.0 / 40, 0.01);
  EXPECT_NEAR(std::atof(widths[3].c_str()) / std::atof(widths[0].c_str()), 150.0 / 40, 0.01);
  EXPECT_NE(svg.find("peak 180"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the reference line
  // A log scale: equal ratios give equal differences in length.
  c.log_scale = true;
  widths = attribute_values(render_bar_chart(c), "<rect class=\"bar\"", "width");
  ASSERT_EQ(widths.size(), 3u);
  EXPECT_NEAR(std::atof(widths[1].c_str()) - std::atof(widths[0].c_str()),
              std::atof(widths[2].c_str()) - std::atof(widths[1].c_str()), 0.2);
}

TEST(SvgChart, LongRowLabelsAreCutAndTheBarsStartAfterThem) {
  BarChart c;
  const std::string long_label = "a very long row label naming model, precision, ISA and threads";
  c.labels = {long_label, "short"};
  c.values = {{1}, {2}};
  std::string svg = render_bar_chart(c);
  EXPECT_EQ(svg.find(">" + long_label + "<"), std::string::npos);  // no text shows it whole ...
  EXPECT_NE(svg.find("<title>" + long_label + ": 1</title>"), std::string::npos);  // ... but its bar's tooltip
  EXPECT_NE(svg.find(long_label.substr(0, 39) + "\xE2\x80\xA6"), std::string::npos);  // 39 characters and …
  for (const std::string& x : attribute_values(svg, "<rect class=\"bar\"", "x")) EXPECT_GT(std::atof(x.c_str()), 40 * 6.5);
  // The height grows with the rows.
  auto height = [](const std::string& s) { return std::atof(attribute_values(s, "<svg", "height").at(0).c_str()); };
  c.labels.resize(20, "row");
  c.values.resize(20, {3});
  EXPECT_GT(height(render_bar_chart(c)), height(svg) + 200);
}

}  // namespace
}  // namespace rg

// Issue 30: error bars, the spread of repeated measurements, on both kinds of chart.
namespace rg {
namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(SvgChart, ErrorBarsAreDrawnWhereBothEndsAreUsable) {
  LineChart line;
  ChartSeries s;
  s.name = "mlp";
  s.x = {1, 2, 4};
  s.y = {10, 18, 30};
  s.y_low = {9, NAN, 25};
  s.y_high = {11, 20, 33};
  line.series = {s};
  const std::string svg = render_line_chart(line);
  EXPECT_EQ(count_of(svg, "class=\"error-bar\""), 2u);  // the middle point has no low end
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  line.log_y = true;
  line.series[0].y_low = {9, 17, -1};  // not on a log axis: no bar there
  EXPECT_EQ(count_of(render_line_chart(line), "class=\"error-bar\""), 2u);

  BarChart bars;
  bars.labels = {"a", "b"};
  bars.values = {{100}, {200}};
  bars.low = {{90}, {NAN}};
  bars.high = {{300}, {210}};  // a high end past every value widens the axis to hold it
  const std::string svg_bars = render_bar_chart(bars);
  EXPECT_EQ(count_of(svg_bars, "class=\"error-bar\""), 1u);
  EXPECT_EQ(svg_bars.find("nan"), std::string::npos);
  bars.low.clear();
  bars.high.clear();
  EXPECT_EQ(count_of(render_bar_chart(bars), "class=\"error-bar\""), 0u);
}

}  // namespace
}  // namespace rg
