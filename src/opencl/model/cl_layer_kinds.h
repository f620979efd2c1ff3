// The makers of each device layer kind, for make_cl_layer's table (cl_layer.cpp). Each takes
// the CPU layer of its kind (a bug otherwise) after its init().
#pragma once

#include <memory>

#include "opencl/model/cl_layer.h"

namespace rg::ocl {

Result<std::unique_ptr<ClLayer>> make_cl_dense(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_activation(Layer& layer, const Shape& input, Device& device);
Result<std::unique_ptr<ClLayer>> make_cl_reshape(Layer& layer, const Shape& input, Device& device);

}  // namespace rg::ocl
