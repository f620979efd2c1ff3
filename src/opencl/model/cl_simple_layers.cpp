// Device layers without params: the activations (nn/activation.cpp) and flatten/reshape
// (a copy, as the CPU's: each layer owns its output buffer).
#include "nn/activation.h"
#include "opencl/activation.h"
#include "opencl/fill_copy.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

namespace {

class ClActivation : public ClLayer {
 public:
  ClActivation(Device& device, const Activation& host, const Shape& input)
      : device_(device), kind_(host.activation()), slope_(static_cast<float>(host.slope())), row_(input.numel()) {}

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    (void)ctx;
    if (kind_ == ActivationKind::softmax) return f32_softmax_rows_forward(device_, n, row_, x, y).status();
    return f32_unary_forward(device_, unary_op_of(kind_), n * row_, slope_, x, y).status();
  }

  // relu: y > 0 exactly where x > 0 (a NaN x gives y = 0), so its gradient from y is its gradient
  // from x, bit for bit. leaky relu too while the slope is not negative: for x <= 0, slope x <= 0
  // (or NaN), never > 0. Others (and a negative slope) are not fused.
  FusionTail fusion_tail() const override {
    if (kind_ == ActivationKind::relu) return {FusedActivation{FusedActivation::relu, 0.0f}, false};
    if (kind_ == ActivationKind::leaky_relu && !(slope_ < 0.0f)) {
      return {FusedActivation{FusedActivation::leaky_relu, slope_}, false};
    }
    return {};
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)ctx;
    if (dx.mem == nullptr) return Status();
    if (kind_ == ActivationKind::softmax) return f32_softmax_rows_backward(device_, n, row_, y, dy, dx).status();
    return f32_unary_backward(device_, unary_op_of(kind_), n * row_, slope_, grad_reads_input(kind_) ? x : y, dy, dx)
        .status();
  }

 private:
  Device& device_;
  ActivationKind kind_;
  float slope_;
  int64_t row_;  // values per sample
};

class ClReshape : public ClLayer {
 public:
  ClReshape(Device& device, const Shape& input) : device_(device), row_(input.numel()) {}

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    (void)ctx;
    return f32_copy(device_, x, y, n * row_).status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)x;
    (void)y;
    (void)ctx;
    if (dx.mem == nullptr) return Status();
    return f32_copy(device_, dy, dx, n * row_).status();
  }

 private:
  Device& device_;
  int64_t row_;
};

Result<std::unique_ptr<ClLayer>> make_cl_activation(Layer& layer, const Shape& input, Device& device) {
  return std::unique_ptr<ClLayer>(new ClActivation(device, dynamic_cast<Activation&>(layer), input));
}

Result<std::unique_ptr<ClLayer>> make_cl_reshape(Layer& layer, const Shape& input, Device& device) {
  (void)layer;
  return std::unique_ptr<ClLayer>(new ClReshape(device, input));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kReshapeMakersRegistered = register_cl_layer_makers({"flatten", "reshape"}, make_cl_reshape);
// Every activation kind (nn/activation.h: its elementwise ops' list, and softmax) is ClActivation's.
const bool kActivationMakersRegistered = [] {
  for (int k = 0; k < kActivationKinds; ++k) {
    register_cl_layer_makers({activation_name(static_cast<ActivationKind>(k))}, make_cl_activation);
  }
  return true;
}();

}  // namespace

}  // namespace rg::ocl
