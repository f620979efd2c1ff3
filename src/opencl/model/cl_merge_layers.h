// Device layers that join the branches of a graph model (nn/merge_layers.h): add (a residual
// sum) and concat (channels). ClModel runs them through forward_inputs and backward_inputs, with
// the outputs of every layer they read; the single-input entry points are not theirs.
#pragma once

#include <vector>

#include "opencl/model/cl_layer.h"

namespace rg::ocl {

class ClMergeLayer : public ClLayer {
 public:
  // xs[k] [n, input k...] -> y [n, out...], then the epilogue's activation (a fusion head: only
  // what fusion_head() says it takes).
  virtual Status forward_inputs(int64_t n, const std::vector<DeviceSpan>& xs, DeviceSpan y, const ClContext& ctx,
                                const ClEpilogue& epilogue) = 0;
  // Given dy, writes each dxs[k] that has a buffer = dL/dxs[k], or adds it there where add_to[k]
  // (the input feeds other layers too, whose gradients are already in dxs[k]); with `fusion`'s
  // activation, dy is the gradient of that activation's output, taken back through it first.
  virtual Status backward_inputs(int64_t n, DeviceSpan dy, const std::vector<DeviceSpan>& dxs,
                                 const std::vector<bool>& add_to, const ClContext& ctx,
                                 const ClBackwardFusion& fusion) = 0;

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override;
  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override;
};

}  // namespace rg::ocl
