// ClHostLayer: a CPU layer between device layers, with counted copies at its edges.
#include "opencl/model/cl_host_layer.h"

#include "opencl/fill_copy.h"

namespace rg::ocl {

namespace {

class ClHostLayer : public ClLayer {
 public:
  ClHostLayer(Device& device, Layer& layer, const Shape& input, const Shape& output)
      : device_(device), layer_(layer), input_(input), output_(output) {}

  Status upload() {
    for (Param* p : layer_.params()) {
      RG_ASSIGN(ClParam cl, upload_param(device_, *p, true));
      params_.push_back(std::make_unique<ClParam>(std::move(cl)));
    }
    for (Param* p : layer_.buffers()) {
      RG_ASSIGN(ClParam cl, upload_param(device_, *p, false));
      buffers_.push_back(std::make_unique<ClParam>(std::move(cl)));
    }
    return Status();
  }

  int64_t host_bytes(int64_t batch) const override {
    return 2 * batch * (input_.numel() + output_.numel()) * 4 + layer_.state_elements_per_sample() * batch * 4;
  }

  Status reserve(int64_t batch) override {
    RG_ASSIGN(x_, Tensor::zeros(input_.batched(batch), DType::f32, layer_.name() + " input (on the CPU)"));
    RG_ASSIGN(dx_, Tensor::zeros(input_.batched(batch), DType::f32, layer_.name() + " input gradient (on the CPU)"));
    RG_ASSIGN(y_, Tensor::zeros(output_.batched(batch), DType::f32, layer_.name() + " output (on the CPU)"));
    RG_ASSIGN(dy_, Tensor::zeros(output_.batched(batch), DType::f32, layer_.name() + " output gradient (on the CPU)"));
    return layer_.reserve(batch, DType::f32);
  }

  void params_changed() override { stale_ = true; }
  bool needs_whole_batch() const override { return true; }  // x_, y_ hold the batch from forward to backward

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    if (stale_) {  // the device optimizer updated the values the CPU layer computes with
      for (auto& p : params_) RG_TRY(read(*ctx.transfers, p->value.f32(), p->host->value));
      stale_ = false;
    }
    const Tensor hx = x_.rows(0, n), hy = y_.rows(0, n);
    RG_TRY(read(*ctx.transfers, x, hx));
    layer_.forward(hx, hy, ctx.host);
    RG_TRY(write(*ctx.transfers, hy, y));
    if (ctx.host.training) {  // running statistics the CPU layer updated
      for (auto& p : buffers_) RG_TRY(write(*ctx.transfers, p->host->value, p->value.f32()));
    }
    return Status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)x;
    (void)y;  // the host copies of the forward are still in x_ and y_
    const Tensor hdy = dy_.rows(0, n);
    RG_TRY(read(*ctx.transfers, dy, hdy));
    const Tensor hdx = dx.mem != nullptr ? dx_.rows(0, n) : Tensor();
    layer_.backward(x_.rows(0, n), y_.rows(0, n), hdy, hdx, ctx.host);
    if (hdx.defined()) RG_TRY(write(*ctx.transfers, hdx, dx));
    for (auto& p : params_) RG_TRY(write(*ctx.transfers, p->host->grad, p->grad.f32()));
    return Status();
  }

  std::vector<ClParam*> params() override { return raw(params_); }
  std::vector<ClParam*> buffers() override { return raw(buffers_); }

 private:
  Device& device_;
  Layer& layer_;
  Shape input_, output_;
  Tensor x_, y_, dx_, dy_;  // [batch, input...] and [batch, output...] on the host
  std::vector<std::unique_ptr<ClParam>> params_, buffers_;
  bool stale_ = false;

  static std::vector<ClParam*> raw(const std::vector<std::unique_ptr<ClParam>>& all) {
    std::vector<ClParam*> out;
    for (const auto& p : all) out.push_back(p.get());
    return out;
  }
  // Device span -> host tensor (its numel elements), and back; blocking, counted.
  Status read(TransferCounts& counts, DeviceSpan from, const Tensor& to) {
    counts.down(static_cast<int64_t>(to.bytes()));
    return read_span(device_, from, to.f32(), to.numel());
  }
  Status write(TransferCounts& counts, const Tensor& from, DeviceSpan to) {
    counts.up(static_cast<int64_t>(from.bytes()));
    return write_span(device_, from.f32(), to, from.numel());
  }
};

}  // namespace

Result<std::unique_ptr<ClLayer>> make_cl_host_layer(Layer& layer, const Shape& input, const Shape& output,
                                                    Device& device) {
  auto cl = std::make_unique<ClHostLayer>(device, layer, input, output);
  RG_TRY(cl->upload());
  return std::unique_ptr<ClLayer>(std::move(cl));
}

}  // namespace rg::ocl
