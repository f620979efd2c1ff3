// Users' own image data: decoding and the size limits, grey <-> RGB, resize and crop geometry,
// image folders (both layouts, the stratified split, every error), CIFAR-10 binary batches
// (planar -> HWC placement, truncated files, bad labels) and the command line reaching them.
#include <gtest/gtest.h>


#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#ifndef _WIN32
#include <sys/stat.h>  // mkfifo
#include <unistd.h>    // geteuid
#endif

#include "base/files.h"
#include "base/memory.h"
#include "data/image_data.h"
#include "data/image_io.h"
#include "portable.h"
#include "stb_image_write.h"

namespace rg {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// A fresh folder under the test temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    path_ = make_temp_folder("rg_images_");
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  // path/relative, with its parent folders made.
  std::string file(const std::string& relative) const {
    const std::string p = path_ + "/" + relative;
    fs::create_directories(fs::path(p).parent_path());
    return p;
  }
  std::string folder(const std::string& relative) const {
    const std::string p = path_ + "/" + relative;
    fs::create_directories(p);
    return p;
  }

 private:
  std::string path_;
};

void write_bytes(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  RG_CHECK(out.good(), "writing " << path);
}

Bytes read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A [h, w, c] image of one colour.
Bytes solid(int h, int w, std::vector<uint8_t> colour) {
  Bytes out;
  for (int i = 0; i < h * w; ++i) out.insert(out.end(), colour.begin(), colour.end());
  return out;
}

void png(const std::string& path, int w, int h, int c, const Bytes& pixels) {
  ASSERT_EQ(pixels.size(), static_cast<size_t>(w * h * c));
  const Status s = write_png(path, w, h, c, pixels.data());
  ASSERT_TRUE(s.ok()) << s.message();
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <class T>
void expect_error(const Result<T>& result, const std::vector<std::string>& parts) {
  ASSERT_FALSE(result.ok()) << "expected an error";
  const std::string message = result.status().message();
  for (const std::string& part : parts) EXPECT_TRUE(contains(message, part)) << "'" << part << "' not in: " << message;
}

const uint8_t* sample(const Dataset& d, int64_t i) { return d.samples.data<uint8_t>() + i * d.sample_shape.numel(); }

// ---------------------------------------------------------------------------------------------
// Decoding, conversion, fitting.

TEST(ImageIo, PngWrittenAtomicallyReadsBackExactly) {
  TempDir tmp;
  const std::string path = tmp.file("a.png");
  Bytes rgb;
  for (int p = 0; p < 3 * 5; ++p) rgb.insert(rgb.end(), {uint8_t(p), uint8_t(100 + p), uint8_t(200 + p)});
  png(path, 5, 3, 3, rgb);
  EXPECT_EQ(fs::directory_iterator(tmp.path())->path().filename(), "a.png");  // no temporary left behind
  auto image = read_image(path, 3);
  ASSERT_TRUE(image.ok()) << image.status().message();
  EXPECT_EQ(image.value().height, 3);
  EXPECT_EQ(image.value().width, 5);
  EXPECT_EQ(image.value().channels, 3);
  EXPECT_EQ(image.value().pixels, rgb);
  expect_error(Result<int>(write_png(tmp.file("b.png"), 0, 3, 3, rgb.data())), {"b.png", "0x3"});
  expect_error(Result<int>(write_png(tmp.file("c.png"), 5, 3, 5, rgb.data())), {"c.png", "5 channels"});
}

TEST(ImageIo, GreyAndRgbConversion) {
  // RGB -> grey: round(0.299 R + 0.587 G + 0.114 B).
  const Bytes rgb = {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255, 10, 20, 30, 0, 0, 0};
  Bytes grey(6);
  convert_channels(rgb.data(), 6, 3, grey.data(), 1);
  EXPECT_EQ(grey, (Bytes{76, 150, 29, 255, 18, 0}));
  // RGBA -> grey and RGB: alpha dropped.
  const Bytes rgba = {255, 0, 0, 0, 10, 20, 30, 128};
  convert_channels(rgba.data(), 2, 4, grey.data(), 1);
  EXPECT_EQ(grey[0], 76);
  EXPECT_EQ(grey[1], 18);
  Bytes out(6);
  convert_channels(rgba.data(), 2, 4, out.data(), 3);
  EXPECT_EQ(out, (Bytes{255, 0, 0, 10, 20, 30}));
  // grey and grey+alpha -> RGB: replicated.
  const Bytes grey_alpha = {77, 0, 200, 255};
  convert_channels(grey_alpha.data(), 2, 2, out.data(), 3);
  EXPECT_EQ(out, (Bytes{77, 77, 77, 200, 200, 200}));
  convert_channels(grey_alpha.data(), 2, 2, grey.data(), 1);
  EXPECT_EQ(grey[0], 77);
  EXPECT_EQ(grey[1], 200);
}

TEST(ImageIo, DecodesPngJpegAndBmpToTheAskedChannels) {
  TempDir tmp;
  const std::string grey_png = tmp.file("g.png");
  png(grey_png, 4, 2, 1, solid(2, 4, {77}));
  const std::string rgba_png = tmp.file("rgba.png");
  png(rgba_png, 4, 2, 4, solid(2, 4, {10, 20, 30, 0}));
  const std::string bmp = tmp.file("red.bmp");
  const Bytes red = solid(2, 4, {255, 0, 0});
  ASSERT_NE(stbi_write_bmp(bmp.c_str(), 4, 2, 3, red.data()), 0);
  const std::string jpg = tmp.file("green.jpg");
  const Bytes green = solid(8, 8, {0, 255, 0});
  ASSERT_NE(stbi_write_jpg(jpg.c_str(), 8, 8, 3, green.data(), 100), 0);

  auto check = [](const std::string& path, int channels, std::vector<int> expected, int tolerance) {
    auto image = read_image(path, channels);
    ASSERT_TRUE(image.ok()) << image.status().message();
    ASSERT_EQ(image.value().channels, channels);
    const Bytes& px = image.value().pixels;
    for (size_t i = 0; i < px.size(); ++i) {
      ASSERT_NEAR(px[i], expected[i % expected.size()], tolerance) << path << " byte " << i;
    }
  };
  check(grey_png, 3, {77, 77, 77}, 0);
  check(grey_png, 1, {77}, 0);
  check(rgba_png, 3, {10, 20, 30}, 0);
  check(rgba_png, 1, {18}, 0);
  check(bmp, 1, {76}, 0);
  check(bmp, 3, {255, 0, 0}, 0);
  check(jpg, 3, {0, 255, 0}, 3);   // JPEG is lossy even at quality 100
  check(jpg, 1, {150}, 3);
}

// 8 rows x 16 columns, grey: columns 0-3 = 50, 4-11 = 150, 12-15 = 250.
Image banded_columns() {
  Image im;
  im.height = 8, im.width = 16, im.channels = 1;
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x) im.pixels.push_back(x < 4 ? 50 : x < 12 ? 150 : 250);
  return im;
}

