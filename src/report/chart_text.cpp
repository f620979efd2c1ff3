// The text of svg_chart.h's charts and of the reports around them: XML escaping and numbers
// written short (12.5k, 3.2M, 2e-5).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "report/svg_chart.h"

namespace rg {

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab and newline are not allowed in XML 1.0 at all.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') out += ' ';
        else out += c;
    }
  }
  return out;
}

std::string format_number(double value, int significant) {
  if (!std::isfinite(value)) return "n/a";
  if (value == 0) return "0";
  significant = std::max(1, std::min(significant, 15));
  char buf[64];
  // Round to the digits first, so that 999999 becomes "1M", not "1000k".
  std::snprintf(buf, sizeof buf, "%.*e", significant - 1, value);
  double r = std::strtod(buf, nullptr), a = std::fabs(r);
  auto strip = [](std::string s) {  // "12.500" -> "12.5", "3.000" -> "3"
    if (s.find('.') == std::string::npos) return s;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
  };
  auto fixed = [&](double v) {
    int decimals = std::max(0, significant - 1 - static_cast<int>(std::floor(std::log10(std::fabs(v)) + 1e-12)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return strip(buf);
  };
  if (a >= 1e4 && a < 1e15) {  // 12.5k, 3.2M, 1.5G, 2T
    const char* suffix[] = {"k", "M", "G", "T"};
    int i = std::min(3, static_cast<int>(std::floor(std::log10(a) + 1e-12)) / 3 - 1);
    return fixed(r / std::pow(10.0, 3 * (i + 1))) + suffix[i];
  }
  if (a >= 1 && a < 1e4) return fixed(value);  // whole digits stay: 1024, not 1020
  if (a >= 1e-3 && a < 1) return fixed(r);
  // Very large or small: 2e-5, 1.5e+20 -> "1.5e20".
  std::string s = buf;
  size_t e = s.find('e');
  std::string mantissa = strip(s.substr(0, e));
  int exponent = std::atoi(s.c_str() + e + 1);
  return mantissa + "e" + std::to_string(exponent);
}

}  // namespace rg
