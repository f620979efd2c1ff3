// The elementwise activations, named for kernels and layers alike.
#pragma once

namespace rg {

enum class UnaryOp : int { relu, leaky_relu, sigmoid, tanh };

}  // namespace rg
