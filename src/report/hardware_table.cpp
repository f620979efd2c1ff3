// data/hardware_specs.csv parsed (RFC 4180) into HardwareSpec rows, and names matched to them.
#include "report/hardware_table.h"

#include <cctype>
#include <cstdlib>
#include <map>
#include <set>

#include "base/check.h"
#include "report/embedded_data.h"

namespace rg {

namespace {

// The CSV's records: cells unquoted, each record with the line it starts on.
struct CsvRecord {
  int line = 0;
  std::vector<std::string> cells;
};

Result<std::vector<CsvRecord>> parse_csv(const std::string& text, const std::string& origin) {
  std::vector<CsvRecord> records;
  CsvRecord record{1, {}};
  std::string cell;
  bool quoted = false, cell_started = false;
  int line = 1, quote_line = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        line += c == '\n';
        cell += c;
      }
      continue;
    }
    if (c == '"' && !cell_started) {
      quoted = cell_started = true;
      quote_line = line;
    } else if (c == ',') {
      record.cells.push_back(cell);
      cell.clear();
      cell_started = false;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      record.cells.push_back(cell);
      if (!(record.cells.size() == 1 && record.cells[0].empty())) records.push_back(record);  // blank lines
      cell.clear();
      cell_started = false;
      record = CsvRecord{++line, {}};
    } else if (c == '"') {
      return Status::error(origin + ":" + std::to_string(line) + ": a quote inside an unquoted cell");
    } else {
      cell += c;
      cell_started = true;
    }
  }
  if (quoted) return Status::error(origin + ":" + std::to_string(quote_line) + ": a quoted cell is never closed");
  if (cell_started || !record.cells.empty()) {
    record.cells.push_back(cell);
    records.push_back(record);
  }
  return records;
}

// "6.4 (S939) / 12.8 (AM2)" -> 6.4; "~1590-1600" -> 1590; "n/f" -> 0.
double leading_number(const std::string& cell) {
  size_t i = 0;
  while (i < cell.size() && !std::isdigit(static_cast<unsigned char>(cell[i]))) ++i;
  return i < cell.size() ? std::strtod(cell.c_str() + i, nullptr) : 0.0;
}

// A whole cell that is a plain integer, else 0 ("1024 SP / 16 CU" is not a core count).
int plain_integer(const std::string& cell) {
  if (cell.empty()) return 0;
  for (char c : cell)
    if (!std::isdigit(static_cast<unsigned char>(c))) return 0;
  return std::atoi(cell.c_str());
}

std::set<std::string> words(const std::string& text) {
  std::set<std::string> out;
  std::string word;
  for (char c : text + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!word.empty()) {
      out.insert(word);
      word.clear();
    }
  }
  return out;
}

}  // namespace

Result<std::vector<HardwareSpec>> parse_hardware_table(const std::string& csv, const std::string& origin) {
  RG_ASSIGN(const std::vector<CsvRecord> records, parse_csv(csv, origin));
  if (records.empty()) return Status::error(origin + ": no header line");
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < records[0].cells.size(); ++i) column[records[0].cells[i]] = i;
  for (const char* needed : {"match", "device", "type", "architecture", "cores", "threads", "base_clock_mhz",
                             "boost_clock_mhz", "fp32_peak_gflops_num", "fp32_base_gflops_num", "fp32_peak_basis",
                             "fp16_gflops", "memory", "mem_bw_gbs", "simd_isa", "flops_per_cycle_core", "benchmarks",
                             "derived", "notes", "sources"}) {
    if (column.count(needed) == 0) return Status::error(origin + ":1: the header has no column '" + needed + "'");
  }
  std::vector<HardwareSpec> table;
  for (size_t r = 1; r < records.size(); ++r) {
    const CsvRecord& record = records[r];
    const std::string where = origin + ":" + std::to_string(record.line) + ": ";
    if (record.cells.size() != records[0].cells.size()) {
      return Status::error(where + std::to_string(record.cells.size()) + " cells where the header has " +
                           std::to_string(records[0].cells.size()));
    }
    auto cell = [&](const char* name) -> const std::string& { return record.cells[column.at(name)]; };
    HardwareSpec spec;
    spec.device = cell("device");
    spec.match = cell("match");
    if (spec.match.empty() || words(spec.match).empty()) return Status::error(where + spec.device + " has no match rule");
    spec.type = cell("type");
    spec.architecture = cell("architecture");
    spec.cores = plain_integer(cell("cores"));
    spec.threads = plain_integer(cell("threads"));
    spec.base_mhz = leading_number(cell("base_clock_mhz"));
    spec.boost_mhz = leading_number(cell("boost_clock_mhz"));
    spec.fp32_peak_gflops = leading_number(cell("fp32_peak_gflops_num"));
    spec.fp32_base_gflops = leading_number(cell("fp32_base_gflops_num"));
    spec.fp32_peak_basis = cell("fp32_peak_basis");
    const std::string& fp16 = cell("fp16_gflops");
    spec.fp16_gflops = fp16.rfind("none", 0) == 0 ? 0 : leading_number(fp16);
    spec.memory = cell("memory");
    spec.mem_bw_gbs = leading_number(cell("mem_bw_gbs"));
    spec.simd_isa = cell("simd_isa");
    spec.flops_per_cycle_core = spec.is_cpu() ? leading_number(cell("flops_per_cycle_core")) : 0;
    spec.benchmarks = cell("benchmarks");
    spec.derived = cell("derived");
    spec.notes = cell("notes");
    spec.sources = cell("sources");
    if (spec.fp32_peak_gflops <= 0) return Status::error(where + spec.device + " has no FP32 peak (fp32_peak_gflops_num)");
    table.push_back(spec);
  }
  return table;
}

const std::vector<HardwareSpec>& hardware_table() {
  static const std::vector<HardwareSpec> table = [] {
    auto text = embedded_data("hardware_specs.csv");
    RG_CHECK(text.ok(), "" << text.status().message());
    auto parsed = parse_hardware_table(text.value(), "data/hardware_specs.csv (embedded)");
    RG_CHECK(parsed.ok(), "" << parsed.status().message());
    return parsed.take();
  }();
  return table;
}

bool hardware_name_matches(const std::string& rule, const std::string& name) {
  const std::set<std::string> held = words(name);
  size_t start = 0;
  while (start <= rule.size()) {
    const size_t end = std::min(rule.find('|', start), rule.size());
    const std::string alternative = rule.substr(start, end - start);
    bool all = !words(alternative).empty();
    for (const std::string& word : words(alternative)) all = all && held.count(word) > 0;
    if (all) return true;
    start = end + 1;
  }
  return false;
}

const HardwareSpec* match_hardware(const std::vector<HardwareSpec>& table, const std::string& name, bool cpu) {
  const HardwareSpec* found = nullptr;
  for (const HardwareSpec& spec : table) {
    if (spec.is_cpu() != cpu || !hardware_name_matches(spec.match, name)) continue;
    if (found != nullptr) return nullptr;
    found = &spec;
  }
  return found;
}

}  // namespace rg
