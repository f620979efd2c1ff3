// Scratch memory shared by the layers of a model: one growing block per dtype, through the
// counted allocator, reused by every layer and step. Layers say how much they need up front
// (Layer::workspace_elements), so Model::reserve allocates it before training starts and a
// budget that cannot hold it fails there, not mid-step.
#pragma once

#include <string>

#include "base/status.h"
#include "tensor/tensor.h"

namespace rg {

struct LayerContext;

class Workspace {
 public:
  // Grows the block of `dtype` to at least `elements` (keeps it when already large enough).
  Status reserve(int64_t elements, DType dtype);
  // A tensor of `shape` over the block (contents left over from earlier use). One at a time:
  // the next take() returns the same memory. Grows the block when needed (aborts with a message
  // if that allocation fails; reserve() first to get a Status instead).
  Tensor take(const Shape& shape, DType dtype);
  int64_t bytes() const;

 private:
  Tensor f32_, f64_;
};

// ctx.workspace's block, or a fresh tensor when the context has none (layers used alone).
Tensor scratch(const LayerContext& ctx, const Shape& shape, DType dtype);

}  // namespace rg
