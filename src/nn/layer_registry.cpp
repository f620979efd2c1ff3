// Section name -> layer factory.
#include "nn/layer_registry.h"

#include "nn/activation.h"
#include "nn/batch_norm.h"
#include "nn/conv.h"
#include "nn/dense.h"
#include "nn/dropout.h"
#include "nn/pooling.h"
#include "nn/recurrent_conv.h"
#include "nn/shape_layers.h"

namespace rg {

namespace {
struct LayerKind {
  const char* name;
  Result<std::unique_ptr<Layer>> (*make)(const CfgSection&);
};
const LayerKind kLayerKinds[] = {
    {"dense", Dense::from_cfg},
    {"conv", Conv2D::from_cfg},
    {"conv_transpose", ConvTranspose2D::from_cfg},
    {"maxpool", Pool2D::from_cfg},
    {"avgpool", Pool2D::from_cfg},
    {"global_avgpool", GlobalAvgPool::from_cfg},
    {"rcl", RecurrentConv2D::from_cfg},
    {"batchnorm", BatchNorm::from_cfg},
    {"dropout", Dropout::from_cfg},
    {"flatten", Reshape::from_cfg},
    {"reshape", Reshape::from_cfg},
    {"upsample", Upsample::from_cfg},
    {"relu", Activation::from_cfg},
    {"leaky_relu", Activation::from_cfg},
    {"sigmoid", Activation::from_cfg},
    {"tanh", Activation::from_cfg},
    {"softmax", Activation::from_cfg},
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
