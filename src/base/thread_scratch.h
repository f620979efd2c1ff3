// Per-thread scratch objects for kernels (packing buffers and the like), kept without a C++
// thread_local that has a destructor. MinGW's emulated TLS frees a thread_local's storage before
// that object's destructor runs at thread exit (mingw-w64 bugs 527 and 859, GCC bug 80816): the
// 32-bit Windows build crashed about one run in four in a std::vector<float>'s destructor as a
// ThreadPool's workers ended. Here a thread's objects hang off a thread_local raw pointer (nothing
// to destroy) and a process-wide list; a ThreadPool worker frees its own as it ends
// (release_thread_scratch), any other thread's stay, reachable, until the process ends.
//
//   static const ThreadScratchKey key;  // one per call site
//   std::vector<float>& buffer = thread_scratch<std::vector<float>>(key);
#pragma once

#include <memory>

namespace rg {

// Names one scratch object of each thread. Only as a static: keys are numbered for the process.
class ThreadScratchKey {
 public:
  ThreadScratchKey();
  int index() const { return index_; }

 private:
  int index_;
};

namespace detail {
struct ScratchObject {
  virtual ~ScratchObject() = default;
};
template <typename T>
struct ScratchHolder final : ScratchObject {
  T value{};
};
// The calling thread's slot for `key` (its list made and listed at the thread's first call).
std::unique_ptr<ScratchObject>& thread_scratch_slot(const ThreadScratchKey& key);
}  // namespace detail

// The calling thread's T for `key`, value-initialised at its first use on this thread. One key
// always with one T.
template <typename T>
T& thread_scratch(const ThreadScratchKey& key) {
  std::unique_ptr<detail::ScratchObject>& slot = detail::thread_scratch_slot(key);
  if (!slot) slot = std::make_unique<detail::ScratchHolder<T>>();
  return static_cast<detail::ScratchHolder<T>*>(slot.get())->value;
}

// Frees the calling thread's scratch objects (a thread about to end; a later use makes new ones).
void release_thread_scratch();

}  // namespace rg
