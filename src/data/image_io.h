// 8-bit images in and out: decoding PNG, JPEG and BMP files (stb_image), converting grey and
// RGB, fitting to a size (stb_image_resize) and writing PNG (stb_image_write). Pixels are
// [height, width, channels], rows top first, channels innermost. No stb header leaves the .cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

// Larger images are refused before decoding: 16384 x 16384 x 4 channels is 1 GiB already.
constexpr int kMaxImageSide = 16384;
constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

struct Image {
  int height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // [height, width, channels]
};

// How an image of another size is made [height, width].
enum class ImageFit {
  resize,  // stretched to the target; the aspect ratio may change
  crop,    // the shorter side scaled to the target, then the centre cut out; the aspect ratio kept
};
const char* image_fit_name(ImageFit fit);
Result<ImageFit> image_fit_from_name(const std::string& name);  // "resize" or "crop"

// Decodes a PNG, JPEG or BMP file (the format is read from its bytes, not its name) to
// `channels` (1: grey, 3: RGB) with convert_channels. The header's size is checked against
// kMaxImageSide and kMaxImagePixels before any pixel is decoded, and what decoding it takes
// (decode_bytes) against `memory_budget` (a --mem-budget: bytes the counted host memory may
// reach; 0: none) and the host memory available. Errors name the file and the rule, or
// stb_image's reason when the data is corrupt; a decoder out of memory says so.
Result<Image> read_image(const std::string& path, int channels, int64_t memory_budget = 0);

// The bytes decoding an image of width x height with `stored` channels of `sample_bytes`
// (1, or 2 for 16-bit PNG) takes at its peak, to `channels`: the decoder's raw and output
// buffers, and the converted copy.
int64_t decode_bytes(int64_t width, int64_t height, int stored, int sample_bytes, int channels);

// src [pixels, from] -> dst [pixels, to], from 1..4 (grey, grey+alpha, RGB, RGBA), to 1 or 3.
// RGB -> grey: round(0.299 R + 0.587 G + 0.114 B); grey -> RGB: replicated. Alpha is dropped,
// as PIL's convert("RGB") does (the colour under a transparent pixel is kept as it is).
void convert_channels(const uint8_t* src, int64_t pixels, int from, uint8_t* dst, int to);

// image -> out [height, width, image.channels]. resize: the whole image, stretched. crop: the
// centred rectangle of the target's aspect ratio (offsets rounded down), then scaled. Both
// scale with stb_image_resize's defaults (Mitchell down, Catmull-Rom up, edges clamped);
// a rectangle already of the target size is copied exactly.
Status fit_image(const Image& image, ImageFit fit, int height, int width, uint8_t* out);

// PNG is the one format written: a path ending otherwise than .png (any case) is refused, so
// x.jpg never holds PNG bytes. Called before a run starts, and by write_png.
Status check_png_name(const std::string& path);

// Writes pixels [height, width, channels] (channels 1..4) as a PNG: encoded in memory, then
// written atomically (write_file_atomic), so a reader never sees half a file.
Status write_png(const std::string& path, int width, int height, int channels, const uint8_t* pixels);

}  // namespace rg
