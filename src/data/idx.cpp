// IDX file pairs (the MNIST format: big-endian header, then unsigned bytes, or big-endian
// float32 images) read through zlib, which passes raw files through and inflates gzip ones.
// Nothing in a header is trusted until checked: sizes are bounded before any allocation, data
// is read in chunks. Float images are kept in f32 or, half the bytes, in f16.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "base/input_file.h"
#include "cpu/kernel_tables.h"
#include "data/dataset.h"
#include "data/record_file.h"

namespace rg {

namespace {

constexpr uint32_t kMagicImagesU8 = 0x00000803;   // 0, 0, type 0x08 = unsigned byte, 3 dims
constexpr uint32_t kMagicImagesF32 = 0x00000D03;  // 0, 0, type 0x0D = float32 (big-endian), 3 dims
constexpr uint32_t kMagicLabelsU8 = 0x00000801;   // 0, 0, type 0x08 = unsigned byte, 1 dim
constexpr float kF16Max = 65504.0f;               // the largest finite f16
constexpr int64_t kMaxDataBytes = 2147483647;    // 2^31 - 1: counts stay in int32
constexpr unsigned kChunkBytes = 1u << 20;       // one gzread call at most
constexpr int64_t kMaxDeflateRatio = 1032;       // deflate cannot expand input more than this

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", v);
  return text;
}

struct GzCloser {
  void operator()(gzFile_s* gz) const { gzclose(gz); }
};

// One open IDX file whose header has been read and checked.
struct IdxFile {
  std::string path;
  std::unique_ptr<gzFile_s, GzCloser> gz;
  int64_t file_bytes = 0;   // on disk (compressed when gzip)
  int64_t header_bytes = 0;
  int64_t dims[3] = {0, 0, 0};
  int64_t element_bytes = 1;  // 1 (unsigned bytes) or 4 (float32)
  int64_t data_bytes = 0;     // product of dims x element_bytes

