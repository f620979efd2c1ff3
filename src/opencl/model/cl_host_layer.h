// Hybrid CPU+GPU: a layer of a device model run by its CPU Layer. Its input is read back from
// the device, its output sent to it (and the gradients likewise in backward); its params live
// on the device like any other's, so the one device optimizer updates them: the values are read
// back before each forward that follows an update, the gradients sent after backward. Every byte
// moved is counted in the model's TransferCounts.
#pragma once

#include <memory>

#include "opencl/model/cl_layer.h"

namespace rg::ocl {

// `layer` (initialised) on the CPU inside a device model; input and output per-sample shapes.
Result<std::unique_ptr<ClLayer>> make_cl_host_layer(Layer& layer, const Shape& input, const Shape& output,
                                                    Device& device);

}  // namespace rg::ocl
