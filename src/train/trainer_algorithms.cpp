// Trainer's choice of each auto convolution's algorithm (nn/conv_tuning.h): measured or cached
// once per trainer, or taken from a checkpoint so a resumed or evaluated run computes as the
// run that wrote it did.
#include "train/trainer.h"

namespace rg {

Status Trainer::choose_algorithms() {
  if (algorithms_chosen_) return Status();
  std::string why_gemm;
  if (options_.device != nullptr) why_gemm = "the layers run on the device";
  if (ranks() > 1) why_gemm = "a data-parallel run keeps every rank on the GEMM (one choice for all not made yet)";
  RG_ASSIGN(conv_choices_, choose_conv_algorithms(model_, micro_batch_, context(true), why_gemm));
  algorithms_chosen_ = true;
  return Status();
}

Status Trainer::restore_algorithms(const Checkpoint& checkpoint, const std::string& path) {
  RG_TRY(restore_conv_algorithms(checkpoint, path, model_));
  conv_choices_.clear();
  for (Conv2D* conv : auto_convs(model_)) {
    conv_choices_.push_back(ConvChoice{conv->name(), conv->algorithm(), 0, 0, "from " + path});
  }
  algorithms_chosen_ = true;
  return Status();
}

}  // namespace rg
