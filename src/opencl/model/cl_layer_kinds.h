// The makers of each device layer kind, for cl_layer_makers (cl_layer.cpp). Each takes
// the CPU layer of its kind (a bug otherwise) after its init().
#pragma once

#include <memory>

#include "opencl/model/cl_layer.h"

namespace rg::ocl {

Result<std::unique_ptr<ClLayer>> make_cl_dense(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_activation(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_reshape(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_conv(Layer& layer, const Shape& input, Device& device);  // and conv_transpose
Result<std::unique_ptr<ClLayer>> make_cl_depthwise(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_batch_norm(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_rcl(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_pool2d(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_global_avgpool(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_upsample(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_dropout(Layer& layer, const Shape& input, Device& device);
// Merge layers (cl_merge_layers.h): `input` is the first input's shape.
Result<std::unique_ptr<ClLayer>> make_cl_add(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_concat(Layer& layer, const Shape& input, Device& device);

}  // namespace rg::ocl
