// Little-endian encoding, bounds-checked decoding, CRC-32 and reading files (output_file.cpp writes them).
#include "base/serial.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/input_file.h"
#include "base/memory.h"

namespace rg {

void ByteWriter::u32(uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void ByteWriter::u64(uint64_t v) {
  for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void ByteWriter::f64(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  u64(bits);
}

void ByteWriter::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  raw(s.data(), s.size());
}

void ByteWriter::raw(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), p, p + size);
}

Status ByteReader::error(const std::string& message) const {
  return Status::error(source_ + ": at byte " + std::to_string(offset_) + ": " + message);
}

Status ByteReader::need(size_t size, const char* what) {
  if (size > size_ - offset_) {
    return error(std::string("the data ends while reading ") + what + " (" + std::to_string(size) + " bytes needed, " +
                 std::to_string(size_ - offset_) + " left)");
  }
  return Status();
}

Result<uint8_t> ByteReader::u8(const char* what) {
  RG_TRY(need(1, what));
  return data_[offset_++];
}

Result<uint32_t> ByteReader::u32(const char* what) {
  RG_TRY(need(4, what));
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(data_[offset_ + i]) << (8 * i);
  offset_ += 4;
  return v;
}

Result<uint64_t> ByteReader::u64(const char* what) {
  RG_TRY(need(8, what));
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(data_[offset_ + i]) << (8 * i);
  offset_ += 8;
  return v;
}

Result<int64_t> ByteReader::i64(const char* what) {
  RG_ASSIGN(const uint64_t v, u64(what));
  return static_cast<int64_t>(v);
}

Result<double> ByteReader::f64(const char* what) {
  RG_ASSIGN(const uint64_t bits, u64(what));
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}

Result<std::string> ByteReader::str(const char* what, size_t max_length) {
  RG_ASSIGN(const uint32_t length, u32(what));
  if (length > max_length) {
    return error(std::string(what) + " claims " + std::to_string(length) + " bytes, more than the " +
                 std::to_string(max_length) + " allowed");
  }
  RG_TRY(need(length, what));
  std::string s(reinterpret_cast<const char*>(data_ + offset_), length);
  offset_ += length;
  return s;
}

Status ByteReader::raw(void* out, size_t size, const char* what) {
  RG_TRY(need(size, what));
  std::memcpy(out, data_ + offset_, size);
  offset_ += size;
  return Status();
}

uint32_t crc32_of(const uint8_t* data, size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  while (size > 0) {  // zlib takes uInt lengths
    const uInt chunk = size > (1u << 30) ? (1u << 30) : static_cast<uInt>(size);
    crc = crc32(crc, data, chunk);
    data += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

uint64_t fnv1a_update(uint64_t hash, const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size; ++i) hash = (hash ^ data[i]) * 1099511628211ull;
  return hash;
}

std::string fnv1a_hex(const std::string& text) {
  const uint64_t h = fnv1a_update(kFnv1aStart, reinterpret_cast<const uint8_t*>(text.data()), text.size());
  char tag[17];
  std::snprintf(tag, sizeof tag, "%016llx", static_cast<unsigned long long>(h));
  return tag;
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, const std::string& what, int64_t max_bytes) {
  RG_ASSIGN(const InputFile in, open_input_file(path, what));
  auto too_large = [&](const std::string& size) {
    return Status::error(path + ": " + size + ", more than the " + format_bytes(max_bytes) + " " + what + " may hold");
  };
  if (max_bytes >= 0 && in.size > max_bytes) return too_large(format_bytes(in.size));
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  size_t got;
  // To the end, not to the size stat gave: a file may grow meanwhile, and /proc's say 0.
  while ((got = std::fread(buffer, 1, sizeof buffer, in.file.get())) > 0) {
    bytes.insert(bytes.end(), buffer, buffer + got);
    if (max_bytes >= 0 && static_cast<int64_t>(bytes.size()) > max_bytes) return too_large("grown while read");
  }
  if (std::ferror(in.file.get()) != 0) return Status::error(path + ": read error: " + std::strerror(errno));
  return bytes;
}

}  // namespace rg
