// The report's document model rendered as HTML and as Markdown.
#include "study/report_doc.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "base/text_format.h"
#include "report/svg_chart.h"

namespace rg::report {

const char* const kNone = "—";

namespace {

bool empty_cell(const std::string& cell) { return cell.empty() || cell == kNone; }

// Inline marks: **strong** and `code`, each only where it is closed; the rest escaped by `escape`.
template <class Escape>
std::string inline_marks(const std::string& text, const char* strong_open, const char* strong_close,
                         const char* code_open, const char* code_close, Escape escape) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, "**") == 0) {
      size_t end = text.find("**", i + 2);
      if (end != std::string::npos) {
        out += strong_open + inline_marks(text.substr(i + 2, end - i - 2), strong_open, strong_close, code_open,
                                          code_close, escape) + strong_close;
        i = end + 2;
        continue;
      }
    } else if (text[i] == '`') {
      size_t end = text.find('`', i + 1);
      if (end != std::string::npos) {
        out += code_open + escape(text.substr(i + 1, end - i - 1)) + code_close;
        i = end + 1;
        continue;
      }
    }
    size_t next = text.find_first_of("*`", i + 1);
    if (next == std::string::npos) next = text.size();
    out += escape(text.substr(i, next - i));
    i = next;
  }
  return out;
}

std::string html_inline(const std::string& text) {
  return inline_marks(text, "<strong>", "</strong>", "<code>", "</code>", xml_escape);
}

// Markdown text: what could start HTML or break a table row is escaped; the marks pass through.
std::string md_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// The anchor GitHub gives a heading: lower case, spaces to '-', other punctuation dropped.
std::string github_slug(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c >= 0x80) out += static_cast<char>(std::tolower(c));
    else if (c == ' ') out += '-';
  }
  return out;
}

std::string md_inline(const std::string& text) {
  return inline_marks(text, "**", "**", "`", "`", md_escape);
}

