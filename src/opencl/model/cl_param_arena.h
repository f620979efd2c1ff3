// A device model's trained params in two buffers, their values and their gradients, each param a
// view (Buffer::view) at an aligned offset, so that an optimizer updates all of them in one launch
// (ClOptimizer; resnet20's update took 65 launches a step, one a param). ClModel::create makes it
// before its layers, whose upload_param takes each param's views from it (ParamArenaScope).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "nn/layer.h"
#include "opencl/buffer.h"
#include "opencl/device.h"

namespace rg::ocl {

class ParamArena {
 public:
  // Room for `params` in this order (those with no values left out), each at a multiple of the
  // device's sub-buffer alignment (at least 64 bytes); both buffers zeroed, so the padding
  // between params stays 0 under any update of the whole buffer. `what` names the model. Null
  // (no arena: a buffer a param) where there is no param, or one buffer would pass the device's
  // largest allocation or the kernels' 2^32 - 1 elements.
  static Result<std::unique_ptr<ParamArena>> create(Device& device, const std::vector<Param*>& params,
                                                    const std::string& what);

  // The float offset of `param`'s value (and gradient), or -1 when it is not here.
  int64_t offset_of(const Param* param) const;
  const std::vector<Param*>& params() const { return order_; }  // in their offsets' order
  int64_t floats() const { return floats_; }
  const Buffer& values() const { return values_; }
  const Buffer& grads() const { return grads_; }
  // A zeroed buffer of the same length, for state laid out as the params (an optimizer's).
  Result<Buffer> allocate_like(const std::string& what) const;

 private:
  std::vector<Param*> order_;
  std::map<const Param*, int64_t> offsets_;
  int64_t floats_ = 0;
  Buffer values_, grads_;
};

// While one lives, upload_param on this thread places the trained params `arena` holds in it.
class ParamArenaScope {
 public:
  explicit ParamArenaScope(const ParamArena* arena);
  ~ParamArenaScope();
  ParamArenaScope(const ParamArenaScope&) = delete;
  ParamArenaScope& operator=(const ParamArenaScope&) = delete;

 private:
  const ParamArena* before_;
};
const ParamArena* current_param_arena();

}  // namespace rg::ocl
