// RecurrentConv2D on the device: the CPU's unrolled steps and backward through time
// (nn/recurrent_conv.cpp) over device convs (no bias), one device BatchNorm per step and relu.
// The states z_0..z_T and x_0..x_{T-1} [n, h, w, filters] live from forward to backward in
// buffers reserve() allocates, with the three gradient buffers of backward.
#include <algorithm>

#include "nn/recurrent_conv.h"
#include "opencl/activation.h"
#include "opencl/elementwise.h"
#include "opencl/model/cl_batch_norm.h"
#include "opencl/model/cl_conv_layers.h"
#include "opencl/model/cl_fusion.h"
#include "opencl/model/cl_layer.h"

namespace rg::ocl {

namespace {

class ClRcl : public ClLayer {
 public:
  ClRcl(Device& device, const RecurrentConv2D& host, int64_t size)
      : device_(device), steps_(host.options().steps), size_(size), name_(host.name()) {}

  Status build(RecurrentConv2D& host, Device& device) {
    RG_ASSIGN(fuse_, fusion_enabled_by_env());
    RG_ASSIGN(ff_, ClConv::create(host.feed_forward(), device));
    if (host.recurrent() != nullptr) {
      RG_ASSIGN(rec_, ClConv::create(*host.recurrent(), device));
    }
    const ConvGeometry& g = host.feed_forward().geometry();
    const Shape state{g.out_h, g.out_w, host.options().filters};  // [h, w, filters]
    for (int64_t t = 0; t <= steps_; ++t) {
      RG_ASSIGN(std::unique_ptr<ClBatchNorm> norm, ClBatchNorm::create(host.norm(static_cast<size_t>(t)), state, device));
      norms_.push_back(std::move(norm));
    }
    return Status();
  }

  Status forward(int64_t n, DeviceSpan u, DeviceSpan y, const ClContext& ctx) override {
    RG_TRY(reserve(n));  // a layer used without a model's reserve()
    const int64_t count = n * size_;
    const DeviceSpan z0 = z_[0].f32(0, count);
    RG_TRY(ff_->forward(n, u, z0, ctx));  // z_0 = w_ff * u, which every step adds
    for (int64_t t = 0; t <= steps_; ++t) {
      const DeviceSpan z = z_[static_cast<size_t>(t)].f32(0, count);
      if (t > 0) {
        RG_TRY(rec_->forward(n, x_[static_cast<size_t>(t - 1)].f32(0, count), z, ctx));  // z_t = w_rec * x_{t-1}
        RG_TRY(f32_add(device_, count, z, z0, z).status());                                 // + w_ff * u
      }
      const DeviceSpan out = t == steps_ ? y : x_[static_cast<size_t>(t)].f32(0, count);
      // a_t, then x_t = relu(a_t) in place; fused: the relu as the batch norm stores a_t (the same bits)
      const ClEpilogue relu{DeviceSpan{}, fuse_ ? FusedActivation{FusedActivation::relu, 0.0f} : FusedActivation{}};
      RG_TRY(norms_[static_cast<size_t>(t)]->forward_fused(n, z, out, ctx, relu));
      if (!fuse_) RG_TRY(f32_unary_forward(device_, UnaryOp::relu, count, 0.0f, out, out).status());
    }
    return Status();
  }

  Status backward(int64_t n, DeviceSpan u, DeviceSpan y, DeviceSpan dy, DeviceSpan du, const ClContext& ctx) override {
    RG_CHECK(n <= reserved_, "rcl " << name_ << ": backward of " << n << " samples, reserved " << reserved_);
    const int64_t count = n * size_;
    const DeviceSpan grad = grad_.f32(0, count), dz = dz_.f32(0, count), dff = dff_.f32(0, count);
    LayerContext later_host = ctx.host;  // every call after the first adds to the recurrent weight's grad
    later_host.accumulate_grads = true;
    const ClContext later{later_host, ctx.workspace};
    for (int64_t t = steps_; t >= 0; --t) {
      const DeviceSpan z = z_[static_cast<size_t>(t)].f32(0, count);
      const DeviceSpan out = t == steps_ ? y : x_[static_cast<size_t>(t)].f32(0, count);
      const DeviceSpan dx_t = t == steps_ ? dy : grad;
      // dz_t = BN_t'(da_t), da_t = relu'(a_t) dx_t read from x_t = relu(a_t) (positive exactly where a_t
      // is); the last step's dz_t goes straight into the feed-forward sum, the others are added to it.
      // Fused: the relu's backward and the add in the batch norm's kernels (the same bits).
      ClBatchNorm& norm = *norms_[static_cast<size_t>(t)];
      const DeviceSpan dz_t = t == steps_ ? dff : dz;
      if (fuse_) {
        const BatchNormBackwardFusion fused{FusedActivation{FusedActivation::relu, 0.0f}, out,
                                            t < steps_ ? dff : DeviceSpan{}};
        RG_TRY(norm.backward_with(n, z, dx_t, dz_t, ctx, fused));
      } else {
        RG_TRY(f32_unary_backward(device_, UnaryOp::relu, count, 0.0f, out, dx_t, grad).status());
        RG_TRY(norm.backward(n, z, out, grad, dz_t, ctx));
        if (t < steps_) RG_TRY(f32_add(device_, count, dff, dz, dff).status());
      }
      // dx_{t-1} = w_rec^T dz_t, and d(w_rec) += x_{t-1}^T dz_t
      if (t > 0) {
        RG_TRY(rec_->backward(n, x_[static_cast<size_t>(t - 1)].f32(0, count), z, dz_t, grad,
                              t == steps_ ? ctx : later));
      }
    }
    return ff_->backward(n, u, z_[0].f32(0, count), dff, du, ctx);  // from the sum of every dz_t
  }

