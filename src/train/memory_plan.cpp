// plan_memory: a search over micro-batch sizes for each way of holding the data, then the
// device's budget; the run's one plan, computed from the bytes each part will ask for.
#include "train/memory_plan.h"

#include <algorithm>

#include "base/memory.h"

namespace rg {

Result<StreamChoice> stream_choice_from_name(const std::string& name) {
  if (name == "auto") return StreamChoice::automatic;
  if (name == "yes") return StreamChoice::always;
  if (name == "no") return StreamChoice::never;
  return Status::error("'" + name + "' is not auto, yes or no");
}

namespace {

std::vector<const Dataset*> all_of(const RunData& data) {
  std::vector<const Dataset*> all;
  for (const Dataset* d : {data.train, data.validation, data.test}) {
    if (d != nullptr && d->size() > 0) all.push_back(d);
  }
  return all;
}

int64_t size_of(const Dataset* d) { return d != nullptr ? d->size() : 0; }

// Bytes the datasets hold in memory: all their samples, or (streamed) only what streaming keeps;
// and the visiting orders (Trainer::fit's epoch order lives while the validation set is scored,
// the test set's comes after).
int64_t data_bytes(const RunData& data, bool stream) {
  int64_t bytes = 0;
  for (const Dataset* d : all_of(data)) {
    bytes += d->memory_bytes();
    if (!stream && !d->in_memory()) bytes += d->sample_bytes();  // read in by Dataset::in_memory_copy
  }
  const int64_t order_rows = std::max(size_of(data.train) + size_of(data.validation), size_of(data.test));
  return bytes + order_rows * static_cast<int64_t>(sizeof(int32_t));
}

// What a run with a checkpoint holds while loading one (nothing without a checkpoint).
int64_t checkpoint_bytes_of(const Model& model, const TrainOptions& options) {
  return options.checkpoint_path.empty() ? 0 : checkpoint_tensor_bytes(model, options.optimizer);
}

// The largest count of rows in [1, rows] that fits, 0 when not even one does. The bytes grow
// with the rows, so a binary search finds it.
int64_t largest_fitting(int64_t rows, const std::function<bool(int64_t)>& fits) {
  int64_t lo = 0, hi = rows;  // fits(lo) or lo == 0; the answer is in [lo, hi]
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// The plan with the data held one way, at the largest micro-batch within the budget (the whole
// batch when there is none); micro_batch 0 when not even one sample fits.
MemoryPlan plan_with(const Model& model, TrainOptions options, const RunData& datasets, int64_t budget, bool stream) {
  options.read_ahead = stream;
  MemoryPlan plan;
  plan.budget = budget;
  plan.batch = options.batch;
  plan.stream = stream;
  plan.params = model.param_bytes();
  plan.data = data_bytes(datasets, stream);
  plan.checkpoint = checkpoint_bytes_of(model, options);
  auto fits = [&](int64_t rows) {
    return budget == 0 || plan.predicted_peak() + Trainer::prepared_bytes(model, options, rows) <= budget;
  };
  const int64_t rows = max_rows(options.batch, datasets);
  const int64_t lo = largest_fitting(rows, fits);
  if (lo == 0) return plan;
  // As many steps as the largest fitting micro-batch needs for the rows a batch can fill,
  // shared out evenly.
  plan.accumulation_steps = (rows + lo - 1) / lo;
  plan.micro_batch = (rows + plan.accumulation_steps - 1) / plan.accumulation_steps;
  plan.training = Trainer::prepared_bytes(model, options, plan.micro_batch);
  return plan;
}

// The device's side of `plan`: its micro-batch lowered to the largest the device's budget holds
// beside what is placed there (device_lowered_from saying from what; the batch's `rows` then
// run in as many micro-batches as that takes), the host's training bytes at it, and the
// device's figures. The error when not one sample fits names the device and --device-mem.
Status fit_device(const Model& model, TrainOptions options, const DeviceNeed& device, int64_t rows, MemoryPlan* plan) {
  options.read_ahead = plan->stream;
  plan->device_budget = device.budget;
  plan->device_placed = device.placed;
  if (device.budget > 0) {
    const int64_t free_bytes = device.budget - device.placed;
    const int64_t fit =
        largest_fitting(plan->micro_batch, [&](int64_t r) { return device.buffer_bytes(r) <= free_bytes; });
    if (fit == 0) {
      return Status::error(device.label + ": one sample needs " + format_bytes(device.buffer_bytes(1)) +
                           " of device memory beside the " + format_bytes(device.placed) +
                           " of params, gradients and optimizer state, and the budget (--device-mem) is " +
                           format_bytes(device.budget));
    }
    if (fit < plan->micro_batch) {
      plan->device_lowered_from = plan->micro_batch;
      plan->micro_batch = fit;
      plan->accumulation_steps = (rows + fit - 1) / fit;
      plan->training = Trainer::prepared_bytes(model, options, fit);
    }
  }
  plan->device_buffers = device.buffer_bytes(plan->micro_batch);
  return Status();
}

}  // namespace

Result<MemoryPlan> plan_memory(const Model& model, const TrainOptions& options, const RunData& datasets, int64_t budget,
                               StreamChoice stream, const DeviceNeed* device) {
  bool streamable = true;
  for (const Dataset* d : all_of(datasets)) streamable = streamable && !d->in_memory();
  if (stream == StreamChoice::always && !streamable) {
    return Status::error("--stream yes: this data cannot be streamed (IDX files and generated data can; CIFAR-10 "
                         "batches and image folders are read into memory)");
  }
  TrainOptions whole = options;
  whole.read_ahead = false;
  const int64_t unplanned = model.param_bytes() + data_bytes(datasets, false) + checkpoint_bytes_of(model, options) +
                            Trainer::prepared_bytes(model, whole, max_rows(options.batch, datasets));

  std::vector<bool> ways;  // how the data may be held, the preferred first
  if (stream != StreamChoice::always) ways.push_back(false);
  if (streamable && (stream == StreamChoice::always || (stream == StreamChoice::automatic && budget > 0))) {
    ways.push_back(true);
  }
  MemoryPlan best;
  for (bool way : ways) {
    MemoryPlan plan = plan_with(model, options, datasets, budget, way);
    if (plan.micro_batch > best.micro_batch) best = plan;
  }
  if (best.micro_batch == 0) {
    const bool stream_smallest = ways.back();  // the way that holds the least
    TrainOptions single = options;
    single.read_ahead = stream_smallest;
    const int64_t params = model.param_bytes(), data = data_bytes(datasets, stream_smallest),
                  training = Trainer::prepared_bytes(model, single, 1), checkpoint = checkpoint_bytes_of(model, options);
    return Status::error("--mem-budget " + format_bytes(budget) + " cannot hold this training even one sample at a "
                         "time: that needs " + format_bytes(params + data + training + checkpoint) +
                         " (parameters and gradients " + format_bytes(params) + ", data " +
                         (stream_smallest ? "(streamed) " : "(in memory) ") + format_bytes(data) +
                         ", optimizer state, activations and buffers of one sample " + format_bytes(training) +
                         (checkpoint > 0 ? ", the checkpoint while it is loaded " + format_bytes(checkpoint) : "") + ")");
  }
  best.unplanned_peak = unplanned;
  if (device != nullptr) RG_TRY(fit_device(model, options, *device, max_rows(options.batch, datasets), &best));
  return best;
}

Result<MemoryPlan> plan_as_asked(const Model& model, const TrainOptions& options, const DeviceNeed* device) {
  MemoryPlan plan;
  plan.batch = std::max<int64_t>(options.batch, 1);
  plan.micro_batch = options.micro_batch > 0 ? std::min(options.micro_batch, plan.batch) : plan.batch;
  plan.accumulation_steps = (plan.batch + plan.micro_batch - 1) / plan.micro_batch;
  plan.stream = options.read_ahead;
  plan.params = model.param_bytes();
  plan.checkpoint = checkpoint_bytes_of(model, options);
  plan.training = Trainer::prepared_bytes(model, options, plan.micro_batch);
  plan.unplanned_peak = plan.params + plan.checkpoint + Trainer::prepared_bytes(model, options, plan.batch);
  if (device != nullptr) RG_TRY(fit_device(model, options, *device, plan.batch, &plan));
  return plan;
}

void enforce_host_budget(const MemoryPlan& plan) {
  // The allocator stays the process's: every Tensor's bytes are counted in host_memory(), from
  // every floor, and passing an account down to each would change every allocation for no
  // figure. Its budget is the plan's, set here alone.
  host_memory().set_budget(plan.budget);
}

int64_t max_rows(int64_t batch, const RunData& data) {
  int64_t samples = 0;
  for (const Dataset* d : all_of(data)) samples = std::max(samples, d->size());
  return samples > 0 ? std::min(batch, samples) : batch;
}

int64_t checkpoint_tensor_bytes(const Model& model, const OptimizerConfig& optimizer) {
  int64_t values = model.param_count();
  for (const auto& layer : model.layers()) values += layer->buffer_count();
  return values * static_cast<int64_t>(sizeof(float)) + Optimizer::state_bytes(optimizer, model.param_count());
}

Status check_plan_fits(const Model& model, const TrainOptions& options, const RunData& data, StreamChoice stream,
                       const MemoryPlan& plan, const AvailableMemory& available) {
  if (available.bytes <= 0 || plan.predicted_peak() <= available.bytes) return Status();
  const std::string over = "this run's predicted peak, " + format_bytes(plan.predicted_peak()) + ", is more than the " +
                           format_bytes(available.bytes) + " available (" + available.source + "); ";
  const std::string planned = " (the plan: " + describe_plan(plan) + ")";
  auto within = plan_memory(model, options, data, available.bytes, stream);
  if (!within.ok()) {
    // The samples were opened in memory (no budget): the plan could not stream them. Say so when
    // the rest would fit, since reading them from disk is then the way.
    const bool streaming_helps = !plan.stream && plan.predicted_peak() - plan.data < available.bytes;
    return Status::error(over + (streaming_helps
        ? "the data alone takes " + format_bytes(plan.data) + ": read the samples from disk as batches are "
          "gathered with --stream yes, or give --mem-budget " + std::to_string(available.bytes >> 20) +
          "M (it streams what does not fit)"
        : "not even one sample at a time fits in that: train a smaller model, or on a machine with more memory") +
        planned);
  }
  const MemoryPlan& fitting = within.value();
  return Status::error(over + "--mem-budget " + std::to_string(available.bytes >> 20) + "M runs it within that (" +
                       std::to_string(fitting.accumulation_steps) + " micro-batch" +
                       (fitting.accumulation_steps > 1 ? "es" : "") + " of up to " +
                       std::to_string(fitting.micro_batch) + " samples a step" +
                       (fitting.stream ? ", samples streamed" : "") + "), or give --batch " +
                       std::to_string(fitting.micro_batch) + planned);
}

std::string budget_above_available(int64_t budget, const AvailableMemory& available) {
  if (available.bytes <= 0 || budget <= available.bytes) return "";
  return "--mem-budget " + format_bytes(budget) + " is more than the " + format_bytes(available.bytes) +
         " available (" + available.source + "); planning within it as given";
}

Result<int64_t> address_space_budget(const AddressSpace& space, int threads) {
  if (space.limit_bytes <= 0) return int64_t{0};
  const int64_t reserved = space.used_bytes + threads * kThreadStackReserve + kAddressSlack;
  const int64_t budget = space.limit_bytes - reserved;
  if (budget <= 0) {
    return Status::error("the address space is limited to " + format_bytes(space.limit_bytes) + " (" + space.source +
                         "): " + format_bytes(space.used_bytes) + " mapped already, " + std::to_string(threads) +
                         " thread stacks of " + format_bytes(kThreadStackReserve) + " and " +
                         format_bytes(kAddressSlack) + " of slack leave nothing for training (raise the limit or use "
                         "fewer --threads)");
  }
  return budget;
}

std::string describe_address_space_budget(const AddressSpace& space, int64_t budget) {
  return "the address space is limited to " + format_bytes(space.limit_bytes) + " (" + space.source + "), " +
         format_bytes(space.used_bytes) + " of it mapped: planning within " + format_bytes(budget);
}

std::string describe_plan(const MemoryPlan& plan) {
  std::string text = "batch " + std::to_string(plan.batch);
  if (plan.micro_batch < plan.batch && plan.accumulation_steps == 1) {
    text += " in one piece (buffers for " + std::to_string(plan.micro_batch) + " samples: no set has more)";
  } else if (plan.accumulation_steps > 1) {
    text += " = " + std::to_string(plan.accumulation_steps) + " micro-batches of up to " + std::to_string(plan.micro_batch) +
            " (gradients accumulated)";
  } else {
    text += " in one piece";
  }
  text += std::string(plan.stream ? "; samples read batch by batch, one batch ahead" : "; data in memory");
  text += "; predicted peak " + format_bytes(plan.predicted_peak());
  if (plan.budget > 0) text += " of the " + format_bytes(plan.budget) + " budget";
  text += " (parameters and gradients " + format_bytes(plan.params) + ", data " + format_bytes(plan.data) +
          ", training buffers " + format_bytes(plan.training);
  if (plan.checkpoint > 0) text += ", a checkpoint while it is loaded " + format_bytes(plan.checkpoint);
  text += ")";
  if (plan.accumulation_steps > 1 || plan.stream) {
    text += "; unplanned (the whole batch at once, data in memory) it would need " + format_bytes(plan.unplanned_peak);
  }
  return text;
}

}  // namespace rg
