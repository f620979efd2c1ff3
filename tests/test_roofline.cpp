// The roofline of training (report/roofline.h): per-layer flops add up to the model's own
// counts, bytes follow the documented model (checked by hand for dense layers), times and
// bounds under a hand-made roof, estimates that scale with the machine, skipped rows with a
// reason, and the bandwidth measurement.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "nn/model.h"
#include "report/roofline.h"

namespace rg {
namespace {

std::unique_ptr<Model> preset_model(const std::string& name) {
  auto cfg = load_model_cfg(name);
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto model = Model::from_cfg(cfg.value());
  EXPECT_TRUE(model.ok()) << name << ": " << model.status().message();
  return model.take();
}

std::unique_ptr<Model> cfg_model(const char* text) {
  auto cfg = parse_cfg(text, "test.cfg");
  EXPECT_TRUE(cfg.ok()) << cfg.status().message();
  auto model = Model::from_cfg(cfg.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  return model.take();
}

TEST(Roofline, LayerFlopsAddUpToTheModelsTrainingFlops) {
  for (const char* name : {"mlp", "lenet", "cnn", "rcnn", "autoencoder", "conv-autoencoder", "dcgan-generator",
                           "dcgan-discriminator", "resnet20"}) {
    const auto model = preset_model(name);
    for (int64_t batch : {1, 64}) {
      const auto costs = training_costs_per_sample(*model, batch);
      // every layer and the loss (dcgan-generator has none)
      const size_t loss_rows = model->loss() == LossKind::none ? 0 : 1;
      ASSERT_EQ(costs.size(), model->layers().size() + loss_rows) << name;
      EXPECT_EQ(total_flops(costs), static_cast<double>(model->train_flops_per_sample())) << name;
      EXPECT_GT(total_flops(costs), 0) << name;
      for (size_t i = 0; i < costs.size(); ++i) {
        // A relu its batch norm runs (cnn, rcnn) moves nothing of its own; one a convolution runs
        // keeps its passes (roofline.cpp's fused_away).
        const bool fused = i > 0 && i < model->layers().size() && model->fuses_relu_after(i - 1) &&
                           model->layers()[i - 1]->kind() == "batchnorm";
        EXPECT_EQ(costs[i].bytes > 0, !fused) << name << " " << costs[i].name;
        EXPECT_GE(costs[i].flops, 0) << name << " " << costs[i].name;
      }
      if (loss_rows == 1) {
        EXPECT_EQ(costs.back().kind, "loss");
      }
    }
  }
}

// 100 -> dense 10 (the first layer: no dx) -> relu -> dense 5 -> softmax cross-entropy on labels.
const char* kSmallMlp =
    "[net]\ninput = 100\nloss = softmax_cross_entropy\n"
    "\n[dense]\nunits = 10\n"
    "\n[relu]\n"
    "\n[dense]\nunits = 5\n";

// A layer of a graph model reads the outputs of its inputs: an add of two outputs of 10 values
// reads 20 and writes 10 forward, reads 10 (dy) and writes 20 (both dx) backward.
TEST(Roofline, AGraphLayerReadsEachOfItsInputs) {
  const auto model = cfg_model("[net]\ninput = 10\n[dense]\nunits = 10\nname = a\n[relu]\n[add]\ninputs = a, relu1\n"
                               "[dense]\nunits = 3\n");
  const auto costs = training_costs_per_sample(*model, 1);
  ASSERT_EQ(costs.size(), 5u);
  EXPECT_EQ(costs[2].kind, "add");
  EXPECT_DOUBLE_EQ(costs[2].bytes, 4 * 60.0);
  EXPECT_DOUBLE_EQ(costs[2].flops, 0);
}

TEST(Roofline, DenseBytesMatchAHandCount) {
  const auto model = cfg_model(kSmallMlp);
  // Dense 10 -> 5 (55 params): activations x, y forward; x, dy for dW; dy, dx for dx: 45 values.
  // Params: read in forward, grads written, read for dx, SGD with momentum reads w, g, v and
  // writes w, v: 8 x 55 = 440 values a step.
  const double second_p = 55, first_p = 1010;
  for (int64_t batch : {1, 64}) {
    const auto costs = training_costs_per_sample(*model, batch);
    ASSERT_EQ(costs.size(), 4u);
    EXPECT_EQ(costs[0].kind, "dense");
    EXPECT_EQ(costs[1].kind, "relu");
    EXPECT_EQ(costs[2].kind, "dense");
    EXPECT_EQ(costs[3].kind, "loss");
    const double b = static_cast<double>(batch);
    // first dense: 100 + 10 forward, 100 + 10 for dW, no dx; params 1 + 1 + 5 a step
    EXPECT_DOUBLE_EQ(costs[0].bytes, 4 * (220 + 7 * first_p / b)) << batch;
    EXPECT_DOUBLE_EQ(costs[0].flops, 2 * 2 * 100 * 10);
    // relu over 10: x read, y written; dy and x read, dx written
    EXPECT_DOUBLE_EQ(costs[1].bytes, 4 * 50.0);
    EXPECT_DOUBLE_EQ(costs[1].flops, 0);
    EXPECT_DOUBLE_EQ(costs[2].bytes, 4 * (45 + 8 * second_p / b)) << batch;
    EXPECT_DOUBLE_EQ(costs[2].flops, 3 * 2 * 10 * 5);
    // loss: 5 logits and a label read, 5 gradients written
    EXPECT_DOUBLE_EQ(costs[3].bytes, 4 * 11.0);
  }
  // The numbers themselves, at batch 1 and 64: the weights amortised over the batch.
  EXPECT_DOUBLE_EQ(training_costs_per_sample(*model, 1)[2].bytes, 1940);
  EXPECT_DOUBLE_EQ(training_costs_per_sample(*model, 64)[2].bytes, 207.5);
  // Adam: w, g, m, s read, w, m, s written: 10 x 55 a step; plain SGD: 6 x 55.
  OptimizerConfig adam;
  adam.kind = OptimizerKind::adam;
  EXPECT_DOUBLE_EQ(training_costs_per_sample(*model, 1, adam)[2].bytes, 4 * (45 + 10 * second_p));
  OptimizerConfig plain;
  plain.momentum = 0;
  EXPECT_DOUBLE_EQ(training_costs_per_sample(*model, 1, plain)[2].bytes, 4 * (45 + 6 * second_p));
}

TEST(Roofline, GanStepCountsThreeDiscriminatorPasses) {
  const auto g = preset_model("dcgan-generator");
  const auto d = preset_model("dcgan-discriminator");
  const auto costs = gan_training_costs_per_sample(*g, *d, 64);
  ASSERT_EQ(costs.size(), g->layers().size() + d->layers().size() + 1);
  const double fg = static_cast<double>(g->forward_flops_per_sample());
  const double fd = static_cast<double>(d->forward_flops_per_sample());
  const double fd1 = static_cast<double>(d->layers().front()->forward_flops_per_sample());
  EXPECT_EQ(total_flops(costs), static_cast<double>(g->train_flops_per_sample()) + 9 * fd - 2 * fd1);
  EXPECT_GT(fg, 0);
  EXPECT_EQ(costs.front().name.rfind("G.", 0), 0u) << costs.front().name;
  EXPECT_EQ(costs.back().name, "D.loss");
  // Past D's first layer, three plain training passes of D: the activations' bytes are 3 times
  // (at a batch so large that the parameters' share vanishes), the flops exactly 3 times.
  const int64_t huge = int64_t{1} << 40;
  const auto gan_huge = gan_training_costs_per_sample(*g, *d, huge);
  const auto plain_d = training_costs_per_sample(*d, huge);
  for (size_t i = 1; i < d->layers().size(); ++i) {
    const LayerCost& gan_row = gan_huge[g->layers().size() + i];
    EXPECT_EQ(gan_row.name, "D." + plain_d[i].name);
    EXPECT_NEAR(gan_row.bytes / plain_d[i].bytes, 3, 1e-6) << gan_row.name;
    EXPECT_DOUBLE_EQ(gan_row.flops, 3 * plain_d[i].flops) << gan_row.name;
  }
  // D's first layer: dx once, so its flops are 7 forwards'.
  EXPECT_DOUBLE_EQ(gan_huge[g->layers().size()].flops, 7 * fd1);
  // The three BCE losses: a logit, a target, a gradient each.
  EXPECT_DOUBLE_EQ(gan_huge.back().bytes, 4 * 3 * 3.0);
}

TEST(Roofline, TimeIsTheSumOfEachLayersSlowerRoof) {
  const std::vector<LayerCost> costs = {{"gemm", "dense", 2e9, 1e8}, {"act", "relu", 1e6, 1e9}};
  const Roof roof{100, 10};  // 100 GFLOP/s, 10 GB/s
  // gemm: 0.02 s of compute against 0.01 s of memory; act: 1e-5 s against 0.1 s.
  EXPECT_DOUBLE_EQ(roofline_seconds_per_sample(costs, roof), 0.02 + 0.1);
  const auto bounds = roofline_bounds(costs, roof);
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_TRUE(bounds[0].compute_bound);
  EXPECT_FALSE(bounds[1].compute_bound);
  EXPECT_DOUBLE_EQ(bounds[0].seconds, 0.02);
  EXPECT_DOUBLE_EQ(bounds[1].seconds, 0.1);
  EXPECT_DOUBLE_EQ(bounds[0].intensity, 20);
  EXPECT_DOUBLE_EQ(compute_bound_share(costs, roof), 0.02 / 0.12);
  // 100x the bandwidth: act is still memory-bound (1e-5 < 1e-3), gemm compute-bound.
  EXPECT_DOUBLE_EQ(roofline_seconds_per_sample(costs, Roof{100, 1000}), 0.02 + 0.001);
  // 1 MFLOP/s: act's 1 s of compute outlasts its 0.1 s of memory; both compute-bound.
  EXPECT_DOUBLE_EQ(compute_bound_share(costs, Roof{0.001, 10}), 1.0);
  EXPECT_DOUBLE_EQ(roofline_seconds_per_sample(costs, Roof{0.001, 10}), 2000 + 1);
}

TEST(Roofline, LayersWithoutFlopsAreMemoryBound) {
  const auto model = preset_model("cnn");
  const auto costs = training_costs_per_sample(*model, 64);
  const auto bounds = roofline_bounds(costs, Roof{100, 20});
  int elementwise = 0, compute = 0;
  for (size_t i = 0; i < costs.size(); ++i) {
    if (costs[i].flops == 0 && costs[i].bytes > 0) {  // not a relu its batch norm runs
      ++elementwise;
      EXPECT_FALSE(bounds[i].compute_bound) << costs[i].name;
      EXPECT_GT(bounds[i].seconds, 0) << costs[i].name;
    }
    compute += bounds[i].compute_bound;
  }
  EXPECT_GE(elementwise, 10);  // batch norms, pools, dropouts
  EXPECT_GE(compute, 4);       // the convs at batch 64
}

HardwareSpec spec_row(const char* device, const char* type, double gflops, double gbs) {
  HardwareSpec spec;
  spec.device = device;
  spec.type = type;
  spec.fp32_peak_gflops = gflops;
  spec.mem_bw_gbs = gbs;
  return spec;
}

TEST(Roofline, EstimatesScaleWithTheMachine) {
  const auto model = preset_model("lenet");
  const auto costs = training_costs_per_sample(*model, 64);
  std::vector<HardwareSpec> table = {
      spec_row("Same CPU", "CPU", 100, 10),       spec_row("Twice CPU", "CPU", 200, 20),
      spec_row("No bandwidth", "CPU", 100, 0),    spec_row("No peak", "CPU", 0, 10),
      spec_row("A GPU", "GPU", 4000, 200),        spec_row("Another GPU", "GPU (mobile)", 1000, 50),
  };
  table[1].cores = 4;
  table[1].boost_mhz = 3125;
  table[1].flops_per_cycle_core = 16;
  MeasuredHere here;
  here.roof = Roof{100, 10};
  here.samples_per_s = 1234.5;
  here.machine = "Test CPU (avx2)";
  const auto cpu = estimate_machines(costs, here, table);
  ASSERT_EQ(cpu.size(), 4u);  // the CPU rows only
  const double efficiency = roofline_seconds_per_sample(costs, here.roof) * here.samples_per_s;
  EXPECT_GT(efficiency, 0);
  for (const auto& estimate : cpu) EXPECT_DOUBLE_EQ(estimate.efficiency, efficiency);
  EXPECT_EQ(cpu[0].spec, &table[0]);
  EXPECT_DOUBLE_EQ(cpu[0].samples_per_s, here.samples_per_s);  // the same roof: what was measured
  EXPECT_EQ(cpu[1].samples_per_s, 2 * cpu[0].samples_per_s);   // twice both roofs: exactly twice
  EXPECT_DOUBLE_EQ(cpu[1].compute_bound_share, cpu[0].compute_bound_share);
  EXPECT_NE(cpu[1].basis.find("4 cores x 3125 MHz x 16 flops/cycle = 200 GFLOP/s, 20 GB/s"), std::string::npos)
      << cpu[1].basis;
  EXPECT_NE(cpu[1].basis.find("measured here on Test CPU (avx2)"), std::string::npos) << cpu[1].basis;
  EXPECT_EQ(cpu[0].basis.find("above 1"), std::string::npos) << cpu[0].basis;
  EXPECT_EQ(cpu[2].samples_per_s, 0);
  EXPECT_NE(cpu[2].basis.find("no bandwidth in the table"), std::string::npos) << cpu[2].basis;
  EXPECT_EQ(cpu[3].samples_per_s, 0);
  EXPECT_NE(cpu[3].basis.find("no FP32 peak in the table"), std::string::npos) << cpu[3].basis;

  // A GPU measurement scales to the GPU rows only.
  here.gpu = true;
  here.roof = Roof{4000, 200};
  const auto gpu = estimate_machines(costs, here, table);
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0].spec, &table[4]);
  EXPECT_EQ(gpu[1].spec, &table[5]);
  EXPECT_GT(gpu[1].samples_per_s, 0);
  EXPECT_LT(gpu[1].samples_per_s, gpu[0].samples_per_s);

