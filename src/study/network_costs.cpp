#include "study/network_costs.h"

#include "train/gan.h"

namespace rg {

Result<std::vector<LayerCost>> network_training_costs(const std::string& network, int64_t batch) {
  RG_ASSIGN(const CfgDocument cfg, load_model_cfg(network));
  if (!cfg.sections.empty() && cfg.sections.front().kind() == "gan") {
    RG_ASSIGN(GanPair pair, gan_pair_from_cfg(cfg));
    return gan_training_costs_per_sample(*pair.generator, *pair.discriminator, batch);
  }
  RG_ASSIGN(std::unique_ptr<Model> model, Model::from_cfg(cfg));
  return training_costs_per_sample(*model, batch);
}

}  // namespace rg
