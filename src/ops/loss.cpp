// The names of the losses (LossKind), as cfg files write them and messages print them.
#include "ops/loss.h"

namespace rg {

Result<LossKind> loss_from_name(const std::string& name) {
  if (name == "softmax_cross_entropy" || name == "cross_entropy") return LossKind::softmax_cross_entropy;
  if (name == "mse") return LossKind::mse;
  if (name == "bce_with_logits") return LossKind::bce_with_logits;
  if (name == "none") return LossKind::none;
  return Status::error("unknown loss '" + name + "' (softmax_cross_entropy, mse, bce_with_logits, none)");
}

const char* loss_name(LossKind kind) {
  switch (kind) {
    case LossKind::softmax_cross_entropy: return "softmax_cross_entropy";
    case LossKind::mse: return "mse";
    case LossKind::bce_with_logits: return "bce_with_logits";
    case LossKind::none: return "none";
  }
  return "?";
}

}  // namespace rg
