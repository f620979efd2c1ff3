// The GAN's networks on an OpenCL device: both models and their optimizers there, run by the
// device's step runners (train/step_runner_device.cpp), so that gan.cpp's one step keeps G's
// samples on the device feeding D directly and D's input gradient landing in G's output
// gradient there; only the logits [n, 1] come back, for the BCE losses computed on the host.
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "train/gan.h"

namespace rg {

GanTrainer::~GanTrainer() = default;

Status GanTrainer::prepare_device(const LayerContext& inference) {
  ocl::Device& device = *options_.device;
  RG_ASSIGN(g_cl_, ocl::ClModel::create(g_, device));
  RG_ASSIGN(d_cl_, ocl::ClModel::create(d_, device));
  RG_ASSIGN(ocl::ClOptimizer g_opt, ocl::ClOptimizer::create(device, g_opt_, g_cl_->params(), g_cl_->param_arena()));
  RG_ASSIGN(ocl::ClOptimizer d_opt, ocl::ClOptimizer::create(device, d_opt_, d_cl_->params(), d_cl_->param_arena()));
  g_cl_opt_ = std::make_unique<ocl::ClOptimizer>(std::move(g_opt));
  d_cl_opt_ = std::make_unique<ocl::ClOptimizer>(std::move(d_opt));
  RG_TRY(g_cl_->reserve(buffer_rows_).with_context("the generator's device buffers: "));
  RG_TRY(d_cl_->reserve(buffer_rows_).with_context("the discriminator's device buffers: "));
  RG_ASSIGN(samples_, Tensor::zeros(g_.output_shape().batched(buffer_rows_), DType::f32,
                                    "the generator's samples read back"));
  // The losses are the GAN's own (bce, gan.cpp), on the host: the runners' loss_on_host.
  g_run_ = make_device_step_runner(g_, *g_cl_, *g_cl_opt_, samples_, /*loss_on_host=*/true, inference);
  d_run_ = make_device_step_runner(d_, *d_cl_, *d_cl_opt_, logits_, /*loss_on_host=*/true, inference);
  return Status();
}

ocl::TransferCounts GanTrainer::device_transfers() const {
  ocl::TransferCounts sum;
  for (const auto* model : {g_cl_.get(), d_cl_.get()}) {
    if (model == nullptr) continue;
    const ocl::TransferCounts& t = model->transfers();
    sum.up_bytes += t.up_bytes, sum.down_bytes += t.down_bytes, sum.ups += t.ups, sum.downs += t.downs;
  }
  return sum;
}

}  // namespace rg
