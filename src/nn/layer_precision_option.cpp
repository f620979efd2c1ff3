// train --layer-precision (layer_precision_option.h): the cfg text edited line by line and read again.
#include "nn/layer_precision_option.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <vector>

#include "nn/layer_registry.h"
#include "nn/model.h"

namespace rg {

namespace {

// "a=x,b=y" -> {a: x, b: y}; an error for an entry without '=' or a name given twice.
Result<std::map<std::string, std::string>> parse_list(const std::string& list) {
  std::map<std::string, std::string> by_layer;
  std::stringstream in(list);
  for (std::string entry; std::getline(in, entry, ',');) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size()) {
      return Status::error("'" + entry + "' is not LAYER=PRECISION (e.g. conv1=w8a8e8,dense3=fp32)");
    }
    if (!by_layer.emplace(entry.substr(0, eq), entry.substr(eq + 1)).second) {
      return Status::error("layer " + entry.substr(0, eq) + " is named twice");
    }
  }
  if (by_layer.empty()) return Status::error("the list is empty (LAYER=PRECISION,...)");
  return by_layer;
}

std::string layer_names(const Model& model) {
  std::string names;
  for (const auto& layer : model.layers()) names += (names.empty() ? "" : ", ") + layer->name();
  return names;
}

}  // namespace

Result<CfgDocument> with_layer_precisions(const CfgDocument& doc, const std::string& list) {
  RG_ASSIGN(const auto by_layer, parse_list(list));
  RG_ASSIGN(const std::unique_ptr<Model> model, Model::from_cfg(doc));
  std::vector<std::string> lines;
  std::stringstream text(doc.text);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  std::vector<std::pair<size_t, std::string>> edits;  // (0-based line, its new text), replaced or inserted after
  for (const auto& entry : by_layer) {  // not a structured binding: C++17 lambdas cannot capture one
    const std::string& name = entry.first;
    const std::string& precision = entry.second;
    const auto& layers = model->layers();
    const auto at = std::find_if(layers.begin(), layers.end(), [&](const auto& l) { return l->name() == name; });
    if (at == layers.end()) return Status::error("no layer '" + name + "' (the model's: " + layer_names(*model) + ")");
    if (!layer_kind_of(**at).own_precision) {
      return Status::error("layer " + name + " is a " + (*at)->kind() + ": a precision of its own applies to layers with "
                           "products");
    }
    auto own = own_precision_from_name(precision);
    if (!own.ok()) return own.status().with_context("layer " + name + ": ");
    const CfgSection& section = doc.sections[model->section_of(static_cast<size_t>(at - layers.begin()))];
    size_t line = static_cast<size_t>(section.line());  // 1-based header: insert after it (index `line`)
    bool replace = false;
    for (const CfgEntry& e : section.entries())
      if (e.key == "precision") line = static_cast<size_t>(e.line - 1), replace = true;
    edits.push_back({line * 2 + (replace ? 0 : 1), "precision = " + own.value().name});
  }
  std::sort(edits.rbegin(), edits.rend());  // from the bottom up: earlier line numbers stay put
  for (const auto& [key, value] : edits) {
    const size_t line = key / 2;
    if (key % 2 == 0) {
      lines[line] = value;
    } else {
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(std::min(line, lines.size())), value);
    }
  }
  std::string edited;
  for (const std::string& line : lines) edited += line + "\n";
  return parse_cfg(edited, doc.file + " (as --layer-precision edited it)");  // its lines moved
}

}  // namespace rg
