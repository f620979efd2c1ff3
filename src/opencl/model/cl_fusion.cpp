// Planning the fused groups of a device model's forward (cl_fusion.h).
#include "opencl/model/cl_fusion.h"

#include <cstdlib>
#include <string>

namespace rg::ocl {

std::vector<FusedGroup> plan_fusion(const std::vector<std::unique_ptr<ClLayer>>& layers,
                                    const std::vector<bool>& reads_alone, bool training, bool enabled) {
  RG_CHECK(reads_alone.size() == layers.size(), "plan_fusion: " << reads_alone.size() << " flags for " << layers.size() << " layers");
  std::vector<FusedGroup> groups;
  for (size_t i = 0; i < layers.size();) {
    FusedGroup g;
    g.head = g.last = i;
    const ClLayer::FusionHead head = enabled ? layers[i]->fusion_head() : ClLayer::FusionHead{};
    size_t next = i + 1;
    // A batch norm folds into the GEMM only in inference: training needs the batch's statistics
    // of the product first.
    if (head.affine && !training && next < layers.size() && reads_alone[next] &&
        layers[next]->fusion_tail().inference_affine) {
      g.affine = static_cast<int64_t>(next);
      g.last = next++;
    }
    if (head.activation && next < layers.size() && reads_alone[next] &&
        layers[next]->fusion_tail().activation.kind != FusedActivation::none) {
      g.activation = static_cast<int64_t>(next);
      g.last = next++;
    }
    groups.push_back(g);
    i = next;
  }
  return groups;
}

Result<bool> fusion_enabled_by_env() {
  const char* env = std::getenv("RETROGRAD_CL_FUSE");
  const std::string value = env ? env : "";
  if (value.empty() || value == "1") return true;
  if (value == "0") return false;
  return Status::error("RETROGRAD_CL_FUSE='" + value + "': 1 (the default) fuses elementwise layers into the kernel before them, 0 does not");
}

}  // namespace rg::ocl
