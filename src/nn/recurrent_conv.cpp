// RecurrentConv2D: the unrolled steps over the member layers, and backward through time.
// Every piece is a layer whose results do not depend on the thread count (the convolutions,
// the batch norms, the elementwise relu and sums), so neither do the RCL's.
#include "nn/recurrent_conv.h"

#include <algorithm>

#include "nn/cfg.h"
#include "ops/elementwise.h"

namespace rg {

namespace {
ConvOptions conv_options(const RecurrentConvOptions& o) {
  ConvOptions c;
  c.filters = o.filters;
  c.kernel = o.kernel;
  c.stride = 1;
  c.pad = o.kernel / 2;  // same padding: odd sizes keep h x w
  c.init = o.init;
  c.bias = false;  // a batch norm follows
  return c;
}

// to[i] += from[i] (elementwise: the split does not change any result).
template <class T>
void add_into(ThreadPool* pool, const Tensor& from, const Tensor& to) {
  const T* a = from.data<T>();
  T* b = to.data<T>();
  parallel_for(pool, from.numel(), kElementwiseBlock, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) b[i] += a[i];
  });
}
}  // namespace

RecurrentConv2D::RecurrentConv2D(const RecurrentConvOptions& options)
    : options_(options), ff_(conv_options(options)) {
  if (options_.steps > 0) rec_.reset(new Conv2D(conv_options(options)));
  for (int64_t t = 0; t <= options_.steps; ++t) norms_.emplace_back(new BatchNorm(options_.momentum, options_.eps));
}

Result<std::unique_ptr<Layer>> RecurrentConv2D::from_cfg(const CfgSection& section) {
  RecurrentConvOptions o;
  RG_ASSIGN(o.filters, section.get_int("filters", 1, 1 << 16));
  RG_ASSIGN(o.kernel, section.get_int_or("size", 3, 1, 63));
  if (o.kernel % 2 == 0) {
    return Status::error(section.where("size") + std::to_string(o.kernel) +
                         " is even: an rcl keeps the image size (stride 1, pad = size / 2), which needs an odd size");
  }
  RG_ASSIGN(o.steps, section.get_int_or("steps", 3, 0, 64));
  RG_ASSIGN(o.init, init_from_section(section));
  RG_ASSIGN(o.momentum, section.get_float_or("momentum", 0.1, 0.0, 1.0));
  RG_ASSIGN(o.eps, section.get_float_or("eps", 1e-5, 1e-12, 1.0));
  return std::unique_ptr<Layer>(new RecurrentConv2D(o));
}

Result<Shape> RecurrentConv2D::configure(const Shape& input) {
  if (input.rank() != 3) {
    return Status::error("an rcl takes images (height x width x channels), not " + input.str());
  }
  RG_ASSIGN(output_, ff_.configure(input));
  if (output_[0] != input[0] || output_[1] != input[1]) {
    return Status::error("internal: the rcl's feed-forward conv changes " + input.str() + " to " + output_.str());
  }
  if (rec_) {
    RG_ASSIGN(const Shape rec_out, rec_->configure(output_));
    if (rec_out != output_) return Status::error("internal: the rcl's recurrent conv gives " + rec_out.str());
  }
  for (auto& norm : norms_) RG_TRY(norm->configure(output_).status());
  reserved_ = 0;  // the states' shape may have changed
  return output_;
}

Status RecurrentConv2D::init(Rng& rng, DType dtype) {
  ff_.set_name(name() + ".ff");
  RG_TRY(ff_.init(rng, dtype));
  if (rec_) {
    rec_->set_name(name() + ".rec");
    RG_TRY(rec_->init(rng, dtype));
  }
  for (size_t t = 0; t < norms_.size(); ++t) {
    norms_[t]->set_name(name() + ".bn" + std::to_string(t));
    RG_TRY(norms_[t]->init(rng, dtype));
  }
  reserved_ = 0;
  return Status();
}

int64_t RecurrentConv2D::state_elements_per_sample() const {
  // z_0..z_T, x_0..x_{T-1}, and the three backward buffers
  return (2 * options_.steps + 4) * output_.numel();
}

