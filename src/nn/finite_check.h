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
// are checked by the optimizer, in the pass that updates the weights: Optimizer::step.)
const Param* first_non_finite_value(const std::vector<Param*>& params);

}  // namespace rg
