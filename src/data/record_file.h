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
  // the file when it cannot be opened or is shorter than that.
  static Result<std::shared_ptr<const RecordFile>> open(const std::string& path, int64_t offset, int64_t row_bytes,
                                                        int64_t rows);
  ~RecordFile() override;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

  int64_t size() const override { return rows_; }
  int64_t row_bytes() const override { return row_bytes_; }
  Status read(int64_t row, uint8_t* out) const override;
  std::string describe() const override { return "streamed from " + path_; }

 private:
  RecordFile() = default;
  std::string path_;
  int fd_ = -1;
  int64_t offset_ = 0, row_bytes_ = 0, rows_ = 0;
};

// Whether `path` starts with the gzip magic bytes 1f 8b.
Result<bool> is_gzip_file(const std::string& path);
// The folder inflated copies go to: $RETROGRAD_CACHE, else $XDG_CACHE_HOME/retrograd, else
// $HOME/.cache/retrograd, else /tmp/retrograd-cache.
std::string cache_folder();
// `path` itself when it is not gzipped; otherwise a raw copy in cache_folder(), made on first
// use (inflated to a temporary name, then renamed) and named after the source's path, size and
// modification time, so a changed source gets a new copy. Errors name both files.
Result<std::string> inflated_cache_copy(const std::string& path);

}  // namespace rg
