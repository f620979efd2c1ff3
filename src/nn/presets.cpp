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

// A [train] section gives the settings the preset was tuned with; command-line options win.
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
    {"lenet",
     "# lenet: LeNet-5 with ReLU and max pooling; the first conv pads 28x28 to keep 28x28\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[conv]\nfilters = 6\nsize = 5\npad = 2\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 16\nsize = 5\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dense]\nunits = 120\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 84\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"},
    {"cnn",
     "# cnn: two 3x3 conv blocks of 32 and 64 filters with batch norm, pooling and dropout\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dropout]\nrate = 0.25\n"
     "\n[conv]\nfilters = 64\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 64\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dropout]\nrate = 0.25\n"
     "\n[dense]\nunits = 256\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[dropout]\nrate = 0.5\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"},
    {"autoencoder",
     "# autoencoder: dense 784-256-64-256-784, sigmoid output, trained to reproduce its input\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = mse\n"
     "target = input\n"
     "\n[dense]\nunits = 256\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 64\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 256\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 784\ninit = glorot\n"
     "\n[sigmoid]\n"
     "\n[train]\noptimizer = adam\nlr = 0.001\n"},
    {"conv-autoencoder",
     "# conv-autoencoder: strided convs down to a 7x7x32 code, transposed convs back to 28x28x1\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = mse\n"
     "target = input\n"
     "\n[conv]\nfilters = 16\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\nstride = 2\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\nstride = 2\npad = 1\n"
     "\n[relu]\n"
     "\n[conv_transpose]\nfilters = 16\nsize = 3\nstride = 2\npad = 1\noutput_pad = 1\n"
     "\n[relu]\n"
     "\n[conv_transpose]\nfilters = 1\nsize = 3\nstride = 2\npad = 1\noutput_pad = 1\ninit = glorot\n"
     "\n[sigmoid]\n"
     "\n[train]\noptimizer = adam\nlr = 0.001\n"},
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
