// SGD and Adam updates (elementwise over each parameter).
#include "nn/optimizer.h"

#include "cpu/kernel_tables.h"

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
// Values of a parameter updated together: blocks of a large parameter go to the pool's threads.
// The update is elementwise and the block edges fall on multiples of every vector width, so the
// split changes nothing (a parameter's last values run the kernel's tail, split or not). One
// thread updated an mlp's 235K values in a third of its step at 16 threads on the Xeon.
constexpr int64_t kUpdateBlock = 16384;

// update(begin, end) over [0, n) in blocks on `pool` (inline where n is under two blocks); false
// when any call returned false.
template <class Update>
bool update_in_blocks(ThreadPool* pool, int64_t n, const Update& update) {
  std::atomic<bool> finite{true};
  parallel_for(n >= 2 * kUpdateBlock ? pool : nullptr, n, kUpdateBlock, [&](int64_t begin, int64_t end) {
    if (!update(begin, end)) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}
}  // namespace

const Param* Optimizer::step(double lr, ThreadPool* pool) {
  ++steps_;
  const F32VectorKernels& kernels = f32_vector();
  const size_t count = params_.size();
  const Param* non_finite = nullptr;
  const SgdStep sgd = sgd_step_for(config_, lr);
  const AdamStep adam = config_.kind == OptimizerKind::adam ? adam_step_for(config_, steps_, lr) : AdamStep{};
  for (size_t i = 0; i < count; ++i) {
    float* value = params_[i]->value.f32();
    const float* grad = params_[i]->grad.f32();
    const bool finite = update_in_blocks(pool, params_[i]->value.numel(), [&](int64_t begin, int64_t end) {
      if (config_.kind == OptimizerKind::sgd) {
        return kernels.sgd(end - begin, sgd, value + begin, grad + begin,
                           config_.momentum != 0 ? state_[i].f32() + begin : nullptr);
      }
      return kernels.adam(end - begin, adam, value + begin, grad + begin, state_[i].f32() + begin,
                          state_[count + i].f32() + begin);
    });
    if (!finite && non_finite == nullptr) non_finite = params_[i];
  }
  return non_finite;
}

}  // namespace rg
