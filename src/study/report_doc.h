// The study report as a document model, written once and rendered two ways: one self-contained
// HTML page (inline CSS and SVG, no scripts) and GitHub-flavoured Markdown (the same headings,
// text and tables; charts left out). study/study_report.cpp and study/report_*.cpp build it.
//
// Text in paragraphs, notes and list items may use two inline marks: **strong** and `code`.
// Table cells are plain text. Everything is escaped for its format when rendered.
#pragma once

#include <string>
#include <vector>

namespace rg::report {

struct Column {
  std::string header;    // with its unit: "samples/s", "peak RSS (MiB)"
  bool number = false;   // right-aligned, tabular digits
  bool optional = false; // dropped when no row has a value (drop_empty_columns)
  bool prose = false;    // long text that wraps (basis, source, error); other cells stay on one line
};

struct Table {
  std::string caption;
  std::vector<Column> columns;
  std::vector<std::vector<std::string>> rows;  // one cell per column; "—" where not measured
  std::vector<std::string> notes;              // under the table (footnotes: peaks, sources)
  bool estimate = false;                       // drawn as estimates (caption coloured)
  bool group_rows = false;                     // HTML: a rule where the first column's value changes
};

// Removes the optional columns in which every cell is "" or "—".
void drop_empty_columns(Table& table);

struct Block {
  enum class Kind { kHeading, kParagraph, kNote, kWarning, kList, kTable, kCharts, kCode, kDetailsBegin, kDetailsEnd, kToc,
                    kSideBySideBegin, kSideBySideEnd };
  Kind kind = Kind::kParagraph;
  int level = 2;            // headings
  std::string id, text;     // heading anchor and text; paragraph text; details summary
  std::vector<std::string> items;  // list items, SVG charts, code lines
  Table table;
};

struct Document {
  std::string title;
  std::vector<Block> blocks;

  void heading(int level, const std::string& id, const std::string& text);
  void paragraph(const std::string& text);
  void note(const std::string& text);     // smaller, grey: how to read what follows
  void warning(const std::string& text);  // a box: the study stopped early, estimates, ...
  void list(const std::vector<std::string>& items);
  void table(Table table);                // drops its empty optional columns; nothing when no rows
  void charts(const std::vector<std::string>& svgs);  // HTML only, side by side where they fit
  void code(const std::vector<std::string>& lines);
  void details_begin(const std::string& summary);     // HTML: collapsed; Markdown: a <details> too
  void details_end();
  void toc();                             // the level-2 headings, linked
  // HTML: the blocks between these two (tables) stand side by side where the page is wide enough.
  void side_by_side_begin();
  void side_by_side_end();
};

std::string render_html(const Document& doc);
std::string render_markdown(const Document& doc);

// Numbers for cells and text; non-finite is "—" (not measured), never "nan".
extern const char* const kNone;
std::string num(double value, int significant = 3);    // format_number: "115k", "0.07"
std::string fixed(double value, int decimals);         // "12.35"
std::string percent(double fraction, int decimals = 1);  // 0.913 -> "91.3%"
std::string mib(double bytes);                          // bytes -> "124.6" (MiB)
std::string seconds_text(double seconds);               // "47 s", "3 min 12 s", "1 h 02 min"

}  // namespace rg::report
