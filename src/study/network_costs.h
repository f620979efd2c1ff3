// The roofline costs (report/roofline.h) of a network the study trains, by its name: a preset
// or cfg file, or a GAN cfg (both networks, one GAN step).
#pragma once

#include <string>
#include <vector>

#include "report/roofline.h"

namespace rg {

Result<std::vector<LayerCost>> network_training_costs(const std::string& network, int64_t batch);

}  // namespace rg