TEST(ImageIo, ResizeStretchesTheWholeImage) {
  Bytes out(8 * 8);
  ASSERT_TRUE(fit_image(banded_columns(), ImageFit::resize, 8, 8, out.data()).ok());
  // 16 columns -> 8: each band keeps its share (2, 4, 2 output columns); Mitchell's small
  // negative lobes allow a few levels of ringing next to the edges.
  for (int y = 0; y < 8; ++y) {
    EXPECT_NEAR(out[y * 8 + 0], 50, 4) << y;
    EXPECT_NEAR(out[y * 8 + 3], 150, 4) << y;
    EXPECT_NEAR(out[y * 8 + 4], 150, 4) << y;
    EXPECT_NEAR(out[y * 8 + 7], 250, 6) << y;
  }
  // Same size: an exact copy.
  Bytes same(8 * 16);
  ASSERT_TRUE(fit_image(banded_columns(), ImageFit::resize, 8, 16, same.data()).ok());
  EXPECT_EQ(same, banded_columns().pixels);
}

TEST(ImageIo, CropKeepsTheCentreAtTheAspectRatio) {
  // Height 8 is already the target's: no scaling, the middle 8 columns (4..11) exactly.
  Bytes out(8 * 8);
  ASSERT_TRUE(fit_image(banded_columns(), ImageFit::crop, 8, 8, out.data()).ok());
  EXPECT_EQ(out, Bytes(64, 150));

  // Columns numbered: the crop starts at column 4 (offset (16 - 8) / 2).
  Image numbered = banded_columns();
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 16; ++x) numbered.pixels[static_cast<size_t>(y * 16 + x)] = static_cast<uint8_t>(10 * x + y);
  ASSERT_TRUE(fit_image(numbered, ImageFit::crop, 8, 8, out.data()).ok());
  for (int y = 0; y < 8; ++y)
    for (int x = 0; x < 8; ++x) ASSERT_EQ(out[static_cast<size_t>(y * 8 + x)], 10 * (x + 4) + y) << y << "," << x;

  // A tall RGB image 32 x 16, rows 0-7 red, 8-23 blue, 24-31 green, to 4x4: the width
  // scales 16 -> 4, the middle 16 rows (8..23) are kept: all blue.
  Image tall;
  tall.height = 32, tall.width = 16, tall.channels = 3;
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 16; ++x) {
      const std::vector<uint8_t> c = y < 8 ? std::vector<uint8_t>{255, 0, 0}
                                           : y < 24 ? std::vector<uint8_t>{0, 0, 255} : std::vector<uint8_t>{0, 255, 0};
      tall.pixels.insert(tall.pixels.end(), c.begin(), c.end());
    }
  Bytes rgb(4 * 4 * 3);
  ASSERT_TRUE(fit_image(tall, ImageFit::crop, 4, 4, rgb.data()).ok());
  for (int p = 0; p < 16; ++p) {
    EXPECT_NEAR(rgb[static_cast<size_t>(3 * p + 0)], 0, 1) << p;
    EXPECT_NEAR(rgb[static_cast<size_t>(3 * p + 1)], 0, 1) << p;
    EXPECT_NEAR(rgb[static_cast<size_t>(3 * p + 2)], 255, 1) << p;
  }
  // The same image resized keeps all three bands (rows 0 and 3 of 4).
  ASSERT_TRUE(fit_image(tall, ImageFit::resize, 4, 4, rgb.data()).ok());
  EXPECT_GT(rgb[0], 200);          // row 0 red
  EXPECT_GT(rgb[3 * 12 + 1], 200); // row 3 green
  EXPECT_GT(rgb[3 * 6 + 2], 200);  // row 1 blue
}

TEST(ImageIo, CorruptAndTruncatedFilesNameTheFile) {
  TempDir tmp;
  const std::string path = tmp.file("noisy.png");
  Bytes noise;
  uint32_t x = 12345;
  for (int i = 0; i < 64 * 64 * 3; ++i) {
    x = x * 1664525u + 1013904223u;
    noise.push_back(static_cast<uint8_t>(x >> 24));
  }
  png(path, 64, 64, 3, noise);
  Bytes bytes = read_bytes(path);
  const Bytes whole = bytes;
  bytes.resize(bytes.size() / 2);  // the header survives, the pixel data does not
  write_bytes(path, bytes);
  expect_error(read_image(path, 3), {path, "truncated PNG", "bytes follow its header; the file has"});

  bytes = whole;  // whole, but the compressed pixels garbled: stb's inflate refuses them
  std::fill(bytes.begin() + 100, bytes.begin() + 400, uint8_t{0xFF});
  write_bytes(path, bytes);
  expect_error(read_image(path, 3), {path, "cannot decode", "stb_image"});

  bytes.resize(10);  // not even a whole header
  write_bytes(path, bytes);
  expect_error(read_image(path, 3), {path, "image header"});

  const std::string text = tmp.file("notes.png");
  write_bytes(text, Bytes{'h', 'e', 'l', 'l', 'o'});
  expect_error(read_image(text, 1), {text, "PNG, JPEG and BMP"});
  expect_error(read_image(tmp.path() + "/absent.png", 1), {"absent.png", "cannot open"});
}

// stb_image 2.27 would write past a Huffman table whose 16 code counts add up to more than 256.
TEST(ImageIo, JpegHuffmanTableOverflowIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("dht.jpg");
  const Bytes grey = solid(8, 8, {90, 90, 90});
  ASSERT_NE(stbi_write_jpg(path.c_str(), 8, 8, 3, grey.data(), 90), 0);
  Bytes bytes = read_bytes(path);
  size_t dht = 0;
  for (size_t i = 2; i + 1 < bytes.size() && dht == 0; ++i)
    if (bytes[i] == 0xFF && bytes[i + 1] == 0xC4) dht = i;
  ASSERT_NE(dht, 0u);
  ASSERT_TRUE(read_image(path, 3).ok());
  // The first table's 16 counts (after marker, length and class/id): 200 + 200 + 0 ... = 400.
  for (size_t i = 0; i < 16; ++i) bytes[dht + 5 + i] = i < 2 ? 200 : 0;
  write_bytes(path, bytes);
  expect_error(read_image(path, 3), {path, "Huffman table", "400 codes", "at most 256"});
  // stb takes 0xFF fill bytes before the start-of-image marker as well (found by fuzz_image).
  bytes.insert(bytes.begin(), {0xFF, 0xFF});
  write_bytes(path, bytes);
  expect_error(read_image(path, 3), {path, "Huffman table", "400 codes", "at most 256"});
}

