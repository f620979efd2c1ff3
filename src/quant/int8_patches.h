// The patch rows an int8 GEMM stage multiplies (int8_stages.h): one row of depth() bytes per
// output pixel of a conv over an int8 image [height, width, channels], padding read as the
// input's zero point (the real value 0), in one of two layouts:
//   taps        [kh][kw][c], then zeros up to a multiple of 4 (im2col's order, the weights' own);
//   row groups  [kh][kw * c rounded up to 4]: each kernel row's taps and the bytes after them up
//               to a whole 4-byte group, read from a padded copy of the image; the extra bytes meet
//               zero weights (weights() puts them there), so the sums are the taps layout's.
// Row groups where they are no longer than the taps (a 3x3 kernel on one channel: 12 bytes both
// ways, so the same GEMM work): each kernel row is one move from the padded copy, with no border
// cases (cnn's conv1 spent ~37% of its int8 time in im2col's byte runs and borders).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/im2col.h"

namespace rg {

class Int8Patches {
 public:
  Int8Patches() = default;
  Int8Patches(const ConvGeometry& g, int8_t zero_point);

  bool row_groups() const { return row_groups_; }
  // Bytes a patch row (a multiple of 4: the GEMM's lda and its depth).
  int64_t depth() const { return depth_; }
  // The weights [patch_size x n] (taps order) as this layout's rows multiply them: [depth x n],
  // zero rows where a row holds bytes past the taps.
  std::vector<int8_t> weights(const std::vector<int8_t>& q, int64_t n) const;
  // Scratch bytes rows() takes for one image (the padded copy: row groups only).
  int64_t scratch_bytes() const;
  // image [height, width, channels] -> out [patches, depth()], nothing written past them (the
  // next image's rows may be another thread's); `scratch`: scratch_bytes() bytes of this call's.
  void rows(const int8_t* image, int8_t* scratch, int8_t* out) const;

 private:
  void taps_rows(const int8_t* image, int8_t* out) const;
  void border_patch(const int8_t* image, int64_t top, int64_t left, int8_t* row) const;
  void grouped_rows(const int8_t* image, int8_t* padded, int8_t* out) const;

  ConvGeometry g_;
  int8_t zero_point_ = 0;
  bool row_groups_ = false;
  int64_t run_ = 0, group_run_ = 0, depth_ = 0;  // a kernel row's tap bytes, rounded up to 4 (row groups)
};

}  // namespace rg
