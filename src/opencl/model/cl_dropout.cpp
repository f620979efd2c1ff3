// Dropout on the device (nn/dropout.cpp): in training with rate > 0 the CPU's mask, drawn
// again in backward (row r of a batch is sample ctx.host.row_offset + r of the step, stream
// ctx.host.noise_stream, the layer's own seed); otherwise a copy, as the CPU does. No params.
#include "nn/dropout.h"
#include "opencl/dropout.h"
#include "opencl/fill_copy.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

namespace {

class ClDropout : public ClLayer {
 public:
  ClDropout(Device& device, const Dropout& host, const Shape& input)
      : device_(device), rate_(host.rate()), seed_(host.seed()), row_(input.numel()),
        threshold_(dropout_threshold(host.rate())), scale_(dropout_scale(host.rate())) {}

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    return apply(n, x, y, ctx.host);
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)x;
    (void)y;
    if (dx.mem == nullptr) return Status();
    return apply(n, dy, dx, ctx.host);  // the forward's mask: same seed, stream and rows
  }

 private:
  // to [n, row_] = from with the mask of this step's rows, or a copy outside training.
  Status apply(int64_t n, DeviceSpan from, DeviceSpan to, const LayerContext& host) const {
    if (!host.training || rate_ <= 0) return f32_copy(device_, from, to, n * row_).status();
    return f32_dropout_apply(device_, n, row_, dropout_step_seed(seed_, host.noise_stream), host.row_offset, threshold_,
                             scale_, from, to)
        .status();
  }

  Device& device_;
  double rate_;
  uint64_t seed_;
  int64_t row_;  // values per sample
  uint64_t threshold_;
  float scale_;
};

Result<std::unique_ptr<ClLayer>> make_cl_dropout(Layer& layer, const Shape& input, Device& device) {
  return std::unique_ptr<ClLayer>(new ClDropout(device, dynamic_cast<Dropout&>(layer), input));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kDropoutMakerRegistered = register_cl_layer_makers({"dropout"}, make_cl_dropout);

}  // namespace

}  // namespace rg::ocl
