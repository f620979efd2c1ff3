// The CPU's step runner (train/step_runner.h): the Model's forward, the loss, backward and the
// Optimizer's update, each checked for values that are not finite.
#include "train/step_runner.h"

#include <algorithm>
#include <cmath>

#include "base/rng.h"
#include "nn/finite_check.h"
#include "nn/loss.h"
#include "ops/fixed_point_gemm.h"

namespace rg {

Status training_stopped(const std::string& what) {
  return Status::error(what + "; training stopped (lower the learning rate?); the last checkpoint is unchanged");
}

Status CpuStepRunner::micro_batch(const Tensor& x, const Tensor& labels, const Tensor& target, double grad_scale,
                                  const LayerContext& ctx, const std::string& where, LossTally* tally) {
  const Tensor out = model_.forward(x, ctx);
  const double loss = compute_loss(model_.loss(), out, target, grad_scale, model_.output_grad());
  if (!std::isfinite(loss)) {
    const std::string first_bad = first_non_finite_output(model_, x);
    return training_stopped("the loss became " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at " + where +
                            " (" +
                            (first_bad.empty() ? "every layer's output was finite: the loss itself overflowed"
                                               : "the first Inf or NaN: " + first_bad) +
                            ")");
  }
  model_.backward(ctx);
  tally->loss_sum += loss;
  tally->rows += x.shape()[0];
  if (model_.target() != TargetKind::input) tally->correct += count_correct(out, labels.data<int32_t>());
  return Status();
}

namespace {
// The formats a layer's parameters follow: its own precision's, else the run's (f32: none).
const FixedPointRoles& roles_of(const Layer& layer, const FixedPointRoles& run) {
  static const FixedPointRoles f32_roles{};
  const OwnPrecision& own = layer.own_precision();
  if (own.name.empty()) return run;
  return own.gemm == GemmPrecision::fixed_point ? own.formats : f32_roles;
}

// Rounds each parameter's grad (values: its value, where stored weights are asked for) onto its
// layer's format, keyed by (seed, step, which of the two, the parameter's place in the model).
void round_params(Model& model, bool values, const FixedPointRoles& run, uint64_t seed, int64_t step, ThreadPool* pool) {
  const uint64_t stream = splitmix64_at(seed ^ (values ? 0x76616c756573ull : 0x6772616473ull),  // "values", "grads"
                                        static_cast<uint64_t>(step));
  uint64_t place = 0;
  for (const auto& layer : model.layers()) {
    const FixedPointRoles& roles = roles_of(*layer, run);
    const FixedPointFormat& format = values ? (roles.stored_weights ? roles.weights : FixedPointFormat{}) : roles.gradients;
    for (Param* p : layer->params()) {
      Tensor& t = values ? p->value : p->grad;
      fixed_point_round_in_place(t.data<float>(), t.numel(), format, splitmix64_at(stream, place++), pool, p->channels);
    }
  }
}
}  // namespace

void CpuStepRunner::round_gradients() { round_params(model_, false, roles_, seed_, optimizer_.steps(), pool_); }

// After the optimizer's step: its count is the step's + 1.
void CpuStepRunner::round_stored_weights() { round_params(model_, true, roles_, seed_, optimizer_.steps(), pool_); }

Status CpuStepRunner::update(double lr, const std::string& where) {
  round_gradients();
  // A finite loss can still give an Inf gradient (an overflowing product), and a finite
  // gradient times the rate an Inf weight. The optimizer checks both in the pass that
  // reads the gradients and writes the weights (a pass of its own cost 5% of an mlp's
  // step); under loss scaling the scaler has checked and skipped bad gradients already.
  if (const Param* bad = optimizer_.step(lr, pool_)) return training_stopped(flagged_update(bad).text() + " at " + where);
  round_stored_weights();
  return Status();
}

// The series operations (a GAN's): an upstream runner is a CPU runner too (one kind a run).
namespace {
CpuStepRunner& cpu_runner(StepRunner& upstream) {
  auto* cpu = dynamic_cast<CpuStepRunner*>(&upstream);
  RG_CHECK(cpu != nullptr, "a CPU runner's upstream network runs on the CPU too");
  return *cpu;
}
}  // namespace

Status CpuStepRunner::forward(const Tensor& x, const LayerContext& ctx) {
  output_ = model_.forward(x, ctx);
  return Status();
}

Status CpuStepRunner::forward_from(StepRunner& upstream, int64_t rows, const LayerContext& ctx) {
  return forward(cpu_runner(upstream).output_.rows(0, rows), ctx);
}

Status CpuStepRunner::output_loss(const Tensor& target, double grad_scale, const Tensor& output, double* loss) {
  RG_CHECK(output.numel() == output_.numel(), "output " << output_.shape().str() << " into " << output.shape().str());
  std::copy_n(output_.f32(), output_.numel(), output.f32());
  *loss = compute_loss(model_.loss(), output, target, grad_scale, model_.output_grad());
  return Status();
}

Status CpuStepRunner::backward(const LayerContext& ctx, StepRunner* upstream) {
  model_.backward(ctx, upstream != nullptr ? cpu_runner(*upstream).model_.output_grad() : Tensor());
  return Status();
}

Status CpuStepRunner::apply_update(double lr) {
  round_gradients();
  older_flags_ = flags_;
  flags_ = flagged_update(optimizer_.step(lr, pool_));
  round_stored_weights();
  return Status();
}

}  // namespace rg
