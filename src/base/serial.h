// Little-endian binary writing and bounds-checked reading, for checkpoints and other
// files we write. Every read failure says what was being read and at which byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace rg {

class ByteWriter {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v);
  void u64(uint64_t v);
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v);
  void str(const std::string& s);  // u32 length + bytes
  void raw(const void* data, size_t size);
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class ByteReader {
 public:
  // `source` names the data in errors ("model.ckpt").
  ByteReader(const uint8_t* data, size_t size, std::string source) : data_(data), size_(size), source_(std::move(source)) {}

  Result<uint8_t> u8(const char* what);
  Result<uint32_t> u32(const char* what);
  Result<uint64_t> u64(const char* what);
  Result<int64_t> i64(const char* what);
  Result<double> f64(const char* what);
  Result<std::string> str(const char* what, size_t max_length);
  Status raw(void* out, size_t size, const char* what);

  size_t offset() const { return offset_; }
  size_t remaining() const { return size_ - offset_; }
  // "model.ckpt: at byte 1234: <message>"
  Status error(const std::string& message) const;

 private:
  Status need(size_t size, const char* what);
  const uint8_t* data_;
  size_t size_;
  std::string source_;
  size_t offset_ = 0;
};

// CRC-32 (zlib's) of a byte range.
uint32_t crc32_of(const uint8_t* data, size_t size);

// FNV-1a (64-bit) of the text as 16 hex digits: a short stable tag for file names and cache keys.
std::string fnv1a_hex(const std::string& text);
// FNV-1a (64-bit) continued over more bytes; from kFnv1aStart, the hash of a file read in
// pieces. Unlike a CRC it is not linear: a gzip file, which ends with its data's CRC-32, has a
// CRC-32 that can stay the same when the data changes (stored blocks), its FNV-1a does not.
constexpr uint64_t kFnv1aStart = 1469598103934665603ull;
uint64_t fnv1a_update(uint64_t hash, const uint8_t* data, size_t size);

// Reads a whole regular file (input_file.h's check: `what` it should be); the error names the path.
// With max_bytes >= 0 a larger file is refused before it is read (its size and the limit named),
// and so is one that grows past the limit while it is read (never more than max_bytes + 1 held).
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, const std::string& what = "a regular file",
                                             int64_t max_bytes = -1);
// Writing files: write_file_atomic in base/output_file.h.

}  // namespace rg
