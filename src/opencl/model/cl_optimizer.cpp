// ClOptimizer: the device state and one update per param with opencl/optimizer.h's kernels.
#include "opencl/model/cl_optimizer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "opencl/elementwise.h"
#include "opencl/fill_copy.h"
#include "opencl/loss.h"
#include "opencl/optimizer.h"

namespace rg::ocl {

namespace {

// `arena` holds exactly the params with values, in their order, and each of them is its view.
bool arena_covers(const ParamArena* arena, const std::vector<ClParam*>& params) {
  if (arena == nullptr) return false;
  std::vector<Param*> held;
  for (const ClParam* p : params) {
    if (p->numel() == 0) continue;
    if (!p->value.is_view() || arena->offset_of(p->host) < 0) return false;
    held.push_back(p->host);
  }
  return held == arena->params();
}

}  // namespace

Result<ClOptimizer> ClOptimizer::create(Device& device, Optimizer& host, std::vector<ClParam*> params,
                                        const ParamArena* arena) {
  ClOptimizer opt;
  opt.device_ = &device;
  opt.host_ = &host;
  opt.params_ = std::move(params);
  const size_t count = opt.params_.size();
  RG_CHECK(host.state().size() % (count == 0 ? 1 : count) == 0,
           "optimizer state of " << host.state().size() << " tensors for " << count << " params");
  const bool adam = host.config().kind == OptimizerKind::adam;
  if (count > 0 && arena_covers(arena, opt.params_)) {
    opt.arena_ = arena;
    for (size_t part = 0; part < host.state().size() / count; ++part) {
      RG_ASSIGN(Buffer b, arena->allocate_like(adam ? (part == 0 ? "the params' Adam m" : "the params' Adam s")
                                                    : "the params' velocity"));
      opt.state_.push_back(std::move(b));
    }
  } else {
    for (const Tensor& t : host.state()) {
      const size_t k = opt.state_.size();
      const char* part = adam ? (k < count ? ".m" : ".s") : ".velocity";
      RG_ASSIGN(Buffer b, Buffer::allocate(device, t.numel() * 4, opt.params_[k % count]->host->name + part));
      opt.state_.push_back(std::move(b));
    }
  }
  if (!opt.params_.empty()) {  // the flags: allocated now, so the budget's plan sees them
    const int64_t bytes = static_cast<int64_t>(opt.params_.size()) * 4;
    RG_ASSIGN(opt.flags_, Buffer::allocate(device, bytes, "loss scaling's flags"));
    RG_ASSIGN(opt.step_flags_, Buffer::allocate(device, 3 * bytes, "the update guard's flags"));
    opt.step_flags_host_.resize(3 * opt.params_.size());
  }
  RG_TRY(opt.write_state());
  return opt;
}

ClOptimizer::~ClOptimizer() {
  if (step_flags_read_.valid()) (void)step_flags_read_.wait();  // a run stopped early: dropped
}

Status ClOptimizer::update(int64_t n, double lr, DeviceSpan w, DeviceSpan grad, DeviceSpan first, DeviceSpan second,
                           DeviceSpan flags, int64_t flag) {
  const OptimizerConfig& config = host_->config();
  if (config.kind == OptimizerKind::sgd) {
    return f32_sgd(*device_, n, sgd_step_for(config, lr), w, grad, config.momentum != 0 ? first : DeviceSpan{}, flags,
                   flag)
        .status();
  }
  return f32_adam(*device_, n, adam_step_for(config, host_->steps(), lr), w, grad, first, second, flags, flag).status();
}

Status ClOptimizer::step(double lr) {
  if (step_flags_read_.valid()) RG_TRY(take_step_flags());  // not taken since the last step: kept
  host_->set_steps(host_->steps() + 1);
  const size_t count = params_.size();
  if (count == 0) return Status();
  RG_TRY(f32_fill_zero(*device_, step_flags_.f32()).status());  // int 0 and float +0 share their bits
  const DeviceSpan flags = element_span(step_flags_, 4);
  if (arena_ != nullptr) {  // every param at once (the padding between them is 0 and stays 0)
    const DeviceSpan first = state_.empty() ? DeviceSpan{} : state_[0].f32();
    const DeviceSpan second = state_.size() > 1 ? state_[1].f32() : DeviceSpan{};
    RG_TRY(update(arena_->floats(), lr, arena_->values().f32(), arena_->grads().f32(), first, second, flags, 0));
  } else {
    for (size_t i = 0; i < count; ++i) {
      ClParam& p = *params_[i];
      const DeviceSpan first = state_.size() > i ? state_[i].f32() : DeviceSpan{};
      const DeviceSpan second = state_.size() > count + i ? state_[count + i].f32() : DeviceSpan{};
      RG_TRY(update(p.numel(), lr, p.value.f32(), p.grad.f32(), first, second, flags, 3 * static_cast<int64_t>(i)));
    }
  }
  RG_ASSIGN(step_flags_read_, read_buffer_async(step_flags_, 0, step_flags_host_.data(), step_flags_.bytes()));
  return Status();
}

Status ClOptimizer::take_step_flags() {
  const Event read = std::move(step_flags_read_);
  RG_TRY(read.wait());
  if (!first_non_finite_.none()) return Status();  // the first kept until taken
  // Each launch's three ints (optimizer.h): flagged, then n - the first bad gradient element and n -
  // the first bad new weight (0: none). One launch a param: the first flagged param, in order.
  if (arena_ == nullptr) {
    for (size_t k = 0; k < params_.size(); ++k) {
      const int32_t* f = &step_flags_host_[3 * k];
      if (f[0] != 0) return first_non_finite_ = NonFiniteUpdate{params_[k]->host->name, f[1] == 0}, Status();
    }
    return Status();
  }
  // One launch over the arena: the param holding the first bad element of either kind.
  if (step_flags_host_[0] == 0) return Status();
  const int64_t n = arena_->floats(), none = std::numeric_limits<int64_t>::max();
  auto first_at = [&](int32_t f) { return f == 0 ? none : n - static_cast<int64_t>(static_cast<uint32_t>(f)); };
  const int64_t bad_grad = first_at(step_flags_host_[1]), first = std::min(bad_grad, first_at(step_flags_host_[2]));
  for (const ClParam* p : params_) {
    const int64_t at = arena_->offset_of(p->host);
    if (at < 0 || first < at || first >= at + p->numel()) continue;
    first_non_finite_ = NonFiniteUpdate{p->host->name, !(bad_grad >= at && bad_grad < at + p->numel())};
    return Status();
  }
  return Status::error("the update guard flagged arena element " + std::to_string(first) + ", in no param");
}

Result<NonFiniteUpdate> ClOptimizer::non_finite_update(bool before_newest) {
  // step() took every earlier step's flags before queueing its own read.
  if (step_flags_read_.valid() && !before_newest) RG_TRY(take_step_flags());
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

std::pair<const Buffer*, int64_t> ClOptimizer::state_place(size_t k) const {
  if (arena_ == nullptr) return {&state_[k], 0};
  const size_t count = params_.size();
  return {&state_[k / count], arena_->offset_of(params_[k % count]->host)};
}

Status ClOptimizer::read_state() {
  for (size_t k = 0; k < host_->state().size(); ++k) {
    const Tensor& t = host_->state()[k];
    const auto [buffer, at] = state_place(k);
    if (t.numel() > 0) RG_TRY(read_buffer(*buffer, at * 4, t.f32(), t.numel() * 4));
  }
  return Status();
}

Status ClOptimizer::write_state() {
  for (size_t k = 0; k < host_->state().size(); ++k) {
    const Tensor& t = host_->state()[k];
    const auto [buffer, at] = state_place(k);
    if (t.numel() > 0) RG_TRY(write_buffer(*buffer, at * 4, t.f32(), t.numel() * 4));
  }
  return Status();
}

}  // namespace rg::ocl
