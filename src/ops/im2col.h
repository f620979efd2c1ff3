// Patch gathering for convolutions over NHWC images, so a convolution becomes one GEMM:
// the patch matrix of an image [height, width, channels] has one row per output position
// (out_h * out_w rows) and kernel * kernel * channels columns ordered (kh, kw, c), which
// multiplies a weight of shape [kernel * kernel * channels, filters].
// col2im_add is the adjoint: it adds each patch row back onto the pixels it came from
// (the backward of im2col, and the forward of a transposed convolution).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

struct ConvGeometry {
  int64_t height = 0, width = 0, channels = 0;  // the image: [height, width, channels]
  int64_t kernel = 1, stride = 1, pad = 0;      // square kernel, zero padding on every side
  int64_t out_h = 0, out_w = 0;                 // the grid of patches

  int64_t patch_size() const { return kernel * kernel * channels; }
  int64_t patches() const { return out_h * out_w; }
  // A 1x1 kernel with stride 1 and no padding: the patch matrix is the image itself.
  bool pointwise() const { return kernel == 1 && stride == 1 && pad == 0; }
  // The image with its zero border: [height + 2 pad, width + 2 pad, channels].
  int64_t padded_height() const { return height + 2 * pad; }
  int64_t padded_width() const { return width + 2 * pad; }
  int64_t padded_size() const { return padded_height() * padded_width() * channels; }
};

// The geometry of a convolution reading an image [height, width, channels]; the error says
// why the kernel does not fit.
Result<ConvGeometry> conv_geometry(int64_t height, int64_t width, int64_t channels, int64_t kernel, int64_t stride,
                                   int64_t pad);

// image [height, width, channels] -> cols [patches, patch_size]; padding reads as zero.
template <class T>
void im2col(const ConvGeometry& g, const T* image, T* cols);

// image += the patch rows of cols [patches, patch_size], each added where im2col read it.
template <class T>
void col2im_add(const ConvGeometry& g, const T* cols, T* image);

// Direct convolution reads the patch matrix of images [count, h, w, c] from their padded
// copies [count, h + 2 pad, w + 2 pad, c] without building it (ops/gemm.h GatheredA):
//   patch matrix [count * patches, patch_size]: element (i, t) = padded[pixels[i] + taps[t]]
// pixels[i]: where output pixel i's patch starts (its top-left tap) in the padded chunk;
// taps[t]: tap t = (kh, kw, ch)'s place relative to that start.
struct PatchOffsets {
  std::vector<int32_t> pixels;  // count * patches
  std::vector<int32_t> taps;    // patch_size
};
// Offsets for `count` images; aborts if the padded chunk has 2^31 elements or more.
PatchOffsets patch_offsets(const ConvGeometry& g, int64_t count);

// padded [count, h + 2 pad, w + 2 pad, c] = images [count, h, w, c] inside a zero border.
template <class T>
void pad_images(const ConvGeometry& g, const T* images, int64_t count, T* padded);

}  // namespace rg
