// The table from cfg section names to layer constructors. Adding a layer: write the
// class with a from_cfg(), add one row to kLayerKinds in layer_registry.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/cfg.h"
#include "nn/layer.h"

namespace rg {

// Builds the layer of a section and checks that every key in it was understood.
Result<std::unique_ptr<Layer>> make_layer(const CfgSection& section);
std::vector<std::string> layer_kinds();

}  // namespace rg