// An input of fuzz_image's corpus (tests/fuzz/corpus/image/NAME, a seed or a find) as the
// image file it holds: in `tmp` as `file`, without the target's options byte.
std::string corpus_image_file(TempDir& tmp, const std::string& name, const std::string& file) {
  Bytes bytes = read_bytes(std::string(retrograd_source_dir) + "/tests/fuzz/corpus/image/" + name);
  EXPECT_GT(bytes.size(), 1u) << name;
  if (!bytes.empty()) bytes.erase(bytes.begin());
  const std::string path = tmp.file(file);
  write_bytes(path, bytes);
  return path;
}

// stb 2.27 decodes a scan with a Huffman table no DHT segment defined, from memory never
// written (found by fuzz_image: its second DHT table is marked DC, so AC table 0 is missing).
TEST(ImageIo, AJpegScanWithAnUndefinedHuffmanTableIsRefused) {
  TempDir tmp;
  const std::string path = corpus_image_file(tmp, "found-jpeg-scan-with-undefined-table", "scan.jpg");
  expect_error(read_image(path, 1), {path, "a scan uses AC Huffman table 0, which no DHT segment before it defines"});
}

// stb allocates a PNG chunk's data as its header says before reading it: a 160-byte file whose
// chunk claims 1.6 GB made it allocate 2 GB (found by fuzz_image, as out-of-memory).
TEST(ImageIo, APngChunkLongerThanTheFileIsRefused) {
  TempDir tmp;
  const std::string path = corpus_image_file(tmp, "found-png-chunk-claims-1gb", "chunk.png");
  expect_error(read_image(path, 3), {path, "truncated PNG: the chunk at byte 93 says 1610612784 bytes", "the file has 59"});
}

// stb allocates the whole inflated image before inflating: image data too short to inflate to
// it (deflate packs at most 1032 bytes into one) is refused first. A 4096 x 4096 RGB header
// (50 MB inflated) before the 64 x 64 image's data.
TEST(ImageIo, PngImageDataTooShortForItsHeaderIsRefused) {
  TempDir tmp;
  const std::string path = tmp.file("small.png");
  png(path, 64, 64, 3, solid(64, 64, {1, 2, 3}));
  Bytes bytes = read_bytes(path);
  ASSERT_TRUE(read_image(path, 3).ok());
  bytes[16 + 2] = bytes[20 + 2] = 0x10;  // IHDR's width and height (big-endian, bytes 16 and 20): 64 -> 4096
  bytes[16 + 3] = bytes[20 + 3] = 0x00;
  write_bytes(path, bytes);
  expect_error(read_image(path, 3), {path, "truncated PNG", "4096x4096 pixels, 50335744 bytes inflated",
                                     "deflate packs at most 1032 bytes into one"});
}

// stb decodes a baseline scan with its AC table whatever the scan's spectral end says: a scan
// with Ss = Se = 0 and no AC table defined read undefined memory (found by fuzz_image).
TEST(ImageIo, ABaselineJpegScanWithoutAnAcTableIsRefused) {
  TempDir tmp;
  const std::string path = corpus_image_file(tmp, "found-jpeg-baseline-scan-without-ac-table", "baseline.jpg");
  expect_error(read_image(path, 3), {path, "a scan uses AC Huffman table 0, which no DHT segment before it defines"});
}

// stb fills a truncated BMP with zeros: a 53-byte file whose header says 1280 x 12801 at 24
// bits (49 MB of pixels) is refused before decoding (found by fuzz_image, as a timeout).
TEST(ImageIo, ABmpShorterThanItsHeaderSaysIsRefused) {
  TempDir tmp;
  const std::string path = corpus_image_file(tmp, "found-bmp-header-promises-49mb", "short.bmp");
  expect_error(read_image(path, 3), {path, "truncated BMP", "1280x12801", "49155894 bytes in all; the file has 53"});
}

// stb reads a BMP's compression code as a signed int: a code of 2^31 or more passed its
// checks and the file was decoded as uncompressed, zero-filled (found by fuzz_image, a timeout).
TEST(ImageIo, ABmpWithACompressionCodeAbove2To31IsRefused) {
  TempDir tmp;
  const std::string path = corpus_image_file(tmp, "found-bmp-negative-compression-code", "code.bmp");
  expect_error(read_image(path, 1), {path, "corrupt BMP: compression code 4292411136"});
}

// stb reads zeros past a file's end, header fields too: a 29-byte BMP cut inside its 40-byte
// header (no compression field) decoded as 1280 x 12801 pixels (found by fuzz_image).
TEST(ImageIo, ABmpCutInsideItsHeaderIsMeasuredAsStbReadsIt) {
  TempDir tmp;
  const std::string path = corpus_image_file(tmp, "found-bmp-header-cut-short", "cut.bmp");
  expect_error(read_image(path, 1), {path, "truncated BMP", "1280x12801 pixels of 1 bits", "the file has 29"});
}

// An OS/2 BMP header (12 bytes, 16-bit sides) promising 16384 x 16384 at 24 bits, and no pixels.
TEST(ImageIo, AnOs2BmpShorterThanItsHeaderSaysIsRefused) {
  TempDir tmp;
  const Bytes os2 = {'B', 'M', 26, 0, 0, 0, 0, 0, 0, 0, 26, 0, 0, 0,  // file size, reserved, pixel offset
                     12, 0, 0, 0, 0, 0x40, 0, 0x40, 1, 0, 24, 0};        // header size, sides, planes, bits
  const std::string path = tmp.file("os2.bmp");
  write_bytes(path, os2);
  expect_error(read_image(path, 3), {path, "truncated BMP", "16384x16384", "805306394 bytes in all; the file has 26"});
}

