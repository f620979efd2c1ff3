// Shape arithmetic.
#include "tensor/shape.h"

#include <sstream>

namespace rg {

Shape::Shape(std::initializer_list<int64_t> dims) {
  RG_CHECK(dims.size() <= kMaxRank, "rank " << dims.size());
  for (int64_t d : dims) {
    RG_CHECK(d >= 0, "negative dimension " << d);
    dims_[rank_++] = d;
  }
}

Shape Shape::from_dims(const int64_t* dims, int rank) {
  RG_CHECK(rank >= 0 && rank <= kMaxRank, "rank " << rank);
  Shape out;
  for (int i = 0; i < rank; ++i) {
    RG_CHECK(dims[i] >= 0, "negative dimension " << dims[i]);
    out.dims_[out.rank_++] = dims[i];
  }
  return out;
}

int64_t Shape::numel() const { return numel_from(0); }

int64_t Shape::numel_from(int first) const {
  int64_t n = 1;
  for (int i = first; i < rank_; ++i) n *= dims_[i];
  return n;
}

Shape Shape::batched(int64_t n) const {
  RG_CHECK(rank_ < kMaxRank, "cannot batch a rank-" << rank_ << " shape");
  Shape out;
  out.rank_ = rank_ + 1;
  out.dims_[0] = n;
  for (int i = 0; i < rank_; ++i) out.dims_[i + 1] = dims_[i];
  return out;
}

Shape Shape::sample() const {
  RG_CHECK(rank_ >= 1, "sample() of a scalar shape");
  Shape out;
  out.rank_ = rank_ - 1;
  for (int i = 1; i < rank_; ++i) out.dims_[i - 1] = dims_[i];
  return out;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < rank_; ++i) os << (i ? ", " : "") << dims_[i];
  os << ']';
  return os.str();
}

}  // namespace rg