const char* kStyle = R"(
body{margin:0;color:#1b1b1b;background:#fff;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;font-size:15px;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:20px 28px 60px}
h1{font-size:1.75em;margin:.2em 0 .4em}
h2{font-size:1.4em;margin:2.2em 0 .5em;padding-bottom:.2em;border-bottom:2px solid #d8d8d8}
h3{font-size:1.12em;margin:1.6em 0 .4em}
p,ul{margin:.45em 0}
li{margin:.15em 0}
a{color:#0b5cad}
.note{color:#555;font-size:.9em}
.warning{background:#fff5e1;border-left:5px solid #e69f00;padding:8px 14px;margin:.8em 0}
.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.86em}
.tbl{margin:.9em 0}
.cap{font-weight:600;margin:0 0 4px}
.estimate .cap{color:#8a4b00}
.pair{display:flex;flex-wrap:wrap;gap:0 28px;align-items:flex-start}
.pair .tbl{flex:1 1 420px;min-width:0}
th,td{border:1px solid #c9c9c9;padding:3px 6px;vertical-align:top;text-align:left;white-space:nowrap}
th{white-space:normal}
td.p{white-space:normal;min-width:14em}
th{background:#eef1f4;font-weight:600}
tbody tr:nth-child(even){background:#f6f7f8}
tr.g td{border-top:2px solid #8a8f96}
.n{text-align:right;font-variant-numeric:tabular-nums}
td.n{white-space:nowrap}
.tnote{margin:.2em 0 0;padding-left:1.2em;color:#444;font-size:.84em}
.charts{display:flex;flex-wrap:wrap;gap:10px 18px;margin:.8em 0}
.charts div{flex:1 1 520px;max-width:720px}
pre{background:#f4f5f6;border:1px solid #dcdcdc;padding:7px 10px;white-space:pre-wrap;word-break:break-word;font-size:.86em}
code{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.92em}
details{margin:.6em 0}
summary{cursor:pointer;font-weight:600}
nav ol{columns:2;max-width:760px}
@media print{main{max-width:none;padding:0}body{font-size:10pt}table{font-size:8pt}td{white-space:normal}.charts div{flex:1 1 100%;max-width:600px}.scroll{overflow:visible}h2,h3{break-after:avoid}tr,.charts div,pre{break-inside:avoid}}
)";

void html_table(std::string& out, const Table& t) {
  out += std::string("<div class=\"tbl") + (t.estimate ? " estimate" : "") + "\">\n";
  if (!t.caption.empty()) out += "<p class=\"cap\">" + xml_escape(t.caption) + "</p>\n";
  out += "<div class=\"scroll\"><table>\n<thead><tr>";
  auto cls = [](const Column& c) { return c.number ? " class=\"n\"" : c.prose ? " class=\"p\"" : ""; };
  for (const Column& c : t.columns) out += std::string("<th") + (c.number ? " class=\"n\"" : "") + ">" + xml_escape(c.header) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const bool new_group = t.group_rows && r > 0 && !row.empty() && !t.rows[r - 1].empty() && row[0] != t.rows[r - 1][0];
    out += new_group ? "<tr class=\"g\">" : "<tr>";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const std::string cell = i < row.size() && !row[i].empty() ? row[i] : kNone;
      out += std::string("<td") + cls(t.columns[i]) + ">" + xml_escape(cell) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table></div>\n";
  if (!t.notes.empty()) {
    out += "<ul class=\"tnote\">\n";
    for (const std::string& n : t.notes) out += "<li>" + html_inline(n) + "</li>\n";
    out += "</ul>\n";
  }
  out += "</div>\n";
}

void md_table(std::string& out, const Table& t) {
  if (!t.caption.empty()) out += "**" + md_escape(t.caption) + "**\n\n";
  out += "|";
  for (const Column& c : t.columns) out += " " + md_escape(c.header) + " |";
  out += "\n|";
  for (const Column& c : t.columns) out += c.number ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (size_t i = 0; i < t.columns.size(); ++i) out += " " + md_escape(i < row.size() && !row[i].empty() ? row[i] : kNone) + " |";
    out += "\n";
  }
  out += "\n";
  for (const std::string& n : t.notes) out += "- " + md_inline(n) + "\n";
  if (!t.notes.empty()) out += "\n";
}

}  // namespace

void drop_empty_columns(Table& table) {
  for (size_t c = table.columns.size(); c-- > 0;) {
    if (!table.columns[c].optional) continue;
    bool empty = true;
    for (const auto& row : table.rows) empty = empty && (c >= row.size() || empty_cell(row[c]));
    if (!empty) continue;
    table.columns.erase(table.columns.begin() + static_cast<std::ptrdiff_t>(c));
    for (auto& row : table.rows)
      if (c < row.size()) row.erase(row.begin() + static_cast<std::ptrdiff_t>(c));
  }
}

void Document::heading(int level, const std::string& id, const std::string& text) {
  Block b;
  b.kind = Block::Kind::kHeading;
  b.level = level;
  b.id = id;
  b.text = text;
  blocks.push_back(b);
}

static Block text_block(Block::Kind kind, const std::string& text) {
  Block b;
  b.kind = kind;
  b.text = text;
  return b;
}

void Document::paragraph(const std::string& text) { blocks.push_back(text_block(Block::Kind::kParagraph, text)); }
void Document::note(const std::string& text) { blocks.push_back(text_block(Block::Kind::kNote, text)); }
void Document::warning(const std::string& text) { blocks.push_back(text_block(Block::Kind::kWarning, text)); }
void Document::details_begin(const std::string& summary) { blocks.push_back(text_block(Block::Kind::kDetailsBegin, summary)); }
void Document::details_end() { blocks.push_back(text_block(Block::Kind::kDetailsEnd, "")); }
void Document::side_by_side_begin() { blocks.push_back(text_block(Block::Kind::kSideBySideBegin, "")); }
void Document::side_by_side_end() { blocks.push_back(text_block(Block::Kind::kSideBySideEnd, "")); }
void Document::toc() { blocks.push_back(text_block(Block::Kind::kToc, "")); }

void Document::list(const std::vector<std::string>& items) {
  if (items.empty()) return;
  Block b = text_block(Block::Kind::kList, "");
  b.items = items;
  blocks.push_back(b);
}

void Document::table(Table table) {
  drop_empty_columns(table);
  if (table.rows.empty()) return;
  Block b = text_block(Block::Kind::kTable, "");
  b.table = std::move(table);
  blocks.push_back(std::move(b));
}

void Document::charts(const std::vector<std::string>& svgs) {
  Block b = text_block(Block::Kind::kCharts, "");
  for (const std::string& svg : svgs)
    if (!svg.empty()) b.items.push_back(svg);
  if (b.items.empty()) return;
  blocks.push_back(b);
}

void Document::code(const std::vector<std::string>& lines) {
  Block b = text_block(Block::Kind::kCode, "");
  b.items = lines;
  blocks.push_back(b);
}

std::string render_html(const Document& doc) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>" +
                    xml_escape(doc.title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n";
  out += "<h1>" + xml_escape(doc.title) + "</h1>\n";
  for (const Block& b : doc.blocks) {
    switch (b.kind) {
      case Block::Kind::kHeading: {
        const std::string h = "h" + std::to_string(b.level);
        out += "<" + h + (b.id.empty() ? "" : " id=\"" + xml_escape(b.id) + "\"") + ">" + xml_escape(b.text) + "</" + h + ">\n";
        break;
      }
      case Block::Kind::kParagraph: out += "<p>" + html_inline(b.text) + "</p>\n"; break;
      case Block::Kind::kNote: out += "<p class=\"note\">" + html_inline(b.text) + "</p>\n"; break;
      case Block::Kind::kWarning: out += "<p class=\"warning\">" + html_inline(b.text) + "</p>\n"; break;
      case Block::Kind::kList:
        out += "<ul>\n";
        for (const std::string& item : b.items) out += "<li>" + html_inline(item) + "</li>\n";
        out += "</ul>\n";
        break;
      case Block::Kind::kTable: html_table(out, b.table); break;
      case Block::Kind::kCharts:
        out += "<div class=\"charts\">\n";
        for (const std::string& svg : b.items) out += "<div>" + svg + "</div>\n";
        out += "</div>\n";
        break;
      case Block::Kind::kCode:
        out += "<pre><code>";
        for (const std::string& line : b.items) out += xml_escape(line) + "\n";
        out += "</code></pre>\n";
        break;
      case Block::Kind::kDetailsBegin: out += "<details>\n<summary>" + html_inline(b.text) + "</summary>\n"; break;
      case Block::Kind::kDetailsEnd: out += "</details>\n"; break;
      case Block::Kind::kSideBySideBegin: out += "<div class=\"pair\">\n"; break;
      case Block::Kind::kSideBySideEnd: out += "</div>\n"; break;
      case Block::Kind::kToc:
        out += "<nav>\n<p><strong>Contents</strong></p>\n<ol>\n";
        for (const Block& h : doc.blocks)
          if (h.kind == Block::Kind::kHeading && h.level == 2 && !h.id.empty())
            out += "<li><a href=\"#" + xml_escape(h.id) + "\">" + xml_escape(h.text) + "</a></li>\n";
        out += "</ol>\n</nav>\n";
        break;
    }
  }
  return out + "</main>\n</body>\n</html>\n";
}

std::string render_markdown(const Document& doc) {
  std::string out = "# " + md_escape(doc.title) + "\n\n";
  for (const Block& b : doc.blocks) {
    switch (b.kind) {
      case Block::Kind::kHeading:
        out += std::string(static_cast<size_t>(b.level), '#') + " " + md_escape(b.text) + "\n\n";
        break;
      case Block::Kind::kParagraph: out += md_inline(b.text) + "\n\n"; break;
      case Block::Kind::kNote: out += "*" + md_inline(b.text) + "*\n\n"; break;
      case Block::Kind::kWarning: out += "> **" + md_inline(b.text) + "**\n\n"; break;
      case Block::Kind::kList:
        for (const std::string& item : b.items) out += "- " + md_inline(item) + "\n";
        out += "\n";
        break;
      case Block::Kind::kTable: md_table(out, b.table); break;
      case Block::Kind::kCharts: break;  // the tables beside them hold the same figures
      case Block::Kind::kCode:
        out += "```\n";
        for (const std::string& line : b.items) out += line + "\n";
        out += "```\n\n";
        break;
      case Block::Kind::kDetailsBegin: out += "<details>\n<summary>" + md_escape(b.text) + "</summary>\n\n"; break;
      case Block::Kind::kDetailsEnd: out += "</details>\n\n"; break;
      case Block::Kind::kSideBySideBegin:
      case Block::Kind::kSideBySideEnd: break;
      case Block::Kind::kToc:
        for (const Block& h : doc.blocks)
          if (h.kind == Block::Kind::kHeading && h.level == 2 && !h.id.empty())
            out += "- [" + md_escape(h.text) + "](#" + github_slug(h.text) + ")\n";
        out += "\n";
        break;
    }
  }
  return out;
}

std::string num(double value, int significant) { return std::isfinite(value) ? format_number(value, significant) : kNone; }

std::string fixed(double value, int decimals) {
  return std::isfinite(value) ? format_fixed(value, decimals) : kNone;
}

std::string percent(double fraction, int decimals) {
  return std::isfinite(fraction) ? fixed(100 * fraction, decimals) + "%" : kNone;
}

std::string mib(double bytes) { return std::isfinite(bytes) && bytes > 0 ? fixed(bytes / (1024.0 * 1024.0), 1) : kNone; }

std::string seconds_text(double s) {
  if (!std::isfinite(s) || s < 0) return kNone;
  char text[64];
  const long total = std::lround(s);
  if (total < 60) std::snprintf(text, sizeof text, "%.0f s", s);
  else if (total < 3600) std::snprintf(text, sizeof text, "%ld min %02ld s", total / 60, total % 60);
  else std::snprintf(text, sizeof text, "%ld h %02ld min", total / 3600, (total % 3600) / 60);
  return text;
}

}  // namespace rg::report