// stb decodes a JPEG cut short as if zeros followed. Each 8x8 block takes at least a bit, so a
// frame header (SOF) of 16384 x 16384 in a 333-byte file is refused before decoding.
TEST(ImageIo, AJpegShorterThanOneBitABlockIsRefused) {
  TempDir tmp;
  const std::string grey = corpus_image_file(tmp, "seed-jpeg-grey", "grey.jpg");
  ASSERT_TRUE(read_image(grey, 1).ok()) << "the seed itself must decode";
  Bytes jpeg = read_bytes(grey);
  const uint8_t sof0[] = {0xFF, 0xC0};  // then length, precision, height, width
  const auto sof = std::search(jpeg.begin(), jpeg.end(), std::begin(sof0), std::end(sof0));
  ASSERT_NE(sof, jpeg.end());
  for (int i : {5, 6, 7, 8}) sof[i] = i % 2 ? 0x40 : 0x00;  // height, width: 0x4000 each
  const std::string path = tmp.file("huge.jpg");
  write_bytes(path, jpeg);
  expect_error(read_image(path, 1), {path, "truncated JPEG", "16384x16384", "at least 524288 bytes", "the file has 333"});
}

// A PNG signature and an IHDR chunk claiming width x height, 8-bit RGB, and nothing else.
Bytes png_header_only(uint32_t width, uint32_t height) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (uint32_t v : {width, height})
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
  out.insert(out.end(), {8, 2, 0, 0, 0, 0, 0, 0, 0});  // depth, colour type, methods, CRC (unchecked)
  return out;
}

TEST(ImageIo, OversizedHeadersAreRefusedBeforeDecoding) {
  TempDir tmp;
  const std::string wide = tmp.file("wide.png");
  write_bytes(wide, png_header_only(20000, 10));
  expect_error(read_image(wide, 3), {wide, "20000x10", "16384", "before decoding"});
  const std::string tall = tmp.file("tall.png");
  write_bytes(tall, png_header_only(10, 16385));
  expect_error(read_image(tall, 1), {tall, "10x16385"});
  // At the limit the header passes the size check; no image data follows it.
  const std::string edge = tmp.file("edge.png");
  write_bytes(edge, png_header_only(16384, 1));
  expect_error(read_image(edge, 1), {edge, "truncated PNG", "16384x1 pixels, 49153 bytes inflated", "(IDAT) has 0 bytes"});
}

TEST(ImageIo, FitNames) {
  EXPECT_EQ(image_fit_from_name("resize").value(), ImageFit::resize);
  EXPECT_EQ(image_fit_from_name("crop").value(), ImageFit::crop);
  expect_error(image_fit_from_name("squash"), {"'squash'", "resize", "crop"});
  EXPECT_STREQ(image_fit_name(ImageFit::crop), "crop");
}

// ---------------------------------------------------------------------------------------------
// Image folders.

ImageFolderOptions options_for(int h, int w, int c) {
  ImageFolderOptions o;
  o.height = h, o.width = w, o.channels = c;
  return o;
}

// DIR/train/{cat,dog}/ and DIR/test/{cat,dog}/ with 4x4 images of one colour each, in the
// formats the reader accepts, plus files it must leave alone.
void write_split_layout(TempDir& tmp) {
  png(tmp.file("train/cat/a.png"), 4, 4, 3, solid(4, 4, {255, 0, 0}));
  png(tmp.file("train/cat/b.PNG"), 4, 4, 1, solid(4, 4, {77}));
  const Bytes blue = solid(4, 4, {0, 0, 255});
  ASSERT_NE(stbi_write_bmp(tmp.file("train/dog/c.bmp").c_str(), 4, 4, 3, blue.data()), 0);
  const Bytes green = solid(8, 8, {0, 255, 0});
  ASSERT_NE(stbi_write_jpg(tmp.file("train/dog/d.JPeG").c_str(), 8, 8, 3, green.data(), 100), 0);
  png(tmp.file("test/cat/e.png"), 8, 4, 3, solid(4, 8, {10, 20, 30}));
  png(tmp.file("test/dog/f.png"), 4, 4, 4, solid(4, 4, {200, 100, 0, 255}));
  // Left alone: other extensions, hidden files (a macOS "._" file with an image's name
  // holds no image), loose files beside the class folders, hidden folders.
  write_bytes(tmp.file("train/cat/README.txt"), Bytes{'h', 'i'});
  write_bytes(tmp.file("train/cat/._a.png"), Bytes{0, 5, 22, 7});
  write_bytes(tmp.file("train/dog/.DS_Store"), Bytes{1, 2, 3});
  write_bytes(tmp.file("train/labels.csv"), Bytes{'x'});
  write_bytes(tmp.file("test/.ipynb_checkpoints/x.png"), Bytes{1});
}

TEST(ImageFolders, TrainTestLayoutLabelsShapesAndValues) {
  TempDir tmp;
  write_split_layout(tmp);
  auto loaded = load_image_folders(tmp.path(), options_for(4, 4, 3));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const DataSplit& s = loaded.value();
  const std::string base = fs::path(tmp.path()).filename().string();
  EXPECT_EQ(s.train.name, base + " train");
  EXPECT_EQ(s.test.name, base + " test");
  for (const Dataset* d : {&s.train, &s.test}) {
    EXPECT_EQ(d->sample_shape, (Shape{4, 4, 3}));
    EXPECT_EQ(d->num_classes, 2);
    EXPECT_EQ(d->class_names, (std::vector<std::string>{"cat", "dog"}));
    EXPECT_EQ(d->samples.dtype(), DType::u8);
  }
  ASSERT_EQ(s.train.size(), 4);
  ASSERT_EQ(s.test.size(), 2);
  EXPECT_EQ(s.train.samples.shape(), (Shape{4, 4, 4, 3}));
  // Class-major, files sorted by name: a.png, b.PNG (cat), c.bmp, d.JPeG (dog).
  const int32_t* train_labels = s.train.labels.data<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(train_labels, train_labels + 4), (std::vector<int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(s.test.labels.data<int32_t>()[0], 0);
  EXPECT_EQ(s.test.labels.data<int32_t>()[1], 1);
  auto expect_pixels = [](const uint8_t* px, std::vector<int> rgb, int tolerance) {
    for (int p = 0; p < 16; ++p)
      for (int c = 0; c < 3; ++c) ASSERT_NEAR(px[3 * p + c], rgb[static_cast<size_t>(c)], tolerance) << p << "," << c;
  };
  expect_pixels(sample(s.train, 0), {255, 0, 0}, 0);
  expect_pixels(sample(s.train, 1), {77, 77, 77}, 0);  // grey replicated
  expect_pixels(sample(s.train, 2), {0, 0, 255}, 0);
  expect_pixels(sample(s.train, 3), {0, 255, 0}, 3);   // 8x8 JPEG, resized
  expect_pixels(sample(s.test, 0), {10, 20, 30}, 0);   // 8x4 stretched
  expect_pixels(sample(s.test, 1), {200, 100, 0}, 0);  // alpha dropped

  // The same folders as grey: luminance, rounded.
  auto grey = load_image_folders(tmp.path(), options_for(2, 2, 1));
  ASSERT_TRUE(grey.ok()) << grey.status().message();
  EXPECT_EQ(grey.value().train.samples.shape(), (Shape{4, 2, 2, 1}));
  const int expected[] = {76, 77, 29};
  for (int i = 0; i < 3; ++i)
    for (int p = 0; p < 4; ++p) EXPECT_EQ(sample(grey.value().train, i)[p], expected[i]) << i;
  EXPECT_EQ(sample(grey.value().test, 0)[0], 18);
  EXPECT_EQ(sample(grey.value().test, 1)[0], 119);  // 0.299 * 200 + 0.587 * 100 = 118.5 -> 119
}

// DIR/<class>/ with `counts[c]` images each; image i of class c is grey 40 c + i, so every
// sample says where it came from.
void write_class_folders(TempDir& tmp, const std::vector<std::pair<std::string, int>>& counts) {
  for (size_t c = 0; c < counts.size(); ++c) {
    for (int i = 0; i < counts[c].second; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "img%02d.png", i);
      png(tmp.file(counts[c].first + "/" + name), 3, 3, 1, solid(3, 3, {static_cast<uint8_t>(40 * c + i)}));
    }
  }
}

