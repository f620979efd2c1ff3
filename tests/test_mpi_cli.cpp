// `mpirun -np N retrograd train` end to end (the acceptance): 2 and 3 ranks on this
// machine end with the weights of one process with the same batch; only rank 0 writes and
// prints; a resume reads rank 0's file; what a run over MPI cannot do is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "portable.h"
#include "train/checkpoint.h"

namespace {

std::string temp_dir() {
  static const std::string dir = make_temp_folder("retrograd_mpi_cli_");
  return dir;
}

// `retrograd ARGS` as `ranks` processes of one job on this machine.
Outcome run_ranks(int ranks, const std::string& args) {
  return run_command("mpirun --oversubscribe -np " + std::to_string(ranks) + " " + retrograd_binary() + " " + args);
}

// The largest difference between two checkpoints' tensors (weights and optimizer state),
// relative where a value is large; 1e9 when they do not hold the same tensors.
double worst_difference(const std::string& a_path, const std::string& b_path) {
  auto a = rg::read_checkpoint(a_path), b = rg::read_checkpoint(b_path);
  EXPECT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(b.ok()) << b.status().message();
  if (!a.ok() || !b.ok() || a.value().tensors.size() != b.value().tensors.size()) return 1e9;
  double worst = 0;
  for (size_t t = 0; t < a.value().tensors.size(); ++t) {
    const auto& [name, x] = a.value().tensors[t];
    const rg::Tensor& y = b.value().tensors[t].second;
    if (name != b.value().tensors[t].first || x.numel() != y.numel()) return 1e9;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double ref = y.f32()[i];
      worst = std::max(worst, std::fabs(double(x.f32()[i]) - ref) / std::max(1.0, std::fabs(ref)));
    }
  }
  return worst;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

const char* kRun = "train --data synthetic --limit 600 --test-limit 200 --batch 60 --epochs 2 --threads 1";

TEST(MpiCli, RanksEndWithTheWeightsOfOneProcessWithTheSameBatch) {
  const std::string one = temp_dir() + "/one.ckpt";
  const Outcome alone = run(std::string(kRun) + " --checkpoint " + one);
  ASSERT_EQ(alone.code, 0) << alone.output;
  for (int ranks : {2, 3}) {
    const std::string many = temp_dir() + "/ranks" + std::to_string(ranks) + ".ckpt";
    const std::string json = temp_dir() + "/ranks" + std::to_string(ranks) + ".json";
    const Outcome together = run_ranks(ranks, std::string(kRun) + " --checkpoint " + many + " --json " + json);
    ASSERT_EQ(together.code, 0) << together.output;
    EXPECT_LE(worst_difference(many, one), 1e-5) << ranks << " ranks";
    // One report: the root's. Its summary names the ranks and their traffic.
    EXPECT_EQ(count_of(together.output, "test accuracy"), 1u) << together.output;
    EXPECT_NE(together.output.find("ranks           " + std::to_string(ranks) + " ranks"), std::string::npos)
        << together.output;
    EXPECT_NE(together.output.find("ms a step summing them"), std::string::npos) << together.output;
    std::ifstream in(json);
    const nlohmann::json report = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(report.is_discarded());
    EXPECT_EQ(report["ranks"]["count"], ranks);
    EXPECT_EQ(report["train_samples"], 600);
  }
}

// A resume under mpirun: rank 0 reads the checkpoint and sends it (the other PCs need not have
// it); the run ends where one uninterrupted run over the same ranks does.
TEST(MpiCli, ResumeReadsTheRootsCheckpoint) {
  const std::string stopped = temp_dir() + "/stopped.ckpt", whole = temp_dir() + "/whole.ckpt";
  ASSERT_EQ(run_ranks(2, std::string(kRun) + " --stop-after 1 --checkpoint " + stopped).code, 0);
  const Outcome resumed = run_ranks(2, "train --resume " + stopped + " --data synthetic --limit 600 --test-limit 200 --threads 1");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("Epoch 2/2"), std::string::npos) << resumed.output;
  ASSERT_EQ(run_ranks(2, std::string(kRun) + " --checkpoint " + whole).code, 0);
  EXPECT_LE(worst_difference(stopped, whole), 1e-6);
}

// `study` over 2 ranks: each measures its share, the root's report holds every run of the plan
// (as many as one process measures), in the plan's order: round by round.
TEST(MpiCli, StudySpreadsItsRunsOverTheRanks) {
  const std::string args = " --quick --parts devices --networks mlp --precisions fp32 --no-opencl --seconds 0.2 --out ";
  const std::string alone_dir = temp_dir() + "/study1", spread_dir = temp_dir() + "/study2";
  const Outcome alone = run("study" + args + alone_dir);
  ASSERT_EQ(alone.code, 0) << alone.output;
  const Outcome spread = run_ranks(2, "study" + args + spread_dir);
  ASSERT_EQ(spread.code, 0) << spread.output;
  EXPECT_NE(spread.output.find("spread over 2 ranks"), std::string::npos) << spread.output;
  EXPECT_EQ(count_of(spread.output, "study done"), 1u) << spread.output;
  auto runs = [](const std::string& dir) {
    std::ifstream in(dir + "/study.json");
    const nlohmann::json study = nlohmann::json::parse(in, nullptr, false);
    std::vector<std::string> devices;
    if (study.is_discarded()) return devices;
    // The 3 interleaved rounds of every configuration (extra rounds of unstable figures depend on the noise).
    for (const auto& run : study["runs"])
      if (run["round"].get<int>() < 3)
        devices.push_back(run["network"].dump() + " on " + run["device"].dump() + " round " + run["round"].dump() +
                          (run["ok"].get<bool>() ? "" : " failed"));
    return devices;
  };
  const std::vector<std::string> measured = runs(spread_dir);
  EXPECT_GE(measured.size(), 2u);
  EXPECT_EQ(measured, runs(alone_dir));
}

TEST(MpiCli, WhatCannotRunOverMpiIsRefusedByName) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"train --data synthetic --limit 200 --precision fp32,int8", "--precision trains every precision in turn"},
      {"train --data synthetic --limit 200 --device cl:0:0", "training over MPI runs on the CPU"},
      {"train --data synthetic --limit 200 --profile", "--profile times the layers of one process"},
      {"train --model dcgan --data synthetic --limit 200", "GAN training runs on one process"},
      {"train --data synthetic --limit 200 --grad-format f8", "--grad-format: unknown gradient format 'f8'"},
  };
  for (const auto& c : cases) {
    const Outcome o = run_ranks(2, c.args);
    EXPECT_NE(o.code, 0) << c.args;
    EXPECT_NE(o.output.find(c.message), std::string::npos) << c.args << "\n" << o.output;
  }
}

}  // namespace
