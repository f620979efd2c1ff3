// im2col and col2im over NHWC. One kernel row of a patch (kernel pixels of `channels`
// values) is contiguous in the image, so each (patch, kernel row) is one copy of up to
// kernel * channels values, with zeros where it hangs over the padding.
#include "ops/im2col.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace rg {

Result<ConvGeometry> conv_geometry(int64_t height, int64_t width, int64_t channels, int64_t kernel, int64_t stride,
                                   int64_t pad) {
  if (kernel < 1 || stride < 1 || pad < 0) return Status::error("kernel and stride must be >= 1 and pad >= 0");
  if (pad >= kernel) {
    return Status::error("pad " + std::to_string(pad) + " must be smaller than the kernel " + std::to_string(kernel) +
                         " (a patch of only padding)");
  }
  if (height + 2 * pad < kernel || width + 2 * pad < kernel) {
    return Status::error("a " + std::to_string(kernel) + "x" + std::to_string(kernel) + " kernel with pad " +
                         std::to_string(pad) + " does not fit a " + std::to_string(height) + "x" +
                         std::to_string(width) + " input");
  }
  ConvGeometry g;
  g.height = height;
  g.width = width;
  g.channels = channels;
  g.kernel = kernel;
  g.stride = stride;
  g.pad = pad;
  g.out_h = (height + 2 * pad - kernel) / stride + 1;
  g.out_w = (width + 2 * pad - kernel) / stride + 1;
  return g;
}

namespace {
// The kernel row of patch column `ow` at image row `ih` covers image columns
// [iw0, iw0 + kernel); the part inside the image is [first, last).
struct RowSpan {
  int64_t iw0, first, last;
};
RowSpan row_span(const ConvGeometry& g, int64_t ow) {
  const int64_t iw0 = ow * g.stride - g.pad;
  return {iw0, std::max<int64_t>(iw0, 0), std::min(iw0 + g.kernel, g.width)};
}
}  // namespace

template <class T>
void im2col(const ConvGeometry& g, const T* image, T* cols) {
  const int64_t c = g.channels, run = g.kernel * c;
  T* out = cols;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const RowSpan span = row_span(g, ow);
      for (int64_t kh = 0; kh < g.kernel; ++kh, out += run) {
        const int64_t ih = oh * g.stride - g.pad + kh;
        if (ih < 0 || ih >= g.height || span.first >= span.last) {
          std::fill(out, out + run, T(0));
          continue;
        }
        const int64_t before = (span.first - span.iw0) * c, inside = (span.last - span.first) * c;
        std::fill(out, out + before, T(0));
        std::memcpy(out + before, image + (ih * g.width + span.first) * c, static_cast<size_t>(inside) * sizeof(T));
        std::fill(out + before + inside, out + run, T(0));
      }
    }
  }
}

template <class T>
void col2im_add(const ConvGeometry& g, const T* cols, T* image) {
  const int64_t c = g.channels, run = g.kernel * c;
  const T* in = cols;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const RowSpan span = row_span(g, ow);
      for (int64_t kh = 0; kh < g.kernel; ++kh, in += run) {
        const int64_t ih = oh * g.stride - g.pad + kh;
        if (ih < 0 || ih >= g.height || span.first >= span.last) continue;
        const T* from = in + (span.first - span.iw0) * c;
        T* to = image + (ih * g.width + span.first) * c;
        const int64_t inside = (span.last - span.first) * c;
        for (int64_t i = 0; i < inside; ++i) to[i] += from[i];
      }
    }
  }
}

PatchOffsets patch_offsets(const ConvGeometry& g, int64_t count) {
  RG_CHECK(count * g.padded_size() < (int64_t{1} << 31), "patch offsets: " << count << " padded images of "
                                                                            << g.padded_size() << " values");
  const int64_t c = g.channels, row = g.padded_width() * c;
  PatchOffsets o;
  o.taps.reserve(static_cast<size_t>(g.patch_size()));
  for (int64_t kh = 0; kh < g.kernel; ++kh)
    for (int64_t kw = 0; kw < g.kernel; ++kw)
      for (int64_t ch = 0; ch < c; ++ch) o.taps.push_back(static_cast<int32_t>(kh * row + kw * c + ch));
  o.pixels.reserve(static_cast<size_t>(count * g.patches()));
  for (int64_t i = 0; i < count; ++i)
    for (int64_t oh = 0; oh < g.out_h; ++oh)
      for (int64_t ow = 0; ow < g.out_w; ++ow)
        o.pixels.push_back(static_cast<int32_t>(i * g.padded_size() + oh * g.stride * row + ow * g.stride * c));
  return o;
}

template <class T>
void pad_images(const ConvGeometry& g, const T* images, int64_t count, T* padded) {
  const int64_t c = g.channels, row = g.width * c, padded_row = g.padded_width() * c, border = g.pad * c;
  for (int64_t i = 0; i < count; ++i) {
    const T* image = images + i * g.height * row;
    T* out = padded + i * g.padded_size();
    std::fill(out, out + g.pad * padded_row, T(0));  // top border
    out += g.pad * padded_row;
    for (int64_t h = 0; h < g.height; ++h, out += padded_row) {
      std::fill(out, out + border, T(0));
      std::copy(image + h * row, image + (h + 1) * row, out + border);
      std::fill(out + border + row, out + padded_row, T(0));
    }
    std::fill(out, out + g.pad * padded_row, T(0));  // bottom border
  }
}

template void pad_images<float>(const ConvGeometry&, const float*, int64_t, float*);
template void pad_images<double>(const ConvGeometry&, const double*, int64_t, double*);
template void im2col<float>(const ConvGeometry&, const float*, float*);
template void im2col<double>(const ConvGeometry&, const double*, double*);
template void col2im_add<float>(const ConvGeometry&, const float*, float*);
template void col2im_add<double>(const ConvGeometry&, const double*, double*);

}  // namespace rg
