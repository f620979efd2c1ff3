// The activation a kernel applies to its result before storing it, instead of a launch of the
// activation's own kernel after it (kernels/fused_activation.h): gemm.h's epilogue and batch
// norm's apply take one. relu and leaky relu only: their device kernels are bit-exact with the
// CPU and their fused form gives the same bits as the launch it replaces.
#pragma once

#include "opencl/cl_api.h"

namespace rg::ocl {

struct FusedActivation {
  enum Kind : cl_uint { none = 0, relu = 1, leaky_relu = 2 };  // kernels/fused_activation.h's FUSED_*
  Kind kind = none;
  float slope = 0;  // leaky relu's
};

}  // namespace rg::ocl
