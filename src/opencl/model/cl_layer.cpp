// Device params, and the device makers of the layer kinds checked against nn's rows.
#include "opencl/model/cl_layer.h"

#include <set>

#include "nn/layer_registry.h"
#include "opencl/model/cl_host_layer.h"
#include "opencl/model/cl_param_arena.h"

namespace rg::ocl {

Result<ClParam> upload_param(Device& device, Param& param, bool trained) {
  RG_CHECK(param.value.dtype() == DType::f32, "" << param.name << " is " << dtype_name(param.value.dtype())
                                                          << "; the device trains f32 params");
  ClParam p;
  p.host = &param;
  const int64_t bytes = param.value.numel() * 4;
  const ParamArena* arena = trained ? current_param_arena() : nullptr;
  const int64_t at = arena != nullptr && arena->values().device() == &device ? arena->offset_of(&param) : -1;
  if (at >= 0) {  // the model's arena: views of its buffers
    RG_ASSIGN(p.value, Buffer::view(arena->values(), at * 4, bytes, param.name));
    RG_ASSIGN(p.grad, Buffer::view(arena->grads(), at * 4, bytes, param.name + ".grad"));
  } else {
    RG_ASSIGN(p.value, Buffer::allocate(device, bytes, param.name));
    if (trained) {
      RG_ASSIGN(p.grad, Buffer::allocate(device, bytes, param.name + ".grad"));
    }
  }
  RG_TRY(write_param(p));
  return p;
}

Status write_param(const ClParam& param) {
  if (param.numel() == 0) return Status();
  return write_buffer(param.value, 0, param.host->value.f32(), param.numel() * 4);
}

Status read_param(const ClParam& param) {
  if (param.numel() == 0) return Status();
  return read_buffer(param.value, 0, param.host->value.f32(), param.numel() * 4);
}

namespace {
std::vector<ClLayerMaker>& registered_makers() {
  static std::vector<ClLayerMaker> makers;  // made on first use: registration runs at start-up
  return makers;
}
}  // namespace

bool register_cl_layer_makers(std::initializer_list<const char*> kinds, ClLayerMake make) {
  for (const char* kind : kinds) registered_makers().push_back({kind, make});
  return true;
}

const std::vector<ClLayerMaker>& cl_layer_makers() { return registered_makers(); }

Status check_cl_layer_makers(const std::vector<ClLayerMaker>& makers) {
  std::string errors;
  std::set<std::string> seen;
  for (const ClLayerMaker& maker : makers) {
    const LayerKind* row = find_layer_kind(maker.kind);
    const std::string line = std::string("\n  ") + maker.kind + ": ";
    if (row == nullptr) errors += line + "a maker for no layer kind";
    if (row != nullptr && row->device != DeviceRun::own) {
      errors += line + "a maker, but its row does not say DeviceRun::own";
    }
    if (!seen.insert(maker.kind).second) errors += line + "a second maker";
  }
  for (const LayerKind& row : layer_kinds()) {
    if (row.device == DeviceRun::own && seen.count(row.name) == 0) {
      errors += "\n  " + row.name + ": its row says it runs on the device, but no maker is registered";
    }
  }
  if (errors.empty()) return Status();
  return Status::error("device layer makers (registered by opencl/model/cl_*.cpp) against the layer kinds:" + errors);
}

Result<std::unique_ptr<ClLayer>> make_cl_layer(Layer& layer, const Shape& input, const Shape& output, Device& device,
                                               bool on_host) {
  if (on_host || layer_kind_of(layer).device == DeviceRun::host) {
    return make_cl_host_layer(layer, input, output, device);
  }
  for (const ClLayerMaker& maker : cl_layer_makers()) {
    if (layer.kind() == maker.kind) return maker.make(layer, input, device);
  }
  return Status::error(device.label() + ": layer " + layer.name() + " (" + layer.kind() +
                       ") has no device maker registered, though its row says it runs on the device");
}

}  // namespace rg::ocl
