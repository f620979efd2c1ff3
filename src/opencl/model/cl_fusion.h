// Fusion of a device model's forward (issue 9: fewer launches and passes over memory): a dense or
// Conv2D layer (the head) followed by a batch norm in inference and/or a relu or leaky relu runs
// them in its GEMM's epilogue; a batch norm followed by one runs it in its apply kernel. The head
// writes the group's last output; the outputs between are never written: a fused activation's
// backward reads its own output instead of its input (ClLayer::fusion_tail), and a batch norm is
// folded only in inference, where no backward follows. Each fused kernel gives the bits of the
// launches it replaces, so fusing changes the speed, never the results.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "base/status.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

// Layers [head, last] of a model run as one forward: the head's, with the epilogue of the layers
// named (index, or -1: none).
struct FusedGroup {
  size_t head = 0, last = 0;
  int64_t affine = -1;      // a batch norm folded into the head's GEMM (inference)
  int64_t activation = -1;  // the activation the head applies
  bool fused() const { return last > head; }
};

// The groups of one forward over `layers`, in order, each layer in exactly one: alone where
// nothing fuses or `enabled` is false. A layer joins the group before it only where
// reads_alone[i]: it reads the output of layer i - 1 and nothing else, and no other layer reads
// that output (every layer but the first of a chain; in a graph model, not where a residual
// block's skip also reads it), since the head writes the group's last output, never its own.
std::vector<FusedGroup> plan_fusion(const std::vector<std::unique_ptr<ClLayer>>& layers,
                                    const std::vector<bool>& reads_alone, bool training, bool enabled);

// RETROGRAD_CL_FUSE: unset, empty or "1": fuse; "0": every layer launches its own kernels (to
// compare); anything else is an error naming the variable.
Result<bool> fusion_enabled_by_env();

}  // namespace rg::ocl
