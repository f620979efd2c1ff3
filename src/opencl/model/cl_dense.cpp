// Dense on the device: the CPU layer's three GEMMs and bias sum (nn/dense.cpp), W [in, out].
#include "nn/dense.h"
#include "nn/layer_profile.h"
#include "opencl/activation.h"
#include "opencl/fill_copy.h"
#include "opencl/gemm.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

namespace {

class ClDense : public ClLayer {
 public:
  ClDense(Device& device, const Dense& host) : device_(device), in_(host.inputs()), out_(host.units()) {}

  Status upload(Dense& host) {
    const std::vector<Param*> p = host.params();
    RG_ASSIGN(weight_, upload_param(device_, *p[0], true));
    if (p.size() > 1) {
      RG_ASSIGN(bias_, upload_param(device_, *p[1], true));
      has_bias_ = true;
    }
    return Status();
  }

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    return forward_fused(n, x, y, ctx, ClEpilogue{});
  }

  // Backward: dx's product adds onto dx from the second backward on (the first, at beta 0, is the
  // one a tuned device times and keeps the configuration of: a product reading C is not timed).
  FusionHead fusion_head() const override { return {true, true, false, backward_ran_}; }

  Status forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx,
                       const ClEpilogue& epilogue) override {
    (void)ctx;
    // y[n x out] = x[n x in] * W[in x out] (+ b), then the fused layers' epilogue, in the GEMM's last step
    GemmLaunch how;
    how.epilogue = GemmEpilogue{has_bias_ ? bias_.value.f32() : DeviceSpan{}, epilogue.affine, epilogue.activation};
    return f32_gemm(device_, GemmShape{Trans::no, Trans::no, n, out_, in_, in_, out_, out_}, 1.0f, x,
                    weight_.value.f32(), 0.0f, y, how)
        .status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    return backward_fused(n, x, y, dy, dx, ctx, ClBackwardFusion{});
  }

  Status backward_fused(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx,
                        const ClBackwardFusion& fusion) override {
    (void)y;
    RG_CHECK(fusion.activation.kind == FusedActivation::none, "a dense layer takes no activation's backward");
    RG_CHECK(!fusion.add_to_dx || backward_ran_, "a dense layer's first backward adding onto dx");
    backward_ran_ = true;
    const bool keep = ctx.host.accumulate_grads;
    // dW[in x out] (+)= x[n x in]^T * dy[n x out]
    RG_TRY(f32_gemm(device_, GemmShape{Trans::yes, Trans::no, in_, out_, n, in_, out_, out_}, 1.0f, x, dy,
                    keep ? 1.0f : 0.0f, weight_.grad.f32())
               .status());
    if (has_bias_) {  // db[j] (+)= sum_i dy[i, j], in the CPU's row blocks
      if (!keep) RG_TRY(f32_fill_zero(device_, bias_.grad.f32()).status());
      RG_TRY(f32_column_sum(device_, n, out_, dy, bias_.grad.f32()).status());
    }
    if (dx.mem != nullptr) {  // dx[n x in] (+)= dy[n x out] * W[in x out]^T
      const InputGradScope timed(ctx.host);  // --profile-device: as the input gradient
      RG_TRY(f32_gemm(device_, GemmShape{Trans::no, Trans::yes, n, in_, out_, out_, out_, in_}, 1.0f, dy,
                      weight_.value.f32(), fusion.add_to_dx ? 1.0f : 0.0f, dx)
                 .status());
    }
    return Status();
  }

  std::vector<ClParam*> params() override {
    if (has_bias_) return {&weight_, &bias_};
    return {&weight_};
  }

 private:
  Device& device_;
  int64_t in_, out_;
  bool has_bias_ = false;
  bool backward_ran_ = false;  // fusion_head's add_to_dx
  ClParam weight_, bias_;
};

Result<std::unique_ptr<ClLayer>> make_cl_dense(Layer& layer, const Shape& input, Device& device) {
  (void)input;
  auto& host = dynamic_cast<Dense&>(layer);
  auto cl = std::make_unique<ClDense>(device, host);
  RG_TRY(cl->upload(host));
  return std::unique_ptr<ClLayer>(std::move(cl));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kDenseMakerRegistered = register_cl_layer_makers({"dense"}, make_cl_dense);

}  // namespace

}  // namespace rg::ocl
