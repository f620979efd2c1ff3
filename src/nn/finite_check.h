// Finding the first Inf or NaN, so training can stop and name the place: which layer's output
// went bad first, which parameter's value holds one.
#pragma once

#include <string>
#include <vector>

#include "nn/model.h"

namespace rg {

// True when no element is an Inf or a NaN (f32, f16 and f64; integer tensors always).
bool all_finite(const Tensor& t);

// Where the last forward's values first held an Inf or a NaN: "the input batch", "the output of
// conv2 (layer 3 of 9)"; empty when the input and every layer's output are finite.
std::string first_non_finite_output(const Model& model, const Tensor& input);

// The first parameter whose value holds an Inf or a NaN; null when all are finite. (Gradients
// and updated weights are checked by the optimizer, in the pass that updates the weights:
// Optimizer::step, ClOptimizer::step.)
const Param* first_non_finite_value(const std::vector<Param*>& params);

// A param the optimizer's guard flagged: its gradient held an Inf or a NaN, or the gradient was
// finite and the update overflowed its weights. No param: nothing was flagged.
struct NonFiniteUpdate {
  std::string param;  // "dense1.weight"; empty: none
  bool gradient_finite = false;

  bool none() const { return param.empty(); }
  // "the gradient of <owner><param> held an Inf or a NaN", or "the update of <owner><param>
  // overflowed (its weights hold an Inf or a NaN)"; owner: "the generator's ", say.
  std::string text(const std::string& owner = "") const;
};

// What Optimizer::step's flagged param (or null: none) went through: its gradient is scanned.
NonFiniteUpdate flagged_update(const Param* param);

}  // namespace rg
