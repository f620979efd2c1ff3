// The memory planner: given a budget of host bytes (and, training on an OpenCL device, the
// device's budget) and the batch asked for, the largest micro-batch that fits (gradients
// accumulated over the steps of one batch), and whether the data stays in memory or is read
// from disk batch by batch. One plan for host and device, made once where the run is built and
// passed down unchanged (Trainer::prepare(plan)). Every figure is the bytes the counted
// allocators will be asked for (Model::reserved_bytes_in, Trainer::prepared_bytes,
// ClModel::reserved_bytes), so the prediction can be checked against the measured peak;
// planning computes them and changes nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/memory.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "report/process_stats.h"
#include "train/trainer.h"

namespace rg {

enum class StreamChoice { automatic, always, never };
Result<StreamChoice> stream_choice_from_name(const std::string& name);  // auto | yes | no

struct MemoryPlan {
  // The host budget, 0: none. The counted host allocator is the process's (every tensor's bytes
  // go through host_memory()), so this budget is given to it once, from this plan, where the
  // run is built (enforce_host_budget).
  int64_t budget = 0;
  int64_t batch = 0, micro_batch = 0, accumulation_steps = 1;
  bool stream = false;  // samples read (or generated) as batches are gathered, two pieces ahead
  // The predicted counted bytes, by part: parameters and their gradients; the data held in
  // memory (samples unless streamed, labels, and the orders in which an epoch and a scoring
  // visit them: 4 bytes a sample); what the trainer allocates at the micro-batch (optimizer
  // state, activations, gradients, workspace, batch buffers); and, for a run with a checkpoint
  // (TrainOptions::checkpoint_path), the checkpoint's tensors held while a resumed run loads
  // them: counted in the run that writes it too, so that it resumes under the same plan.
  int64_t params = 0, data = 0, training = 0, checkpoint = 0;
  int64_t predicted_peak() const { return params + data + training + checkpoint; }
  // The same run with no plan: the whole batch at once and the data in memory.
  int64_t unplanned_peak = 0;
  // Training on an OpenCL device: its budget (0: none), the bytes placed on it before the
  // micro-batch's buffers (params, gradients, optimizer state) and those buffers; and, when the
  // device's budget lowered the micro-batch the host's allowed, that one (0: it did not).
  int64_t device_budget = 0, device_placed = 0, device_buffers = 0, device_lowered_from = 0;
};

// What the planner needs of a run's OpenCL device (Trainer::device_need, once the model's
// params, gradients and optimizer state are placed on it): the device's name for messages, its
// budget (--device-mem; 0: none), the bytes placed and the bytes of its buffers for a
// micro-batch of `rows` (ClModel::reserved_bytes in the storage the run was built with).
struct DeviceNeed {
  std::string label;
  int64_t budget = 0, placed = 0;
  std::function<int64_t(int64_t rows)> buffer_bytes;
};

// The datasets of the run: the training set, the validation set scored after each epoch, the
// test set scored at the end (either may be empty). Those with a SampleSource can be streamed,
// the others stay in memory.
struct RunData {
  const Dataset* train = nullptr;
  const Dataset* validation = nullptr;
  const Dataset* test = nullptr;
};
// Without a budget: the whole batch, in memory unless `stream` is always. The error, when not
// even one sample fits, says what the smallest run needs and of what. Buffers are sized for at
// most the samples of the largest dataset (max_rows): a batch larger than the data needs no
// more. Works from the model's shapes: call it before Model::init(). With a device, the
// micro-batch the host allows is lowered to the largest the device's budget holds (not shared
// out again: the rest of the batch is a last, smaller micro-batch); its error when not one
// sample fits says what one needs there.
Result<MemoryPlan> plan_memory(const Model& model, const TrainOptions& options, const RunData& data, int64_t budget,
                               StreamChoice stream, const DeviceNeed* device = nullptr);
// The plan of a run that names its micro-batch itself (TrainOptions::micro_batch, 0: the whole
// batch) and how its data is read (TrainOptions::read_ahead), with no host budget and no data
// counted: what Trainer::prepare() without a plan makes. A device's budget may lower it.
Result<MemoryPlan> plan_as_asked(const Model& model, const TrainOptions& options, const DeviceNeed* device = nullptr);
// The plan's host budget into the process's counted allocator (host_memory()): called once, where
// the run is built, after the plan is made.
void enforce_host_budget(const MemoryPlan& plan);

// Rows a batch of `batch` can fill: the batch, or the samples of the largest dataset if fewer.
int64_t max_rows(int64_t batch, const RunData& data);

// The tensors of this model's checkpoint (weights, buffers, optimizer state), in bytes: what
// reading one holds in memory until the training state is restored from it.
int64_t checkpoint_tensor_bytes(const Model& model, const OptimizerConfig& optimizer);

// Before the first allocation, the plan of a run without --mem-budget against the host memory
// available (available_host_memory()): over it, an error with both figures and the
// --mem-budget that would fit (the planner run again within what is available), or what one
// sample would need. An unknown figure (0) passes.
Status check_plan_fits(const Model& model, const TrainOptions& options, const RunData& data, StreamChoice stream,
                       const MemoryPlan& plan, const AvailableMemory& available);
// A --mem-budget above the memory available is the user's word: the warning train prints
// ("" when it is not above, or the figure is unknown).
std::string budget_above_available(int64_t budget, const AvailableMemory& available);

// Without --mem-budget, a limited address space (ulimit -v, a 32-bit process) is the budget:
// what is left of it after what is mapped already, each worker thread's stack reserve
// (kThreadStackReserve) and slack for the heap's own use and GEMM packing (kAddressSlack).
// 0: no limit. An error when nothing is left, naming the limit and its source.
constexpr int64_t kThreadStackReserve = int64_t{8} << 20;  // glibc's default (ulimit -s); Windows reserves less
constexpr int64_t kAddressSlack = int64_t{64} << 20;
Result<int64_t> address_space_budget(const AddressSpace& space, int threads);
// "the address space is limited to 512 MiB (ulimit -v), 37.2 MiB of it mapped: planning
// within 346.8 MiB": what train prints when it adapts to it.
std::string describe_address_space_budget(const AddressSpace& space, int64_t budget);

// "batch 256 = 4 micro-batches of 64 (gradients accumulated); data streamed from disk;
// predicted peak 21.3 MiB of the 24 MiB budget (...)": what train prints before the first step.
std::string describe_plan(const MemoryPlan& plan);

}  // namespace rg
