// The GAN's networks on an OpenCL device: both models and their optimizers there, run by the
// device's step runners (train/step_runner_device.cpp), so that gan.cpp's one step keeps G's
// samples on the device feeding D directly and D's input gradient landing in G's output
// gradient there, and D's BCE losses there too (on the host with --loss-on cpu or without
// cl_khr_fp64): only the logits [n, 1] and the rows' losses come back, read without waiting.
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
  // D's losses on the device (its output_loss) unless --loss-on cpu or the device lacks fp64.
  const bool no_fp64 = !device.info().has_extension("cl_khr_fp64");
  if (!options_.loss_on_host && no_fp64) {
    std::fprintf(options_.log, "device:    %s has no cl_khr_fp64: the losses run on the CPU\n", device.label().c_str());
  }
  const bool loss_on_host = options_.loss_on_host || no_fp64;
  g_run_ = make_device_step_runner(g_, *g_cl_, *g_cl_opt_, samples_, /*loss_on_host=*/true, inference);
  d_run_ = make_device_step_runner(d_, *d_cl_, *d_cl_opt_, d_output_, loss_on_host, inference);
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
