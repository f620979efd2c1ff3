// Built-in models, written in the cfg format so that every preset is also an example cfg.
#include <fstream>
#include <sstream>

#include "nn/model.h"

namespace rg {

namespace {
struct Preset {
  const char* name;
  const char* cfg;
};

const Preset kPresets[] = {
    {"mlp",
     "# mlp: 784-256-128-10 with ReLU, the Fashion-MNIST baseline\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[dense]\nunits = 256\ninit = he\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 128\ninit = he\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"},
};
}  // namespace

std::string preset_cfg(const std::string& name) {
  for (const auto& preset : kPresets)
    if (name == preset.name) return preset.cfg;
  return "";
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.push_back(preset.name);
  return names;
}

Result<CfgDocument> load_model_cfg(const std::string& name_or_path) {
  const std::string text = preset_cfg(name_or_path);
  if (!text.empty()) return parse_cfg(text, "preset:" + name_or_path);
  if (name_or_path.find('/') == std::string::npos && name_or_path.find('.') == std::string::npos) {
    std::string known;
    for (const auto& name : preset_names()) known += (known.empty() ? "" : ", ") + name;
    return Status::error("'" + name_or_path + "' is neither a preset (" + known + ") nor a cfg file path");
  }
  return load_cfg_file(name_or_path);
}

}  // namespace rg
