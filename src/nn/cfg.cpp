// Parsing and typed, strict access to cfg files.
#include "nn/cfg.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace rg {

namespace {
std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}
}  // namespace

const CfgEntry* CfgSection::find(const std::string& key) const {
  for (const auto& entry : entries_) {
    if (entry.key == key) {
      entry.used = true;
      return &entry;
    }
  }
  return nullptr;
}

std::string CfgSection::where(const std::string& key) const {
  const CfgEntry* entry = key.empty() ? nullptr : find(key);
  const int line = entry ? entry->line : line_;
  std::string text = file_ + ":" + std::to_string(line) + ": [" + kind_ + "]";
  if (!key.empty()) text += " key '" + key + "'";
  return text + ": ";
}

Result<int64_t> CfgSection::get_int(const std::string& key, int64_t min, int64_t max) const {
  const CfgEntry* entry = find(key);
  if (entry == nullptr) return Status::error(where() + "missing required key '" + key + "'");
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(entry->value.c_str(), &end, 10);
  if (entry->value.empty() || *end != '\0' || errno != 0) {
    return Status::error(where(key) + "'" + entry->value + "' is not an integer");
  }
  if (v < min || v > max) {
    return Status::error(where(key) + std::to_string(v) + " is outside [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]");
  }
  return static_cast<int64_t>(v);
}

Result<int64_t> CfgSection::get_int_or(const std::string& key, int64_t fallback, int64_t min, int64_t max) const {
  if (!has(key)) return fallback;
  return get_int(key, min, max);
}

Result<double> CfgSection::get_float_or(const std::string& key, double fallback, double min, double max) const {
  const CfgEntry* entry = find(key);
  if (entry == nullptr) return fallback;
  char* end = nullptr;
  const double v = std::strtod(entry->value.c_str(), &end);
  if (entry->value.empty() || *end != '\0' || !std::isfinite(v)) {
    return Status::error(where(key) + "'" + entry->value + "' is not a finite number");
  }
  if (v < min || v > max) {
    std::ostringstream os;
    os << where(key) << v << " is outside [" << min << ", " << max << "]";
    return Status::error(os.str());
  }
  return v;
}

Result<bool> CfgSection::get_bool_or(const std::string& key, bool fallback) const {
  const CfgEntry* entry = find(key);
  if (entry == nullptr) return fallback;
  if (entry->value == "true" || entry->value == "1" || entry->value == "yes") return true;
  if (entry->value == "false" || entry->value == "0" || entry->value == "no") return false;
  return Status::error(where(key) + "'" + entry->value + "' is not a boolean (true or false)");
}

Result<std::string> CfgSection::get_string_or(const std::string& key, const std::string& fallback) const {
  const CfgEntry* entry = find(key);
  return entry == nullptr ? fallback : entry->value;
}

Result<Shape> CfgSection::get_shape(const std::string& key) const {
  const CfgEntry* entry = find(key);
  if (entry == nullptr) return Status::error(where() + "missing required key '" + key + "'");
  std::vector<int64_t> dims;
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {  // split on 'x', keeping empty fields ("4x" has two) so they are refused
    const size_t x = entry->value.find('x', start);
    parts.push_back(entry->value.substr(start, x == std::string::npos ? std::string::npos : x - start));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  for (const std::string& part : parts) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno != 0 || v < 1 || v > (1 << 24)) {
      return Status::error(where(key) + "'" + entry->value +
                           "' is not a shape (positive sizes joined by 'x': 784 or 28x28x1 as height x width x channels)");
    }
    dims.push_back(v);
  }
  if (dims.size() == 1) return Shape{dims[0]};
  if (dims.size() == 3) return Shape{dims[0], dims[1], dims[2]};  // h x w x c, channels innermost
  return Status::error(where(key) + "'" + entry->value + "' has " + std::to_string(dims.size()) +
                       " sizes; give 1 (features) or 3 (height x width x channels)");
}

Status CfgSection::check_all_used() const {
  for (const auto& entry : entries_) {
    if (!entry.used) {
      return Status::error(file_ + ":" + std::to_string(entry.line) + ": [" + kind_ + "] unknown key '" + entry.key +
                           "'");
    }
  }
  return Status();
}

Result<CfgDocument> parse_cfg(const std::string& text, const std::string& file) {
  CfgDocument doc;
  doc.file = file;
  doc.text = text;
  std::istringstream in(text);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    // A control byte (a NUL ends a message early): the file is not a cfg; say so before quoting it.
    for (size_t column = 0; column < raw.size(); ++column) {
      const auto c = static_cast<unsigned char>(raw[column]);
      if (c < 0x20 && c != '\t' && c != '\r') {
        char code[8];
        std::snprintf(code, sizeof code, "0x%02X", c);
        return Status::error(file + ":" + std::to_string(line) + ": byte " + code + " at column " +
                             std::to_string(column + 1) + ": a cfg file is text (is this a binary file?)");
      }
    }
    const size_t comment = raw.find_first_of("#;");
    const std::string content = trim(comment == std::string::npos ? raw : raw.substr(0, comment));
    if (content.empty()) continue;
    const std::string at = file + ":" + std::to_string(line) + ": ";
    if (content.front() == '[') {
      if (content.back() != ']') return Status::error(at + "section header '" + content + "' lacks its closing ']'");
      const std::string kind = trim(content.substr(1, content.size() - 2));
      if (!is_identifier(kind)) return Status::error(at + "'" + content + "' is not a valid section name");
      doc.sections.emplace_back(file, kind, line);
      continue;
    }
    const size_t eq = content.find('=');
    if (eq == std::string::npos) {
      return Status::error(at + "'" + content + "' is neither a [section] nor a 'key = value' line");
    }
    if (doc.sections.empty()) return Status::error(at + "key '" + trim(content.substr(0, eq)) + "' before any [section]");
    CfgEntry entry;
    entry.key = trim(content.substr(0, eq));
    entry.value = trim(content.substr(eq + 1));
    entry.line = line;
    if (!is_identifier(entry.key)) return Status::error(at + "'" + entry.key + "' is not a valid key");
    for (const auto& other : doc.sections.back().entries()) {
      if (other.key == entry.key) {
        return Status::error(at + "key '" + entry.key + "' repeats the one on line " + std::to_string(other.line));
      }
    }
    doc.sections.back().entries().push_back(entry);
  }
  if (doc.sections.empty()) {
    return Status::error(file + ":" + std::to_string(line > 0 ? line : 1) +
                         ": no sections (a cfg needs [net] and at least one layer)");
  }
  return doc;
}

Result<CfgDocument> load_cfg_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open the cfg file");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::error(path + ": read error");
  return parse_cfg(ss.str(), path);
}

}  // namespace rg