std::vector<int> sample_ids(const Dataset& d) {
  std::vector<int> ids;
  for (int64_t i = 0; i < d.size(); ++i) ids.push_back(sample(d, i)[0]);
  return ids;
}

TEST(ImageFolders, StratifiedSplitIsDeterministicAndPerClass) {
  TempDir tmp;
  write_class_folders(tmp, {{"ant", 10}, {"bee", 5}, {"cow", 2}, {"dog", 1}});
  ImageFolderOptions o = options_for(3, 3, 1);
  o.seed = 7;
  auto a = load_image_folders(tmp.path(), o);
  ASSERT_TRUE(a.ok()) << a.status().message();
  const DataSplit& s = a.value();
  EXPECT_EQ(s.train.class_names, (std::vector<std::string>{"ant", "bee", "cow", "dog"}));
  // Per class: round(0.2 n) for test, at least 1 when n >= 2, never all: 2, 1, 1, 0.
  std::vector<int> test_per_class(4, 0), train_per_class(4, 0);
  for (int64_t i = 0; i < s.test.size(); ++i) ++test_per_class[static_cast<size_t>(s.test.labels.data<int32_t>()[i])];
  for (int64_t i = 0; i < s.train.size(); ++i) ++train_per_class[static_cast<size_t>(s.train.labels.data<int32_t>()[i])];
  EXPECT_EQ(test_per_class, (std::vector<int>{2, 1, 1, 0}));
  EXPECT_EQ(train_per_class, (std::vector<int>{8, 4, 1, 1}));
  // Every image on exactly one side, its label matching its class.
  std::multiset<int> all;
  for (const Dataset* d : {&s.train, &s.test})
    for (int64_t i = 0; i < d->size(); ++i) {
      const int id = sample(*d, i)[0];
      all.insert(id);
      EXPECT_EQ(d->labels.data<int32_t>()[i], id / 40) << id;
    }
  std::multiset<int> expected;
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < std::vector<int>{10, 5, 2, 1}[static_cast<size_t>(c)]; ++i) expected.insert(40 * c + i);
  EXPECT_EQ(all, expected);

  // The same seed gives the same split; other seeds move other images.
  auto again = load_image_folders(tmp.path(), o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(sample_ids(again.value().test), sample_ids(s.test));
  EXPECT_EQ(sample_ids(again.value().train), sample_ids(s.train));
  std::set<std::vector<int>> splits;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    o.seed = seed;
    splits.insert(sample_ids(load_image_folders(tmp.path(), o).value().test));
  }
  EXPECT_GT(splits.size(), 1u);

  // A class's split depends on its name and files, not on the other classes.
  o.seed = 7;
  write_class_folders(tmp, {{"aardvark", 3}});  // a new first class shifts every index
  auto more = load_image_folders(tmp.path(), o);
  ASSERT_TRUE(more.ok()) << more.status().message();
  std::vector<int> ant_test, ant_test_before;
  for (int id : sample_ids(s.test)) if (id < 40) ant_test_before.push_back(id);
  for (int64_t i = 0; i < more.value().test.size(); ++i)
    if (more.value().test.labels.data<int32_t>()[i] == 1) ant_test.push_back(sample(more.value().test, i)[0]);
  EXPECT_EQ(ant_test, ant_test_before);

  // A larger fraction.
  o.test_fraction = 0.5;
  auto half = load_image_folders(tmp.path(), o);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half.value().test.size(), 2 + 5 + 3 + 1 + 0);  // aardvark 1.5->2, ant 5, bee 2.5->3, cow 1, dog 0
}

TEST(ImageFolders, ErrorsNameTheFolderAndTheRule) {
  {
    TempDir tmp;
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 1)), {tmp.path(), "no class folders"});
    expect_error(load_image_folders(tmp.path() + "/absent", options_for(4, 4, 1)), {"absent", "no such folder"});
  }
  {
    TempDir tmp;
    write_class_folders(tmp, {{"a", 2}});
    tmp.folder("b");
    write_bytes(tmp.file("b/notes.txt"), Bytes{'x'});
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 1)), {tmp.path() + "/b", "empty class folder"});
  }
  {
    TempDir tmp;
    write_class_folders(tmp, {{"a", 1}, {"b", 1}});
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 1)), {tmp.path(), "leaves no test images"});
  }
  {
    TempDir tmp;
    write_split_layout(tmp);
    png(tmp.file("test/bird/x.png"), 2, 2, 1, solid(2, 2, {1}));
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 1)), {"same class folders", "only in test/: bird"});
    ImageFolderOptions o = options_for(4, 4, 1);
    o.test_fraction = 0.3;
    expect_error(load_image_folders(tmp.path(), o), {"train/ and test/ already", "does not apply"});
  }
  {
    TempDir tmp;
    write_split_layout(tmp);
    fs::remove_all(tmp.path() + "/test");
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 1)), {"train/ but no test/"});
  }
  {
    TempDir tmp;
    write_split_layout(tmp);
    const std::string broken = tmp.file("train/dog/zz.png");
    Bytes bytes = read_bytes(tmp.path() + "/train/cat/a.png");
    bytes.resize(bytes.size() - 20);  // cut into the image data
    write_bytes(broken, bytes);
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 3)), {broken, "truncated PNG"});
  }
  {
    TempDir tmp;
    write_class_folders(tmp, {{"a", 2}});
    expect_error(load_image_folders(tmp.path(), options_for(4, 4, 2)), {"1 (grey) or 3 (RGB)"});
    expect_error(load_image_folders(tmp.path(), options_for(0, 4, 1)), {"0x4"});
    ImageFolderOptions o = options_for(4, 4, 1);
    o.test_fraction = 1.0;
    expect_error(load_image_folders(tmp.path(), o), {"outside (0, 1)"});
  }
}

