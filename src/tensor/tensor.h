// A tensor: a counted storage block, a shape, a dtype and an element offset.
// Copies share storage (like a handle); clone() copies the bytes.
#pragma once

#include <cstring>
#include <memory>
#include <string>

#include "base/memory.h"
#include "base/status.h"
#include "tensor/dtype.h"
#include "tensor/shape.h"

namespace rg {

class ThreadPool;

// Bytes owned through a MemoryAccount; released to it on destruction.
class Storage {
 public:
  Storage(void* data, size_t bytes, MemoryAccount* account) : data_(data), bytes_(bytes), account_(account) {}
  ~Storage() { account_->release(data_, bytes_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_;
  size_t bytes_;
  MemoryAccount* account_;
};

class Tensor {
 public:
  Tensor() = default;

  // Allocates through `account` (the host by default); contents are zeroed.
  static Result<Tensor> zeros(const Shape& shape, DType dtype, const std::string& what,
                              MemoryAccount& account = host_memory());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  // Bytes of the whole block this tensor views (more than bytes() for a slice).
  size_t storage_bytes() const { return storage_ ? storage_->bytes() : 0; }

  template <class T>
  T* data() const {
    RG_CHECK(defined(), "data() of an empty tensor");
    RG_CHECK(dtype_of<T>() == dtype_ || (dtype_of<T>() == DType::f16 && is_half(dtype_)),
             "data<" << dtype_name(dtype_of<T>()) << ">() of a " << dtype_name(dtype_) << " tensor");
    return static_cast<T*>(storage_->data()) + offset_;
  }
  float* f32() const { return data<float>(); }
  // The first element's bytes, whatever the dtype (for files and copies).
  void* raw_data() const {
    RG_CHECK(defined(), "raw_data() of an empty tensor");
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
  }

  // Same storage, another shape of the same element count.
  Tensor reshaped(const Shape& shape) const;
  // Rows [begin, end) of the first dimension, sharing storage.
  Tensor rows(int64_t begin, int64_t end) const;

  Result<Tensor> clone(const std::string& what) const;
  void fill_zero() const;
  // Same dtype and element count; in 256 KB blocks over the pool where there are two or more (a
  // reshape's copy: 1.6 MB in dcgan's generator).
  void copy_from(const Tensor& other, ThreadPool* pool = nullptr) const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::f32;
  int64_t offset_ = 0;  // in elements
};

}  // namespace rg
