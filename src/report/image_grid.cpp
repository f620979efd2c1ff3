#include "report/image_grid.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "data/image_io.h"

namespace rg {

Status write_image_grid(const std::string& path, const Tensor& images, int64_t columns) {
  const Shape& s = images.shape();
  if (s.rank() != 4 || (s[3] != 1 && s[3] != 3) || columns < 1 || s[0] < 1) {
    return Status::error("an image grid needs images [n, h, w, 1 or 3] and columns >= 1, not " + s.str());
  }
  const int64_t n = s[0], h = s[1], w = s[2], c = s[3];
  const int64_t cols = std::min(columns, n), rows = (n + cols - 1) / cols;
  const int64_t width = cols * (w + 1) + 1, height = rows * (h + 1) + 1;
  if (width > kMaxImageSide || height > kMaxImageSide) {
    return Status::error("an image grid of " + std::to_string(width) + "x" + std::to_string(height) + " pixels is too large");
  }
  std::vector<uint8_t> pixels(static_cast<size_t>(width * height * c), 128);  // grey gaps
  const float* data = images.f32();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t top = (i / cols) * (h + 1) + 1, left = (i % cols) * (w + 1) + 1;
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch) {
          const float v = data[((i * h + y) * w + x) * c + ch];
          const float clamped = std::isnan(v) ? 0.0f : std::min(1.0f, std::max(0.0f, v));
          pixels[static_cast<size_t>(((top + y) * width + left + x) * c + ch)] =
              static_cast<uint8_t>(std::lround(clamped * 255.0f));
        }
  }
  return write_png(path, static_cast<int>(width), static_cast<int>(height), static_cast<int>(c), pixels.data());
}

}  // namespace rg
