// Per-thread scratch objects without thread_local destructors: see thread_scratch.h for why.
#include "base/thread_scratch.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

namespace rg {
namespace {

using ScratchList = std::vector<std::unique_ptr<detail::ScratchObject>>;

// Every thread's list, so that a thread's objects stay reachable (leak checkers) until it
// releases them. Never destroyed: a static's destructor could run while a thread still works.
struct Registry {
  std::mutex mutex;
  std::vector<ScratchList*> lists;
};
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

std::atomic<int> g_keys{0};
thread_local ScratchList* t_list = nullptr;  // a raw pointer: nothing for Windows' TLS teardown

}  // namespace

ThreadScratchKey::ThreadScratchKey() : index_(g_keys.fetch_add(1)) {}

namespace detail {
std::unique_ptr<ScratchObject>& thread_scratch_slot(const ThreadScratchKey& key) {
  if (t_list == nullptr) {
    auto list = std::make_unique<ScratchList>();
    std::lock_guard<std::mutex> lock(registry().mutex);
    registry().lists.push_back(list.get());
    t_list = list.release();
  }
  const size_t index = static_cast<size_t>(key.index());
  if (t_list->size() <= index) t_list->resize(index + 1);
  return (*t_list)[index];
}
}  // namespace detail

void release_thread_scratch() {
  if (t_list == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto& lists = registry().lists;
    lists.erase(std::find(lists.begin(), lists.end(), t_list));
  }
  delete t_list;
  t_list = nullptr;
}

}  // namespace rg