// ---------------------------------------------------------------------------------------------
// CIFAR-10 binary batches.

constexpr int64_t kRecord = 3073;
constexpr int64_t kRecords = 10000;
const char* const kBatchFiles[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                   "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

// Six full-size batch files, sparse (all zero: label 0, black) until records are written.
void write_cifar_folder(const TempDir& tmp) {
  for (const char* name : kBatchFiles) {
    const std::string path = tmp.file(name);
    std::ofstream(path, std::ios::binary).close();
    fs::resize_file(path, static_cast<uintmax_t>(kRecords * kRecord));
  }
}

// Record `index` of a batch file: label, then pixel (plane c, y, x) = (c * 64 + y * 2 + x + salt) mod 256.
void write_cifar_record(const std::string& path, int64_t index, uint8_t label, int salt) {
  Bytes record(static_cast<size_t>(kRecord));
  record[0] = label;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) record[static_cast<size_t>(1 + c * 1024 + y * 32 + x)] = static_cast<uint8_t>(c * 64 + y * 2 + x + salt);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(index * kRecord);
  f.write(reinterpret_cast<const char*>(record.data()), kRecord);
  RG_CHECK(f.good(), "writing " << path);
}

void expect_cifar_sample(const Dataset& d, int64_t i, int label, int salt) {
  EXPECT_EQ(d.labels.data<int32_t>()[i], label) << d.name << " " << i;
  const uint8_t* px = sample(d, i);  // [32, 32, 3]
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c)
        ASSERT_EQ(px[(y * 32 + x) * 3 + c], static_cast<uint8_t>(c * 64 + y * 2 + x + salt))
            << d.name << " sample " << i << " y " << y << " x " << x << " c " << c;
}

TEST(Cifar10, PlanarRecordsBecomeHwcSamples) {
  TempDir tmp;
  write_cifar_folder(tmp);
  write_cifar_record(tmp.path() + "/data_batch_1.bin", 0, 3, 0);
  write_cifar_record(tmp.path() + "/data_batch_3.bin", 1234, 9, 17);
  write_cifar_record(tmp.path() + "/data_batch_5.bin", kRecords - 1, 1, 101);
  write_cifar_record(tmp.path() + "/test_batch.bin", 42, 7, 200);
  auto loaded = load_cifar10_folder(tmp.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const DataSplit& s = loaded.value();
  EXPECT_EQ(s.train.size(), 50000);
  EXPECT_EQ(s.test.size(), 10000);
  EXPECT_EQ(s.train.sample_shape, (Shape{32, 32, 3}));
  EXPECT_EQ(s.train.samples.shape(), (Shape{50000, 32, 32, 3}));
  EXPECT_EQ(s.train.num_classes, 10);
  EXPECT_EQ(s.test.class_names, cifar10_class_names());
  EXPECT_EQ(s.train.class_names[0], "airplane");
  expect_cifar_sample(s.train, 0, 3, 0);
  expect_cifar_sample(s.train, 2 * kRecords + 1234, 9, 17);
  expect_cifar_sample(s.train, 5 * kRecords - 1, 1, 101);
  expect_cifar_sample(s.test, 42, 7, 200);
  EXPECT_EQ(s.train.labels.data<int32_t>()[1], 0);
  EXPECT_EQ(sample(s.train, 1)[100], 0);

  // Class names from batches.meta.txt (trailing blank lines and CRs are fine).
  write_bytes(tmp.file("batches.meta.txt"), Bytes{});
  {
    std::ofstream meta(tmp.path() + "/batches.meta.txt", std::ios::binary);
    for (int c = 0; c < 10; ++c) meta << "class" << c << "\r\n";
    meta << "\n\n";
  }
  auto named = load_cifar10_folder(tmp.path());
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named.value().train.class_names[9], "class9");
  {
    std::ofstream meta(tmp.path() + "/batches.meta.txt", std::ios::binary);
    meta << "only\nthree\nnames\n";
  }
  expect_error(load_cifar10_folder(tmp.path()), {"batches.meta.txt", "3 class names", "10"});
  {  // 70 KiB of names: refused by its size before it is read
    std::ofstream meta(tmp.path() + "/batches.meta.txt", std::ios::binary);
    meta << std::string(70 << 10, 'a');
  }
  expect_error(load_cifar10_folder(tmp.path()),
               {"batches.meta.txt: 70.0 KiB, more than the 64.0 KiB a class-names file (one name a line) may hold"});
}

TEST(Cifar10, TruncatedMissingAndBadLabelFilesAreNamed) {
  TempDir tmp;
  write_cifar_folder(tmp);
  const std::string third = tmp.path() + "/data_batch_3.bin";
  fs::resize_file(third, static_cast<uintmax_t>(kRecords * kRecord - 1));
  expect_error(load_cifar10_folder(tmp.path()),
               {third, "30729999 bytes", "not a whole number of records", "3073", "30730000"});
  fs::resize_file(third, static_cast<uintmax_t>((kRecords - 1) * kRecord));
  expect_error(load_cifar10_folder(tmp.path()), {third, "9999 records", "10000"});
  fs::resize_file(third, static_cast<uintmax_t>(kRecords * kRecord));

  write_cifar_record(tmp.path() + "/test_batch.bin", 7, 10, 0);
  expect_error(load_cifar10_folder(tmp.path()), {tmp.path() + "/test_batch.bin", "record 7", "label 10", "0 to 9"});

  fs::remove(tmp.path() + "/data_batch_4.bin");
  expect_error(load_cifar10_folder(tmp.path()), {tmp.path(), "data_batch_4.bin is missing"});
}

// ---------------------------------------------------------------------------------------------
// The command line: --data recognises each layout, --image-fit and --test-split.