  // An efficiency above 1 is kept, and said.
  here.gpu = false;
  here.roof = Roof{100, 10};
  here.samples_per_s = 2 / roofline_seconds_per_sample(costs, here.roof);
  const auto fast = estimate_machines(costs, here, table);
  EXPECT_NEAR(fast[0].efficiency, 2, 1e-12);
  EXPECT_NE(fast[0].basis.find("above 1"), std::string::npos) << fast[0].basis;

  // Nothing known here: every row says why it was not estimated.
  here.roof = Roof{0, 10};
  for (const auto& estimate : estimate_machines(costs, here, table)) {
    EXPECT_EQ(estimate.samples_per_s, 0);
    EXPECT_NE(estimate.basis.find("no FP32 peak known for Test CPU"), std::string::npos) << estimate.basis;
  }
}

TEST(Roofline, TheTablesRowsAreEstimated) {
  const auto model = preset_model("mlp");
  const auto costs = training_costs_per_sample(*model, 64);
  MeasuredHere here;
  here.roof = Roof{150, 15};
  here.samples_per_s = 20000;
  here.machine = "AMD EPYC (avx2)";
  const auto estimates = estimate_machines(costs, here, hardware_table());
  EXPECT_EQ(estimates.size(), 10u);  // the table's CPUs, each with a peak and a bandwidth
  for (const auto& estimate : estimates) {
    EXPECT_TRUE(estimate.spec->is_cpu());
    EXPECT_GT(estimate.samples_per_s, 0) << estimate.spec->device << ": " << estimate.basis;
    EXPECT_EQ(estimate.basis.rfind("roofline ", 0), 0u) << estimate.basis;
  }
}

TEST(Roofline, MemoryBandwidthIsMeasured) {
  for (int threads : {1, 2}) {
    const double gbs = measure_memory_bandwidth_gbs(threads);
    EXPECT_GT(gbs, 0) << threads;
    EXPECT_TRUE(std::isfinite(gbs)) << threads;
  }
}

}  // namespace
}  // namespace rg
