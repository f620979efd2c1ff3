// Parsing and typed, strict access to cfg files.
#include "nn/cfg.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/input_file.h"
#include "base/memory.h"

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

constexpr size_t kFirstBytes = 4096;  // what a cfg file's text check sees before the rest is read

// The text without the UTF-8 byte-order mark some Windows editors start a file with.
std::string without_byte_order_mark(const std::string& text) {
  return text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? text.substr(3) : text;
}

// A cfg is text: a control byte (a NUL ends a message early) or UTF-16's byte-order mark says the
// file is not one, before anything of it is quoted. Lines and columns count from text's start.
Status check_is_text(const std::string& text, const std::string& file) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.size() >= 2 && ((byte(0) == 0xFF && byte(1) == 0xFE) || (byte(0) == 0xFE && byte(1) == 0xFF))) {
    return Status::error(file + ":1: UTF-16 text (it starts with UTF-16's byte-order mark); a cfg file is UTF-8: "
                         "save it as UTF-8");
  }
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (byte(i) == '\n') {
      ++line;
      line_start = i + 1;
    } else if (byte(i) < 0x20 && byte(i) != '\t' && byte(i) != '\r') {
      char code[8];
      std::snprintf(code, sizeof code, "0x%02X", byte(i));
      return Status::error(file + ":" + std::to_string(line) + ": byte " + code + " at column " +
                           std::to_string(i - line_start + 1) + ": a cfg file is text (is this a binary file?)");
    }
  }
  return Status();
}

Status too_large(const std::string& file, int64_t bytes) {
  return Status::error(file + ": " + format_bytes(bytes) + ", more than the " + format_bytes(kMaxCfgBytes) +
                       " a cfg file may hold (a model description is a few KiB: is this the right file?)");
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
  int64_t values = 1;  // each factor is at most 2^24 and the product stays at most 2^32: no overflow
  for (const int64_t d : dims) {
    values *= d;
    if (values > kMaxModelValues) {
      return Status::error(where(key) + "'" + entry->value + "' has more than " + std::to_string(kMaxModelValues) +
                           " values (2^32), past any memory");
    }
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
  if (text.size() > static_cast<size_t>(kMaxCfgBytes)) return too_large(file, static_cast<int64_t>(text.size()));
  const std::string body = without_byte_order_mark(text);
  RG_TRY(check_is_text(body, file));
  CfgDocument doc;
  doc.file = file;
  doc.text = text;
  std::istringstream in(body);
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    const size_t comment = raw.find_first_of("#;");
    const std::string content = trim(comment == std::string::npos ? raw : raw.substr(0, comment));
    if (content.empty()) continue;
    const std::string at = file + ":" + std::to_string(line) + ": ";
    if (content.front() == '[') {
      if (content.back() != ']') return Status::error(at + "section header '" + content + "' lacks its closing ']'");
      const std::string kind = trim(content.substr(1, content.size() - 2));
      if (!is_identifier(kind)) return Status::error(at + "'" + content + "' is not a valid section name");
      if (doc.sections.size() == kMaxCfgSections) {
        return Status::error(at + "section " + std::to_string(kMaxCfgSections + 1) + ": a cfg holds at most " +
                             std::to_string(kMaxCfgSections) + " sections ([net], [train] and the layers); a model of "
                             "more layers is past what retrograd trains (is this the right file?)");
      }
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
  RG_ASSIGN(const InputFile in, open_input_file(path, "a cfg file"));
  if (in.size > kMaxCfgBytes) return too_large(path, in.size);
  // The first bytes say whether this is text at all; the rest is read only when they do, and no
  // further than the limit, however the file has grown since it was measured.
  std::string text;
  char chunk[kFirstBytes];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, in.file.get())) > 0) {
    text.append(chunk, got);
    if (text.size() == got) RG_TRY(check_is_text(without_byte_order_mark(text), path));
    if (text.size() > static_cast<size_t>(kMaxCfgBytes)) return too_large(path, static_cast<int64_t>(text.size()));
  }
  if (std::ferror(in.file.get())) return Status::error(path + ": read error: " + std::strerror(errno));
  return parse_cfg(text, path);
}

}  // namespace rg
