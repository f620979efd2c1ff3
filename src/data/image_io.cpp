// Image decoding, channel conversion, fitting and PNG writing over stb (see image_io.h).
#include "data/image_io.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/files.h"
#include "base/memory.h"
#include "base/output_file.h"
#include "base/serial.h"
#include "stb_image.h"
#include "stb_image_resize.h"
#include "stb_image_write.h"

namespace rg {

namespace {

struct StbFree {
  void operator()(stbi_uc* p) const { stbi_image_free(p); }
};

std::string stb_reason() {
  const char* reason = stbi_failure_reason();  // thread-local in stb_image 2.27
  return reason != nullptr ? reason : "no reason given";
}

std::string size_text(int64_t width, int64_t height) { return std::to_string(width) + "x" + std::to_string(height); }

// The file's length in bytes, or -1 where it cannot be told; `file`'s position is kept.
int64_t file_size(FILE* file) {
  const long at = std::ftell(file);
  if (at < 0 || std::fseek(file, 0, SEEK_END) != 0) return -1;
  const long size = std::ftell(file);
  std::fseek(file, at, SEEK_SET);
  return size;
}

// round(0.299 R + 0.587 G + 0.114 B) in integers: the weights sum to 1000, so white stays 255.
uint8_t luminance(const uint8_t* rgb) {
  return static_cast<uint8_t>((299 * rgb[0] + 587 * rgb[1] + 114 * rgb[2] + 500) / 1000);
}

int jpeg_byte(FILE* file) {  // stb reads 0 past the end; so does this
  const int c = std::getc(file);
  return c == EOF ? 0 : c;
}

// A start of scan (SOS) after its length field, `length` bytes: each component's DC and AC
// tables must be defined (in a progressive frame only those the scan uses). False: stb fails
// here too, the walk ends.
Result<bool> check_jpeg_scan(FILE* file, const std::string& path, long length, bool progressive,
                             const bool (&defined)[2][4]) {
  const int components = jpeg_byte(file);
  int tables[4] = {};
  for (int i = 0; i < components && i < 4; ++i) {
    jpeg_byte(file);  // the component's id
    tables[i] = jpeg_byte(file);
  }
  const int spectral_start = jpeg_byte(file), spectral_end = jpeg_byte(file);
  const int refines = jpeg_byte(file) >> 4;  // successive approximation high: a refinement scan
  const bool uses_dc = progressive ? spectral_start == 0 && refines == 0 : true;
  const bool uses_ac = progressive ? spectral_end > 0 : true;
  for (int i = 0; i < components && i < 4; ++i) {
    const bool dc_missing = uses_dc && !defined[0][(tables[i] >> 4) & 3];
    const bool ac_missing = uses_ac && !defined[1][tables[i] & 3];
    if (dc_missing || ac_missing) {
      return Status::error(path + ": corrupt JPEG: a scan uses " + (dc_missing ? "DC" : "AC") + " Huffman table " +
                           std::to_string(dc_missing ? (tables[i] >> 4) & 3 : tables[i] & 3) +
                           ", which no DHT segment before it defines");
    }
  }
  const long rest = length - (1 + 2L * components + 3);
  return rest >= 0 && std::fseek(file, rest, SEEK_CUR) == 0;
}

// A frame header (SOFn) after its length field: precision, height, width (16 bits each,
// big-endian); a file too short for that many 8x8 blocks is truncated.
Status check_jpeg_frame_size(FILE* file, const std::string& path) {
  jpeg_byte(file);
  auto u16 = [file] {  // two reads in order (the operands of | are unsequenced)
    const int hi = jpeg_byte(file);
    return int64_t{hi} << 8 | jpeg_byte(file);
  };
  const int64_t height = u16();
  const int64_t width = u16();
  const int64_t needed = ((width + 7) / 8 * ((height + 7) / 8) + 7) / 8;
  const int64_t size = file_size(file);
  if (size >= 0 && size < needed) {
    return Status::error(path + ": truncated JPEG: the header says " + size_text(width, height) +
                         " pixels, which take at least " + std::to_string(needed) +
                         " bytes (a bit for each 8x8 block); the file has " + std::to_string(size));
  }
  return Status();
}

// stb's DHT loop over a segment of `length` bytes after its length field: tables until the
// length is used up, each a class/id byte, 16 counts and the values, marked in `defined`.
// False: a length that does not come out at 0, or a header stb refuses, ends the decode.
Result<bool> read_jpeg_huffman_tables(FILE* file, const std::string& path, long length, bool (&defined)[2][4]) {
  while (length > 0) {
    const int class_id = jpeg_byte(file);
    if ((class_id >> 4) > 1 || (class_id & 15) > 3) return false;  // stb refuses the header
    int codes = 0;
    for (int i = 0; i < 16; ++i) codes += jpeg_byte(file);
    if (codes > 256) {
      return Status::error(path + ": corrupt JPEG: a Huffman table (DHT) lists " + std::to_string(codes) +
                           " codes; a table holds at most 256");
    }
    if (std::fseek(file, codes, SEEK_CUR) != 0) return false;
    defined[class_id >> 4][class_id & 15] = true;
    length -= 17 + codes;
  }
  return length == 0;
}

// stb_image 2.27 (Debian 12's) builds a JPEG Huffman table from 16 code counts without
// checking that they add up to at most 256, the table's room: a corrupt DHT segment writes
// past it, over the decoder's function pointers (found by mutating files under UBSan; stb
// 2.28 checks it). stbi_info already reads DHT segments, so until Debian ships the fix every
// DHT segment stb could read is checked here first, walking the markers as stb does: segments
// by their length, entropy-coded data up to the next 0xFF followed by a byte other than 0x00.
// It also decodes a scan with a Huffman table no DHT segment defined: the table's memory was
// never written, so its bit patterns index outside the table (found by fuzz_image under ASan,
// whose allocations are not zeroed). So each scan's (SOS) tables must have been defined before:
// in a baseline frame its DC and AC tables (stb reads both whatever Ss and Se say: a second
// find), in a progressive one the DC table of a first DC scan and the AC table of an AC scan.
// And stb decodes a file cut short as if zeros followed: a 200-byte file whose frame header
// (SOF) says 16384 x 16384 became 268 M pixels (a fuzz_image timeout). Every 8x8 block of a
// component takes at least one bit (its DC code), so a file shorter than blocks / 8 bytes is
// refused as truncated.
// `file` is at the file's start; where it is left does not matter.
Status check_jpeg_markers(FILE* file, const std::string& path) {
  // Start of image as stb finds it: 0xFF, any number of 0xFF fill bytes, 0xD8 (a libFuzzer
  // find: a check of the first two bytes only let "FF FF D8" and a bad table through).
  if (std::getc(file) != 0xFF) return Status();
  int c;
  do c = std::getc(file); while (c == 0xFF);
  if (c != 0xD8) return Status();  // not a JPEG
  bool defined[2][4] = {};  // [class: 0 DC, 1 AC][table id]
  bool progressive = false;  // the last frame header's (SOF2)
  for (;;) {
    c = std::getc(file);
    if (c == EOF) return Status();
    if (c != 0xFF) continue;  // entropy-coded data, or junk stb also skips
    do c = std::getc(file); while (c == 0xFF);
    if (c == EOF || c == 0xD9) return Status();                              // end of image
    if (c == 0x00 || c == 0x01 || c == 0xD8 || (c >= 0xD0 && c <= 0xD7)) continue;  // no length
    const int hi = std::getc(file), lo = std::getc(file);
    if (lo == EOF) return Status();
    long length = ((hi << 8) | lo) - 2;  // bytes after the length field
    if (c == 0xDA) {  // start of scan
      RG_ASSIGN(const bool more, check_jpeg_scan(file, path, length, progressive, defined));
      if (!more) return Status();
      continue;
    }
    const bool frame = c >= 0xC0 && c <= 0xCF && c != 0xC4 && c != 0xC8 && c != 0xCC;  // SOFn
    if (frame) progressive = c == 0xC2;
    if (frame && length >= 5) {
      RG_TRY(check_jpeg_frame_size(file, path));
      length -= 5;
    }
    if (c != 0xC4) {
      if (length < 0 || std::fseek(file, length, SEEK_CUR) != 0) return Status();  // stb fails here too
      continue;
    }
    RG_ASSIGN(const bool more, read_jpeg_huffman_tables(file, path, length, defined));
    if (!more) return Status();
  }
}

// stb allocates room for a PNG's image data (IDAT) as its chunk header states, before reading
// it: a 160-byte file with a chunk claiming 1 GB made it allocate 2 GB (found by fuzz_image).
// And it allocates the whole inflated image before inflating; deflate packs at most 1032 bytes
// into one, so image data shorter than the inflated size / 1032 cannot hold the image. Both
// are refused here, walking the chunks as stb does (length, type, data, CRC) up to IEND.
// `file` is at the file's start.
Status check_png_chunks(FILE* file, const std::string& path) {
  const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  uint8_t head[13];
  if (std::fread(head, 1, 8, file) != 8 || std::memcmp(head, signature, 8) != 0) return Status();
  const int64_t size = file_size(file);
  auto be32 = [&head](int at) {
    return uint32_t{head[at]} << 24 | uint32_t{head[at + 1]} << 16 | uint32_t{head[at + 2]} << 8 | head[at + 3];
  };
  int64_t at = 8, image_data = 0, inflated = 0, width = 0, height = 0;
  while (std::fread(head, 1, 8, file) == 8) {  // a missing IEND is stb's to report
    const int64_t length = be32(0);
    const std::string type(head + 4, head + 8);
    if (size >= 0 && length > size - (at + 8)) {
      return Status::error(path + ": truncated PNG: the chunk at byte " + std::to_string(at) + " says " +
                           std::to_string(length) + " bytes follow its header; the file has " +
                           std::to_string(size - (at + 8)));
    }
    if (type == "IEND") break;
    int64_t skip = length + 4;  // the data and the CRC (which stb does not check)
    if (type == "IHDR" && inflated == 0 && length == 13 && std::fread(head, 1, 13, file) == 13) {
      skip -= 13;
      width = be32(0), height = be32(4);
      const int depth = head[8], colour = head[9];
      const int channels = colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 1;  // 0 grey, 3 palette
      // Larger sides are refused by read_image's size check; bounded here, the product fits 64 bits.
      if (width <= kMaxImageSide && height <= kMaxImageSide && depth <= 16) {
        inflated = height * (1 + (width * channels * depth + 7) / 8);  // a filter byte a row
      }
    } else if (type == "IDAT") {
      image_data += length;
    }
    if (std::fseek(file, static_cast<long>(skip), SEEK_CUR) != 0) return Status();
    at += 8 + length + 4;
  }
  constexpr int64_t kDeflateMaxRatio = 1032;  // 258 bytes from a 2-bit match, at best
  if (inflated > 0 && image_data * kDeflateMaxRatio < inflated) {
    return Status::error(path + ": truncated PNG: the header says " + size_text(width, height) + " pixels, " +
                         std::to_string(inflated) + " bytes inflated; its image data (IDAT) has " +
                         std::to_string(image_data) + " bytes, and deflate packs at most " +
                         std::to_string(kDeflateMaxRatio) + " bytes into one");
  }
  return Status();
}

// stb fills a BMP's missing pixels with zeros: a 54-byte file whose header says 1280 x 12801
// would be decoded into 49 MB (found by fuzz_image). An uncompressed BMP's pixel bytes follow
// from its header (rows padded to 4 bytes), so a file shorter than that is refused first. Both
// header layouts stb reads: OS/2's (12 bytes, 16-bit sides) and Windows' (40 bytes or more,
// 32-bit sides, negative height for top-down rows). stb reads zeros past the end, so a file cut
// inside its header is read as if zeros followed too (a 29-byte find of fuzz_image whose
// compression field was missing). `file` is at the file's start.
Status check_bmp_length(FILE* file, const std::string& path) {
  uint8_t h[34] = {};
  if (std::fread(h, 1, sizeof h, file) < 18 || h[0] != 'B' || h[1] != 'M') return Status();
  auto u16 = [&](int at) { return uint32_t{h[at]} | uint32_t{h[at + 1]} << 8; };
  auto u32 = [&](int at) { return u16(at) | u16(at + 2) << 16; };
  const uint32_t offset = u32(10), header = u32(14);
  int64_t width = 0, height = 0;
  uint32_t bits = 0;
  if (header == 12) {  // OS/2: never compressed
    width = u16(18), height = u16(20), bits = u16(24);
  } else if (header >= 40) {
    // stb reads the compression code as a signed int and refuses 1, 2 and 4 up, so codes of
    // 2^31 and more reached its uncompressed reader (a fuzz_image find: a 288-byte file
    // decoded as 1280 x 12801 pixels). A BMP's codes are 0 to 13.
    const uint32_t compression = u32(30);
    if (compression > 0x7FFFFFFF) {
      return Status::error(path + ": corrupt BMP: compression code " + std::to_string(compression) +
                           " (a BMP's codes are 0 to 13)");
    }
    if (compression != 0 && compression != 3) return Status();  // stb refuses RLE and the rest
    width = static_cast<int32_t>(u32(18)), height = static_cast<int32_t>(u32(22)), bits = u16(28);
  } else {
    return Status();  // stb refuses the header
  }
  if (height < 0) height = -height;
  // Larger sides are refused by read_image's size check; bounded here, the product fits 64 bits.
  if (width <= 0 || height == 0 || width > kMaxImageSide || height > kMaxImageSide || bits > 64) return Status();
  const int64_t row = (width * bits + 31) / 32 * 4;
  const int64_t needed = int64_t{offset} + row * height;
  const int64_t size = file_size(file);
  if (size >= 0 && size < needed) {
    return Status::error(path + ": truncated BMP: the header says " + size_text(width, height) + " pixels of " +
                         std::to_string(bits) + " bits from byte " + std::to_string(offset) + ", " +
                         std::to_string(needed) + " bytes in all; the file has " + std::to_string(size));
  }
  return Status();
}

}  // namespace

const char* image_fit_name(ImageFit fit) { return fit == ImageFit::crop ? "crop" : "resize"; }

Result<ImageFit> image_fit_from_name(const std::string& name) {
  if (name == "resize") return ImageFit::resize;
  if (name == "crop") return ImageFit::crop;
  return Status::error("'" + name + "' is not an image fit; use resize (stretch to the size) or crop (scale the "
                       "shorter side, cut out the centre)");
}

void convert_channels(const uint8_t* src, int64_t pixels, int from, uint8_t* dst, int to) {
  RG_CHECK(from >= 1 && from <= 4 && (to == 1 || to == 3), "convert_channels from " << from << " to " << to);
  const bool colour = from >= 3;  // 3 RGB, 4 RGBA; 1 grey, 2 grey+alpha
  for (int64_t i = 0; i < pixels; ++i) {
    const uint8_t* s = src + i * from;
    uint8_t* d = dst + i * to;
    if (to == 1) {
      d[0] = colour ? luminance(s) : s[0];
    } else if (colour) {
      d[0] = s[0], d[1] = s[1], d[2] = s[2];
    } else {
      d[0] = d[1] = d[2] = s[0];
    }
  }
}

int64_t decode_bytes(int64_t width, int64_t height, int stored, int sample_bytes, int channels) {
  const int64_t pixels = width * height;
  return 2 * pixels * stored * sample_bytes + pixels * channels;
}

namespace {
// Decodes smaller than this are not checked against the machine's available memory (reading
// it costs more than they do).
constexpr int64_t kMachineCheckBytes = int64_t{16} << 20;

// Refuses a decode of `needed` bytes past the budget's room or the memory available.
Status check_decode_fits(const std::string& path, int width, int height, int64_t needed, int64_t memory_budget) {
  const std::string what = path + ": decoding this " + size_text(width, height) + " image takes about " +
                           format_bytes(needed) + " (from its header), more than ";
  if (memory_budget > 0) {
    const int64_t room = memory_budget - host_memory().current_bytes();
    if (needed > room) {
      return Status::error(what + "the " + format_bytes(std::max<int64_t>(room, 0)) + " left of --mem-budget " +
                           format_bytes(memory_budget) + ": it is refused before decoding");
    }
  }
  if (needed < kMachineCheckBytes) return Status();
  const AvailableMemory available = available_host_memory();
  if (available.bytes > 0 && needed > available.bytes) {
    return Status::error(what + "the " + format_bytes(available.bytes) + " available (" + available.source +
                         "): it is refused before decoding");
  }
  return Status();
}
}  // namespace

Result<Image> read_image(const std::string& path, int channels, int64_t memory_budget) {
  RG_CHECK(channels == 1 || channels == 3, "read_image(" << path << ", " << channels << " channels)");
  errno = 0;
  UniqueFile file(std::fopen(path.c_str(), "rb"));
  if (!file) return Status::error(path + ": cannot open: " + std::strerror(errno));

  RG_TRY(check_jpeg_markers(file.get(), path));
  std::rewind(file.get());
  RG_TRY(check_bmp_length(file.get(), path));
  std::rewind(file.get());
  RG_TRY(check_png_chunks(file.get(), path));
  std::rewind(file.get());
  // The header alone first: a hostile or broken header cannot make the decoder allocate.
  int width = 0, height = 0, stored = 0;
  if (stbi_info_from_file(file.get(), &width, &height, &stored) == 0) {
    return Status::error(path + ": cannot read an image header (stb_image: " + stb_reason() +
                         "); PNG, JPEG and BMP files are read");
  }
  if (width < 1 || height < 1 || width > kMaxImageSide || height > kMaxImageSide) {
    return Status::error(path + ": the header says " + size_text(width, height) + " pixels; each side must be 1 to " +
                         std::to_string(kMaxImageSide) + " (larger images are refused before decoding)");
  }
  if (static_cast<int64_t>(width) * height > kMaxImagePixels) {
    return Status::error(path + ": the header says " + size_text(width, height) + " pixels; at most " +
                         std::to_string(kMaxImagePixels) + " pixels are decoded");
  }

  const int sample_bytes = stbi_is_16_bit_from_file(file.get()) ? 2 : 1;
  const int64_t needed = decode_bytes(width, height, stored, sample_bytes, channels);
  RG_TRY(check_decode_fits(path, width, height, needed, memory_budget));

  int got_width = 0, got_height = 0, got_channels = 0;
  std::unique_ptr<stbi_uc, StbFree> decoded(
      stbi_load_from_file(file.get(), &got_width, &got_height, &got_channels, 0));  // 0: as stored
  if (!decoded && std::strcmp(stb_reason().c_str(), "outofmem") == 0) {
    return Status::error(path + ": out of memory decoding the " + size_text(width, height) + " image (it takes about " +
                         format_bytes(needed) + "); the file is not known to be corrupt");
  }
  if (!decoded) return Status::error(path + ": cannot decode the image: corrupt, truncated or an unsupported variant (stb_image: " +
                                       stb_reason() + ")");
  if (got_width != width || got_height != height || got_channels < 1 || got_channels > 4) {
    return Status::error(path + ": the header said " + size_text(width, height) + " pixels, the decoder gave " +
                         size_text(got_width, got_height) + " with " + std::to_string(got_channels) + " channels");
  }

  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  const int64_t pixels = static_cast<int64_t>(width) * height;
  image.pixels.resize(static_cast<size_t>(pixels * channels));
  convert_channels(decoded.get(), pixels, got_channels, image.pixels.data(), channels);
  return image;
}

Status fit_image(const Image& image, ImageFit fit, int height, int width, uint8_t* out) {
  RG_CHECK(image.height >= 1 && image.width >= 1 && height >= 1 && width >= 1 &&
               image.pixels.size() == static_cast<size_t>(image.height) * image.width * image.channels,
           "fit_image " << image.height << "x" << image.width << "x" << image.channels << " to " << height << "x"
                        << width);
  const int64_t c = image.channels;
  const int64_t w = image.width, h = image.height;
  // The source rectangle [y0, y0 + rect_h) x [x0, x0 + rect_w).
  int64_t x0 = 0, y0 = 0, rect_w = w, rect_h = h;
  if (fit == ImageFit::crop) {
    if (w * height > h * width) {  // wider than the target: all rows, the middle columns
      rect_w = std::min(w, std::max<int64_t>(1, (2 * h * width + height) / (2 * height)));  // round(h * width / height)
      x0 = (w - rect_w) / 2;
    } else {  // taller (or the same shape): all columns, the middle rows
      rect_h = std::min(h, std::max<int64_t>(1, (2 * w * height + width) / (2 * width)));
      y0 = (h - rect_h) / 2;
    }
  }
  const uint8_t* from = image.pixels.data() + (y0 * w + x0) * c;
  const int64_t in_stride = w * c;
  const int64_t out_stride = static_cast<int64_t>(width) * c;
  if (rect_w == width && rect_h == height) {
    for (int64_t y = 0; y < height; ++y) std::memcpy(out + y * out_stride, from + y * in_stride, static_cast<size_t>(out_stride));
    return Status();
  }
  if (stbir_resize_uint8(from, static_cast<int>(rect_w), static_cast<int>(rect_h), static_cast<int>(in_stride), out,
                         width, height, static_cast<int>(out_stride), static_cast<int>(c)) == 0) {
    return Status::error("scaling " + size_text(rect_w, rect_h) + " pixels to " + size_text(width, height) +
                         ": stb_image_resize could not allocate its buffers");
  }
  return Status();
}

Status check_png_name(const std::string& path) {
  const std::string name = last_path_component(path);
  std::string ending = name.size() >= 4 ? name.substr(name.size() - 4) : "";
  for (char& ch : ending) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (ending == ".png") return Status();
  return Status::error(path + ": images are written as PNG only; name the file .png");
}

Status write_png(const std::string& path, int width, int height, int channels, const uint8_t* pixels) {
  RG_CHECK(pixels != nullptr, "write_png(" << path << ") without pixels");
  RG_TRY(check_png_name(path));
  if (width < 1 || height < 1 || width > kMaxImageSide || height > kMaxImageSide) {
    return Status::error(path + ": cannot write a " + size_text(width, height) + " PNG; each side must be 1 to " +
                         std::to_string(kMaxImageSide));
  }
  if (channels < 1 || channels > 4) {
    return Status::error(path + ": cannot write a PNG of " + std::to_string(channels) +
                         " channels; 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA)");
  }
  std::vector<uint8_t> bytes;
  auto append = [](void* context, void* data, int size) {
    auto* out = static_cast<std::vector<uint8_t>*>(context);
    const auto* begin = static_cast<const uint8_t*>(data);
    out->insert(out->end(), begin, begin + size);
  };
  if (stbi_write_png_to_func(append, &bytes, width, height, channels, pixels, width * channels) == 0) {
    return Status::error(path + ": PNG encoding failed (stb_image_write could not allocate its buffers)");
  }
  return write_file_atomic(path, bytes);
}

}  // namespace rg
