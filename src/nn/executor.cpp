// The CPU Model as an Executor (nn/executor.h).
#include "nn/executor.h"

#include <utility>

namespace rg {

ModelExecutor::ModelExecutor(Model& model, const LayerContext& ctx, std::string precision)
    : model_(model), ctx_(ctx), precision_(std::move(precision)) {}

std::string ModelExecutor::storage() const {
  if (!precision_.empty()) return precision_;
  if (model_.storage() == DType::f16 || model_.weights_f16()) return "fp16";
  if (model_.storage() == DType::bf16) return "bf16";
  return ctx_.gemm == GemmPrecision::fixed_point ? "fixed-point" : "fp32";
}

std::string ModelExecutor::description() const {
  if (model_.weights_f16()) return storage() + " (f16 weights)";
  if (is_half(model_.storage())) {
    return storage() + " (" + dtype_name(model_.storage()) + " activations, f32 math)";
  }
  return storage();
}

}  // namespace rg
