// An int8 GEMM stage's patch rows (int8_patches.h): im2col's taps layout and the row groups.
#include "quant/int8_patches.h"

#include <algorithm>
#include <cstring>

#include "base/int_math.h"
#include "quant/qs8_gemm.h"

namespace rg {

namespace {

// n bytes from src to dst, for the short runs of im2col (a kernel row of taps: 5 to a few
// hundred bytes): one fixed 16- or 32-byte move where src has that many readable bytes before
// src_end and dst as many writable ones before dst_end, the end of this image's patch rows (the
// bytes past n are overwritten by the next run; past dst_end they could be another thread's).
inline void copy_run(int8_t* dst, const int8_t* src, int64_t n, const int8_t* src_end, const int8_t* dst_end) {
  if (n <= 16 && src + 16 <= src_end && dst + 16 <= dst_end) {
    std::memcpy(dst, src, 16);
  } else if (n <= 32 && src + 32 <= src_end && dst + 32 <= dst_end) {
    std::memcpy(dst, src, 32);
  } else {
    std::memcpy(dst, src, static_cast<size_t>(n));
  }
}

}  // namespace

Int8Patches::Int8Patches(const ConvGeometry& g, int8_t zero_point) : g_(g), zero_point_(zero_point) {
  run_ = g.kernel * g.channels;
  group_run_ = round_up(run_, int64_t{4});
  const int64_t taps_depth = qs8_padded_depth(g.patch_size());
  row_groups_ = g.kernel * group_run_ <= taps_depth;
  depth_ = row_groups_ ? g.kernel * group_run_ : taps_depth;
}

std::vector<int8_t> Int8Patches::weights(const std::vector<int8_t>& q, int64_t n) const {
  std::vector<int8_t> rows(static_cast<size_t>(depth_ * n), 0);
  const int64_t from = row_groups_ ? run_ : g_.patch_size(), to = row_groups_ ? group_run_ : depth_;
  for (int64_t part = 0; part * from < g_.patch_size(); ++part)
    std::copy(q.begin() + part * from * n, q.begin() + (part + 1) * from * n, rows.begin() + part * to * n);
  return rows;
}

// The padded copy, and past it the most a group reads beyond its taps (group_run_ - run_ bytes of
// the last pixel's last row) and a fixed 32-byte move's.
int64_t Int8Patches::scratch_bytes() const { return row_groups_ ? g_.padded_size() + group_run_ + 32 : 0; }

void Int8Patches::rows(const int8_t* image, int8_t* scratch, int8_t* out) const {
  if (row_groups_) {
    grouped_rows(image, scratch, out);
  } else {
    taps_rows(image, out);
  }
}

// The padded copy (the zero point around the image), then per pixel one move a kernel row. The
// geometry is read into locals first: the int8 stores may alias anything.
void Int8Patches::grouped_rows(const int8_t* image, int8_t* padded, int8_t* out) const {
  const int64_t c = g_.channels, pad = g_.pad, width = g_.width, stride = g_.stride, kernel = g_.kernel;
  const int64_t row = g_.padded_width() * c, out_h = g_.out_h, out_w = g_.out_w, group_run = group_run_;
  const int64_t depth = depth_;
  std::memset(padded, zero_point_, static_cast<size_t>(scratch_bytes()));
  for (int64_t y = 0; y < g_.height; ++y)
    std::memcpy(padded + (y + pad) * row + pad * c, image + y * width * c, static_cast<size_t>(width * c));
  const int8_t* padded_end = padded + scratch_bytes();
  const int8_t* out_end = out + out_h * out_w * depth;
  for (int64_t oy = 0; oy < out_h; ++oy)
    for (int64_t ox = 0; ox < out_w; ++ox) {
      int8_t* dst = out + (oy * out_w + ox) * depth;
      const int8_t* src = padded + oy * stride * row + ox * stride * c;
      if (group_run == 4) {
        for (int64_t kh = 0; kh < kernel; ++kh) std::memcpy(dst + kh * 4, src + kh * row, 4);
      } else {
        for (int64_t kh = 0; kh < kernel; ++kh)
          copy_run(dst + kh * group_run, src + kh * row, group_run, padded_end, out_end);
      }
    }
}

// One image [h, w, c] -> its patch rows [patches, depth]; the bytes past k as 0 (they meet B's
// zero rows). The geometry is read into locals first: the int8 stores may alias anything, so
// members would be reloaded after every store.
void Int8Patches::taps_rows(const int8_t* image, int8_t* cols) const {
  const ConvGeometry& g = g_;
  const int64_t c = g.channels, kernel = g.kernel, stride = g.stride, pad = g.pad, height = g.height,
                width = g.width, out_h = g.out_h, out_w = g.out_w, run = kernel * c, k = g.patch_size();
  const int64_t kpad = depth_;
  const int8_t *image_end = image + height * width * c, *cols_end = cols + out_h * out_w * kpad;
  for (int64_t oh = 0; oh < out_h; ++oh) {
    const int64_t top = oh * stride - pad;
    const bool rows_inside = top >= 0 && top + kernel <= height;
    for (int64_t ow = 0; ow < out_w; ++ow) {
      int8_t* row = cols + (oh * out_w + ow) * kpad;
      const int64_t left = ow * stride - pad;
      if (rows_inside && left >= 0 && left + kernel <= width) {  // each kernel row of taps is one run
        const int8_t* src = image + (top * width + left) * c;
        for (int64_t kh = 0; kh < kernel; ++kh) copy_run(row + kh * run, src + kh * width * c, run, image_end, cols_end);
      } else {
        border_patch(image, top, left, row);
      }
      for (int64_t p = k; p < kpad; ++p) row[p] = 0;
    }
  }
}

// A patch reaching into the padding: taps outside the image read as the zero point.
void Int8Patches::border_patch(const int8_t* image, int64_t top, int64_t left, int8_t* row) const {
  const ConvGeometry& g = g_;
  const int64_t c = g.channels, kernel = g.kernel, run = kernel * c;
  for (int64_t kh = 0; kh < kernel; ++kh, row += run) {
    const int64_t ih = top + kh;
    if (ih < 0 || ih >= g.height) {
      std::fill(row, row + run, zero_point_);
      continue;
    }
    for (int64_t kw = 0; kw < kernel; ++kw) {
      const int64_t iw = left + kw;
      if (iw < 0 || iw >= g.width) {
        std::fill(row + kw * c, row + (kw + 1) * c, zero_point_);
      } else {
        std::copy(image + (ih * g.width + iw) * c, image + (ih * g.width + iw + 1) * c, row + kw * c);
      }
    }
  }
}

}  // namespace rg
