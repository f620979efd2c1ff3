// A roofline model of training, per layer: what one training step costs a sample in flops and
// in bytes of memory traffic, how long that takes on a machine of a given peak and bandwidth
// (each layer bound by whichever of the two takes longer), and from there estimates of the
// same training on the machines of data/hardware_specs.csv, scaled by the efficiency measured
// here (measured speed over this machine's roofline). `retrograd study` prints these as
// estimates, never as measurements.
//
// The byte model (f32, 4 bytes a value; each layer gives its own, Layer::traffic in
// nn/layer_traffic.h). Every op streams the tensors it reads and writes once, as a roofline of
// separate kernels does: nothing is assumed to stay in cache from one op to the next, and
// nothing an op re-reads internally (the GEMM's panels, a convolution's zero-padded copy of its
// input, its im2col scratch) is counted.
//   activations, per sample:
//     forward   reads x, writes y (batch norm reads x three times: mean, variance, normalise);
//     backward  reads dy and what the derivative needs (dense/conv: x for dW; relu: x; sigmoid,
//               tanh, softmax: y; max pool: x and y; batch norm: dy and x twice), writes dx;
//               a layer's dx is not computed for the model's first layer (train_flops_per_sample
//               leaves its flops out too).
//   parameters, per step, so per sample divided by the batch (what makes large batches
//   compute-bound): read in forward, read again for dx, the gradient written in backward (read
//   too where it accumulates), and the optimizer's read-modify-write: SGD reads w, g and writes
//   w (3 values a parameter), with momentum also reads and writes v (5), Adam reads w, g, m, s
//   and writes w, m, s (7).
//   the loss: reads the output and the target, writes the output's gradient (no flops).
// Flops are the model's own counts (Layer::forward_flops_per_sample): a forward's, then in
// backward the same again for the weights' gradient and again for dx, so the rows of
// training_costs_per_sample add up to Model::train_flops_per_sample.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nn/model.h"
#include "nn/optimizer.h"
#include "report/hardware_table.h"

namespace rg {

// What one layer costs per sample in one training step.
struct LayerCost {
  std::string name;   // the layer's name ("conv1"); "loss"; in a GAN prefixed "G." or "D."
  std::string kind;   // the layer's kind ("conv", "relu"), or "loss"
  double flops = 0;   // forward and backward
  double bytes = 0;   // memory traffic, the parameters' share divided by the batch
};

// One training step of `model` (forward, loss, backward, optimizer) on a batch of `batch`,
// per sample: one row per layer, then the loss. The optimizer sets the parameters' update
// traffic (the default: SGD with momentum 0.9, `retrograd train`'s default).
std::vector<LayerCost> training_costs_per_sample(const Model& model, int64_t batch,
                                                 const OptimizerConfig& optimizer = OptimizerConfig());

// One GAN step (train/gan.h: GanTrainer's queue_step) per real sample, for a batch of `batch`
// real images and as many noise vectors:
//   G forward once (the fake batch);
//   D forward and backward on the real batch (grads written, no dx for D's first layer),
//   D forward and backward on the fake batch (grads accumulated: read and written), D's update;
//   D forward and backward on the fake batch again with D's first layer's dx (the gradient that
//   goes to G's output; D's grads written, never applied), then G backward (no dx for G's first
//   layer: its input is noise) and G's update.
// So D runs 3 forwards and 3 backwards, the first-layer dx once; G one of each. Rows are G's
// layers ("G.dense1"), D's layers ("D.conv1", the three passes summed) and "D.loss" (three
// BCE losses). The flops add up to G's train_flops_per_sample plus 3 times D's forward and
// 3 backwards: (3 F_G - F_G,first) + (9 F_D - 2 F_D,first), F the forward flops of a model or of
// its first layer.
std::vector<LayerCost> gan_training_costs_per_sample(const Model& generator, const Model& discriminator,
                                                     int64_t batch,
                                                     const OptimizerConfig& optimizer = OptimizerConfig());

double total_flops(const std::vector<LayerCost>& costs);
double total_bytes(const std::vector<LayerCost>& costs);

// A machine's two roofs: FP32 peak and sustainable memory bandwidth.
struct Roof {
  double gflops = 0;  // GFLOP/s
  double gbs = 0;     // GB/s (1e9 bytes a second)
};

// Seconds per sample under the roof: the sum over layers of max(flops / peak, bytes / bandwidth).
// Both roofs must be positive (a broken invariant aborts).
double roofline_seconds_per_sample(const std::vector<LayerCost>& costs, const Roof& roof);

// Which roof a layer meets, for the report.
struct LayerBound {
  std::string name;
  bool compute_bound = false;  // flops / peak >= bytes / bandwidth (a tie counts as compute)
  double seconds = 0;          // max of the two, per sample
  double intensity = 0;        // flops per byte (0 when bytes is 0)
};
std::vector<LayerBound> roofline_bounds(const std::vector<LayerCost>& costs, const Roof& roof);
// The share of the roofline time spent in compute-bound layers, in [0, 1].
double compute_bound_share(const std::vector<LayerCost>& costs, const Roof& roof);

// A machine's roof from its table row: the FP32 peak at the boost clock (CPUs: every core) and
// the published bandwidth; a figure that is missing stays 0.
Roof roof_of(const HardwareSpec& spec);

// The same training estimated on another machine.
struct MachineEstimate {
  const HardwareSpec* spec = nullptr;  // the row of the table passed in
  double samples_per_s = 0;            // 0: not estimated (basis says why)
  double compute_bound_share = 0;      // of the roofline time there
  double efficiency = 0;               // the one measured here, that was applied
  std::string basis;                   // "roofline 6 cores x 4200 MHz x 32 flops/cycle = 806.4 GFLOP/s,
                                       // 51.2 GB/s; x efficiency 0.31 measured here on AMD EPYC (avx2)"
};

// What was measured here: this machine's roof and the measured training speed.
struct MeasuredHere {
  Roof roof;                  // the peak used here (report/peak.h) and the bandwidth (measured)
  double samples_per_s = 0;   // measured, > 0
  std::string machine;        // for the basis: "AMD EPYC (avx2)"
  bool gpu = false;           // measured on a GPU: estimates for GPU rows; else for CPU rows
};

// Assumed: the efficiency reached here carries over to the other machine at its full roof (a
// CPU's peak is every core at the boost clock), which flatters machines of many cores, where a
// small batch does not split well over the threads.
// efficiency = roofline seconds here / measured seconds here (1 / samples_per_s); not clamped:
// above 1 means the roof given for here is too low, and each basis says so. For each row of
// `table` of the same class (CPU rows for a CPU measurement, the others for a GPU one):
// samples/s = efficiency / roofline seconds there. A row without a peak or a bandwidth is
// returned with samples_per_s 0 and the reason as its basis ("no bandwidth in the table").
std::vector<MachineEstimate> estimate_machines(const std::vector<LayerCost>& costs, const MeasuredHere& here,
                                               const std::vector<HardwareSpec>& table);

// This machine's sustainable memory bandwidth in GB/s, STREAM's triad a[i] = b[i] + s c[i] over
// three arrays of 40 MiB (120 MiB, well above a last-level cache of 32 MiB) on `threads`
// threads, each thread on its own contiguous part of each array (pages first touched by it).
// Counted as STREAM counts: 12 bytes an element (two reads and one write; the write-allocate
// read of a, which the hardware may also do, is not counted). The best of up to 6 repetitions
// within about 0.3 s. Returns 0 when the arrays cannot be allocated.
double measure_memory_bandwidth_gbs(int threads);

}  // namespace rg
