// A PNG of many small images side by side: sample grids of autoencoders and GANs.
#pragma once

#include <string>

#include "base/status.h"
#include "tensor/tensor.h"

namespace rg {

// images [n, h, w, c] f32 with values in [0, 1] (clamped) -> a PNG of ceil(n / columns) rows
// of `columns` images, 1-pixel grey gaps between them; c is 1 (grey) or 3 (RGB).
Status write_image_grid(const std::string& path, const Tensor& images, int64_t columns);

}  // namespace rg
