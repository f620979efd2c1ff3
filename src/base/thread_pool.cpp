// Fork-join pool: workers sleep on a condition variable between jobs.
#include "base/thread_pool.h"

#include <algorithm>

#include "base/check.h"

namespace rg {

ThreadPool::ThreadPool(int threads) {
  RG_CHECK(threads >= 1, "thread count " << threads);
  for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t grains = (n + grain - 1) / grain;
  const int64_t parts = std::min<int64_t>(threads(), grains);
  if (parts <= 1) {
    body(0, n);
    return;
  }
  std::vector<std::pair<int64_t, int64_t>> chunks;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t begin = std::min(n, grains * p / parts * grain);
    const int64_t end = std::min(n, grains * (p + 1) / parts * grain);
    chunks.emplace_back(begin, end);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    body_ = &body;
    chunks_ = chunks;
    pending_ = static_cast<int>(parts) - 1;
    ++generation_;
  }
  wake_.notify_all();
  body(chunks[0].first, chunks[0].second);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  body_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    std::pair<int64_t, int64_t> chunk;
    const std::function<void(int64_t, int64_t)>* body = nullptr;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      if (static_cast<size_t>(index) + 1 >= chunks_.size()) continue;  // no chunk for this worker this time
      chunk = chunks_[static_cast<size_t>(index) + 1];
      body = body_;
    }
    (*body)(chunk.first, chunk.second);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --pending_;
    }
    done_.notify_one();
  }
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace rg
