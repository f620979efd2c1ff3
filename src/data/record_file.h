// Samples that stay on disk: fixed-size records at an offset of a file, read one at a time
// with pread (any order, any thread), so a dataset larger than memory trains in bounded
// memory. Gzipped files are inflated once into a cache folder first (inflated_cache_copy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/dataset.h"

namespace rg {

class RecordFile final : public SampleSource {
 public:
  // `rows` records of `row_bytes` from byte `offset` of the raw file `path`; the error names
  // the file when it cannot be opened or is shorter than that. `shown_as`: the user's file
  // that `path` is a copy of (an inflated .gz), named first in every message; empty: `path`.
  static Result<std::shared_ptr<const RecordFile>> open(const std::string& path, int64_t offset, int64_t row_bytes,
                                                        int64_t rows, const std::string& shown_as = "");
  ~RecordFile() override;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

  int64_t size() const override { return rows_; }
  int64_t row_bytes() const override { return row_bytes_; }
  Status read(int64_t row, uint8_t* out) const override;
  std::string describe() const override { return "streamed from " + name_; }

 private:
  RecordFile() = default;
  std::string path_;
  std::string name_;  // for messages: "a.gz (read from its inflated copy CACHE)", or the path
  int fd_ = -1;
  int64_t offset_ = 0, row_bytes_ = 0, rows_ = 0;
};

// Whether `path` starts with the gzip magic bytes 1f 8b.
Result<bool> is_gzip_file(const std::string& path);
// Where a dataset file's raw bytes are read: the file itself, or its inflated copy.
struct RawCopy {
  std::string path;
  int64_t data_bytes = 0;  // the raw bytes at the start of `path` (a copy ends with a stamp after them)
};
// `path` itself when it is not gzipped; otherwise a raw copy in cache_folder() (base/files.h), made on first
// use (inflated to a temporary name, stamped, then renamed). The copy is named after the
// source's content (a 64-bit FNV-1a hash of its bytes and its size, read once, far cheaper
// than inflating), so a replaced source gets a new copy whatever its name, size or time. The
// stamp at the copy's end records the source's hash and size and the data's size: a copy cut
// short, replaced or written by something else is made again. Errors name the user's file
// and, where at fault, the cache.
Result<RawCopy> inflated_cache_copy(const std::string& path);

}  // namespace rg
