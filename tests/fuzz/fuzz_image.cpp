// libFuzzer target: image files (PNG, JPEG, BMP through stb_image; data/image_io.h): the header
// is checked against the size limits before anything is decoded, then the image is converted
// to grey or RGB and fitted to 13x7 pixels, stretched or cropped. Input: a byte of options
// (bit 0: 3 channels, bit 1: crop), then the file.
#include <cstdint>
#include <vector>

#include "data/image_io.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  rg::fuzz::InputParts input(data, size);
  const uint8_t options = input.byte();
  const int channels = options & 1 ? 3 : 1;
  const std::string path = rg::fuzz::write_scratch_file("image", input.rest());
  auto image = rg::read_image(path, channels);
  rg::fuzz::report("read", image.status());
  if (!image.ok()) return 0;
  constexpr int kHeight = 13, kWidth = 7;
  std::vector<uint8_t> fitted(static_cast<size_t>(kHeight) * kWidth * channels);
  rg::fuzz::report("fit", rg::fit_image(image.value(), options & 2 ? rg::ImageFit::crop : rg::ImageFit::resize,
                                       kHeight, kWidth, fitted.data()));
  return 0;
}