  // ff.weight, rec.weight, then bn0.gamma, bn0.beta, bn1.gamma, ...: the CPU's order
  std::vector<ClParam*> params() override {
    std::vector<ClParam*> all = ff_->params();
    if (rec_) {
      for (ClParam* p : rec_->params()) all.push_back(p);
    }
    for (auto& norm : norms_)
      for (ClParam* p : norm->params()) all.push_back(p);
    return all;
  }

  std::vector<ClParam*> buffers() override {
    std::vector<ClParam*> all;
    for (auto& norm : norms_)
      for (ClParam* p : norm->buffers()) all.push_back(p);
    return all;
  }

  int64_t workspace_elements(int64_t n) const override {
    return std::max(ff_->workspace_elements(n), rec_ ? rec_->workspace_elements(n) : 0);
  }

  // z_0..z_T, x_0..x_{T-1}, grad, dz, dff, and each batch norm's statistics
  int64_t state_bytes(int64_t batch) const override {
    int64_t bytes = (2 * steps_ + 4) * batch * size_ * 4;
    for (const auto& norm : norms_) bytes += norm->state_bytes(batch);
    return bytes;
  }

  void release() override {
    for (auto& norm : norms_) norm->release();
    z_.clear();
    x_.clear();
    grad_.reset();
    dz_.reset();
    dff_.reset();
    reserved_ = 0;
  }

  Status reserve(int64_t batch) override {
    if (batch <= reserved_) return Status();  // the states (and the norms') hold it already
    release();  // give the old states back before asking for the new ones
    for (auto& norm : norms_) RG_TRY(norm->reserve(batch));
    const int64_t bytes = batch * size_ * 4;
    for (int64_t t = 0; t <= steps_; ++t) {
      RG_ASSIGN(Buffer z, Buffer::allocate(device_, bytes, name_ + " z" + std::to_string(t)));
      z_.push_back(std::move(z));
      if (t == steps_) break;  // x_T is the layer's output
      RG_ASSIGN(Buffer x, Buffer::allocate(device_, bytes, name_ + " x" + std::to_string(t)));
      x_.push_back(std::move(x));
    }
    RG_ASSIGN(grad_, Buffer::allocate(device_, bytes, name_ + " state gradient"));
    RG_ASSIGN(dz_, Buffer::allocate(device_, bytes, name_ + " dz"));
    RG_ASSIGN(dff_, Buffer::allocate(device_, bytes, name_ + " feed-forward gradient"));
    reserved_ = batch;
    return Status();
  }

 private:
  Device& device_;
  int64_t steps_, size_;  // size_: values per sample of a state, h * w * filters
  std::string name_;
  bool fuse_ = true;                  // RETROGRAD_CL_FUSE (cl_fusion.h): the relu in the batch norm's kernel
  std::unique_ptr<ClConv> ff_, rec_;  // rec_ null when steps == 0
  std::vector<std::unique_ptr<ClBatchNorm>> norms_;
  std::vector<Buffer> z_, x_;
  Buffer grad_, dz_, dff_;
  int64_t reserved_ = 0;
};

Result<std::unique_ptr<ClLayer>> make_cl_rcl(Layer& layer, const Shape& input, Device& device) {
  auto& host = dynamic_cast<RecurrentConv2D&>(layer);
  const ConvGeometry& g = host.feed_forward().geometry();
  (void)input;
  auto cl = std::make_unique<ClRcl>(device, host, g.patches() * host.options().filters);
  RG_TRY(cl->build(host, device));
  return std::unique_ptr<ClLayer>(std::move(cl));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kRclMakerRegistered = register_cl_layer_makers({"rcl"}, make_cl_rcl);

}  // namespace

}  // namespace rg::ocl
