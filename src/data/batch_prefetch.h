// The pieces (micro-batches) of an epoch gathered ahead of the trainer: for a dataset whose
// samples are not in memory (read from disk or generated) a thread of its own fills the next
// piece while the trainer works on this one; in-memory data is gathered when asked for, its
// rows split over the caller's pool (each thread gathers the samples the layers' per-sample
// splits then give it: parallel_for's chunks of the batch, base/thread_pool.h).
// Shapes: a piece is x [count, sample...] f32 and labels [count] i32, count <= rows.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "base/thread_pool.h"
#include "data/dataset.h"
#include "dist/rank_rows.h"

namespace rg {

class BatchPrefetcher {
 public:
  struct Piece {
    Tensor x;       // [count, sample...] f32
    Tensor labels;  // [count] i32
  };

  // Buffers for pieces of up to `rows` samples of `sample` (two when `ahead`), counted.
  static Result<std::unique_ptr<BatchPrefetcher>> create(const Shape& sample, int64_t rows, bool ahead);
  // Bytes create() allocates.
  static int64_t buffer_bytes(const Shape& sample, int64_t rows, bool ahead);
  ~BatchPrefetcher();
  BatchPrefetcher(const BatchPrefetcher&) = delete;
  BatchPrefetcher& operator=(const BatchPrefetcher&) = delete;

  // Starts on `data`'s rows order[0..n): batches of `batch` (the last may be shorter), each cut
  // into pieces of at most `rows`. In a data-parallel run (dist/rank_rows.h) only part `part`
  // of `parts` of each batch is this process's: only its rows are read.
  // `data` and `order` must stay alive and unchanged until the last piece is taken or the next
  // start(). Pieces still being filled from an earlier start are waited for.
  void start(const Dataset& data, const int32_t* order, int64_t n, int64_t batch, int64_t rows, int part = 0,
             int parts = 1);
  // The next piece, valid until the next call; the error says which read failed. `pool` (may be
  // null) gathers an in-memory piece.
  Result<Piece> next(ThreadPool* pool = nullptr);

 private:
  BatchPrefetcher() = default;
  Status fill(int64_t piece, int slot, ThreadPool* pool = nullptr);  // piece `piece` into slots_[slot]
  void work();  // the thread: fills pieces as they are allowed

  Piece slots_[2];
  bool ahead_ = false;
  const Dataset* data_ = nullptr;
  const int32_t* order_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> pieces_;  // (first row in order, count) of each piece
  int64_t taken_ = 0;  // pieces handed out by next()

  // Shared with the thread, under mutex_: it fills pieces [filled_, allowed_).
  std::mutex mutex_;
  std::condition_variable changed_;
  int64_t allowed_ = 0, filled_ = 0;
  Status error_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace rg
