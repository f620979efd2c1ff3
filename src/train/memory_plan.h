// The memory planner: given a budget of host bytes and the batch asked for, the largest
// micro-batch that fits (gradients accumulated over the steps of one batch), and whether the
// data stays in memory or is read from disk batch by batch. Every figure is the bytes the
// counted allocator will be asked for (Model::reserved_bytes, Trainer::prepared_bytes), so the
// prediction can be checked against the measured peak.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "nn/model.h"
#include "report/process_stats.h"
#include "train/trainer.h"

namespace rg {

enum class StreamChoice { automatic, always, never };
Result<StreamChoice> stream_choice_from_name(const std::string& name);  // auto | yes | no

struct MemoryPlan {
  int64_t budget = 0;  // 0: none
  int64_t batch = 0, micro_batch = 0, accumulation_steps = 1;
  bool stream = false;  // samples read (or generated) as batches are gathered, two pieces ahead
  // The predicted counted bytes, by part: parameters and their gradients; the data held in
  // memory (samples unless streamed, labels, and the orders in which an epoch and a scoring
  // visit them: 4 bytes a sample); what the trainer allocates at the micro-batch (optimizer
  // state, activations, gradients, workspace, batch buffers).
  int64_t params = 0, data = 0, training = 0;
  int64_t predicted_peak() const { return params + data + training; }
  // The same run with no plan: the whole batch at once and the data in memory.
  int64_t unplanned_peak = 0;
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
// even one sample fits, says what the smallest run needs and of what.
Result<MemoryPlan> plan_memory(Model& model, const TrainOptions& options, const RunData& data, int64_t budget,
                               StreamChoice stream);

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
