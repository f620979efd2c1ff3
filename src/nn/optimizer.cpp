// SGD and Adam updates (elementwise over each parameter).
#include "nn/optimizer.h"

#include "base/int_math.h"
#include "cpu/kernel_tables.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <sstream>

namespace rg {

Result<OptimizerKind> optimizer_from_name(const std::string& name) {
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "adam") return OptimizerKind::adam;
  return Status::error("unknown optimizer '" + name + "' (sgd, adam)");
}

const char* optimizer_name(OptimizerKind kind) { return kind == OptimizerKind::sgd ? "sgd" : "adam"; }

std::string describe(const OptimizerConfig& c) {
  std::ostringstream os;
  os << optimizer_name(c.kind) << " (";
  if (c.kind == OptimizerKind::sgd) {
    os << "momentum " << c.momentum << (c.nesterov ? ", nesterov" : "");
  } else {
    os << "beta1 " << c.beta1 << ", beta2 " << c.beta2 << ", eps " << c.eps;
  }
  if (c.weight_decay != 0) os << ", weight decay " << c.weight_decay;
  os << ")";
  return os.str();
}

Optimizer::Optimizer(const OptimizerConfig& config, std::vector<Param*> params)
    : config_(config), params_(std::move(params)) {}

int Optimizer::state_tensors_per_param(const OptimizerConfig& config) {
  return config.kind == OptimizerKind::adam ? 2 : (config.momentum != 0 ? 1 : 0);
}

int64_t Optimizer::state_bytes(const OptimizerConfig& config, int64_t parameters) {
  return state_tensors_per_param(config) * parameters * static_cast<int64_t>(dtype_size(DType::f32));
}

Status Optimizer::init() {
  state_.clear();
  const int per_param = state_tensors_per_param(config_);
  for (int k = 0; k < per_param; ++k) {
    for (Param* p : params_) {
      RG_ASSIGN(Tensor t, Tensor::zeros(p->value.shape(), DType::f32, p->name + (k == 0 ? ".m" : ".s")));
      state_.push_back(t);
    }
  }
  steps_ = 0;
  return Status();
}

SgdStep sgd_step_for(const OptimizerConfig& config, double lr) {
  return SgdStep{static_cast<float>(lr), static_cast<float>(config.momentum), static_cast<float>(config.weight_decay),
                 config.nesterov};
}

AdamStep adam_step_for(const OptimizerConfig& config, int64_t t, double lr) {
  RG_CHECK(t >= 1, "Adam step " << t << " (the first update is step 1)");
  // Bias corrections in double; 1 - beta in double, then rounded: float(1 - 0.999) is 0.001f,
  // as in PyTorch, where 1.0f - 0.999f is not.
  const double steps = static_cast<double>(t);
  AdamStep step{};
  step.step_size = static_cast<float>(lr / (1.0 - std::pow(config.beta1, steps)));
  step.correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(config.beta2, steps)));
  step.beta1 = static_cast<float>(config.beta1);
  step.beta2 = static_cast<float>(config.beta2);
  step.one_minus_beta1 = static_cast<float>(1.0 - config.beta1);
  step.one_minus_beta2 = static_cast<float>(1.0 - config.beta2);
  step.eps = static_cast<float>(config.eps);
  step.weight_decay = static_cast<float>(config.weight_decay);
  return step;
}

namespace {
// The update is one parallel region over every parameter: the parameters laid end to end, each
// from an offset that is a multiple of kUpdateBlock, and split in blocks of kUpdateBlock values
// (a chunk's edges are multiples of the block, so within a parameter they fall on multiples of
// every vector width and the split changes nothing; a parameter's last values run the kernel's
// tail, split or not). One thread updated an mlp's 235K values in a third of its step at 16
// threads on the Xeon; a region per parameter cost lenet's ten small ones a fork-join each.
constexpr int64_t kUpdateBlock = 4096;

// Each parameter's offset in the end-to-end layout, and the layout's length last.
std::vector<int64_t> update_offsets(const std::vector<Param*>& params) {
  std::vector<int64_t> offsets{0};
  for (const Param* p : params) offsets.push_back(offsets.back() + round_up(p->value.numel(), kUpdateBlock));
  return offsets;
}
}  // namespace

const Param* Optimizer::step(double lr, ThreadPool* pool) {
  ++steps_;
  const F32VectorKernels& kernels = f32_vector();
  const size_t count = params_.size();
  const SgdStep sgd = sgd_step_for(config_, lr);
  const AdamStep adam = config_.kind == OptimizerKind::adam ? adam_step_for(config_, steps_, lr) : AdamStep{};
  const std::vector<int64_t> offsets = update_offsets(params_);
  // Updates values [begin, end) of parameter i; false when its gradient held an Inf or a NaN.
  const auto update = [&](size_t i, int64_t begin, int64_t end) {
    float* value = params_[i]->value.f32();
    const float* grad = params_[i]->grad.f32();
    if (config_.kind == OptimizerKind::sgd) {
      return kernels.sgd(end - begin, sgd, value + begin, grad + begin,
                         config_.momentum != 0 ? state_[i].f32() + begin : nullptr);
    }
    return kernels.adam(end - begin, adam, value + begin, grad + begin, state_[i].f32() + begin,
                        state_[count + i].f32() + begin);
  };
  std::atomic<size_t> first_bad{count};  // the lowest index of a parameter found not finite
  parallel_for(pool, offsets.back(), kUpdateBlock, [&](int64_t begin, int64_t end) {
    size_t i = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), begin) - offsets.begin()) - 1;
    for (; i < count && offsets[i] < end; ++i) {
      const int64_t numel = params_[i]->value.numel();
      const int64_t from = std::max<int64_t>(begin - offsets[i], 0), to = std::min(end - offsets[i], numel);
      if (from >= to || update(i, from, to)) continue;
      size_t seen = first_bad.load(std::memory_order_relaxed);
      while (i < seen && !first_bad.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
      }
    }
  });
  return first_bad.load() < count ? params_[first_bad.load()] : nullptr;
}

}  // namespace rg
