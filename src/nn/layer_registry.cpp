// Section name -> layer factory.
#include "nn/layer_registry.h"

#include "nn/activation.h"
#include "nn/dense.h"

namespace rg {

namespace {
struct LayerKind {
  const char* name;
  Result<std::unique_ptr<Layer>> (*make)(const CfgSection&);
};
const LayerKind kLayerKinds[] = {
    {"dense", Dense::from_cfg},           {"relu", Activation::from_cfg},    {"leaky_relu", Activation::from_cfg},
    {"sigmoid", Activation::from_cfg},    {"tanh", Activation::from_cfg},    {"softmax", Activation::from_cfg},
};
}  // namespace

Result<std::unique_ptr<Layer>> make_layer(const CfgSection& section) {
  for (const auto& kind : kLayerKinds) {
    if (section.kind() != kind.name) continue;
    RG_ASSIGN(std::unique_ptr<Layer> layer, kind.make(section));
    RG_ASSIGN(const std::string name, section.get_string_or("name", ""));
    layer->set_name(name);
    RG_TRY(section.check_all_used());
    return layer;
  }
  std::string known;
  for (const auto& kind : kLayerKinds) known += std::string(known.empty() ? "" : ", ") + kind.name;
  return Status::error(section.where() + "unknown layer type (known: net, " + known + ")");
}

std::vector<std::string> layer_kinds() {
  std::vector<std::string> names;
  for (const auto& kind : kLayerKinds) names.push_back(kind.name);
  return names;
}

}  // namespace rg
