// Losses a model ends in. Each turns predictions [n, k] and targets into a summed loss and
// d(loss)/d(prediction) scaled by grad_scale (see ops/loss.h).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "ops/loss.h"  // LossKind, loss_from_name, loss_name
#include "tensor/tensor.h"

namespace rg {

// What a loss compares predictions with.
enum class TargetKind {
  labels,  // i32 class indices [n]
  onehot,  // f32 [n, classes] built from the labels
  input,   // the input itself (autoencoders)
};

Result<TargetKind> target_from_name(const std::string& name);
const char* target_name(TargetKind kind);

// Returns the loss summed over the n rows; writes dpred when defined. pred is f32 or f64;
// target is i32 labels [n] for softmax_cross_entropy, else the dtype and shape of pred.
double compute_loss(LossKind kind, const Tensor& pred, const Tensor& target, double grad_scale, const Tensor& dpred);

// The top class of each row of pred [n, k] equals the label: the count.
int64_t count_correct(const Tensor& pred, const int32_t* labels);

}  // namespace rg
