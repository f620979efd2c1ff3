// BatchPrefetcher: two slots used in turn. When next() hands out piece k (slot k % 2), the
// caller is done with piece k - 1, so the thread may fill piece k + 1 into slot (k + 1) % 2.
#include "data/batch_prefetch.h"

#include <algorithm>
#include <new>
#include <string>

#include "base/float_mode.h"

namespace rg {

Result<std::unique_ptr<BatchPrefetcher>> BatchPrefetcher::create(const Shape& sample, int64_t rows, bool ahead) {
  std::unique_ptr<BatchPrefetcher> p(new BatchPrefetcher());
  p->ahead_ = ahead;
  for (int s = 0; s < (ahead ? 2 : 1); ++s) {
    RG_ASSIGN(p->slots_[s].x, Tensor::zeros(sample.batched(rows), DType::f32, "input batch"));
    RG_ASSIGN(p->slots_[s].labels, Tensor::zeros(Shape{rows}, DType::i32, "label batch"));
  }
  if (ahead) p->worker_ = std::thread([raw = p.get()] { raw->work(); });
  return p;
}

int64_t BatchPrefetcher::buffer_bytes(const Shape& sample, int64_t rows, bool ahead) {
  const int64_t slot = rows * sample.numel() * static_cast<int64_t>(sizeof(float)) + rows * static_cast<int64_t>(sizeof(int32_t));
  return (ahead ? 2 : 1) * slot;
}

BatchPrefetcher::~BatchPrefetcher() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void BatchPrefetcher::start(const Dataset& data, const int32_t* order, int64_t n, int64_t batch, int64_t rows,
                            int part, int parts) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return filled_ >= allowed_; });  // nothing of the last epoch in flight
  data_ = &data;
  order_ = order;
  RG_CHECK(rows >= 1 && rows <= slots_[0].labels.numel() && batch >= 1, "pieces of " << rows << " rows");
  pieces_.clear();
  for (int64_t begin = 0; begin < n; begin += batch) {
    const RowRange mine = rank_rows(std::min(batch, n - begin), part, parts);
    const int64_t end = begin + mine.first + mine.count;
    for (int64_t at = begin + mine.first; at < end; at += rows) pieces_.emplace_back(at, std::min(rows, end - at));
  }
  taken_ = allowed_ = filled_ = 0;
  error_ = Status();
}

Status BatchPrefetcher::fill(int64_t piece, int slot, ThreadPool* pool) {
  const int64_t begin = pieces_[static_cast<size_t>(piece)].first, count = pieces_[static_cast<size_t>(piece)].second;
  float* x = slots_[slot].x.f32();
  int32_t* labels = slots_[slot].labels.data<int32_t>();
  if (pool == nullptr || !data_->in_memory()) return data_->gather(order_ + begin, count, x, labels);
  const int64_t row = data_->sample_shape.numel();
  std::mutex first_error_mutex;
  Status first_error;
  pool->parallel_for(count, 1, [&](int64_t r0, int64_t r1) {
    Status status = data_->gather(order_ + begin + r0, r1 - r0, x + r0 * row, labels + r0);
    if (status.ok()) return;
    std::lock_guard<std::mutex> lock(first_error_mutex);
    if (first_error.ok()) first_error = std::move(status);
  });
  return first_error;
}

void BatchPrefetcher::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || filled_ < allowed_; });
    if (stopping_) return;
    const int64_t piece = filled_;
    lock.unlock();
    // Gathering computes (generated images in doubles, u8 and f16 widened): under the same
    // float mode as the trainer's threads, reading ahead never changes a sample.
    follow_denormals_on_this_thread();
    Status status;
    try {
      status = fill(piece, static_cast<int>(piece % 2));
    } catch (const std::bad_alloc&) {  // leaving the thread would end the process; next() reports it
      status = Status::error("out of memory (std::bad_alloc) while gathering a batch (from sample " +
                             std::to_string(pieces_[static_cast<size_t>(piece)].first) + " of the epoch's order)");
    }
    lock.lock();
    if (!status.ok() && error_.ok()) error_ = status;
    filled_ = piece + 1;
    changed_.notify_all();
  }
}

Result<BatchPrefetcher::Piece> BatchPrefetcher::next(ThreadPool* pool) {
  const auto pieces = static_cast<int64_t>(pieces_.size());
  RG_CHECK(taken_ < pieces, "BatchPrefetcher: all " << pieces << " pieces were taken");
  const int64_t piece = taken_++;
  const int64_t count = pieces_[static_cast<size_t>(piece)].second;
  int slot = 0;
  if (ahead_) {
    std::unique_lock<std::mutex> lock(mutex_);
    allowed_ = std::max(allowed_, std::min(piece + 2, pieces));
    changed_.notify_all();
    changed_.wait(lock, [&] { return filled_ > piece; });
    if (!error_.ok()) return error_;
    slot = static_cast<int>(piece % 2);
  } else {
    RG_TRY(fill(piece, 0, pool));
  }
  return Piece{slots_[slot].x.rows(0, count), slots_[slot].labels.rows(0, count)};
}

}  // namespace rg
