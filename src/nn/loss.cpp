// Target names and dispatch to the templated math in ops/loss.h (which names the losses).
#include "nn/loss.h"

#include "nn/layer.h"
#include "ops/loss.h"

namespace rg {

Result<TargetKind> target_from_name(const std::string& name) {
  if (name == "labels") return TargetKind::labels;
  if (name == "onehot") return TargetKind::onehot;
  if (name == "input") return TargetKind::input;
  return Status::error("unknown target '" + name + "' (labels, onehot, input)");
}

const char* target_name(TargetKind kind) {
  switch (kind) {
    case TargetKind::labels: return "labels";
    case TargetKind::onehot: return "onehot";
    case TargetKind::input: return "input";
  }
  return "?";
}

double compute_loss(LossKind kind, const Tensor& pred, const Tensor& target, double grad_scale, const Tensor& dpred) {
  const int64_t rows = pred.shape()[0];
  const int64_t cols = pred.numel() / rows;
  double total = 0;
  dispatch_float(pred.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* grad = dpred.defined() ? dpred.data<T>() : nullptr;
    const T scale = static_cast<T>(grad_scale);
    switch (kind) {
      case LossKind::softmax_cross_entropy:
        RG_CHECK(target.numel() == rows, "labels " << target.shape().str() << " for predictions "
                                                   << pred.shape().str());
        total = softmax_xent(rows, cols, pred.data<T>(), target.data<int32_t>(), scale, grad);
        break;
      case LossKind::mse:
        RG_CHECK(target.numel() == pred.numel(), "target " << target.shape().str() << " for " << pred.shape().str());
        total = mse(rows, cols, pred.data<T>(), target.data<T>(), scale, grad);
        break;
      case LossKind::bce_with_logits:
        RG_CHECK(target.numel() == pred.numel(), "target " << target.shape().str() << " for " << pred.shape().str());
        total = bce_with_logits(rows, cols, pred.data<T>(), target.data<T>(), scale, grad);
        break;
      case LossKind::none: RG_CHECK(false, "a model with loss = none has no loss to compute"); break;
    }
  });
  return total;
}

int64_t count_correct(const Tensor& pred, const int32_t* labels) {
  const int64_t rows = pred.shape()[0];
  const int64_t cols = pred.numel() / rows;
  int64_t correct = 0;
  dispatch_float(pred.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* p = pred.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < cols; ++c)
        if (p[r * cols + c] > p[r * cols + best]) best = c;
      correct += best == labels[r];
    }
  });
  return correct;
}

}  // namespace rg
