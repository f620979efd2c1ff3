// The trainer's part in a data-parallel run over MPI (dist/communicator.h): the ranks' settings
// compared, gradients summed before each update, tallies summed, the root's state shared.
#include <map>

#include <nlohmann/json.hpp>

#include "train/trainer.h"

namespace rg {

namespace {
// What must be equal on every rank for the ranks to train one model, by name.
std::map<std::string, std::string> run_fingerprint(Model& model, const Dataset& train,
                                                   std::map<std::string, std::string> settings) {
  settings.erase("data");  // each PC may keep the files in a folder of its own
  settings["train samples"] = std::to_string(train.size());
  settings["sample shape"] = train.sample_shape.str();
  settings["classes"] = std::to_string(train.num_classes);
  settings["model parameters"] = std::to_string(model.param_count());
  settings["model"] = model.summary();
  return settings;
}

}  // namespace

Status Trainer::check_ranks_agree(const Dataset& train) {
  Communicator& comm = *options_.comm;
  const auto mine = run_fingerprint(model_, train, settings());
  const std::string text = nlohmann::json(mine).dump();
  std::vector<uint8_t> root(text.begin(), text.end());
  RG_TRY(comm.broadcast(&root));
  const nlohmann::json sent = nlohmann::json::parse(root.begin(), root.end(), nullptr, false);
  if (!sent.is_object()) return Status::error(comm.describe_rank() + ": rank 0's settings arrived unreadable");
  const auto roots = sent.get<std::map<std::string, std::string>>();
  std::string difference;
  for (const auto& [key, value] : roots) {
    const auto it = mine.find(key);
    const std::string here = it == mine.end() ? "(none)" : it->second;
    if (here != value && difference.empty()) difference = key + " is '" + here + "' here, '" + value + "' on rank 0";
  }
  RG_ASSIGN(const bool agree, comm.all_ok(difference.empty()));
  if (!difference.empty()) {
    return Status::error(comm.describe_rank() + " does not train what rank 0 trains: its " + difference +
                         " (every PC needs the same data, model and options)");
  }
  if (!agree) return Status::error(comm.describe_rank() + ": another rank's data, model or options differ from rank 0's (see its message)");
  return Status();
}

Status Trainer::sum_gradients(bool had_rows) {
  float* flat = flat_grads_.f32();
  if (!had_rows) {
    flat_grads_.fill_zero();  // this step's batch had fewer rows than there are ranks
  } else {
    for (const Param* p : model_.params()) {
      std::copy(p->grad.f32(), p->grad.f32() + p->grad.numel(), flat);
      flat += p->grad.numel();
    }
  }
  RG_TRY(options_.comm->sum(flat_grads_.f32(), flat_grads_.numel(), options_.gradient_wire));
  const float* summed = flat_grads_.f32();
  for (const Param* p : model_.params()) {
    std::copy(summed, summed + p->grad.numel(), p->grad.f32());
    summed += p->grad.numel();
  }
  return Status();
}

Status Trainer::sum_tally(LossTally* tally) {
  double values[3] = {tally->loss_sum, static_cast<double>(tally->correct), static_cast<double>(tally->rows)};
  RG_TRY(options_.comm->sum(values, 3));
  tally->loss_sum = values[0];
  tally->correct = static_cast<int64_t>(values[1]);
  tally->rows = static_cast<int64_t>(values[2]);
  return Status();
}

Status Trainer::share_root_state() {
  Communicator& comm = *options_.comm;
  auto send_roots = [&](const Tensor& t) { return comm.broadcast(t.raw_data(), static_cast<int64_t>(t.bytes())); };
  for (const Param* p : model_.params()) RG_TRY(send_roots(p->value));
  for (const Tensor& t : optimizer_.state()) RG_TRY(send_roots(t));
  for (const Param* b : model_.buffers()) {  // running statistics: each rank saw other samples
    if (b->value.dtype() != DType::f32) {
      RG_TRY(send_roots(b->value));
      continue;
    }
    RG_TRY(comm.sum(b->value.f32(), b->value.numel(), GradientWire::f32));
    const float share = 1.0f / static_cast<float>(comm.size());
    for (int64_t i = 0; i < b->value.numel(); ++i) b->value.f32()[i] *= share;
  }
  return Status();
}

}  // namespace rg
