// The device add and concat (cl_merge_layers.h), bit-exact with the CPU's: add sums its inputs
// in order into y (the first two by f32_add, then each next, as Add::forward_inputs adds) and
// copies or adds dy into each input's gradient; fused with the relu or leaky relu after it, its
// last add applies it and its backward takes it back (f32_fused_activation_backward into each
// input's gradient). Concat copies each input into its columns of y (kernels/shape.cl) and each
// column slice of dy back.
#include "opencl/model/cl_merge_layers.h"

#include "nn/merge_layers.h"
#include "opencl/activation.h"
#include "opencl/elementwise.h"
#include "opencl/fill_copy.h"
#include "opencl/model/cl_layer.h"
#include "opencl/shape_ops.h"

namespace rg::ocl {

Status ClMergeLayer::forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) {
  (void)n, (void)x, (void)y, (void)ctx;
  RG_CHECK(false, "a merge layer runs through forward_inputs (a graph model)");
  return Status();
}

Status ClMergeLayer::backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) {
  (void)n, (void)x, (void)y, (void)dy, (void)dx, (void)ctx;
  RG_CHECK(false, "a merge layer runs through backward_inputs (a graph model)");
  return Status();
}

namespace {

class ClAdd : public ClMergeLayer {
 public:
  ClAdd(Device& device, const Shape& input) : device_(device), row_(input.numel()) {}

  FusionHead fusion_head() const override { return {false, true, true, false}; }

  Status forward_inputs(int64_t n, const std::vector<DeviceSpan>& xs, DeviceSpan y, const ClContext& ctx,
                        const ClEpilogue& epilogue) override {
    (void)ctx;
    RG_CHECK(epilogue.affine.mem == nullptr, "an add takes no affine");
    RG_CHECK(xs.size() >= 2, "an add of " << xs.size() << " inputs (the CPU layer's configure refuses it)");
    const int64_t count = n * row_;
    for (size_t k = 1; k < xs.size(); ++k) {
      const FusedActivation last = k + 1 == xs.size() ? epilogue.activation : FusedActivation{};
      RG_TRY(f32_add(device_, count, k == 1 ? xs[0] : y, xs[k], y, last).status());
    }
    return Status();
  }

  Status backward_inputs(int64_t n, DeviceSpan dy, const std::vector<DeviceSpan>& dxs, const std::vector<bool>& add_to,
                         const ClContext& ctx, const ClBackwardFusion& fusion) override {
    (void)ctx;
    RG_CHECK(!fusion.add_to_dx, "an add's gradients say themselves where they are added (add_to)");
    const int64_t count = n * row_;
    const bool through = fusion.activation.kind != FusedActivation::none;
    for (size_t k = 0; k < dxs.size(); ++k) {
      if (dxs[k].mem == nullptr) continue;
      if (through) {
        RG_TRY(f32_fused_activation_backward(device_, count, fusion.activation, fusion.activation_output, dy, dxs[k],
                                             add_to[k])
                   .status());
      } else if (add_to[k]) {
        RG_TRY(f32_add(device_, count, dxs[k], dy, dxs[k]).status());
      } else {
        RG_TRY(f32_copy(device_, dy, dxs[k], count).status());
      }
    }
    return Status();
  }

 private:
  Device& device_;
  int64_t row_;  // values per sample of each input and of the output
};

class ClConcat : public ClMergeLayer {
 public:
  ClConcat(Device& device, const Concat& host, const Shape& input)
      : device_(device), widths_(host.widths()), positions_(input.numel() / host.widths()[0]) {
    for (int64_t w : widths_) width_ += w;
  }

  Status forward_inputs(int64_t n, const std::vector<DeviceSpan>& xs, DeviceSpan y, const ClContext& ctx,
                        const ClEpilogue& epilogue) override {
    (void)ctx;
    RG_CHECK(epilogue.affine.mem == nullptr && epilogue.activation.kind == FusedActivation::none,
             "a concat is no fusion head");
    int64_t column = 0;
    for (size_t k = 0; k < xs.size(); ++k) {
      RG_TRY(f32_columns_into(device_, n * positions_, widths_[k], width_, column, xs[k], y).status());
      column += widths_[k];
    }
    return Status();
  }

  Status backward_inputs(int64_t n, DeviceSpan dy, const std::vector<DeviceSpan>& dxs, const std::vector<bool>& add_to,
                         const ClContext& ctx, const ClBackwardFusion& fusion) override {
    (void)ctx;
    RG_CHECK(fusion.activation.kind == FusedActivation::none && !fusion.add_to_dx, "a concat takes no backward fusion");
    int64_t column = 0;
    for (size_t k = 0; k < dxs.size(); ++k) {
      if (dxs[k].mem != nullptr) {
        RG_TRY(f32_columns_from(device_, n * positions_, widths_[k], width_, column, add_to[k], dy, dxs[k]).status());
      }
      column += widths_[k];
    }
    return Status();
  }

 private:
  Device& device_;
  std::vector<int64_t> widths_;  // each input's last dimension
  int64_t positions_;            // values per sample of the first input over its width: its pixels
  int64_t width_ = 0;            // the output's last dimension
};

Result<std::unique_ptr<ClLayer>> make_cl_add(Layer& layer, const Shape& input, Device& device) {
  (void)layer;
  return std::unique_ptr<ClLayer>(new ClAdd(device, input));
}

Result<std::unique_ptr<ClLayer>> make_cl_concat(Layer& layer, const Shape& input, Device& device) {
  return std::unique_ptr<ClLayer>(new ClConcat(device, dynamic_cast<Concat&>(layer), input));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kMergeMakersRegistered =
    register_cl_layer_makers({"add"}, make_cl_add) &&
    register_cl_layer_makers({"concat"}, make_cl_concat);

}  // namespace

}  // namespace rg::ocl
