// A small XML checker for the tests of the study report's SVG charts and HTML page.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace rg {

// A small XML checker: tags balance, one root element, attribute values quoted and unique per
// element, no raw '<' in attribute values or text, and every '&' starts a known entity.
// Returns "" when well-formed, else what is wrong and where.
inline std::string xml_problem(const std::string& s) {
  auto entity_ok = [&](size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (s.compare(at, std::char_traits<char>::length(e), e) == 0) return true;
    return false;
  };
  std::vector<std::string> open;
  bool root_done = false;
  for (size_t i = 0; i < s.size();) {
    const std::string where = " at " + std::to_string(i);
    if (s[i] == '&') {
      if (!entity_ok(i)) return "bad entity" + where;
      ++i;
    } else if (s[i] != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(s[i]))) return "text outside the root" + where;
      ++i;
    } else {
      size_t end = s.find('>', i);
      if (end == std::string::npos) return "unclosed tag" + where;
      std::string tag = s.substr(i + 1, end - i - 1);
      if (tag.find('<') != std::string::npos) return "'<' inside a tag" + where;
      if (!tag.empty() && tag[0] == '/') {
        if (open.empty() || open.back() != tag.substr(1)) return "</" + tag.substr(1) + "> closes nothing open" + where;
        open.pop_back();
        root_done = open.empty();
      } else {
        if (root_done || (open.empty() && i != s.find_first_not_of(" \n\t"))) return "second root" + where;
        const bool self_closing = !tag.empty() && tag.back() == '/';
        if (self_closing) tag.pop_back();
        size_t p = tag.find_first_of(" \n\t");
        std::string name = tag.substr(0, p);
        if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) return "bad element name" + where;
        std::set<std::string> attributes;
        while (p != std::string::npos && (p = tag.find_first_not_of(" \n\t", p)) != std::string::npos) {
          size_t eq = tag.find('=', p);
          if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') return "unquoted attribute" + where;
          std::string attribute = tag.substr(p, eq - p);
          if (attribute.find_first_of(" \t\n\"") != std::string::npos) return "bad attribute name" + where;
          if (!attributes.insert(attribute).second) return "attribute " + attribute + " twice" + where;
          size_t close = tag.find('"', eq + 2);
          if (close == std::string::npos) return "attribute value not closed" + where;
          for (size_t k = eq + 2; k < close; ++k)
            if (tag[k] == '&' && !entity_ok(i + 1 + k)) return "bad entity in attribute" + where;
          p = close + 1;
          if (p < tag.size() && !std::isspace(static_cast<unsigned char>(tag[p]))) return "no space after attribute" + where;
        }
        if (!self_closing) open.push_back(name);
        else root_done = root_done || open.empty();
      }
      i = end + 1;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  if (!root_done) return "no root element";
  return "";
}

}  // namespace rg
