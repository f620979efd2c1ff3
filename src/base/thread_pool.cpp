// Fork-join pool: workers spin a little on the job counter, then sleep on a condition
// variable; a new job is published under mutex_ before the notify, so no wake-up is lost.
// The caller waits for the workers by polling.
#include "base/thread_pool.h"

#include <algorithm>

#include "base/check.h"
#include "base/float_mode.h"

namespace rg {

namespace {
// About 20-50 microseconds of polling before falling back to the OS.
constexpr int kSpinIterations = 4000;

inline void cpu_relax() {
#if defined(__i386__) || defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` for a while; true when it became true while spinning.
template <class Ready>
bool spin_until(Ready ready) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (ready()) return true;
    cpu_relax();
  }
  return ready();
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  RG_CHECK(threads >= 1, "thread count " << threads);
  chunks_.reserve(static_cast<size_t>(threads));
  for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  follow_denormals_on_this_thread();  // the caller runs a chunk too: the same float mode as the workers
  grain = std::max<int64_t>(grain, 1);
  const int64_t grains = (n + grain - 1) / grain;
  const int64_t parts = std::min<int64_t>(threads(), grains);
  if (parts <= 1) {
    body(0, n);
    return;
  }
  std::pair<int64_t, int64_t> first;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    chunks_.clear();
    for (int64_t p = 0; p < parts; ++p) {
      const int64_t begin = std::min(n, grains * p / parts * grain);
      const int64_t end = std::min(n, grains * (p + 1) / parts * grain);
      chunks_.emplace_back(begin, end);
    }
    first = chunks_[0];
    body_ = &body;
    pending_.store(static_cast<int>(parts) - 1);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  std::exception_ptr error;
  try {
    body(first.first, first.second);
  } catch (...) {  // the workers still run `body`: it must outlive them, so wait first
    error = std::current_exception();
  }
  // The caller has nothing else to do: it polls, then yields, but never sleeps, so a call
  // costs at most one OS wake-up (the worker's), not two.
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error) error = worker_error_;
    worker_error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker_loop(int index) {
  apply_denormals_on_this_thread();
  uint64_t seen = 0;
  for (;;) {
    auto has_job = [&] { return stopping_.load() || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(has_job)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, has_job);
    }
    if (stopping_.load()) return;
    std::pair<int64_t, int64_t> chunk{0, 0};
    const std::function<void(int64_t, int64_t)>* body = nullptr;
    bool mine = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen = generation_.load();
      mine = static_cast<size_t>(index) + 1 < chunks_.size();
      if (mine) {
        chunk = chunks_[static_cast<size_t>(index) + 1];
        body = body_;
      }
    }
    if (!mine) continue;  // fewer chunks than workers this time
    follow_denormals_on_this_thread();  // a set_denormals() since the last job
    try {
      (*body)(chunk.first, chunk.second);
    } catch (...) {  // an exception leaving a thread's function would end the process
      std::lock_guard<std::mutex> lock(mutex_);
      if (!worker_error_) worker_error_ = std::current_exception();
    }
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (pool != nullptr) {
    pool->parallel_for(n, grain, body);
  } else if (n > 0) {
    follow_denormals_on_this_thread();
    body(0, n);
  }
}

}  // namespace rg
