// The Trainer's OpenCL preparation: the model's layers and its optimizer placed on a device
// (opencl/model/), their buffers for the micro-batch the device's budget holds. The steps run
// in the device's step runner (step_runner_device.cpp).
#include <cinttypes>

#include "base/memory.h"
#include "opencl/device.h"
#include "opencl/gemm.h"
#include "opencl/gemm_tuning.h"
#include "opencl/model/cl_model.h"
#include "opencl/model/cl_optimizer.h"
#include "train/memory_plan.h"
#include "train/trainer.h"

namespace rg {

Status Trainer::place_on_device() {
  ocl::Device& device = *options_.device;
  if (!options_.loss_on_host && !device.info().has_extension("cl_khr_fp64")) {
    options_.loss_on_host = true;
    std::fprintf(options_.log, "device:    %s has no cl_khr_fp64: the loss runs on the CPU\n", device.label().c_str());
  }
  // The GEMM's tuning first, while the whole budget is free for its operands (searched once per
  // device and driver, then read from its cache file).
  std::fprintf(options_.log, "device:    GEMM %s\n", ocl::gemm_tuning(device).source.c_str());
  const char* placing = "placing the model's params, gradients and optimizer state on the device: ";
  auto model = ocl::ClModel::create(model_, device, options_.host_layers);
  if (!model.ok()) return model.status().with_context(placing);
  cl_model_ = model.take();
  auto optimizer = ocl::ClOptimizer::create(device, optimizer_, cl_model_->params(), cl_model_->param_arena());
  if (!optimizer.ok()) return optimizer.status().with_context(placing);
  cl_optimizer_ = std::make_unique<ocl::ClOptimizer>(optimizer.take());
  if (options_.precision == TrainPrecision::fp16) RG_TRY(cl_model_->set_storage(DType::f16));
  return Status();
}

DeviceNeed Trainer::device_need() const {
  RG_CHECK(cl_model_ != nullptr, "Trainer::device_need before place() on a device");
  const MemoryAccount& memory = options_.device->memory();
  const ocl::ClModel* model = cl_model_.get();
  return DeviceNeed{options_.device->label(), memory.budget_bytes(), memory.current_bytes(),
                    [model](int64_t rows) { return model->reserved_bytes(rows).total(); }};
}

Status Trainer::reserve_on_device() {
  const MemoryPlan& plan = *plan_;
  if (plan.device_lowered_from > 0) {
    std::fprintf(options_.log, "device:    micro-batches of %" PRId64 " (of %" PRId64 ") to fit the %s device budget\n",
                 plan.micro_batch, plan.device_lowered_from, format_bytes(plan.device_budget).c_str());
  }
  int64_t rows = plan.micro_batch;
  Status reserved = cl_model_->reserve(rows);
  if (!reserved.ok() && rows > 1) {  // the driver's memory, not the budget, ran out: once, with half
    std::fprintf(options_.log, "device:    %s\ndevice:    retrying once with micro-batches of %" PRId64 "\n",
                 reserved.message().c_str(), rows / 2);
    rows /= 2;
    reserved = cl_model_->reserve(rows);
  }
  if (!reserved.ok()) return reserved.with_context("reserving the device's buffers for micro-batches of " + std::to_string(rows) + ": ");
  micro_batch_ = rows;
  const ocl::ClModel::ReservedBytes parts = cl_model_->reserved_bytes(rows);
  std::fprintf(options_.log,
               "device:    buffers for micro-batches of %" PRId64 ": activations %s (%s), gradients %s, layer state %s, "
               "workspace %s, f32 chunks %s, inputs and targets %s; kept with the device: the GEMM's split sums %s; "
               "params, their gradients and buffers %s\n",
               rows, format_bytes(parts.activations).c_str(), cl_model_->storage() == DType::f16 ? "f16, the output f32" : "f32",
               format_bytes(parts.gradients).c_str(), format_bytes(parts.layer_state).c_str(),
               format_bytes(parts.workspace).c_str(), format_bytes(parts.chunks).c_str(), format_bytes(parts.io).c_str(),
               format_bytes(ocl::gemm_scratch_bytes(*options_.device)).c_str(),
               format_bytes(cl_model_->param_bytes()).c_str());
  RG_ASSIGN(host_output_, Tensor::zeros(model_.output_shape().batched(rows), DType::f32, "the device's output read back"));
  return Status();
}

}  // namespace rg
