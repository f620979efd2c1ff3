// An Int8Model (quant/int8_model.h) run on an OpenCL device: its plan's stages on device
// buffers, with the CPU's bits wherever the stage is int8 (qs8.cl's kernels are bit-exact):
//   quantize / dequantize   qs8_quantize / qs8_dequantize
//   gemm                    qs8_im2col (padding reads as the input's zero point; none for a
//                           pointwise conv or dense) + qs8_gemm on the unpacked weights, then
//                           qs8_max_pool when the CPU fused a 2x2 pooling into the conv
//   max_pool                qs8_max_pool
//   add                     qs8_add (a graph model's sum of two int8 stages)
//   f32                     the layer's device f32 layer (make_cl_layer): its own rounding,
//                           so near the CPU's but not always its bits
// Each stage reads the stages its plan names (a graph model's may be any earlier one); the f32
// stage of a concat (or of an add of more than two) is refused by create for now, naming it.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "nn/executor.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "quant/int8_model.h"
#include "tensor/tensor.h"

namespace rg::ocl {

// An Executor (nn/executor.h) of itself: eval and the tests score it as any other.
class ClInt8Model : public Executor {
 public:
  ~ClInt8Model() override;
  // Uploads the plan's weights (f32 layers: their values now; the model must outlive this).
  // An f32 layer with no device version is an error naming it.
  static Result<std::unique_ptr<ClInt8Model>> create(const Int8Model& model, Device& device);

  // The f32 model its Int8Model was made from; "int8"; "int8 (7 of 8 computing layers)"; the device.
  const Model& model() const override { return int8_->source(); }
  std::string storage() const override { return "int8"; }
  std::string description() const override;
  std::string place() const override;
  // Device buffers for batches of up to `batch` samples; what they take (and on the host, the
  // output forward returns).
  Status reserve(int64_t batch) override;
  ExecutorBytes reserved_bytes(int64_t rows) const override;
  // x [n, input...] f32 (n <= the reserved batch) -> the model's output [n, output...] f32, a
  // new host tensor; blocks until the device is done.
  Result<Tensor> forward(const Tensor& x) override;

  // Device bytes of the weights (int8 weights, int32 bias and requantization; f32 layers' params).
  int64_t weight_bytes() const override;
  // Device bytes of the input, the stages' outputs and the scratch for the reserved batch.
  int64_t buffer_bytes() const;

 private:
  struct Stage;
  explicit ClInt8Model(Device& device);  // out of line: Stage is complete there only
  // xs: the outputs of the stages it reads (Int8StagePlan::inputs), in order.
  Status run(Stage& stage, int64_t n, const std::vector<DeviceSpan>& xs, DeviceSpan y);

  // The scratch of the largest stage for batches of `batch`: the im2col patches and a fused
  // pooling's input (int8 bytes), the f32 layers' workspace (f32 elements).
  struct Scratch {
    int64_t patches = 0, pre_pool = 0, workspace = 0;
  };
  Scratch scratch(int64_t batch) const;

  Device& device_;
  const Int8Model* int8_ = nullptr;
  Shape input_shape_;
  std::vector<std::unique_ptr<Stage>> stages_;
  Buffer input_;                 // f32 [batch, input...]
  Buffer patches_, pre_pool_;    // int8 scratch: the largest im2col [batch * patches, k]; a fused pooling's input
  Buffer workspace_;             // f32 scratch of the f32 layers
  int64_t workspace_elements_ = 0;
  int64_t reserved_ = 0;
};

}  // namespace rg::ocl
