// The roofline of training (roofline.h): per-layer flops and bytes, times under two roofs,
// estimates for the table's machines, and a STREAM-like bandwidth measurement.
#include "report/roofline.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/check.h"
#include "base/memory.h"
#include "base/text_format.h"
#include "base/thread_pool.h"
#include "nn/batch_norm.h"

namespace rg {

namespace {

constexpr double kValueBytes = 4;  // f32

// How often a step runs a layer.
struct Use {
  int forwards = 1;
  int backwards = 1;
  int input_grads = 1;   // backwards that compute dx
  int accumulating = 0;  // backwards that add to the gradients (read them too)
  int updates = 1;       // optimizer steps
};

// `use`, or no pass at all for a relu that a batch norm before it runs in training
// (Model::fuses_relu_after; layer_traffic.h: applied as y is written and dy read). A relu that a
// convolution runs keeps its passes here: its gradient is taken in a pass over dy and y of its own
// (in place, a chunk at a time: the same values apart or fused), and its forward rides the bias's
// pass, which product_traffic does not count either.
Use fused_away(const Model& model, size_t i, Use use) {
  if (i > 0 && model.fuses_relu_after(i - 1) && dynamic_cast<const BatchNorm*>(model.layers()[i - 1].get()) != nullptr)
    use.forwards = use.backwards = use.input_grads = 0;
  return use;
}

// Values a parameter's update reads and writes: w and g read, w written, and the state.
double optimizer_values_per_param(const OptimizerConfig& optimizer) {
  if (optimizer.kind == OptimizerKind::adam) return 7;  // + m, s read and written
  return optimizer.momentum > 0 ? 5 : 3;                // + v read and written
}

LayerCost cost_of(const Layer& layer, double in, double out, const Use& use, int64_t batch,
                  double update_values, const std::string& prefix) {
  const LayerTraffic t = layer.traffic(in, out);
  const double per_sample = use.forwards * t.forward + use.backwards * t.backward + use.input_grads * t.input_grad;
  const double per_step = use.forwards * t.param_forward + use.backwards * t.param_backward +
                          use.input_grads * t.param_input_grad + use.accumulating * t.params +
                          use.updates * update_values * t.params;
  LayerCost cost;
  cost.name = prefix + layer.name();
  cost.kind = layer.kind();
  // A forward's products, the weights' gradient's in each backward, and dx's where computed.
  cost.flops = static_cast<double>(layer.forward_flops_per_sample()) * (use.forwards + use.backwards + use.input_grads);
  cost.bytes = kValueBytes * (per_sample + per_step / static_cast<double>(batch));
  return cost;
}

// The loss over the model's output: output and target read, the output's gradient written;
// `times` losses a step.
LayerCost loss_cost(const Model& model, int times, const std::string& prefix) {
  const double out = static_cast<double>(model.output_shape().numel());
  double target = out;  // one-hot rows, or BCE's targets
  if (model.target() == TargetKind::input) target = static_cast<double>(model.input_shape().numel());
  if (model.target() == TargetKind::labels && model.loss() == LossKind::softmax_cross_entropy) target = 1;
  LayerCost cost;
  cost.name = prefix + "loss";
  cost.kind = "loss";
  cost.bytes = kValueBytes * times * (out + target + out);
  return cost;
}

// Rows for every layer of `model` run as `use_of(i)` says, then its loss (unless it has none).
template <class UseOf>
void add_model_costs(const Model& model, int64_t batch, const OptimizerConfig& optimizer, const std::string& prefix,
                     UseOf use_of, int losses, std::vector<LayerCost>* costs) {
  RG_CHECK(batch >= 1, "a batch of " << batch);
  const double update_values = optimizer_values_per_param(optimizer);
  const auto& layers = model.layers();
  for (size_t i = 0; i < layers.size(); ++i) {
    double in = 0;  // the values it reads: the outputs of its inputs (a chain: the layer before)
    for (int j : model.layer_inputs(i)) {
      const Shape& shape = j == Model::kModelInput ? model.input_shape() : model.layer_output_shape(j);
      in += static_cast<double>(shape.numel());
    }
    const double out = static_cast<double>(model.layer_output_shape(i).numel());
    costs->push_back(cost_of(*layers[i], in, out, use_of(i), batch, update_values, prefix));
  }
  if (model.loss() != LossKind::none && losses > 0) costs->push_back(loss_cost(model, losses, prefix));
}

}  // namespace

std::vector<LayerCost> training_costs_per_sample(const Model& model, int64_t batch, const OptimizerConfig& optimizer) {
  std::vector<LayerCost> costs;
  add_model_costs(model, batch, optimizer, "",
                  [&](size_t i) {
                    Use use;
                    use.input_grads = i == 0 ? 0 : 1;  // backward never computes the first layer's dx
                    return fused_away(model, i, use);
                  },
                  1, &costs);
  return costs;
}

std::vector<LayerCost> gan_training_costs_per_sample(const Model& generator, const Model& discriminator,
                                                     int64_t batch, const OptimizerConfig& optimizer) {
  std::vector<LayerCost> costs;
  add_model_costs(generator, batch, optimizer, "G.",
                  [&](size_t i) {
                    Use use;  // G(z) once, backward once; its input is noise: no first-layer dx
                    use.input_grads = i == 0 ? 0 : 1;
                    return fused_away(generator, i, use);
                  },
                  0, &costs);
  add_model_costs(discriminator, batch, optimizer, "D.",
                  [&](size_t i) {
                    Use use;  // real, fake, fake again for G: the last pass's first-layer dx goes to G
                    use.forwards = 3;
                    use.backwards = 3;
                    use.input_grads = i == 0 ? 1 : 3;
                    use.accumulating = 1;  // the fake pass adds to the real pass's gradients
                    use.updates = 1;
                    return fused_away(discriminator, i, use);
                  },
                  3, &costs);
  return costs;
}

double total_flops(const std::vector<LayerCost>& costs) {
  double sum = 0;
  for (const auto& cost : costs) sum += cost.flops;
  return sum;
}

double total_bytes(const std::vector<LayerCost>& costs) {
  double sum = 0;
  for (const auto& cost : costs) sum += cost.bytes;
  return sum;
}

std::vector<LayerBound> roofline_bounds(const std::vector<LayerCost>& costs, const Roof& roof) {
  RG_CHECK(roof.gflops > 0 && roof.gbs > 0, "a roof of " << roof.gflops << " GFLOP/s and " << roof.gbs << " GB/s");
  std::vector<LayerBound> bounds;
  for (const auto& cost : costs) {
    LayerBound bound;
    bound.name = cost.name;
    const double compute = cost.flops / (roof.gflops * 1e9), memory = cost.bytes / (roof.gbs * 1e9);
    bound.compute_bound = compute >= memory;
    bound.seconds = std::max(compute, memory);
    bound.intensity = cost.bytes > 0 ? cost.flops / cost.bytes : 0;
    bounds.push_back(bound);
  }
  return bounds;
}

double roofline_seconds_per_sample(const std::vector<LayerCost>& costs, const Roof& roof) {
  double seconds = 0;
  for (const auto& bound : roofline_bounds(costs, roof)) seconds += bound.seconds;
  return seconds;
}

double compute_bound_share(const std::vector<LayerCost>& costs, const Roof& roof) {
  double all = 0, compute = 0;
  for (const auto& bound : roofline_bounds(costs, roof)) {
    all += bound.seconds;
    if (bound.compute_bound) compute += bound.seconds;
  }
  return all > 0 ? compute / all : 0;
}

Roof roof_of(const HardwareSpec& spec) {
  Roof roof;
  roof.gflops = spec.fp32_peak_gflops;
  roof.gbs = spec.mem_bw_gbs;
  return roof;
}

std::vector<MachineEstimate> estimate_machines(const std::vector<LayerCost>& costs, const MeasuredHere& here,
                                               const std::vector<HardwareSpec>& table) {
  std::vector<MachineEstimate> estimates;
  std::string missing_here;
  if (here.roof.gflops <= 0) {
    missing_here = "not estimated: no FP32 peak known for " + here.machine + ", so no efficiency to scale by";
  } else if (here.roof.gbs <= 0) {
    missing_here = "not estimated: no memory bandwidth known for " + here.machine + ", so no efficiency to scale by";
  } else if (!(here.samples_per_s > 0)) {
    missing_here = "not estimated: no training speed measured on " + here.machine;
  }
  double efficiency = 0;
  std::string efficiency_text;
  if (missing_here.empty()) {
    // roofline seconds here / measured seconds here
    efficiency = roofline_seconds_per_sample(costs, here.roof) * here.samples_per_s;
    efficiency_text = "x efficiency " + format_significant(efficiency, 3) + " measured here on " + here.machine;
    if (efficiency > 1) {
      efficiency_text += " (above 1: the roof taken for here, " + format_significant(here.roof.gflops, 4) + " GFLOP/s and " +
                         format_significant(here.roof.gbs, 4) + " GB/s, is too low, so these estimates are high)";
    }
  }
  for (const HardwareSpec& spec : table) {
    if (spec.is_cpu() == here.gpu) continue;  // CPU measurements scale to CPUs, GPU ones to GPUs
    MachineEstimate estimate;
    estimate.spec = &spec;
    estimate.efficiency = efficiency;
    const Roof there = roof_of(spec);
    if (!missing_here.empty()) {
      estimate.basis = missing_here;
    } else if (there.gflops <= 0 && there.gbs <= 0) {
      estimate.basis = "not estimated: no FP32 peak and no bandwidth in the table";
    } else if (there.gflops <= 0) {
      estimate.basis = "not estimated: no FP32 peak in the table";
    } else if (there.gbs <= 0) {
      estimate.basis = "not estimated: no bandwidth in the table";
    } else {
      estimate.samples_per_s = efficiency / roofline_seconds_per_sample(costs, there);
      estimate.compute_bound_share = compute_bound_share(costs, there);
      std::string peak = format_significant(there.gflops, 4) + " GFLOP/s";
      if (spec.is_cpu() && spec.cores > 0 && spec.boost_mhz > 0 && spec.flops_per_cycle_core > 0) {
        peak = std::to_string(spec.cores) + (spec.cores == 1 ? " core" : " cores") + " x " +
               format_significant(spec.boost_mhz, 4) + " MHz x " + format_significant(spec.flops_per_cycle_core, 4) +
               " flops/cycle = " + peak;
      }
      estimate.basis = "roofline " + peak + ", " + format_significant(there.gbs, 4) + " GB/s; " + efficiency_text;
    }
    estimates.push_back(estimate);
  }
  return estimates;
}

double measure_memory_bandwidth_gbs(int threads) {
  constexpr int64_t kElements = int64_t{40} << 20 >> 2;  // 40 MiB of floats an array
  constexpr size_t kBytes = static_cast<size_t>(kElements) * sizeof(float);
  constexpr int kMaxRepetitions = 6;
  constexpr double kTimeLimit = 0.3;  // seconds of triads, after the first
  float* arrays[3] = {nullptr, nullptr, nullptr};
  bool allocated = true;
  for (float*& array : arrays) {
    auto memory = host_memory().allocate(kBytes, "memory bandwidth probe");
    if (!memory.ok()) {
      allocated = false;
      break;
    }
    array = static_cast<float*>(memory.value());
  }
  double best = 0;
  if (allocated) {
    ThreadPool pool(std::max(1, threads));
    float* a = arrays[0];
    const float* b = arrays[1];
    const float* c = arrays[2];
    constexpr int64_t kGrain = 1 << 16;
    // First touch by the thread that will stream each part (the same split every call).
    pool.parallel_for(kElements, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        arrays[0][i] = 0.0f;
        arrays[1][i] = 1.0f;
        arrays[2][i] = 2.0f;
      }
    });
    const float scalar = 3.0f;
    const auto start = std::chrono::steady_clock::now();
    for (int rep = 0; rep < kMaxRepetitions; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      pool.parallel_for(kElements, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) a[i] = b[i] + scalar * c[i];
      });
      const auto t1 = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(t1 - t0).count();
      if (seconds > 0) best = std::max(best, 3.0 * static_cast<double>(kBytes) / seconds / 1e9);
      if (std::chrono::duration<double>(t1 - start).count() > kTimeLimit && rep >= 1) break;
    }
    // Read the result back, so that the triads cannot be dropped as dead stores.
    volatile float sink = a[kElements / 2] + a[kElements - 1];
    (void)sink;
  }
  for (float* array : arrays)
    if (array != nullptr) host_memory().release(array, kBytes);
  return best;
}

}  // namespace rg
