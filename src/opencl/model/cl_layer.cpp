// Device params and the table from layer kinds to their device makers.
#include "opencl/model/cl_layer.h"

#include "opencl/model/cl_layer_kinds.h"

namespace rg::ocl {

Result<ClParam> upload_param(Device& device, Param& param, bool trained) {
  RG_CHECK(param.value.dtype() == DType::f32, "" << param.name << " is " << dtype_name(param.value.dtype())
                                                          << "; the device trains f32 params");
  ClParam p;
  p.host = &param;
  const int64_t bytes = param.value.numel() * 4;
  RG_ASSIGN(p.value, Buffer::allocate(device, bytes, param.name));
  if (trained) {
    RG_ASSIGN(p.grad, Buffer::allocate(device, bytes, param.name + ".grad"));
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
struct ClLayerKind {
  const char* name;
  Result<std::unique_ptr<ClLayer>> (*make)(Layer& layer, const Shape& input, Device& device);
};

const ClLayerKind kClLayerKinds[] = {
    {"dense", make_cl_dense},
    {"relu", make_cl_activation},
    {"leaky_relu", make_cl_activation},
    {"sigmoid", make_cl_activation},
    {"tanh", make_cl_activation},
    {"softmax", make_cl_activation},
    {"flatten", make_cl_reshape},
    {"reshape", make_cl_reshape},
    {"conv", make_cl_conv},
    {"conv_transpose", make_cl_conv},
    {"batchnorm", make_cl_batch_norm},
    {"rcl", make_cl_rcl},
    {"maxpool", make_cl_pool2d},
    {"avgpool", make_cl_pool2d},
    {"global_avgpool", make_cl_global_avgpool},
    {"upsample", make_cl_upsample},
    {"dropout", make_cl_dropout},
};
}  // namespace

Result<std::unique_ptr<ClLayer>> make_cl_layer(Layer& layer, const Shape& input, Device& device) {
  for (const ClLayerKind& kind : kClLayerKinds) {
    if (layer.kind() == kind.name) return kind.make(layer, input, device);
  }
  std::string known;
  for (const std::string& name : cl_layer_kinds()) known += (known.empty() ? "" : ", ") + name;
  return Status::error(device.label() + ": layer " + layer.name() + " (" + layer.kind() + ") has no OpenCL version yet (there are: " +
                       known + "); train this model on the CPU");
}

std::vector<std::string> cl_layer_kinds() {
  std::vector<std::string> names;
  for (const ClLayerKind& kind : kClLayerKinds) names.push_back(kind.name);
  return names;
}

}  // namespace rg::ocl