TEST(ImageCli, TrainsOnImageFoldersAndCifar) {
  TempDir tmp;
  // Two classes of 40x32 RGB images the mlp (28x28x1) tells apart: bright left or right half.
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 20; ++i) {
      Bytes px;
      for (int y = 0; y < 32; ++y)
        for (int x = 0; x < 40; ++x) {
          const bool bright = (x < 20) == (c == 0);
          px.insert(px.end(), {uint8_t(bright ? 220 - i : 10 + i), uint8_t(bright ? 200 : 30), uint8_t(bright ? 180 : 20)});
        }
      char name[32];
      std::snprintf(name, sizeof name, "%s/%02d.png", c == 0 ? "left" : "right", i);
      png(tmp.file("folders/" + std::string(name)), 40, 32, 3, px);
    }
  const std::string folders = tmp.path() + "/folders";
  Outcome o = run("train --data " + folders + " --epochs 3 --batch 8 --threads 1 --image-fit crop --test-split 0.25");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "folders train: 30 training samples, 10 test samples, 2 classes")) << o.output;
  EXPECT_TRUE(contains(o.output, "test accuracy   1.0000")) << o.output;

  o = run("train --data " + folders + " --epochs 1 --threads 1 --image-fit squash");
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(contains(o.output, "--image-fit: 'squash'")) << o.output;
  o = run("train --data synthetic --epochs 1 --threads 1 --test-split 0.3");
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(contains(o.output, "--test-split applies to image folders")) << o.output;

  // An input the folders cannot be decoded to.
  const std::string flat_cfg = tmp.file("flat.cfg");
  {
    std::ofstream cfg(flat_cfg);
    cfg << "[net]\ninput = 3072\nloss = softmax_cross_entropy\n\n[dense]\nunits = 10\n";
  }
  o = run("train --model " + flat_cfg + " --data " + folders + " --epochs 1 --threads 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(contains(o.output, "height x width x channels")) << o.output;

  // Nothing recognisable.
  const std::string empty = tmp.folder("empty");
  o = run("train --data " + empty + " --epochs 1 --threads 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_TRUE(contains(o.output, "not a dataset folder")) << o.output;
  EXPECT_TRUE(contains(o.output, "data_batch_1.bin")) << o.output;

  // CIFAR-10 as its archive unpacks: DIR/cifar-10-batches-bin/.
  TempDir cifar_parent;
  const TempDir& unused = cifar_parent;
  (void)unused;
  fs::create_directories(cifar_parent.path() + "/cifar-10-batches-bin");
  for (const char* name : kBatchFiles) {
    const std::string path = cifar_parent.path() + "/cifar-10-batches-bin/" + name;
    std::ofstream(path, std::ios::binary).close();
    fs::resize_file(path, static_cast<uintmax_t>(kRecords * kRecord));
  }
  const std::string rgb_cfg = tmp.file("rgb.cfg");
  {
    std::ofstream cfg(rgb_cfg);
    cfg << "[net]\ninput = 32x32x3\nloss = softmax_cross_entropy\n\n[dense]\nunits = 10\n";
  }
  o = run("train --model " + rgb_cfg + " --data " + cifar_parent.path() + " --epochs 1 --limit 256 --threads 1");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(contains(o.output, "cifar-10-batches-bin train: 256 training samples, 10000 test samples, 10 classes"))
      << o.output;
}

// Issue 29, section 1: labels checked against the model's outputs name their file and place:
// a CIFAR-10 batch file and record, an image's path (its label is its class folder's).

TEST(Labels, CifarNamesTheBatchFileAndTheRecord) {
  TempDir tmp;
  constexpr int64_t kSmall = 3;  // records per file
  for (const char* name : kBatchFiles) {
    const std::string path = tmp.file(name);
    std::ofstream(path, std::ios::binary).close();
    fs::resize_file(path, static_cast<uintmax_t>(kSmall * kRecord));
  }
  write_cifar_record(tmp.path() + "/data_batch_2.bin", 1, 7, 0);
  write_cifar_record(tmp.path() + "/test_batch.bin", 2, 5, 0);
  auto loaded = load_cifar10_folder(tmp.path(), kSmall);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const DataSplit& s = loaded.value();
  const Status train = check_labels(s.train, 4);
  ASSERT_FALSE(train.ok());
  EXPECT_TRUE(contains(train.message(), tmp.path() + "/data_batch_2.bin: record 1 has label 7 (horse); the model "
                                                      "has 4 outputs (classes 0 to 3)")) << train.message();
  const Status test = check_labels(s.test, 4);
  ASSERT_FALSE(test.ok());
  EXPECT_TRUE(contains(test.message(), tmp.path() + "/test_batch.bin: record 2 has label 5 (dog)")) << test.message();
  EXPECT_TRUE(check_labels(s.train, 10).ok());
  EXPECT_TRUE(check_labels(s.test, 10).ok());
}

// A model trained on 2 classes meets folders of 3: the first image of the third class is named,
// in both layouts and after a validation split.
TEST(Labels, ImageFoldersNameTheImageFile) {
  TempDir split_by_fraction;
  write_class_folders(split_by_fraction, {{"ant", 3}, {"bee", 3}, {"cow", 4}});
  const DataSplit s = load_image_folders(split_by_fraction.path(), options_for(3, 3, 1)).take();
  for (const Dataset* d : {&s.train, &s.test}) {
    const Status checked = check_labels(*d, 2);
    ASSERT_FALSE(checked.ok()) << d->name;
    EXPECT_TRUE(contains(checked.message(), split_by_fraction.path() + "/cow/img")) << checked.message();
    EXPECT_TRUE(contains(checked.message(), ".png has label 2 (cow); the model has 2 outputs (classes 0 to 1)"))
        << checked.message();
    EXPECT_TRUE(check_labels(*d, 3).ok()) << d->name;
  }
  const DataSplit held = split_validation(s.train, 0.5, 1).take();
  int sides_with_a_cow = 0;
  for (const Dataset* d : {&held.train, &held.test}) {
    const Status checked = check_labels(*d, 2);
    if (checked.ok()) continue;  // this side holds no cow
    ++sides_with_a_cow;
    EXPECT_TRUE(contains(checked.message(), split_by_fraction.path() + "/cow/img")) << checked.message();
  }
  EXPECT_GE(sides_with_a_cow, 1);

  TempDir train_test;
  write_split_layout(train_test);
  const DataSplit t = load_image_folders(train_test.path(), options_for(4, 4, 3)).take();
  const Status test = check_labels(t.test, 1);
  ASSERT_FALSE(test.ok());
  EXPECT_TRUE(contains(test.message(), train_test.path() + "/test/dog/f.png has label 1 (dog); the model has 1 output"))
      << test.message();
}

// ---------------------------------------------------------------------------------------------
// Issue 29, section 6: entries named like images that are not readable files are reported, each
// class of them by name and kind, never skipped; so is an entry beside the class folders that is
// neither a folder nor a file (a class folder gone wrong).

// A loadable DIR/{a,b}/ with 2 images each, then `make_entry(tmp)` adds one entry; the load must
// fail naming `entry` and saying `kind`.
template <typename MakeEntry>
void expect_entry_refused(const std::string& entry, const std::string& kind, MakeEntry make_entry) {
  TempDir tmp;
  write_class_folders(tmp, {{"a", 2}, {"b", 2}});
  ASSERT_TRUE(load_image_folders(tmp.path(), options_for(4, 4, 1)).ok());
  make_entry(tmp);
  expect_error(load_image_folders(tmp.path(), options_for(4, 4, 1)), {tmp.path() + "/" + entry, kind});
}

TEST(ImageFolders, AFolderNamedLikeAnImageIsAnError) {
  expect_entry_refused("b/x.png", "named like an image but is a folder", [](TempDir& t) { t.folder("b/x.png"); });
}

#ifndef _WIN32
TEST(ImageFolders, LinksAndFifosNamedLikeImagesAreErrors) {
  expect_entry_refused("b/x.png", "broken symbolic link",
                       [](TempDir& t) { fs::create_symlink(t.path() + "/gone.png", t.path() + "/b/x.png"); });
  expect_entry_refused("a/x.JPG", "symbolic link loop",
                       [](TempDir& t) { fs::create_symlink(t.path() + "/a/x.JPG", t.path() + "/a/x.JPG"); });
  expect_entry_refused("b/y.bmp", "a FIFO (named pipe)", [](TempDir& t) {
    ASSERT_EQ(mkfifo((t.path() + "/b/y.bmp").c_str(), 0600), 0) << std::strerror(errno);
  });
  // A link to a good image is read like the image itself.
  TempDir tmp;
  write_class_folders(tmp, {{"a", 2}, {"b", 2}});
  fs::create_symlink(tmp.path() + "/a/img00.png", tmp.path() + "/b/linked.png");
  auto loaded = load_image_folders(tmp.path(), options_for(4, 4, 1));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded.value().train.size() + loaded.value().test.size(), 5);
}

