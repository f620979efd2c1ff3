// Upsample on the device (nn/shape_layers.cpp): x [n, h, w, c] -> y [n, h*s, w*s, c], nearest;
// backward sums each value's s*s copies in the CPU's order (bit-exact). No params.
#include "nn/shape_layers.h"
#include "opencl/model/cl_layer.h"
#include "opencl/shape_ops.h"

namespace rg::ocl {

namespace {

class ClUpsample : public ClLayer {
 public:
  ClUpsample(Device& device, const Upsample& host, const Shape& input)
      : device_(device), h_(input[0]), w_(input[1]), c_(input[2]), scale_(host.scale()) {}

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    (void)ctx;
    return f32_upsample_forward(device_, n, h_, w_, c_, scale_, x, y).status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)x;
    (void)y;
    (void)ctx;
    if (dx.mem == nullptr) return Status();
    return f32_upsample_backward(device_, n, h_, w_, c_, scale_, dy, dx).status();
  }

 private:
  Device& device_;
  int64_t h_, w_, c_, scale_;  // the input image and the factor
};

Result<std::unique_ptr<ClLayer>> make_cl_upsample(Layer& layer, const Shape& input, Device& device) {
  return std::unique_ptr<ClLayer>(new ClUpsample(device, dynamic_cast<Upsample&>(layer), input));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kUpsampleMakerRegistered = register_cl_layer_makers({"upsample"}, make_cl_upsample);

}  // namespace

}  // namespace rg::ocl
