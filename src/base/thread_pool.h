// A small fork-join pool. parallel_for splits [0, n) into one contiguous chunk per
// thread; the caller runs the first chunk, worker i the chunk i + 1, and the caller takes
// over any chunk whose worker has not started it when the caller's own is done (a worker
// still asleep). Which thread runs a chunk never changes its edges: kernels keep results
// independent of the split by giving every output element one owner and a fixed order of
// summation.
// Every thread that runs a chunk, the caller included, follows the process's float mode
// (base/float_mode.h) before it: the split never changes how subnormals are treated.
// Workers poll for 500 us before sleeping, and the caller polls rather than sleeps: a wake-up
// through the OS costs tens of microseconds on these VMs, as much as a small GEMM. A job
// wakes only the workers it has chunks for, through a tree (the caller wakes two, each of
// them two more), so the caller pays for at most two wake-ups.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace rg {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);  // threads >= 1; 1 runs everything on the caller
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls body(begin, end) over disjoint chunks covering [0, n); returns when all are done.
  // Chunks are multiples of `grain` (except the last); work under 2 grains runs inline. An
  // exception a chunk throws (std::bad_alloc, say) is rethrown here, on the caller's thread,
  // once every chunk has ended: the first one thrown, the caller's own before the workers'.
  // Not reentrant: a chunk must not call parallel_for on the same pool.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

  // What the threads did while timing is on (train --profile: nn/layer_profile.h reads it around
  // each layer's phase), summed since the pool began: `region_seconds`, each parallel_for's wall
  // time from the job's start to its last chunk's end (one run inline too); `chunk_seconds`, its
  // chunks' own times summed over the threads that ran them. region x threads - chunk: the
  // threads' time spent waking, waiting for the slowest chunk, or idle beside an inline run.
  struct RegionTimes {
    double region_seconds = 0, chunk_seconds = 0;
  };
  void time_regions(bool on) { timing_ = on; }
  bool timing_regions() const { return timing_; }
  const RegionTimes& region_times() const { return times_; }

 private:
  // One worker's sleeping place, on its own cache line.
  struct alignas(64) Slot {
    std::mutex mutex;
    std::condition_variable wake;
    std::atomic<bool> asleep{false};
  };

  void worker_loop(int index);
  void wake_children(int index, int parts);  // index -1: the caller
  bool claim(int64_t chunk, uint64_t generation);
  void run_chunk(int64_t chunk);
  void count_region(std::chrono::steady_clock::time_point start, double chunk_seconds);

  std::vector<std::thread> workers_;
  std::unique_ptr<Slot[]> slots_;
  // The job, written by the caller before generation_ publishes it; read by a thread only
  // after it claimed a chunk (the caller cannot start the next job before that chunk ends).
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> chunks_;
  // claimed_[c] is 2g while chunk c of job g waits for a thread, 2g + 1 once one took it.
  std::unique_ptr<std::atomic<uint64_t>[]> claimed_;
  alignas(64) std::atomic<uint64_t> generation_{0};  // the current job's number
  std::atomic<int> parts_{0};                         // its chunk count (a hint for wake-ups)
  alignas(64) std::atomic<int64_t> done_{0};          // worker-run chunks of the job that ended
  std::atomic<bool> stopping_{false};
  std::mutex error_mutex_;
  std::exception_ptr worker_error_;  // the first exception a worker's chunk threw (under error_mutex_)
  // Timing (time_regions): set by the caller between jobs; each chunk's time is written by the
  // thread that ran it before its done_ count, read by the caller after.
  bool timing_ = false;
  std::unique_ptr<double[]> chunk_seconds_;
  RegionTimes times_;
};

// Number of logical CPUs (at least 1).
int hardware_threads();

// pool->parallel_for, or body(0, n) on the caller when there is no pool.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace rg
