// Fork-join pool: workers spin a little on the job counter, then sleep on their own
// condition variable. A job is published by one sequentially consistent store of its number;
// a worker marks itself asleep (sequentially consistent too) before its last check, so either
// it sees the job or the waker sees it asleep: no wake-up is lost. Each chunk is claimed by a
// compare-and-swap, by its worker or by the caller; the caller waits for the workers by polling.
#include "base/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "base/check.h"
#include "base/elapsed.h"
#include "base/float_mode.h"
#include "base/thread_scratch.h"

namespace rg {

namespace {
// The caller's polls for its workers before it yields between polls (it never sleeps).
constexpr int kCallerPolls = 4000;
// A worker polls for the next job this long before it sleeps on the OS. A training step's serial
// stretches (a small layer, the loss, the update) last tens to hundreds of microseconds, and
// waking a sleeping worker cost 10-30 us a region on the Xeon VM (bench/pool_bench.sh, "gap",
// bench/RESULTS.md 2026-12-02); 4000 polls, the rule before, lasted 20-100 us there.
constexpr auto kWorkerSpin = std::chrono::microseconds(500);

inline void cpu_relax() {
#if defined(__i386__) || defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

// Polls `ready` for kWorkerSpin; true when it became true while polling. It yields every 256
// polls: a worker woken onto the caller's core (the scheduler may put it there) would otherwise
// keep the caller off it for the whole spin (~100 us a fork-join at 2 threads on the VM, 1 in 10).
template <class Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kWorkerSpin;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    if (i % 256 != 0) {
      cpu_relax();
    } else if (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    } else {
      return ready();
    }
  }
}
}  // namespace

ThreadPool::ThreadPool(int threads) {
  RG_CHECK(threads >= 1, "thread count " << threads);
  chunks_.reserve(static_cast<size_t>(threads));
  slots_ = std::make_unique<Slot[]>(static_cast<size_t>(threads));
  claimed_ = std::make_unique<std::atomic<uint64_t>[]>(static_cast<size_t>(threads));
  chunk_seconds_ = std::make_unique<double[]>(static_cast<size_t>(threads));
  for (int c = 0; c < threads; ++c) claimed_[static_cast<size_t>(c)].store(1);  // no job yet: taken
  for (int i = 0; i + 1 < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  for (size_t i = 0; i < workers_.size(); ++i) {
    { std::lock_guard<std::mutex> lock(slots_[i].mutex); }  // a worker between its check and its wait
    slots_[i].wake.notify_one();
  }
  for (auto& worker : workers_) worker.join();
}

// Worker `index` (-1: the caller) wakes workers 2 index + 2 and 2 index + 3 where the job has
// chunks for them and they sleep. `parts` may be a later job's (a worker late to its job):
// then a wake-up is missed or spare, and the caller runs a chunk nobody started.
void ThreadPool::wake_children(int index, int parts) {
  for (int child = 2 * index + 2; child <= 2 * index + 3 && child + 1 < parts; ++child) {
    Slot& slot = slots_[static_cast<size_t>(child)];
    if (!slot.asleep.load()) continue;  // spinning: it sees the job by itself
    { std::lock_guard<std::mutex> lock(slot.mutex); }  // it is inside wait() or sees the job
    slot.wake.notify_one();
  }
}

void ThreadPool::count_region(std::chrono::steady_clock::time_point start, double chunk_seconds) {
  times_.region_seconds += seconds_since(start);
  times_.chunk_seconds += chunk_seconds;
}

bool ThreadPool::claim(int64_t chunk, uint64_t generation) {
  uint64_t waiting = 2 * generation;
  return claimed_[static_cast<size_t>(chunk)].compare_exchange_strong(waiting, waiting + 1, std::memory_order_acq_rel);
}

void ThreadPool::run_chunk(int64_t chunk) {
  const auto [begin, end] = chunks_[static_cast<size_t>(chunk)];
  if (!timing_) {
    (*body_)(begin, end);
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  (*body_)(begin, end);  // one that throws keeps 0 s: the job's error is what counts then
  chunk_seconds_[static_cast<size_t>(chunk)] = seconds_since(start);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const auto start = timing_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  follow_denormals_on_this_thread();  // the caller runs a chunk too: the same float mode as the workers
  grain = std::max<int64_t>(grain, 1);
  const int64_t grains = (n + grain - 1) / grain;
  const int parts = static_cast<int>(std::min<int64_t>(threads(), grains));
  if (parts <= 1) {
    body(0, n);
    if (timing_) count_region(start, seconds_since(start));
    return;
  }
  const uint64_t generation = generation_.load(std::memory_order_relaxed) + 1;
  chunks_.clear();
  for (int64_t p = 0; p < parts; ++p) {
    chunks_.emplace_back(std::min(n, grains * p / parts * grain), std::min(n, grains * (p + 1) / parts * grain));
    claimed_[static_cast<size_t>(p)].store(2 * generation, std::memory_order_relaxed);
    chunk_seconds_[static_cast<size_t>(p)] = 0;
  }
  body_ = &body;
  done_.store(0, std::memory_order_relaxed);
  parts_.store(parts, std::memory_order_relaxed);
  generation_.store(generation);  // sequentially consistent: against each Slot::asleep
  wake_children(-1, parts);
  std::exception_ptr error;
  int64_t by_workers = parts - 1;
  for (int64_t c = 0; c < parts; ++c) {  // chunk 0, then from the last: the latest workers' chunks
    const int64_t chunk = c == 0 ? 0 : parts - c;
    if (chunk > 0 && !claim(chunk, generation)) continue;
    by_workers -= chunk > 0;
    try {
      run_chunk(chunk);
    } catch (...) {  // the workers still run `body`: it must outlive them, so wait first
      if (!error) error = std::current_exception();
    }
  }
  // The caller has nothing else to do: it polls, then yields, but never sleeps.
  for (int i = 0; done_.load(std::memory_order_acquire) != by_workers; ++i) {
    if (i < kCallerPolls) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
  if (timing_) count_region(start, std::accumulate(chunk_seconds_.get(), chunk_seconds_.get() + parts, 0.0));
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error) error = worker_error_;
    worker_error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker_loop(int index) {
  apply_denormals_on_this_thread();
  Slot& slot = slots_[static_cast<size_t>(index)];
  uint64_t seen = 0;
  for (;;) {
    auto has_job = [&] { return stopping_.load() || generation_.load() != seen; };
    if (!spin_until(has_job)) {
      std::unique_lock<std::mutex> lock(slot.mutex);
      slot.asleep.store(true);  // sequentially consistent: the caller's store of the job or this
      slot.wake.wait(lock, has_job);
      slot.asleep.store(false);
    }
    if (stopping_.load()) {
      release_thread_scratch();  // not at thread exit: see base/thread_scratch.h
      return;
    }
    seen = generation_.load(std::memory_order_acquire);
    wake_children(index, parts_.load(std::memory_order_relaxed));
    if (!claim(index + 1, seen)) continue;  // no chunk for this worker, or the caller took it
    follow_denormals_on_this_thread();  // a set_denormals() since the last job
    try {
      run_chunk(index + 1);
    } catch (...) {  // an exception leaving a thread's function would end the process
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!worker_error_) worker_error_ = std::current_exception();
    }
    done_.fetch_add(1, std::memory_order_acq_rel);
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
