// SGD and Adam updates (elementwise over each parameter).
#include "train/optimizer.h"

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

Status Optimizer::init() {
  state_.clear();
  const int per_param = config_.kind == OptimizerKind::adam ? 2 : (config_.momentum != 0 ? 1 : 0);
  for (int k = 0; k < per_param; ++k) {
    for (Param* p : params_) {
      RG_ASSIGN(Tensor t, Tensor::zeros(p->value.shape(), DType::f32, p->name + (k == 0 ? ".m" : ".s")));
      state_.push_back(t);
    }
  }
  steps_ = 0;
  return Status();
}

void Optimizer::step(double lr) {
  ++steps_;
  const auto wd = static_cast<float>(config_.weight_decay);
  const size_t count = params_.size();
  for (size_t i = 0; i < count; ++i) {
    float* w = params_[i]->value.f32();
    const float* grad = params_[i]->grad.f32();
    const int64_t n = params_[i]->value.numel();
    if (config_.kind == OptimizerKind::sgd) {
      const auto rate = static_cast<float>(lr), mu = static_cast<float>(config_.momentum);
      float* v = mu != 0 ? state_[i].f32() : nullptr;
      for (int64_t j = 0; j < n; ++j) {
        const float g = grad[j] + wd * w[j];
        if (v == nullptr) {
          w[j] -= rate * g;
          continue;
        }
        v[j] = mu * v[j] + g;
        w[j] -= rate * (config_.nesterov ? g + mu * v[j] : v[j]);
      }
    } else {
      const double t = static_cast<double>(steps_);
      // 1 - beta in double, then rounded: float(1 - 0.999) is 0.001f, as in PyTorch; 1.0f - 0.999f is not.
      const auto b1 = static_cast<float>(config_.beta1), b2 = static_cast<float>(config_.beta2);
      const auto one_minus_b1 = static_cast<float>(1.0 - config_.beta1);
      const auto one_minus_b2 = static_cast<float>(1.0 - config_.beta2);
      const auto correction1 = static_cast<float>(1.0 - std::pow(config_.beta1, t));
      const auto correction2_sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(config_.beta2, t)));
      const auto step_size = static_cast<float>(lr) / correction1;
      const auto eps = static_cast<float>(config_.eps);
      float* m = state_[i].f32();
      float* s = state_[count + i].f32();
      for (int64_t j = 0; j < n; ++j) {
        const float g = grad[j] + wd * w[j];
        m[j] = b1 * m[j] + one_minus_b1 * g;
        s[j] = b2 * s[j] + one_minus_b2 * g * g;
        w[j] -= step_size * m[j] / (std::sqrt(s[j]) / correction2_sqrt + eps);
      }
    }
  }
}

}  // namespace rg