Status RecurrentConv2D::reserve(int64_t batch, DType dtype) {
  if (batch <= reserved_ && dtype == reserved_dtype_) return Status();
  // Give the old states back before asking for the new ones.
  z_.clear();
  x_.clear();
  grad_ = dz_ = dff_ = Tensor();
  reserved_ = 0;
  const Shape shape = output_.batched(batch);
  for (int64_t t = 0; t <= options_.steps; ++t) {
    RG_ASSIGN(Tensor z, Tensor::zeros(shape, dtype, name() + " z" + std::to_string(t)));
    z_.push_back(z);
    if (t == options_.steps) break;  // x_T is the layer's output
    RG_ASSIGN(Tensor x, Tensor::zeros(shape, dtype, name() + " x" + std::to_string(t)));
    x_.push_back(x);
  }
  RG_ASSIGN(grad_, Tensor::zeros(shape, dtype, name() + " state gradient"));
  RG_ASSIGN(dz_, Tensor::zeros(shape, dtype, name() + " dz"));
  RG_ASSIGN(dff_, Tensor::zeros(shape, dtype, name() + " feed-forward gradient"));
  reserved_ = batch;
  reserved_dtype_ = dtype;
  return Status();
}

void RecurrentConv2D::forward(const Tensor& u, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = u.shape()[0], steps = options_.steps;
  if (n > reserved_ || u.dtype() != reserved_dtype_) {
    const Status reserved = reserve(n, u.dtype());
    RG_CHECK(reserved.ok(), "rcl " << name() << ": " << reserved.message());
  }
  batch_ = n;
  LayerContext with_relu = ctx;  // each batch norm runs the relu after it (BatchNorm::fuses_relu)
  with_relu.fused_relu = true;
  const Tensor z0 = z_[0].rows(0, n);
  ff_.forward(u, z0, ctx);  // z_0 = w_ff * u, which every step adds
  for (int64_t t = 0; t <= steps; ++t) {
    const Tensor z = z_[static_cast<size_t>(t)].rows(0, n);
    if (t > 0) {
      rec_->forward(x_[static_cast<size_t>(t - 1)].rows(0, n), z, ctx);  // z_t = w_rec * x_{t-1}
      dispatch_float(u.dtype(), [&](auto zero) { add_into<decltype(zero)>(ctx.pool, z0, z); });  // + w_ff * u
    }
    const Tensor out = t == steps ? y : x_[static_cast<size_t>(t)].rows(0, n);
    norms_[static_cast<size_t>(t)]->forward(z, out, with_relu);  // x_t = relu(a_t), a_t = BN_t(z_t), one pass
  }
}

void RecurrentConv2D::backward(const Tensor& u, const Tensor& y, const Tensor& dy, const Tensor& du,
                               const LayerContext& ctx) {
  const int64_t n = u.shape()[0], steps = options_.steps;
  RG_CHECK(n == batch_ && reserved_ >= n, "rcl " << name() << ": backward of " << n << " samples after a forward of "
                                                 << batch_);
  const Tensor grad = grad_.rows(0, n), dz = dz_.rows(0, n), dff = dff_.rows(0, n);
  LayerContext later = ctx;  // every call after the first adds to the recurrent weight's grad
  later.accumulate_grads = true;
  LayerContext with_relu = ctx;
  with_relu.fused_relu = true;
  for (int64_t t = steps; t >= 0; --t) {
    const Tensor z = z_[static_cast<size_t>(t)].rows(0, n);
    const Tensor out = t == steps ? y : x_[static_cast<size_t>(t)].rows(0, n);
    // dz_t = BN_t'(relu'(a_t) dx_t), the relu's gradient taken by the batch norm (fused_relu). The
    // last step's goes straight into the feed-forward sum, the others are added to it.
    const Tensor dz_t = t == steps ? dff : dz;
    norms_[static_cast<size_t>(t)]->backward(z, out, t == steps ? dy : grad, dz_t, with_relu);
    if (t < steps) dispatch_float(u.dtype(), [&](auto zero) { add_into<decltype(zero)>(ctx.pool, dz, dff); });
    // dx_{t-1} = w_rec^T dz_t, and d(w_rec) += x_{t-1}^T dz_t
    if (t > 0) rec_->backward(x_[static_cast<size_t>(t - 1)].rows(0, n), z, dz_t, grad, t == steps ? ctx : later);
  }
  ff_.backward(u, z_[0].rows(0, n), dff, du, ctx);  // d(w_ff) and du from the sum of every dz_t
}