  Status error(const std::string& rule) const { return Status::error(path + ": " + rule); }
};

// The stream's error state after a gzread: corrupt or cut-off gzip data, or an I/O error.
Status gz_status(const IdxFile& file) {
  int code = Z_OK;
  std::string text = gzerror(file.gz.get(), &code);
  if (code == Z_OK) return Status();
  if (code == Z_ERRNO) return file.error(std::string("read error: ") + std::strerror(errno));
  // zlib's message is "<path>: <what>"; the path is already in ours.
  if (text.compare(0, file.path.size() + 2, file.path + ": ") == 0) text.erase(0, file.path.size() + 2);
  if (code == Z_BUF_ERROR) return file.error("gzip stream ends early (zlib: " + text + ")");
  return file.error("corrupt gzip stream (zlib: " + text + ")");
}

// Reads up to `bytes` into out, stopping early only at the end of the data; *got says how many.
Status read_up_to(const IdxFile& file, uint8_t* out, int64_t bytes, int64_t* got) {
  *got = 0;
  while (*got < bytes) {
    const auto want = static_cast<unsigned>(std::min<int64_t>(bytes - *got, kChunkBytes));
    const int n = gzread(file.gz.get(), out + *got, want);
    RG_TRY(gz_status(file));
    if (n < 0) return file.error("read failed");
    if (n == 0) break;
    *got += n;
  }
  return Status();
}

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// Opens `path` and checks its header: the magic (`magic`, or `float_magic` when not 0), then
// `rank` positive dimensions whose data bytes are at most kMaxDataBytes and fit what the file
// could hold.
Result<IdxFile> open_idx(const std::string& path, uint32_t magic, const char* kind, uint32_t float_magic = 0) {
  IdxFile file;
  file.path = path;
  const int rank = static_cast<int>(magic & 0xFF);

  RG_ASSIGN(file.file_bytes, input_file_size(path, "an IDX file"));

  errno = 0;
  file.gz.reset(gzopen(path.c_str(), "rb"));
  if (!file.gz) return file.error(std::string("cannot open: ") + (errno ? std::strerror(errno) : "zlib out of memory"));
  gzbuffer(file.gz.get(), 128 * 1024);

  uint8_t header[4 + 4 * 3];
  file.header_bytes = 4 + 4 * rank;
  int64_t got = 0;
  RG_TRY(read_up_to(file, header, 4, &got));
  if (got < 4) {
    return file.error("truncated header: an IDX file starts with a 4-byte magic number, found " +
                      std::to_string(got) + " bytes");
  }
  const uint32_t found_magic = big_endian_u32(header);
  if (found_magic != magic && (float_magic == 0 || found_magic != float_magic)) {
    return file.error("magic number " + hex32(found_magic) + " where " + hex32(magic) + " was expected (" + kind +
                      ": IDX unsigned-byte data, " + std::to_string(rank) + " dimension" + (rank > 1 ? "s" : "") +
                      ", big-endian" + (float_magic ? "; or " + hex32(float_magic) + ": float32 data" : "") + ")");
  }
  file.element_bytes = found_magic == magic ? 1 : 4;
  RG_TRY(read_up_to(file, header + 4, 4 * rank, &got));
  if (got < 4 * rank) {
    return file.error("truncated header: expected " + std::to_string(file.header_bytes) + " bytes (magic and " +
                      std::to_string(rank) + " dimension" + (rank > 1 ? "s" : "") + "), found " +
                      std::to_string(4 + got));
  }

  static const char* const kDimNames[] = {"count", "rows", "columns"};
  std::string dims_text;  // "60000 x 28 x 28"
  for (int i = 0; i < rank; ++i) {
    file.dims[i] = big_endian_u32(header + 4 + 4 * i);
    dims_text += (i ? " x " : "") + std::to_string(file.dims[i]);
  }
  file.data_bytes = file.element_bytes;
  for (int i = 0; i < rank; ++i) {
    if (file.dims[i] <= 0) {
      return file.error("dimensions " + dims_text + ": " + kDimNames[i] + " is 0; every dimension must be positive");
    }
    file.data_bytes *= file.dims[i];  // each factor < 2^32 and the running product <= 2^31: no overflow
    if (file.data_bytes > kMaxDataBytes) {
      return file.error("dimensions " + dims_text + " exceed the limit of " + std::to_string(kMaxDataBytes) +
                        " data bytes");
    }
  }

  // Bound the data by the file size before allocating, so a short file with a large header
  // is not met with a large allocation. Raw files are exact; gzip gives an upper bound.
  const int64_t rest = file.file_bytes - file.header_bytes;
  const bool raw = gzdirect(file.gz.get()) != 0;
  if (raw && rest < file.data_bytes) {
    return file.error("truncated data: expected " + std::to_string(file.data_bytes) + " bytes after the header, found " +
                      std::to_string(std::max<int64_t>(rest, 0)));
  }
  if (!raw && file.data_bytes / kMaxDeflateRatio > file.file_bytes) {
    return file.error("truncated data: expected " + std::to_string(file.data_bytes) +
                      " bytes after the header, more than a gzip file of " + std::to_string(file.file_bytes) +
                      " bytes can hold");
  }
  return file;
}

// Checks that nothing follows the data just read, then closes.
Status check_end_and_close(IdxFile& file) {
  int64_t got = 0;
  uint8_t extra[4096];
  RG_TRY(read_up_to(file, extra, sizeof extra, &got));
  if (got > 0) {
    return file.error("trailing bytes: " + std::string(got == sizeof extra ? "at least " : "") + std::to_string(got) +
                      (got == 1 ? " byte follows" : " bytes follow") + " the " + std::to_string(file.data_bytes) +
                      " data bytes the header announces");
  }
  const int closed = gzclose(file.gz.release());
  if (closed == Z_BUF_ERROR) return file.error("gzip stream ends early");
  if (closed != Z_OK) return file.error("close failed (zlib error " + std::to_string(closed) + ")");
  return Status();
}

// Reads exactly file.data_bytes into out and checks that nothing follows, then closes.
Status read_idx_data(IdxFile& file, uint8_t* out) {
  int64_t got = 0;
  RG_TRY(read_up_to(file, out, file.data_bytes, &got));
  if (got < file.data_bytes) {
    return file.error("truncated data: expected " + std::to_string(file.data_bytes) + " bytes after the header, found " +
                      std::to_string(got));
  }
  return check_end_and_close(file);
}

// A float32 images file's values [count x rows x columns], big-endian, into `out` (f32, or f16
// rounded to nearest even) a chunk at a time. Every value must be finite, and in f16 within its
// range (|v| <= 65504); the error names the sample and the value.
Status read_idx_floats(IdxFile& file, const Tensor& out) {
  const int64_t total = out.numel(), row = file.dims[1] * file.dims[2];
  constexpr int64_t kChunk = 16384;
  std::vector<uint8_t> raw(kChunk * 4);
  std::vector<float> values(kChunk);
  for (int64_t at = 0; at < total; at += kChunk) {
    const int64_t count = std::min(kChunk, total - at);
    int64_t got = 0;
    RG_TRY(read_up_to(file, raw.data(), count * 4, &got));
    if (got < count * 4) {
      return file.error("truncated data: expected " + std::to_string(file.data_bytes) + " bytes after the header, found " +
                        std::to_string(at * 4 + got));
    }
    for (int64_t i = 0; i < count; ++i) {
      const uint32_t bits = big_endian_u32(raw.data() + 4 * i);
      std::memcpy(&values[static_cast<size_t>(i)], &bits, sizeof bits);
      const float v = values[static_cast<size_t>(i)];
      const bool fits = std::isfinite(v) && (out.dtype() == DType::f32 || std::fabs(v) <= kF16Max);
      if (!fits) {
        const int64_t index = at + i;
        return file.error("sample " + std::to_string(index / row) + ", value " + std::to_string(index % row) + " is " +
                          std::to_string(v) + (std::isfinite(v) ? ", outside f16's range (|v| <= 65504): keep this "
                                                                   "dataset in f32 (--data-storage f32)"
                                                                 : "; every value must be finite"));
      }
    }
    if (out.dtype() == DType::f32) {
      std::memcpy(out.f32() + at, values.data(), static_cast<size_t>(count) * sizeof(float));
    } else {
      f16_convert().from_f32(count, values.data(), out.data<uint16_t>() + at);
    }
  }
  return check_end_and_close(file);
}

// The labels file's bytes [n] widened to i32 [n]; *classes = the largest label + 1. The bytes
// are read into the front of the i32 block and widened from the back (label i overwrites bytes
// 4i..4i+3, none of them still unread), so no second buffer of n bytes is needed.
Result<Tensor> read_idx_labels(IdxFile& file, const std::string& name, int32_t* classes) {
  const int64_t n = file.dims[0];
  RG_ASSIGN(Tensor labels, Tensor::zeros(Shape{n}, DType::i32, name + " labels"));
  int32_t* dst = labels.data<int32_t>();
  const auto* src = reinterpret_cast<const uint8_t*>(dst);
  RG_TRY(read_idx_data(file, reinterpret_cast<uint8_t*>(dst)));
  int32_t max_label = 0;
  for (int64_t i = n; i-- > 0;) {
    const uint8_t label = src[i];
    dst[i] = label;
    max_label = std::max<int32_t>(max_label, label);
  }
  *classes = max_label + 1;  // labels are bytes, so at most 256 classes
  return labels;
}

// The labels file as the origin of the dataset's labels: one label a sample, in order.
std::shared_ptr<const LabelOrigin> idx_label_origin(const IdxFile& labels) {
  auto origin = std::make_shared<LabelOrigin>();
  origin->files = {labels.path};
  origin->rows_per_file = labels.dims[0];
  return origin;
}

// Both headers, checked before any data is read: a count mismatch is reported first.
Status open_idx_headers(const std::string& images_path, const std::string& labels_path, IdxFile* images,
                        IdxFile* labels) {
  RG_ASSIGN(*images, open_idx(images_path, kMagicImagesU8, "images", kMagicImagesF32));
  RG_ASSIGN(*labels, open_idx(labels_path, kMagicLabelsU8, "labels"));
  if (labels->dims[0] != images->dims[0]) {
    return Status::error("image and label counts differ: " + images_path + " holds " + std::to_string(images->dims[0]) +
                         " images, " + labels_path + " holds " + std::to_string(labels->dims[0]) + " labels");
  }
  return Status();
}

}  // namespace

