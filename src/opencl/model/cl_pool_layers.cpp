// Pooling on the device (nn/pooling.cpp): Pool2D max/average over NHWC images
// x [n, h, w, c] -> y [n, oh, ow, c] with the CPU layer's ConvGeometry, and GlobalAvgPool
// x [n, h, w, c] -> y [n, c]. The launchers are bit-exact with the CPU; no params.
#include "nn/pooling.h"
#include "opencl/model/cl_layer.h"
#include "opencl/pool.h"
#include "opencl/shape_ops.h"

namespace rg::ocl {

namespace {

class ClPool2D : public ClLayer {
 public:
  ClPool2D(Device& device, const Pool2D& host)
      : device_(device), op_(host.pool_kind() == PoolKind::max ? PoolOp::max : PoolOp::average),
        geometry_(host.geometry()) {}

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    (void)ctx;
    return f32_pool_forward(device_, op_, geometry_, n, x, y).status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)ctx;
    if (dx.mem == nullptr) return Status();
    // max finds each window's first position equal to y again: no argmax is kept
    return f32_pool_backward(device_, op_, geometry_, n, x, y, dy, dx).status();
  }

 private:
  Device& device_;
  PoolOp op_;
  ConvGeometry geometry_;
};

class ClGlobalAvgPool : public ClLayer {
 public:
  ClGlobalAvgPool(Device& device, const Shape& input)
      : device_(device), pixels_(input[0] * input[1]), channels_(input[2]) {}

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    (void)ctx;
    return f32_global_avgpool_forward(device_, n, pixels_, channels_, x, y).status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)x;
    (void)y;
    (void)ctx;
    if (dx.mem == nullptr) return Status();
    return f32_global_avgpool_backward(device_, n, pixels_, channels_, dy, dx).status();
  }

 private:
  Device& device_;
  int64_t pixels_, channels_;  // h * w and c of the input
};

Result<std::unique_ptr<ClLayer>> make_cl_pool2d(Layer& layer, const Shape& input, Device& device) {
  (void)input;
  return std::unique_ptr<ClLayer>(new ClPool2D(device, dynamic_cast<Pool2D&>(layer)));
}

Result<std::unique_ptr<ClLayer>> make_cl_global_avgpool(Layer& layer, const Shape& input, Device& device) {
  (void)dynamic_cast<GlobalAvgPool&>(layer);  // a bug otherwise
  return std::unique_ptr<ClLayer>(new ClGlobalAvgPool(device, input));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kPoolMakersRegistered =
    register_cl_layer_makers({"maxpool", "avgpool"}, make_cl_pool2d) &&
    register_cl_layer_makers({"global_avgpool"}, make_cl_global_avgpool);

}  // namespace

}  // namespace rg::ocl