std::vector<Param*> RecurrentConv2D::params() {
  std::vector<Param*> all = ff_.params();
  if (rec_) {
    for (Param* p : rec_->params()) all.push_back(p);
  }
  for (auto& norm : norms_)
    for (Param* p : norm->params()) all.push_back(p);
  return all;
}

std::vector<Param*> RecurrentConv2D::buffers() {
  std::vector<Param*> all;
  for (auto& norm : norms_)
    for (Param* p : norm->buffers()) all.push_back(p);
  return all;
}

int64_t RecurrentConv2D::buffer_count() const {
  int64_t count = 0;
  for (const auto& norm : norms_) count += norm->buffer_count();
  return count;
}

int64_t RecurrentConv2D::parameter_count() const {
  int64_t count = ff_.parameter_count() + (rec_ ? rec_->parameter_count() : 0);
  for (const auto& norm : norms_) count += norm->parameter_count();
  return count;
}

int64_t RecurrentConv2D::workspace_elements(int64_t n) const {
  return std::max(ff_.workspace_elements(n), rec_ ? rec_->workspace_elements(n) : 0);
}

int64_t RecurrentConv2D::executed_flops_per_sample(int phase) const {
  auto of = [phase](const Conv2D& conv) {
    const int64_t executed = conv.executed_flops_per_sample(phase);
    return executed > 0 ? executed : conv.forward_flops_per_sample();
  };
  const int64_t total = of(ff_) + options_.steps * (rec_ ? of(*rec_) : 0);
  return total == forward_flops_per_sample() ? 0 : total;
}

// As the layers it is built of, C values a state:
//   forward:  ff conv u -> z_0; for t = 1..T: rec conv x_{t-1} -> z_t, z_t += z_0 (z_0, z_t
//             read, z_t written); for t = 0..T: batch norm and relu z_t -> x_t (one pass);
//   backward: for t = T..0: the batch norm's backward with the relu's and dx; for t < T the sum
//             dff += dz_t (3C); for t > 0 rec conv's backward with dx (its gradient written at
//             t = T, accumulated after); then ff conv's backward, whose dx is the layer's.
LayerTraffic RecurrentConv2D::traffic(double in, double out) const {
  const double steps = static_cast<double>(options_.steps), c = out;
  const LayerTraffic ff = ff_.traffic(in, c);
  LayerTraffic t;
  t.forward = ff.forward;
  t.backward = ff.backward;
  t.input_grad = ff.input_grad;
  t.param_forward = ff.param_forward;
  t.param_backward = ff.param_backward;
  t.param_input_grad = ff.param_input_grad;
  if (rec_ != nullptr && steps > 0) {
    const LayerTraffic r = rec_->traffic(c, c);
    t.forward += steps * (r.forward + 3 * c);
    t.backward += steps * (r.backward + r.input_grad + 3 * c);
    t.param_forward += steps * r.param_forward;
    t.param_backward += steps * (r.param_backward + r.param_input_grad) + (steps - 1) * r.params;
  }
  for (int64_t s = 0; s <= options_.steps; ++s) {
    const LayerTraffic bn = norms_[static_cast<size_t>(s)]->traffic(c, c);
    t.forward += bn.forward;
    t.backward += bn.backward + bn.input_grad;
    t.param_forward += bn.param_forward;
    t.param_backward += bn.param_backward + bn.param_input_grad;
  }
  t.params = static_cast<double>(parameter_count());
  return t;
}

std::string RecurrentConv2D::describe() const {
  const std::string k = std::to_string(options_.kernel);
  return k + "x" + k + " same, " + std::to_string(options_.steps) + " steps (" + std::to_string(options_.steps + 1) +
         " states), init " + init_name(options_.init) + ", batch norm per step";
}

}  // namespace rg
