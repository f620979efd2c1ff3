// A small fork-join pool. parallel_for splits [0, n) into one contiguous chunk per
// thread; the caller runs the first chunk. Kernels keep results independent of the
// split by giving every output element one owner and a fixed order of summation.
// Every thread that runs a chunk, the caller included, follows the process's float mode
// (base/float_mode.h) before it: the split never changes how subnormals are treated.
// Workers spin briefly before sleeping, and the caller polls rather than sleeps: a wake-up
// through the OS costs tens of microseconds on these VMs, as much as a small GEMM.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
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
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  std::vector<std::pair<int64_t, int64_t>> chunks_;  // chunk i+1 goes to worker i
  std::atomic<uint64_t> generation_{0};               // bumped (under mutex_) for each job
  std::atomic<int> pending_{0};                       // workers still running the job
  std::atomic<bool> stopping_{false};
  std::exception_ptr worker_error_;  // the first exception a worker's chunk threw (under mutex_)
};

// Number of logical CPUs (at least 1).
int hardware_threads();

// pool->parallel_for, or body(0, n) on the caller when there is no pool.
void parallel_for(ThreadPool* pool, int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body);

}  // namespace rg
