// ParamArena: the layout, the two zeroed buffers, and the scope upload_param reads it from.
#include "opencl/model/cl_param_arena.h"

#include <algorithm>

#include "opencl/fill_copy.h"

namespace rg::ocl {

namespace {
thread_local const ParamArena* g_current = nullptr;  // a raw pointer: no destructor (thread_scratch.h)

Result<Buffer> zeroed(Device& device, int64_t floats, const std::string& what) {
  RG_ASSIGN(Buffer buffer, Buffer::allocate(device, floats * 4, what));
  if (floats > 0) RG_TRY(f32_fill_zero(device, buffer.f32()).status());
  return buffer;
}
}  // namespace

Result<std::unique_ptr<ParamArena>> ParamArena::create(Device& device, const std::vector<Param*>& params,
                                                       const std::string& what) {
  std::unique_ptr<ParamArena> arena(new ParamArena());
  const int64_t align = std::max<int64_t>(64, device.info().base_align_bytes) / 4;  // in floats
  for (Param* p : params) {
    if (p->value.numel() == 0 || arena->offsets_.count(p) != 0) continue;
    arena->order_.push_back(p);
    arena->offsets_[p] = arena->floats_;
    arena->floats_ += (p->value.numel() + align - 1) / align * align;
  }
  if (arena->floats_ == 0 || arena->floats_ * 4 > device.max_buffer_bytes() || arena->floats_ > int64_t{0xffffffff}) {
    return std::unique_ptr<ParamArena>();
  }
  RG_ASSIGN(arena->values_, zeroed(device, arena->floats_, what + ": the params' values"));
  RG_ASSIGN(arena->grads_, zeroed(device, arena->floats_, what + ": the params' gradients"));
  return arena;
}

int64_t ParamArena::offset_of(const Param* param) const {
  const auto found = offsets_.find(param);
  return found == offsets_.end() ? -1 : found->second;
}

Result<Buffer> ParamArena::allocate_like(const std::string& what) const {
  return zeroed(*values_.device(), floats_, what);
}

ParamArenaScope::ParamArenaScope(const ParamArena* arena) : before_(g_current) { g_current = arena; }
ParamArenaScope::~ParamArenaScope() { g_current = before_; }
const ParamArena* current_param_arena() { return g_current; }

}  // namespace rg::ocl