TEST(ImageFolders, ABrokenLinkOrFifoBesideTheClassFoldersIsAnError) {
  expect_entry_refused("c", "broken symbolic link", [](TempDir& t) { fs::create_symlink(t.path() + "/gone", t.path() + "/c"); });
  expect_entry_refused("pipe", "a FIFO (named pipe)", [](TempDir& t) {
    ASSERT_EQ(mkfifo((t.path() + "/pipe").c_str(), 0600), 0) << std::strerror(errno);
  });
}
#endif

// Reading permission: root reads every file, so the kind is checked where the test can make it
// (an unprivileged run, tools/bad_inputs.py's image-unreadable case runs as uid 65534).
TEST(ImageFolders, WhyNotAReadableFileNamesEachKind) {
  TempDir tmp;
  png(tmp.file("ok.png"), 2, 2, 1, solid(2, 2, {1}));
  EXPECT_EQ(why_not_a_readable_file(tmp.path() + "/ok.png"), "");
  EXPECT_EQ(why_not_a_readable_file(tmp.folder("dir.png")), "a folder");
#ifndef _WIN32
  fs::create_symlink(tmp.path() + "/ok.png", tmp.path() + "/good-link.png");
  EXPECT_EQ(why_not_a_readable_file(tmp.path() + "/good-link.png"), "");
  fs::create_symlink(tmp.path() + "/none", tmp.path() + "/dangling.png");
  EXPECT_TRUE(contains(why_not_a_readable_file(tmp.path() + "/dangling.png"), "broken symbolic link"));
  if (geteuid() != 0) {
    fs::permissions(tmp.path() + "/ok.png", fs::perms::none);
    EXPECT_TRUE(contains(why_not_a_readable_file(tmp.path() + "/ok.png"), "not readable")) << "mode 000";
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Issue 29, section 7: PNG is the one image format written; another name is refused, not given
// PNG bytes (--samples x.jpg).

TEST(ImageIo, OnlyPngNamesAreWritten) {
  for (const char* name : {"a.png", "A.PNG", "grid.Png", "dir.jpg/a.png"}) EXPECT_TRUE(check_png_name(name).ok()) << name;
  for (const char* name : {"x.jpg", "x.png.jpg", "png", ".png/x", "x.bmp", ""}) {
    const Status s = check_png_name(name);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_TRUE(contains(s.message(), "PNG only")) << s.message();
  }
  TempDir tmp;
  const std::string jpg = tmp.path() + "/x.jpg";
  const Bytes pixels = solid(2, 2, {9});
  EXPECT_FALSE(write_png(jpg, 2, 2, 1, pixels.data()).ok());
  EXPECT_FALSE(fs::exists(jpg)) << "nothing is written under a name of another format";
}

// Issue 29, section 3: decoding is inside the budget. What an image's decoding takes is read
// from its header and checked against --mem-budget and the memory available before any pixel
// is decoded; an image that fits decodes as before.
TEST(ImageIo, ADecodePastTheBudgetOrTheAvailableMemoryIsRefusedBeforeDecoding) {
  TempDir tmp;
  const std::string path = tmp.file("wide.png");
  png(path, 2048, 2048, 1, solid(2048, 2048, {7}));
  const int64_t needed = decode_bytes(2048, 2048, 1, 1, 3);
  EXPECT_EQ(needed, 2 * 2048 * 2048 + 3 * 2048 * 2048);
  const int64_t in_use = host_memory().current_bytes();
  expect_error(read_image(path, 3, in_use + needed - 1),
               {path, "decoding this 2048x2048 image takes about " + format_bytes(needed), "(from its header)",
                "left of --mem-budget", "refused before decoding"});
  EXPECT_EQ(host_memory().current_bytes(), in_use) << "nothing was decoded";
  auto fits = read_image(path, 3, in_use + needed);
  ASSERT_TRUE(fits.ok()) << fits.status().message();
  EXPECT_EQ(fits.value().pixels[0], 7);

  const std::string large = tmp.file("large.png");
  png(large, 4096, 4096, 1, solid(4096, 4096, {1}));  // 48 MiB to decode: checked against the machine
  {
    const ScopedEnv stated("RETROGRAD_MEM_AVAILABLE", "20M");
    expect_error(read_image(large, 1), {large, "4096x4096", "more than the 20.0 MiB available (RETROGRAD_MEM_AVAILABLE)",
                                        "refused before decoding"});
  }
  const ScopedEnv plenty("RETROGRAD_MEM_AVAILABLE", "1G");
  EXPECT_TRUE(read_image(large, 1).ok());
}

}  // namespace
}  // namespace rg
