// Tensor allocation and views.
#include "tensor/tensor.h"

#include <algorithm>

#include "base/thread_pool.h"

namespace rg {

Result<Tensor> Tensor::zeros(const Shape& shape, DType dtype, const std::string& what, MemoryAccount& account) {
  const size_t bytes = static_cast<size_t>(shape.numel()) * dtype_size(dtype);
  RG_ASSIGN(void* data, account.allocate(bytes, what + " " + shape.str() + " " + dtype_name(dtype)));
  std::memset(data, 0, bytes);
  Tensor t;
  t.storage_ = std::make_shared<Storage>(data, bytes, &account);
  t.shape_ = shape;
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::reshaped(const Shape& shape) const {
  RG_CHECK(shape.numel() == numel(), "reshape " << shape_.str() << " to " << shape.str());
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  RG_CHECK(shape_.rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0],
           "rows [" << begin << ", " << end << ") of " << shape_.str());
  const int64_t row = shape_.numel_from(1);
  Tensor t = *this;
  t.offset_ += begin * row;
  t.shape_ = shape_.sample().batched(end - begin);
  return t;
}

Result<Tensor> Tensor::clone(const std::string& what) const {
  RG_ASSIGN(Tensor t, zeros(shape_, dtype_, what));
  t.copy_from(*this);
  return t;
}

void Tensor::fill_zero() const {
  if (defined()) std::memset(static_cast<char*>(storage_->data()) + offset_ * dtype_size(dtype_), 0, bytes());
}

void Tensor::copy_from(const Tensor& other, ThreadPool* pool) const {
  RG_CHECK(dtype_ == other.dtype_ && numel() == other.numel(),
           "copy " << other.shape_.str() << " " << dtype_name(other.dtype_) << " into " << shape_.str() << " "
                   << dtype_name(dtype_));
  char* to = static_cast<char*>(storage_->data()) + offset_ * dtype_size(dtype_);
  const char* from = static_cast<const char*>(other.storage_->data()) + other.offset_ * dtype_size(other.dtype_);
  constexpr int64_t kBlock = int64_t{1} << 18;
  const int64_t total = static_cast<int64_t>(bytes());
  if (pool == nullptr || total < 2 * kBlock) {
    std::memcpy(to, from, static_cast<size_t>(total));
    return;
  }
  pool->parallel_for((total + kBlock - 1) / kBlock, 1, [&](int64_t b0, int64_t b1) {
    const int64_t begin = b0 * kBlock, end = std::min(total, b1 * kBlock);
    std::memcpy(to + begin, from + begin, static_cast<size_t>(end - begin));
  });
}

}  // namespace rg