Result<Dataset> load_idx_pair(const std::string& images_path, const std::string& labels_path,
                              const std::string& name, DType float_storage) {
  if (float_storage != DType::f32 && float_storage != DType::f16) {
    return Status::error(std::string("float IDX images are kept in f32 or f16, not ") + dtype_name(float_storage));
  }
  IdxFile images, labels;
  RG_TRY(open_idx_headers(images_path, labels_path, &images, &labels));
  Dataset out;
  out.name = name;
  out.sample_shape = Shape{images.dims[1], images.dims[2], 1};
  const DType kept = images.element_bytes == 1 ? DType::u8 : float_storage;
  RG_ASSIGN(out.samples, allocate_samples(out.sample_shape, images.dims[0], kept, name,
                                          images_path + " (byte images can be streamed from disk instead: --stream yes)"));
  if (kept == DType::u8) {
    RG_TRY(read_idx_data(images, out.samples.data<uint8_t>()));
  } else {
    RG_TRY(read_idx_floats(images, out.samples));
  }
  out.label_origin = idx_label_origin(labels);
  RG_ASSIGN(out.labels, read_idx_labels(labels, name, &out.num_classes));
  return out;
}

Result<Dataset> open_idx_pair_streamed(const std::string& images_path, const std::string& labels_path,
                                       const std::string& name, DType float_storage) {
  // The headers are read from the user's files, so every message names them, not a cache copy.
  IdxFile images, labels;
  RG_TRY(open_idx_headers(images_path, labels_path, &images, &labels));
  // Streaming reads records of bytes: float images are read into memory instead.
  if (images.element_bytes != 1) return load_idx_pair(images_path, labels_path, name, float_storage);
  RG_ASSIGN(const RawCopy raw, inflated_cache_copy(images_path));
  const int64_t expected = images.header_bytes + images.data_bytes;
  if (raw.data_bytes > expected) {
    return images.error("trailing bytes: " + std::to_string(raw.data_bytes - expected) + " bytes follow the " +
                        std::to_string(images.data_bytes) + " data bytes the header announces");
  }
  if (raw.data_bytes < expected) {
    return images.error("truncated data: expected " + std::to_string(images.data_bytes) +
                        " bytes after the header, found " + std::to_string(raw.data_bytes - images.header_bytes));
  }
  Dataset out;
  out.name = name;
  out.sample_shape = Shape{images.dims[1], images.dims[2], 1};
  RG_ASSIGN(out.source, RecordFile::open(raw.path, images.header_bytes, out.sample_shape.numel(), images.dims[0],
                                         images_path));
  out.label_origin = idx_label_origin(labels);
  RG_ASSIGN(out.labels, read_idx_labels(labels, name, &out.num_classes));
  return out;
}

}  // namespace rg
