// Tensor shapes: up to 6 dimensions, outermost first (a batch of images is [n, h, w, c]).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/check.h"

namespace rg {

class Shape {
 public:
  static constexpr int kMaxRank = 6;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  static Shape from_dims(const int64_t* dims, int rank);

  int rank() const { return rank_; }
  int64_t operator[](int i) const {
    RG_CHECK(i >= 0 && i < rank_, "dimension " << i << " of a rank-" << rank_ << " shape");
    return dims_[i];
  }
  int64_t numel() const;
  // Product of dimensions from `first` on: the per-sample size when first = 1.
  int64_t numel_from(int first) const;

  // [n] + this: a batch of samples of this shape.
  Shape batched(int64_t n) const;
  // This without its first dimension.
  Shape sample() const;

  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  std::string str() const;  // "[64, 1, 28, 28]"

 private:
  int rank_ = 0;
  int64_t dims_[kMaxRank] = {};
};

}  // namespace rg
