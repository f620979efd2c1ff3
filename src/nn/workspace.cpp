#include "nn/workspace.h"

#include "base/check.h"
#include "nn/layer.h"

namespace rg {

namespace {
Tensor& block_of(DType dtype, Tensor& f32, Tensor& f64) {
  RG_CHECK(dtype == DType::f32 || dtype == DType::f64, "workspace of " << dtype_name(dtype));
  return dtype == DType::f32 ? f32 : f64;
}
}  // namespace

Status Workspace::reserve(int64_t elements, DType dtype) {
  Tensor& block = block_of(dtype, f32_, f64_);
  if (block.defined() && block.numel() >= elements) return Status();
  block = Tensor();  // give the old block back before asking for the larger one
  RG_ASSIGN(block, Tensor::zeros(Shape{elements}, dtype, "layer workspace"));
  return Status();
}

Tensor Workspace::take(const Shape& shape, DType dtype) {
  const Status grown = reserve(shape.numel(), dtype);
  RG_CHECK(grown.ok(), "workspace: " << grown.message());
  return block_of(dtype, f32_, f64_).rows(0, shape.numel()).reshaped(shape);
}

int64_t Workspace::bytes() const {
  return static_cast<int64_t>((f32_.defined() ? f32_.bytes() : 0) + (f64_.defined() ? f64_.bytes() : 0));
}

Tensor scratch(const LayerContext& ctx, const Shape& shape, DType dtype) {
  if (ctx.workspace != nullptr) return ctx.workspace->take(shape, dtype);
  auto fresh = Tensor::zeros(shape, dtype, "layer scratch");
  RG_CHECK(fresh.ok(), "layer scratch: " << fresh.status().message());
  return fresh.take();
}

}  // namespace rg
