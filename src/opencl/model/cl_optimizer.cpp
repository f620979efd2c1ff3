// ClOptimizer: the device state and one update per param with opencl/optimizer.h's kernels.
#include "opencl/model/cl_optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "opencl/elementwise.h"
#include "opencl/fill_copy.h"
#include "opencl/loss.h"
#include "opencl/optimizer.h"

namespace rg::ocl {

Result<ClOptimizer> ClOptimizer::create(Device& device, Optimizer& host, std::vector<ClParam*> params) {
  ClOptimizer opt;
  opt.device_ = &device;
  opt.host_ = &host;
  opt.params_ = std::move(params);
  const size_t count = opt.params_.size();
  RG_CHECK(host.state().size() % (count == 0 ? 1 : count) == 0,
           "optimizer state of " << host.state().size() << " tensors for " << count << " params");
  for (const Tensor& t : host.state()) {
    const size_t k = opt.state_.size();
    const char* part = host.config().kind == OptimizerKind::adam ? (k < count ? ".m" : ".s") : ".velocity";
    RG_ASSIGN(Buffer b, Buffer::allocate(device, t.numel() * 4, opt.params_[k % count]->host->name + part));
    opt.state_.push_back(std::move(b));
  }
  if (!opt.params_.empty()) {  // the flags: allocated now, so the budget's plan sees them
    const int64_t bytes = static_cast<int64_t>(opt.params_.size()) * 4;
    RG_ASSIGN(opt.flags_, Buffer::allocate(device, bytes, "loss scaling's flags"));
    RG_ASSIGN(opt.step_flags_, Buffer::allocate(device, bytes, "the update guard's flags"));
    opt.step_flags_host_.resize(opt.params_.size());
  }
  RG_TRY(opt.write_state());
  return opt;
}

ClOptimizer::~ClOptimizer() {
  if (step_flags_read_.valid()) (void)step_flags_read_.wait();  // a run stopped early: dropped
}

Status ClOptimizer::step(double lr) {
  if (step_flags_read_.valid()) RG_TRY(take_step_flags());  // not taken since the last step: kept
  const OptimizerConfig& config = host_->config();
  host_->set_steps(host_->steps() + 1);
  const size_t count = params_.size();
  if (count == 0) return Status();
  RG_TRY(f32_fill_zero(*device_, step_flags_.f32()).status());  // int 0 and float +0 share their bits
  const DeviceSpan flags = element_span(step_flags_, 4);
  for (size_t i = 0; i < count; ++i) {
    ClParam& p = *params_[i];
    const auto k = static_cast<int64_t>(i);
    if (config.kind == OptimizerKind::sgd) {
      const DeviceSpan v = config.momentum != 0 ? state_[i].f32() : DeviceSpan{};
      RG_TRY(f32_sgd(*device_, p.numel(), sgd_step_for(config, lr), p.value.f32(), p.grad.f32(), v, flags, k).status());
    } else {
      RG_TRY(f32_adam(*device_, p.numel(), adam_step_for(config, host_->steps(), lr), p.value.f32(), p.grad.f32(),
                      state_[i].f32(), state_[count + i].f32(), flags, k)
                 .status());
    }
  }
  RG_ASSIGN(step_flags_read_, read_buffer_async(step_flags_, 0, step_flags_host_.data(), step_flags_.bytes()));
  return Status();
}

Status ClOptimizer::take_step_flags() {
  const Event read = std::move(step_flags_read_);
  RG_TRY(read.wait());
  for (size_t k = 0; k < params_.size() && first_non_finite_.none(); ++k) {
    if (step_flags_host_[k] == 0) continue;
    const ClParam& p = *params_[k];
    RG_ASSIGN(const std::vector<float> grad, download<float>(p.grad, p.numel()));
    const bool finite = std::all_of(grad.begin(), grad.end(), [](float g) { return std::isfinite(g); });
    first_non_finite_ = NonFiniteUpdate{p.host->name, finite};
  }
  return Status();
}

Result<NonFiniteUpdate> ClOptimizer::non_finite_update() {
  if (step_flags_read_.valid()) RG_TRY(take_step_flags());
  return std::exchange(first_non_finite_, NonFiniteUpdate{});
}

Result<std::string> ClOptimizer::unscale(float factor) {
  const int64_t count = static_cast<int64_t>(params_.size());
  if (count == 0) return std::string();
  RG_TRY(f32_fill_zero(*device_, flags_.f32()).status());  // int 0 and float +0 share their bits
  for (int64_t k = 0; k < count; ++k) {
    ClParam& p = *params_[static_cast<size_t>(k)];
    RG_TRY(f32_scale_and_flag_non_finite(*device_, p.numel(), factor, p.grad.f32(), element_span(flags_, 4), k).status());
  }
  RG_ASSIGN(const std::vector<int32_t> flags, download<int32_t>(flags_, count));
  for (int64_t k = 0; k < count; ++k) {
    if (flags[static_cast<size_t>(k)] != 0) return params_[static_cast<size_t>(k)]->host->name;
  }
  return std::string();
}

int64_t ClOptimizer::state_bytes() const {
  int64_t bytes = 0;
  for (const Buffer& b : state_) bytes += b.bytes();
  return bytes;
}

Status ClOptimizer::read_state() {
  for (size_t k = 0; k < state_.size(); ++k) {
    const Tensor& t = host_->state()[k];
    if (t.numel() > 0) RG_TRY(read_buffer(state_[k], 0, t.f32(), t.numel() * 4));
  }
  return Status();
}

Status ClOptimizer::write_state() {
  for (size_t k = 0; k < state_.size(); ++k) {
    const Tensor& t = host_->state()[k];
    if (t.numel() > 0) RG_TRY(write_buffer(state_[k], 0, t.f32(), t.numel() * 4));
  }
  return Status();
}

}  // namespace rg::ocl
