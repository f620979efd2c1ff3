// The retrograd command end to end: exit codes, messages that name the file and the rule,
// nothing overwritten on bad input, --json fields, resume through the command line.
#include <gtest/gtest.h>

#include "cpu/kernel_tables.h"
#include "dist/communicator.h"
#include "portable.h"
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/stat.h>

namespace {

std::string temp_dir() {
  static const std::string dir = make_temp_folder("retrograd_cli_");
  return dir;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

bool exists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

// A tiny MNIST-layout folder: `n` 28x28 images, labels i % 10, raw (not gzipped); pixels 0 or
// 255 as bytes, or 0 or 1 as float32 (type 0x0D) when `floats`.
std::string write_idx_folder(const std::string& name, int n, bool floats = false) {
  const std::string dir = temp_dir() + "/" + name;
  std::filesystem::create_directory(dir);
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  std::string images = be32(floats ? 0xD03 : 0x803) + be32(static_cast<uint32_t>(n)) + be32(28) + be32(28);
  std::string labels = be32(0x801) + be32(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < 784; ++p) {
      const bool on = p % 28 == (i % 10) * 2;
      images += floats ? be32(on ? 0x3F800000u : 0u) : std::string(1, static_cast<char>(on ? 255 : 0));
    }
    labels += static_cast<char>(i % 10);
  }
  for (const char* split : {"train", "t10k"}) {
    write_all(dir + "/" + split + "-images-idx3-ubyte", images);
    write_all(dir + "/" + split + "-labels-idx1-ubyte", labels);
  }
  return dir;
}

const char* kQuick = "--data synthetic --limit 640 --batch 64 --threads 1";

TEST(Cli, HelpAndUsage) {
  EXPECT_EQ(run("--help").code, 0);
  const Outcome none = run("");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.output.find("usage"), std::string::npos);
  const Outcome unknown = run("fly");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.output.find("unknown command 'fly'"), std::string::npos);
  for (const char* command : {"train", "eval", "probe"}) {
    const Outcome help = run(std::string(command) + " --help");
    EXPECT_EQ(help.code, 0) << command;
    EXPECT_NE(help.output.find("--threads"), std::string::npos) << command;
    EXPECT_NE(help.output.find("--seed"), std::string::npos) << command;
  }
}

TEST(Cli, BadOptionsAreNamed) {
  Outcome o = run("train --bogus 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--bogus"), std::string::npos) << o.output;
  o = run("train --threads 0");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("--threads"), std::string::npos) << o.output;
  o = run("train --epochs");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("needs a value"), std::string::npos) << o.output;
  o = run("train --lr fast");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("not a number"), std::string::npos) << o.output;
  o = run("train --model nosuchpreset");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("mlp"), std::string::npos) << o.output;
}

// A limited address space (ulimit -v) is the budget when none is given: train says so and
// splits the batch into micro-batches; a limit that leaves nothing is refused, naming it.
TEST(Cli, AnAddressSpaceLimitIsTheBudget) {
#if defined(_WIN32)
  GTEST_SKIP() << "ulimit -v is POSIX";
#else
  if (std::getenv("MESON_EXE_WRAPPER") != nullptr) GTEST_SKIP() << "qemu-user maps the guest's address space itself";
  if (kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer's shadow memory needs more address space than any such limit";
  const std::string train = retrograd_binary() + " train --model lenet --data synthetic --limit 2048 --batch 1024 "
                            "--epochs 1 --threads 2";
  const Outcome limited = run_command("ulimit -v 200000 && " + train);
  EXPECT_EQ(limited.code, 0) << limited.output;
  EXPECT_NE(limited.output.find("the address space is limited to 195.3 MiB (ulimit -v)"), std::string::npos)
      << limited.output;
  EXPECT_NE(limited.output.find("batch 1024 = 2 micro-batches"), std::string::npos) << limited.output;
  const Outcome nothing_left = run_command("ulimit -v 60000 && " + train);
  EXPECT_EQ(nothing_left.code, 2) << nothing_left.output;
  EXPECT_NE(nothing_left.output.find("limited to 58.6 MiB (ulimit -v)"), std::string::npos) << nothing_left.output;
  EXPECT_NE(nothing_left.output.find("leave nothing for training"), std::string::npos) << nothing_left.output;
#endif
}

TEST(Cli, ProbeShowsTheMachine) {
  const Outcome o = run("probe");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("features"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("memory"), std::string::npos) << o.output;
}

TEST(Cli, TrainWritesTheJsonReport) {
  const std::string json_path = temp_dir() + "/report.json";
  const Outcome o = run(std::string("train ") + kQuick + " --epochs 1 --json " + json_path);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("test accuracy"), std::string::npos);
  EXPECT_NE(o.output.find("samples/s"), std::string::npos);
  EXPECT_NE(o.output.find("peak RSS"), std::string::npos);
  const auto report = nlohmann::json::parse(read_all(json_path));
  EXPECT_EQ(report.at("model"), "mlp");
  EXPECT_EQ(report.at("epochs"), 1);
  EXPECT_EQ(report.at("batch"), 64);
  EXPECT_GE(report.at("test_accuracy").get<double>(), 0.0);
  EXPECT_LE(report.at("test_accuracy").get<double>(), 1.0);
  EXPECT_GT(report.at("train_samples_per_s").get<double>(), 0.0);
  EXPECT_GT(report.at("peak_rss_bytes").get<int64_t>(), 0);
  EXPECT_GT(report.at("peak_tensor_bytes").get<int64_t>(), 0);
  EXPECT_EQ(report.at("history").size(), 1u);
}

TEST(Cli, MissingDataFolderIsNamedAndNothingIsWritten) {
  const std::string json_path = temp_dir() + "/never.json";
  const std::string ckpt_path = temp_dir() + "/never.ckpt";
  const Outcome o = run("train --data /nonexistent/fmnist --json " + json_path + " --checkpoint " + ckpt_path);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("/nonexistent/fmnist"), std::string::npos) << o.output;
  EXPECT_FALSE(exists(json_path));
  EXPECT_FALSE(exists(ckpt_path));
}

TEST(Cli, TruncatedIdxFileIsNamed) {
  const std::string dir = write_idx_folder("truncated", 50);
  const std::string images = dir + "/train-images-idx3-ubyte";
  const std::string bytes = read_all(images);
  write_all(images, bytes.substr(0, bytes.size() - 100));
  const Outcome o = run("train --data " + dir + " --epochs 1 --threads 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find(images), std::string::npos) << o.output;
}

// Float32 IDX images train kept in f32 or, --data-storage f16, in f16: these values (0 and 1)
// are exact in f16, so both runs score alike; an unknown storage is named.
TEST(Cli, FloatIdxImagesTrainInF32AndF16Storage) {
  const std::string dir = write_idx_folder("float_images", 200, true);
  double accuracy[2] = {0, 0};
  for (int f16 = 0; f16 < 2; ++f16) {
    const std::string json = temp_dir() + "/float_images.json";
    const Outcome o = run("train --data " + dir + " --epochs 1 --batch 20 --threads 1 --json " + json +
                          (f16 ? " --data-storage f16" : ""));
    ASSERT_EQ(o.code, 0) << o.output;
    accuracy[f16] = nlohmann::json::parse(read_all(json))["test_accuracy"].get<double>();
  }
  EXPECT_GT(accuracy[0], 0.5) << "the stripes are easy";
  EXPECT_EQ(accuracy[0], accuracy[1]);
  const Outcome bad = run("train --data " + dir + " --epochs 1 --data-storage f8");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("--data-storage: 'f8' is neither f32 nor f16"), std::string::npos) << bad.output;
}

TEST(Cli, WrongMagicAndCountMismatchAreNamed) {
  const std::string dir = write_idx_folder("magic", 50);
  const std::string labels = dir + "/train-labels-idx1-ubyte";
  std::string bytes = read_all(labels);
  bytes[3] = 0x03;  // an images magic number on a labels file
  write_all(labels, bytes);
  Outcome o = run("train --data " + dir + " --epochs 1 --threads 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find(labels), std::string::npos) << o.output;

  const std::string dir2 = write_idx_folder("counts", 50);
  const std::string other = write_idx_folder("counts_other", 40);
  write_all(dir2 + "/train-labels-idx1-ubyte", read_all(other + "/train-labels-idx1-ubyte"));
  o = run("train --data " + dir2 + " --epochs 1 --threads 1");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find("50"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("40"), std::string::npos) << o.output;
}

TEST(Cli, TrainsFromAnIdxFolder) {
  const std::string dir = write_idx_folder("good", 200);
  const Outcome o = run("train --data " + dir + " --epochs 2 --threads 1 --batch 20");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("test accuracy   1.0000"), std::string::npos) << o.output;
}

TEST(Cli, CfgErrorsNameFileLineAndKey) {
  const std::string cfg = temp_dir() + "/bad.cfg";
  write_all(cfg, "[net]\ninput = 28x28x1\n\n[dense]\nunits = 64\nactivation = relu\n");
  const Outcome o = run("train --model " + cfg + " " + kQuick);
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.output.find(cfg + ":6"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("activation"), std::string::npos) << o.output;
}

TEST(Cli, UserCfgTrains) {
  const std::string cfg = temp_dir() + "/small.cfg";
  write_all(cfg, "# a small net\n[net]\ninput = 784\nloss = softmax_cross_entropy\n[dense]\nunits = 16\n[tanh]\n[dense]\nunits = 10\n");
  const Outcome o = run("train --model " + cfg + " " + kQuick + " --epochs 1");
  EXPECT_EQ(o.code, 0) << o.output;
}

TEST(Cli, ResumeEqualsOneRunAndEvalScoresIt) {
  const std::string a = temp_dir() + "/a.ckpt", b = temp_dir() + "/b.ckpt";
  ASSERT_EQ(run(std::string("train ") + kQuick + " --epochs 3 --stop-after 1 --checkpoint " + a).code, 0);
  const Outcome resumed = run("train --resume " + a + " --data synthetic --limit 640 --threads 2");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("Epoch 2/3"), std::string::npos) << resumed.output;
  ASSERT_EQ(run(std::string("train ") + kQuick + " --epochs 3 --checkpoint " + b).code, 0);
  EXPECT_EQ(read_all(a), read_all(b)) << "resumed and uninterrupted runs must end with identical checkpoints";

  const Outcome eval = run("eval --checkpoint " + a + " --threads 1");
  EXPECT_EQ(eval.code, 0) << eval.output;
  EXPECT_NE(eval.output.find("test accuracy"), std::string::npos) << eval.output;

  const Outcome again = run("train --resume " + a + " --lr 0.5");
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.output.find("--lr"), std::string::npos) << again.output;
}

// A graph model (a residual block: inputs = ..., [add]) trains, resumes to the bits of one run,
// and is scored by eval; every row of `precision` runs it.
TEST(Cli, AGraphModelTrainsResumesExactlyAndEvaluates) {
  const std::string cfg = temp_dir() + "/residual.cfg", a = temp_dir() + "/ga.ckpt", b = temp_dir() + "/gb.ckpt";
  write_all(cfg, "[net]\ninput = 784\n[dense]\nunits = 16\n[relu]\nname = r\n[dense]\nunits = 16\n[tanh]\n"
                 "[add]\ninputs = r, tanh1\n[dense]\nunits = 10\n");
  const std::string train = "train --model " + cfg + " " + kQuick + " --epochs 2";
  const Outcome first = run(train + " --stop-after 1 --checkpoint " + a);
  ASSERT_EQ(first.code, 0) << first.output;
  const Outcome resumed = run("train --resume " + a + " --data synthetic --limit 640 --threads 1");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  ASSERT_EQ(run(train + " --checkpoint " + b).code, 0);
  EXPECT_EQ(read_all(a), read_all(b)) << "resumed and uninterrupted runs must end with identical checkpoints";
  const Outcome eval = run("eval --checkpoint " + a + " --threads 1");
  EXPECT_EQ(eval.code, 0) << eval.output;
  EXPECT_NE(eval.output.find("test accuracy"), std::string::npos) << eval.output;
  const Outcome int8 = run("train --model " + cfg + " " + kQuick + " --epochs 1 --train-precision int8-train");
  EXPECT_EQ(int8.code, 0) << int8.output;  // the layers' int8 GEMMs: nothing of the graph's to refuse
  // Every precision row runs the graph: f16 storage, the int8 engine (its add in int8), QAT.
  const Outcome rows = run("precision --model " + cfg + " --data synthetic --limit 256 --test-limit 128 --epochs 1 "
                           "--threads 1 --calib-batches 1 --precision fp32,fp16,int8,int8-qat,int8-train");
  ASSERT_EQ(rows.code, 0) << rows.output;
  EXPECT_NE(rows.output.find("int8 PTQ: 3 of 3 conv/dense int8"), std::string::npos) << rows.output;
  EXPECT_NE(rows.output.find("add1=int8"), std::string::npos) << rows.output;
}

// The resnet20 preset (a graph model) trains two steps from the command line: 16 samples, since
// under qemu as a Core 2 (SIMD floats ~400x slower than native) 48 and a 1000-sample test took 64 s.
TEST(Cli, Resnet20TrainsAFewSteps) {
  const Outcome o = run("train --model resnet20 --data synthetic --limit 16 --test-limit 16 --batch 8 --epochs 1 --threads 2");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("Epoch 1/1"), std::string::npos) << o.output;
}

// A build without MPI (the sanitizer and cross builds) started by mpirun says so instead of
// training alone as every rank; the launcher is recognised by its variables.
TEST(Cli, ABuildWithoutMpiRefusesToRunUnderMpirun) {
  if (rg::Communicator::available()) GTEST_SKIP() << "this build has MPI: test_mpi_cli runs it under mpirun";
  set_env("OMPI_COMM_WORLD_SIZE", "2");
  const Outcome o = run(std::string("train ") + kQuick + " --epochs 1");
  unset_env("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("started by mpirun (Open MPI), but this retrograd was built without MPI"), std::string::npos)
      << o.output;
}

TEST(Cli, CorruptCheckpointIsRefusedAndKept) {
  const std::string path = temp_dir() + "/corrupt.ckpt";
  ASSERT_EQ(run(std::string("train ") + kQuick + " --epochs 1 --checkpoint " + path).code, 0);
  std::string bytes = read_all(path);
  bytes[bytes.size() / 2] ^= 0x01;
  write_all(path, bytes);
  for (const std::string& command : {"train --epochs 2 --resume " + path, "eval --checkpoint " + path}) {
    const Outcome o = run(command);
    EXPECT_EQ(o.code, 2) << command;
    EXPECT_NE(o.output.find(path), std::string::npos) << o.output;
    EXPECT_NE(o.output.find("checksum"), std::string::npos) << o.output;
  }
  EXPECT_EQ(read_all(path), bytes) << "the refused file must stay as it was";
}

}  // namespace

// PNG width and height from the IHDR chunk (big-endian at bytes 16 and 20); 0 if not a PNG.
std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
  if (bytes.size() < 24 || bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

// Every preset trains a little and reports its figure: accuracy for classifiers, MSE and
// PSNR for autoencoders; the json carries the same.
TEST(Cli, EveryPresetTrains) {
  for (const char* preset : {"mlp", "lenet", "cnn", "rcnn", "autoencoder", "conv-autoencoder"}) {
    SCOPED_TRACE(preset);
    const std::string json = temp_dir() + "/preset_" + preset + ".json";
    const Outcome out = run(std::string("train --model ") + preset + " " + kQuick + " --epochs 1 --json " + json);
    ASSERT_EQ(out.code, 0) << out.output;
    const nlohmann::json report = nlohmann::json::parse(read_all(json));
    const bool autoencoder = std::string(preset).find("autoencoder") != std::string::npos;
    if (autoencoder) {
      EXPECT_NE(out.output.find("test MSE"), std::string::npos) << out.output;
      EXPECT_NE(out.output.find("adam"), std::string::npos) << "the preset's [train] section picks adam\n" << out.output;
      const double mse = report.at("test_mse").get<double>();
      EXPECT_GT(mse, 0.0);
      EXPECT_LT(mse, 0.2);
      EXPECT_NEAR(report.at("test_psnr_db").get<double>(), 10 * std::log10(1 / mse), 1e-9);
    } else {
      EXPECT_NE(out.output.find("test accuracy"), std::string::npos) << out.output;
      EXPECT_GT(report.at("test_accuracy").get<double>(), 0.0);
    }
  }
}

// --samples writes inputs above reconstructions: 32 test images in rows of 16 -> 4 rows of
// 28x28 tiles with 1-pixel gaps: 16*29+1 = 465 wide, 4*29+1 = 117 high.
TEST(Cli, AutoencoderSamplesPng) {
  const std::string png = temp_dir() + "/recon.png";
  const Outcome out = run(std::string("train --model autoencoder ") + kQuick + " --epochs 1 --samples " + png);
  ASSERT_EQ(out.code, 0) << out.output;
  EXPECT_EQ(png_size(read_all(png)), (std::pair<uint32_t, uint32_t>{465, 117}));
  // A classifier has no reconstructions: refused before training, nothing written.
  const std::string none = temp_dir() + "/none.png";
  const Outcome refused = run(std::string("train --model mlp ") + kQuick + " --samples " + none);
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.output.find("--samples"), std::string::npos) << refused.output;
  EXPECT_EQ(refused.output.find("Epoch"), std::string::npos) << refused.output;
  EXPECT_FALSE(exists(none));
}

// A cfg's [train] section gives defaults; options on the command line win; unknown keys
// are named with the file and line.
TEST(Cli, TrainSectionGivesDefaults) {
  const std::string cfg = temp_dir() + "/tuned.cfg";
  write_all(cfg, "[net]\ninput = 28x28x1\n[dense]\nunits = 10\n[train]\noptimizer = adam\nlr = 0.005\nbatch = 32\n");
  const Outcome tuned = run("train --model " + cfg + " --data synthetic --limit 256 --threads 1 --epochs 1");
  ASSERT_EQ(tuned.code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("batch 32, adam"), std::string::npos) << tuned.output;
  EXPECT_NE(tuned.output.find("lr 0.005"), std::string::npos) << tuned.output;
  const Outcome overridden =
      run("train --model " + cfg + " --data synthetic --limit 256 --threads 1 --epochs 1 --optimizer sgd --lr 0.02");
  ASSERT_EQ(overridden.code, 0) << overridden.output;
  EXPECT_NE(overridden.output.find("batch 32, sgd"), std::string::npos) << overridden.output;
  EXPECT_NE(overridden.output.find("lr 0.02"), std::string::npos) << overridden.output;
  write_all(cfg, "[net]\ninput = 28x28x1\n[dense]\nunits = 10\n[train]\nlearning_rate = 0.1\n");
  const Outcome bad = run("train --model " + cfg + " --data synthetic --limit 256 --threads 1");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find(cfg + ":6"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("learning_rate"), std::string::npos) << bad.output;
}

namespace {

// A GAN run: losses and scores printed, its folder holding both networks, the judge and a grid
// per epoch; resumed from the folder it ends with the networks of one uninterrupted run. Its first
// epoch runs with --profile: a table a network, and nothing trained differs for it.
TEST(Cli, GanTrainsSavesAndResumes) {
  const std::string a = temp_dir() + "/gan_a", b = temp_dir() + "/gan_b", json = temp_dir() + "/gan.json";
  const std::string quick = " --data synthetic --limit 256 --threads 1 --score-samples 100";
  const Outcome first = run("train --model dcgan --judge-epochs 1 --epochs 2 --stop-after 1 --profile --out " + a +
                            quick + " --json " + json);
  ASSERT_EQ(first.code, 0) << first.output;
  for (const char* text : {"loss_D", "loss_G", "D(x)", "D(G(z))", "judge on 100 real test images", "score", "shares"}) {
    EXPECT_NE(first.output.find(text), std::string::npos) << text << "\n" << first.output;
  }
  for (const char* file : {"generator.ckpt", "discriminator.ckpt", "judge.ckpt"}) EXPECT_TRUE(exists(a + "/" + file)) << file;
  // 64 samples of 28x28 in rows of 8 with 1-pixel gaps: 8 * 29 + 1 = 233 square.
  EXPECT_EQ(png_size(read_all(a + "/samples-epoch-1.png")), std::make_pair(233u, 233u));
  const nlohmann::json report = nlohmann::json::parse(read_all(json));
  ASSERT_EQ(report.at("history").size(), 1u);
  const nlohmann::json& score = report.at("history")[0].at("score");
  EXPECT_GE(score.at("score").get<double>(), 1.0);
  EXPECT_LE(score.at("score").get<double>(), 10.0);
  EXPECT_EQ(score.at("class_shares").size(), 10u);
  EXPECT_GE(report.at("judge_on_real_test_images").at("score").get<double>(), 1.0);
  EXPECT_NE(first.output.find("layer profile: discriminator"), std::string::npos) << first.output;
  const nlohmann::json& profiles = report.at("layer_profile");
  for (const char* network : {"generator", "discriminator"}) {
    EXPECT_EQ(profiles.at(network).at("steps").get<int>(), 4) << network;  // 256 samples, batch 64
    EXPECT_GT(profiles.at(network).at("layers").size(), 4u) << network;
  }
  // D runs on the real batch, the generated one and the generated one again: three times G's rows.
  EXPECT_EQ(profiles.at("discriminator").at("rows_per_step").get<double>(), 192.0);
  EXPECT_EQ(profiles.at("generator").at("rows_per_step").get<double>(), 64.0);

  const Outcome resumed = run("train --resume " + a + quick);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("Epoch 2/2"), std::string::npos) << resumed.output;
  EXPECT_EQ(resumed.output.find("training the cnn preset"), std::string::npos) << "the folder's judge is reused";
  EXPECT_TRUE(exists(a + "/samples-epoch-2.png"));
  const Outcome whole = run("train --model dcgan --epochs 2 --out " + b + " --judge " + a + "/judge.ckpt" + quick);
  ASSERT_EQ(whole.code, 0) << whole.output;
  EXPECT_EQ(read_all(a + "/generator.ckpt"), read_all(b + "/generator.ckpt"));
  EXPECT_EQ(read_all(a + "/discriminator.ckpt"), read_all(b + "/discriminator.ckpt"));

  const Outcome eval = run("eval --checkpoint " + a + "/generator.ckpt");
  EXPECT_EQ(eval.code, 2);
  EXPECT_NE(eval.output.find("loss = none"), std::string::npos) << eval.output;
}

TEST(Cli, GanMistakesAreNamed) {
  const std::string cfg = temp_dir() + "/gan_bad.cfg";
  struct Case {
    std::string args, expect;
  };
  write_all(cfg, "[gan]\ngenerator = dcgan-generator\n");
  const std::string missing = "train --data synthetic --model " + cfg;
  write_all(temp_dir() + "/gan_mlp.cfg", "[gan]\ngenerator = mlp\ndiscriminator = dcgan-discriminator\n");
  const std::string mismatched = "train --data synthetic --model " + temp_dir() + "/gan_mlp.cfg";
  for (const Case& c : std::vector<Case>{
           {missing, "gan_bad.cfg:1: [gan] key 'discriminator': missing"},
           {mismatched, "makes samples [10]"},
           {"train --model mlp --out " + temp_dir() + "/x", "--out applies to GAN training only"},
           {"train --model dcgan --checkpoint " + temp_dir() + "/x.ckpt", "--checkpoint does not apply to GAN"},
           {"train --model dcgan --schedule cosine", "constant rate"},
           {"train --model dcgan-generator --data synthetic", "loss = none"},
           {"train --resume " + temp_dir(), "generator.ckpt"},
           {"train --model dcgan --data synthetic --limit 64 --judge " + temp_dir() + "/no_such.ckpt --out " +
                temp_dir() + "/gan_nojudge",
            "no_such.ckpt"},
       }) {
    const Outcome o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.args << "\n" << o.output;
  }
}

// The accuracy floor on the real data: mlp, batch 64, SGD momentum 0.9, lr 0.01, seed 1:
// >= 0.83 after 1 epoch and >= 0.87 after 5 (PyTorch 1.13 reaches 0.832 after 1 here).
// Trained as 1 epoch + a resume to 5, so it also checks resume on real data.
TEST(Acceptance, MlpOnFashionMnist) {
  struct stat info;
  if (stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", &info) != 0) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (tools/setup.sh installs it)";
  }
  const std::string ckpt = temp_dir() + "/fmnist.ckpt", json1 = temp_dir() + "/e1.json", json5 = temp_dir() + "/e5.json";
  const Outcome first = run("train --epochs 5 --stop-after 1 --seed 1 --checkpoint " + ckpt);
  ASSERT_EQ(first.code, 0) << first.output;
  const Outcome eval = run("eval --checkpoint " + ckpt + " --json " + json1);
  ASSERT_EQ(eval.code, 0) << eval.output;
  EXPECT_GE(nlohmann::json::parse(read_all(json1)).at("test_accuracy").get<double>(), 0.83);
  const Outcome rest = run("train --resume " + ckpt + " --json " + json5);
  ASSERT_EQ(rest.code, 0) << rest.output;
  EXPECT_GE(nlohmann::json::parse(read_all(json5)).at("test_accuracy").get<double>(), 0.87);
}

// Issue 4's floors on the real data, fixed seed 1, batch 64: lenet >= 0.87 test accuracy after
// 5 epochs (PyTorch 1.13 with Adam 1e-3 reaches 0.877), the autoencoder's test MSE <= 0.015
// after 5 epochs. About 80 s together at 2 threads with AVX2. They measure the model, not
// the kernels, so the suite's RETROGRAD_ISA=sse2 pass skips them (it would triple their time);
// the cnn's floor (>= 0.90 after 3 epochs, ~5 min) is checked by bench/presets_vs_pytorch.sh.
bool skip_slow_acceptance(std::string* why) {
  struct stat info;
  if (stat("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", &info) != 0) {
    *why = "dataset-fashion-mnist is not installed (tools/setup.sh installs it)";
    return true;
  }
  if (std::getenv("RETROGRAD_ISA") != nullptr) {
    *why = "RETROGRAD_ISA is set: the accuracy floors ran in the native pass";
    return true;
  }
  return false;
}

TEST(Acceptance, LenetOnFashionMnist) {
  std::string why;
  if (skip_slow_acceptance(&why)) GTEST_SKIP() << why;
  const std::string json = temp_dir() + "/lenet.json";
  const Outcome out = run("train --model lenet --epochs 5 --seed 1 --json " + json);
  ASSERT_EQ(out.code, 0) << out.output;
  EXPECT_GE(nlohmann::json::parse(read_all(json)).at("test_accuracy").get<double>(), 0.87);
}

TEST(Acceptance, AutoencoderOnFashionMnist) {
  std::string why;
  if (skip_slow_acceptance(&why)) GTEST_SKIP() << why;
  const std::string json = temp_dir() + "/autoencoder.json";
  const Outcome out = run("train --model autoencoder --epochs 5 --seed 1 --json " + json);
  ASSERT_EQ(out.code, 0) << out.output;
  EXPECT_LE(nlohmann::json::parse(read_all(json)).at("test_mse").get<double>(), 0.015);
}

}  // namespace

namespace {
// The per-precision table on synthetic data: a row per precision, and the JSON rows the issue names.
// Fixed-point shorthands are rows too (issue 34), by their canonical names, saying where their
// products ran; int8-train and w8a8e8 are one precision.
TEST(Cli, PrecisionFixedPointRows) {
  const std::string json_path = temp_dir() + "/fixed.json";
  const Outcome o = run("precision --model lenet --data synthetic --limit 256 --epochs 1 --threads 2 --infer-batch 64 "
                        "--precision fp32,w16a16g16-fl12-sw-sr,w4a6e8 --json " + json_path);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("w16a16g16-sr-fl12-sw"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("12 fraction bits (static), weights stored so (no f32 master); int16 tiles forward and backward"), std::string::npos)
      << o.output;
  const std::string narrow_tiles = rg::qs16_gemm_kernel(rg::active_isa()).serves_int8 ? "int16 tiles" : "int8 tiles";
  EXPECT_NE(o.output.find("w4 a6 g f32 e8 (wa nearest, e stochastic); real scales per tensor; " + narrow_tiles +
                          " forward and backward"),
            std::string::npos) << o.output;
  EXPECT_NE(o.output.find("conv1=w4a6e8 GEMM"), std::string::npos) << o.output;
  const auto report = nlohmann::json::parse(read_all(json_path));
  ASSERT_EQ(report["precisions"].size(), 3u);
  EXPECT_EQ(report["precisions"][1]["precision"], "w16a16g16-sr-fl12-sw");
  EXPECT_GT(report["precisions"][2]["train_samples_per_s"].get<double>(), 0);
  // A layer's own precision: in the summary and the rows' per-layer lists; fixed for a resumed run.
  const std::string ckpt = temp_dir() + "/own.ckpt";
  const Outcome own = run("precision --model lenet --data synthetic --limit 256 --epochs 1 --threads 2 --infer-batch 64 "
                          "--precision fp32,int8-train --layer-precision conv2=w12a12g12,dense3=fp32 --checkpoint " +
                          ckpt + " --overwrite");
  ASSERT_EQ(own.code, 0) << own.output;
  EXPECT_NE(own.output.find("init he, precision w12a12g12"), std::string::npos) << own.output;
  EXPECT_NE(own.output.find("f32 but the layers' own precisions: conv2=w12a12g12 dense3=fp32"), std::string::npos)
      << own.output;
  EXPECT_NE(own.output.find("conv2=w12a12g12 GEMM"), std::string::npos) << own.output;
  const Outcome again = run("train --resume " + ckpt + " --epochs 2 --data synthetic --layer-precision conv1=fp32");
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_NE(again.output.find("--layer-precision comes from the checkpoint"), std::string::npos) << again.output;
  const Outcome twice = run("precision --data synthetic --precision fp32,int8-train,w8a8e8");
  EXPECT_EQ(twice.code, 2);
  EXPECT_NE(twice.output.find("int8-train is listed twice"), std::string::npos) << twice.output;
}

TEST(Cli, PrecisionTableAndJsonRows) {
  const std::string json_path = temp_dir() + "/precision.json", csv_path = temp_dir() + "/precision.csv";
  const Outcome o = run("precision --model lenet --data synthetic --limit 512 --epochs 1 --threads 2 --calib-batches 1 "
                        "--infer-batch 128 --keep-f32 last --precision fp32,fp16,int8,int8-qat,int8-train --json " +
                        json_path + " --csv " + csv_path);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("precision  what ran"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("int8 QAT: 4 of 5 conv/dense int8, the run's one epoch again, from the initial weights"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("fp16 per layer: conv1=f16"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("int8-train per layer: conv1=int8 GEMM relu1=f32"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("int8 PTQ: 4 of 5 conv/dense int8"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("dense3=f32 (kept f32 by the policy)"), std::string::npos) << o.output;
  const auto report = nlohmann::json::parse(read_all(json_path));
  ASSERT_EQ(report["precisions"].size(), 5u);
  for (const auto& row : report["precisions"]) {
    for (const char* key : {"precision", "test_accuracy", "train_samples_per_s", "infer_samples_per_s", "weight_bytes"})
      EXPECT_TRUE(row.contains(key)) << key;
    EXPECT_GT(row["infer_samples_per_s"].get<double>(), 0);
  }
  const auto& rows = report["precisions"];
  const char* names[] = {"fp32", "fp16", "int8", "int8-qat", "int8-train"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(rows[i]["precision"], names[i]);
    if (i != 2) {
      EXPECT_GT(rows[i]["train_samples_per_s"].get<double>(), 0) << names[i] << " trains";
    }
  }
  EXPECT_TRUE(rows[2]["train_samples_per_s"].is_null()) << "PTQ does not train";
  // fp16 keeps its conv and dense weights in f16, int8 and int8-qat in int8.
  for (size_t i : {1, 2, 3}) EXPECT_LT(rows[i]["weight_bytes"].get<int64_t>(), rows[0]["weight_bytes"].get<int64_t>());
  EXPECT_EQ(read_all(csv_path).rfind("precision,what_ran,", 0), 0u);
}

// int8-qat --qat-mode extra fine-tunes the trained fp32 model: at a learning rate of 0 its
// weights stay the fp32 ones, so it scores like fp32 where a model trained from scratch would guess.
TEST(Cli, PrecisionQatFineTunesTheFp32Model) {
  const std::string json_path = temp_dir() + "/precision_qat.json";
  const Outcome o = run("precision --model mlp --data synthetic --limit 1024 --epochs 1 --threads 2 --precision "
                        "fp32,int8-qat --qat-mode extra --qat-epochs 2 --qat-lr-scale 0 --json " + json_path);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("precision int8-qat: fine-tuned 2 epochs at lr 0 through fake int8"), std::string::npos)
      << o.output;
  const auto rows = nlohmann::json::parse(read_all(json_path))["precisions"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["what_ran"], "int8 QAT: 3 of 3 conv/dense int8, fine-tuned 2 epochs at lr 0");
  EXPECT_GT(rows[0]["test_accuracy"].get<double>(), 0.5);
  EXPECT_NEAR(rows[1]["test_accuracy"].get<double>(), rows[0]["test_accuracy"].get<double>(), 0.03);
  EXPECT_GT(rows[1]["train_samples_per_s"].get<double>(), 0) << "the fine-tune's speed";
}

// int8-qat by default reruns the run's last epoch from the fp32 run's state before it (its
// epoch 2 follows the fp32 run's epochs 1 and 2; it has no epoch 1 of its own); a run resumed
// after that state cannot give it and says so before training.
TEST(Cli, PrecisionQatRerunsTheRunsLastEpochs) {
  const std::string json_path = temp_dir() + "/precision_qat_last.json";
  const Outcome o = run("precision --model mlp --data synthetic --limit 1024 --epochs 2 --threads 2 --precision "
                        "fp32,int8-qat --json " + json_path);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("precision int8-qat: the run's last 1 epoch again through fake int8"), std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("Epoch 2/2"), o.output.rfind("Epoch 2/2")) << "the fp32 run's epoch 2, then int8-qat's";
  EXPECT_EQ(o.output.find("Epoch 1/2"), o.output.rfind("Epoch 1/2")) << "int8-qat starts after epoch 1";
  const auto rows = nlohmann::json::parse(read_all(json_path))["precisions"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1]["what_ran"], "int8 QAT: 3 of 3 conv/dense int8, the run's last 1 epoch again");
  EXPECT_GT(rows[1]["test_accuracy"].get<double>(), 0.5);
  EXPECT_GT(rows[1]["train_samples_per_s"].get<double>(), 0);

  const std::string ckpt = temp_dir() + "/precision_qat_last.ckpt";
  ASSERT_EQ(run("train --model mlp --data synthetic --limit 512 --epochs 2 --threads 1 --checkpoint " + ckpt).code, 0);
  const Outcome resumed = run("precision --data synthetic --limit 512 --epochs 3 --qat-epochs 2 --threads 1 "
                              "--precision fp32,int8-qat --resume " + ckpt);
  EXPECT_EQ(resumed.code, 2) << resumed.output;
  EXPECT_NE(resumed.output.find("from the state after epoch 1, and this run resumes after epoch 2; use --qat-mode extra"),
            std::string::npos) << resumed.output;
}

// A precision run stopped before its last epoch gives no rows (its QAT would train an epoch the fp32
// run has not); resumed, it ends with all of them, its int8-qat rerunning the fp32 run's last epoch.
TEST(Cli, PrecisionRowsWaitForAStoppedRunsEnd) {
  const std::string ckpt = temp_dir() + "/precision_stopped.ckpt", json_path = temp_dir() + "/precision_stopped.json";
  std::remove(ckpt.c_str());
  const std::string common = " --data synthetic --limit 512 --epochs 3 --threads 1 --precision fp32,int8,int8-qat ";
  const Outcome stopped = run("precision --model mlp" + common + "--stop-after 2 --checkpoint " + ckpt + " --json " +
                              json_path);
  ASSERT_EQ(stopped.code, 0) << stopped.output;
  EXPECT_NE(stopped.output.find("no rows yet, the fp32 run stopped after epoch 2 of 3"), std::string::npos)
      << stopped.output;
  EXPECT_EQ(stopped.output.find("Epoch 3/3"), std::string::npos) << "nothing trains epoch 3 before the fp32 run";
  EXPECT_FALSE(nlohmann::json::parse(read_all(json_path)).contains("precisions"));
  const Outcome resumed = run("precision" + common + "--resume " + ckpt + " --checkpoint " + ckpt +
                              " --overwrite --json " + json_path);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("Epoch 3/3"), resumed.output.rfind("Epoch 3/3")) << "fp32's epoch 3, then int8-qat's";
  EXPECT_EQ(nlohmann::json::parse(read_all(json_path))["precisions"].size(), 3u);
}

// precision --sweep --quick on a small run: every configuration from each seed, the report's
// three files, its sections and charts, the JSON's rows per seed; a layer's row (LAYER=P) and a
// w4a8 row among them.
TEST(Cli, PrecisionSweepWritesItsReport) {
  const std::string out = temp_dir() + "/sweep";
  const Outcome o = run("precision --sweep --quick --sweep-seeds 3,4 --model lenet --data synthetic --limit 256 "
                        "--epochs 1 --threads 2 --infer-batch 64 --fit-weights 40K --sweep-out " + out);
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("== precision sweep: seed 4 (33 configurations) =="), std::string::npos) << o.output;
  const std::string html = read_all(out + "/report.html"), md = read_all(out + "/report.md");
  for (const char* part : {"Accuracy against bits", "Each layer alone in w4a8e8", "Accuracy against weight bytes",
                           "Accuracy against training speed", "Accuracy against inference speed", "Every configuration",
                           "Pareto front", "conv2=w4a8e8", "w4a8-qat", "Weights fitted to 40.0 KiB", "dense1=w2"}) {
    EXPECT_NE(html.find(part), std::string::npos) << part;
  }
  EXPECT_GE(std::count(html.begin(), html.end(), '<'), 100) << "charts and tables";
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("nan"), std::string::npos) << "no unusable number drawn";
  EXPECT_NE(md.find("## Each layer alone in w4a8e8"), std::string::npos) << md;
  const std::string layers = md.substr(md.find("**Each layer alone**"), 600);
  EXPECT_EQ(layers.find("| conv1 |"), layers.rfind("| conv1 |")) << "one row a layer (not --fit-weights' rows)\n" << layers;
  const auto json = nlohmann::json::parse(read_all(out + "/sweep.json"));
  ASSERT_EQ(json["seeds"].size(), 2u);
  EXPECT_EQ(json["seeds"][1]["seed"], 4);
  ASSERT_EQ(json["seeds"][0]["rows"].size(), 33u);
  EXPECT_EQ(json["seeds"][0]["rows"][1]["precision"], "w4");
  EXPECT_EQ(json["bits"], nlohmann::json({4, 8, 16}));
  // --fit-weights: every layer given a width, the weights at those widths within the budget, and
  // (unless all fit in f32) the fitted model trained from each seed beside fp32.
  const auto& fit = json["fit"];
  ASSERT_EQ(fit["widths"].size(), 5u) << fit.dump();
  EXPECT_LE(fit["bytes"].get<int64_t>(), 40960);
  int64_t bytes = 0;
  const std::map<std::string, int64_t> weights = {{"conv1", 150}, {"conv2", 2400}, {"dense1", 48000}, {"dense2", 10080}, {"dense3", 840}};
  for (const auto& [layer, count] : weights) bytes += (count * fit["widths"][layer].get<int64_t>() + 7) / 8;
  EXPECT_EQ(fit["bytes"].get<int64_t>(), bytes);
  if (fit["row"] != "fp32") {
    ASSERT_EQ(fit["seeds"].size(), 2u);
    EXPECT_EQ(fit["seeds"][0]["rows"][1]["precision"], fit["row"]);
  }
}

// A w4a8-qat checkpoint: resumed as w4a8-qat, and eval --int8 exports it on its 4-bit grid with
// the activation ranges it learned.
TEST(Cli, W4a8QatCheckpointEvaluatesOnItsGrid) {
  const std::string ckpt = temp_dir() + "/w4.ckpt";
  const Outcome o = run("train --model lenet --data synthetic --limit 256 --epochs 1 --threads 2 --train-precision w4a8-qat "
                        "--checkpoint " + ckpt + " --overwrite");
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("w4a8-qat"), std::string::npos) << o.output;
  const Outcome e = run("eval --checkpoint " + ckpt + " --data synthetic --int8 --threads 2");
  ASSERT_EQ(e.code, 0) << e.output;
  EXPECT_NE(e.output.find("trained as w4a8-qat: --int8 exports it with its 4-bit weights"), std::string::npos) << e.output;
  EXPECT_NE(e.output.find("takes the activation ranges it learned (no calibration)"), std::string::npos) << e.output;
  const Outcome more = run("train --resume " + ckpt + " --epochs 2 --data synthetic --threads 2 --checkpoint " + ckpt +
                           " --overwrite");
  ASSERT_EQ(more.code, 0) << more.output;
  EXPECT_NE(more.output.find("w4a8-qat"), std::string::npos) << more.output;
}

// Its mistakes, named before any training; the folder checked writable first.
TEST(Cli, PrecisionSweepMistakesAreNamedFirst) {
  const std::string file = temp_dir() + "/sweep-file";
  write_all(file, "not a folder");
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"precision --sweep --data synthetic --sweep-seeds 1,1", "seed 1 is listed twice"},
           {"precision --sweep --data synthetic --sweep-seeds 1,x", "'x' is not a seed"},
           {"precision --sweep --data synthetic --seed 4", "--seed does not go with --sweep"},
           {"precision --sweep --data synthetic --precision fp32,int8", "--precision does not go with --sweep"},
           {"precision --sweep --data synthetic --model autoencoder", "reconstructs its input"},
           {"precision --sweep --data synthetic --sweep-out " + file, "--sweep-out"},
           {"precision --sweep --data synthetic --model lenet --fit-weights 1K", "below the 15368 bytes"},
           {"precision --sweep --data synthetic --fit-weights lots", "--fit-weights"},
           {"precision --sweep --data synthetic --model lenet --layer-precision conv1=w8a8e8", "does not go with --sweep"},
           {"precision --sweep --data synthetic --sweep-seeds 1,2,", "ends in a comma"},
           {"precision --sweep --data synthetic --denormals bogus", "'bogus' is not flush or keep"},
           {"precision --data synthetic --quick", "--quick belongs to --sweep"},
           {"precision --data synthetic --fit-weights 64K", "--fit-weights belongs to --sweep"},
       }) {
    const Outcome o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.args << "\n" << o.output;
    EXPECT_EQ(o.output.find("Epoch 1/"), std::string::npos) << "nothing trained: " << c.args;
  }
  EXPECT_EQ(read_all(file), "not a folder") << "left as it was";
}

TEST(Cli, PrecisionMistakesAreNamedBeforeTraining) {
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"precision --train-precision fp16 --data synthetic", "drop --train-precision"},
           {"train --train-precision fp8 --data synthetic", "unknown training precision 'fp8'"},
           {"precision --precision fp32,int4 --data synthetic", "unknown precision 'int4'"},
           {"precision --precision fp32,fp32 --data synthetic", "fp32 is listed twice"},
           {"precision --calibration kl --data synthetic", "'kl' is neither minmax nor percentile"},
           {"precision --qat-epochs 0 --data synthetic", "--qat-epochs: 0 is outside [1, 1000000]"},
           {"precision --qat-lr-scale -1 --data synthetic", "--qat-lr-scale"},
           {"precision --qat-mode first --data synthetic", "--qat-mode: 'first' is neither last nor extra"},
           {"precision --epochs 2 --qat-epochs 3 --data synthetic",
            "--qat-epochs 3: int8-qat reruns the run's last epochs, and the run has 2 (--epochs)"},
           {"precision --data synthetic --limit 256 --epochs 1 --keep-f32 conv9 --model lenet", "no layer 'conv9'"},
       }) {
    const Outcome o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find(c.expect), std::string::npos) << c.args << "\n" << o.output;
  }
}
}  // namespace

namespace {

// --mem-budget: the plan is printed before training and the measured peak after; a budget that
// cannot hold one sample stops before training with what it would need; make-data writes a
// folder that trains streamed.
TEST(Cli, MemoryBudgetPlansAndStreams) {
  const std::string json = temp_dir() + "/budget.json";
  const Outcome planned =
      run("train --model lenet --data synthetic --limit 256 --batch 256 --epochs 1 --threads 1 --mem-budget 12M --json " + json);
  ASSERT_EQ(planned.code, 0) << planned.output;
  EXPECT_NE(planned.output.find("micro-batches of up to"), std::string::npos) << planned.output;
  EXPECT_NE(planned.output.find("of the 12.0 MiB budget"), std::string::npos) << planned.output;
  const nlohmann::json report = nlohmann::json::parse(read_all(json));
  const nlohmann::json& plan = report.at("memory_plan");
  EXPECT_GT(plan.at("accumulation_steps").get<int64_t>(), 1);
  EXPECT_LE(report.at("peak_tensor_bytes").get<int64_t>(), 12 << 20);
  EXPECT_EQ(report.at("peak_tensor_bytes").get<int64_t>(), plan.at("predicted_peak_bytes").get<int64_t>());

  const Outcome tiny = run("train --model lenet --data synthetic --mem-budget 100k");
  EXPECT_EQ(tiny.code, 2);
  EXPECT_NE(tiny.output.find("--mem-budget 100.0 KiB cannot hold this training even one sample"), std::string::npos)
      << tiny.output;
  EXPECT_EQ(tiny.output.find("Epoch"), std::string::npos) << "refused before training";
  EXPECT_EQ(run("train --mem-budget lots").code, 2);
  EXPECT_NE(run("train --stream maybe").output.find("--stream: 'maybe' is not auto, yes or no"), std::string::npos);

  const std::string dir = temp_dir() + "/made";
  const Outcome made = run("make-data --out " + dir + " --samples 1000 --test-samples 200");
  ASSERT_EQ(made.code, 0) << made.output;
  const Outcome streamed = run("train --data " + dir + " --stream yes --epochs 1 --threads 1");
  ASSERT_EQ(streamed.code, 0) << streamed.output;
  EXPECT_NE(streamed.output.find("samples read batch by batch"), std::string::npos) << streamed.output;
  const Outcome not_streamable = run("train --data synthetic --stream yes --epochs 1");
  EXPECT_EQ(not_streamable.code, 2);
  EXPECT_NE(not_streamable.output.find("cannot be streamed"), std::string::npos) << not_streamable.output;
}

}  // namespace

// Issue 29, section 7: `precision --help` is its own usage with the defaults it runs with; eval
// scores what a model is (a classifier's accuracy, an autoencoder's MSE) and refuses, by name, a
// model that is neither (a GAN's discriminator), never printing an accuracy that means nothing.
namespace {

TEST(Cli, PrecisionHelpIsItsOwn) {
  const Outcome help = run("precision --help");
  EXPECT_EQ(help.code, 0) << help.output;
  EXPECT_EQ(help.output.rfind("usage: retrograd precision [options]", 0), 0u) << help.output;
  EXPECT_EQ(help.output.find("retrograd train"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("(default: fp32,fp16,int8,int8-qat,int8-train)"), std::string::npos) << help.output;
  const Outcome train = run("train --help");
  EXPECT_EQ(train.code, 0) << train.output;
  EXPECT_EQ(train.output.find("(default: fp32,fp16"), std::string::npos) << "train makes no table unless asked";
  const Outcome wrong = run("precision --bogus");
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.output.find("retrograd precision: unknown option --bogus"), std::string::npos) << wrong.output;
}

TEST(Cli, EvalScoresWhatTheModelIs) {
  const std::string gan = temp_dir() + "/eval_gan", ae = temp_dir() + "/eval_ae.ckpt", json = temp_dir() + "/eval_ae.json";
  const Outcome trained = run("train --model dcgan --data synthetic --limit 16 --batch 16 --epochs 1 --threads 1 --score-samples 0 "
                              "--out " + gan);
  ASSERT_EQ(trained.code, 0) << trained.output;
  const Outcome d = run("eval --checkpoint " + gan + "/discriminator.ckpt --data synthetic --threads 1");
  EXPECT_EQ(d.code, 2) << d.output;
  EXPECT_NE(d.output.find("discriminator.ckpt: the model has one output, a logit (bce_with_logits): a GAN's "
                          "discriminator"), std::string::npos) << d.output;
  EXPECT_EQ(d.output.find("accuracy "), std::string::npos) << d.output;
  write_all(temp_dir() + "/one_output.cfg", "[net]\ninput = 28x28x1\nloss = mse\n[dense]\nunits = 1\n");
  const Outcome one = run("train --model " + temp_dir() + "/one_output.cfg --data synthetic --limit 64 --epochs 1 "
                          "--threads 1");
  EXPECT_EQ(one.code, 2) << "labels 0 to 9 for one output\n" << one.output;

  const Outcome autoencoder = run("train --model autoencoder --data synthetic --limit 256 --test-limit 64 --epochs 1 "
                                  "--threads 1 --checkpoint " + ae);
  ASSERT_EQ(autoencoder.code, 0) << autoencoder.output;
  const Outcome scored = run("eval --checkpoint " + ae + " --threads 1 --json " + json);
  ASSERT_EQ(scored.code, 0) << scored.output;
  EXPECT_NE(scored.output.find("test MSE"), std::string::npos) << scored.output;
  EXPECT_NE(scored.output.find("PSNR"), std::string::npos) << scored.output;
  EXPECT_EQ(scored.output.find("accuracy"), std::string::npos) << scored.output;
  const nlohmann::json report = nlohmann::json::parse(read_all(json));
  EXPECT_GT(report.at("test_mse").get<double>(), 0.0);
  EXPECT_GT(report.at("test_psnr_db").get<double>(), 0.0);
  EXPECT_FALSE(report.contains("test_accuracy"));
}

// eval of an int8-qat checkpoint scores it as the training's last test did: its weights on their
// grid and its activations rounded at the ranges it learned (the checkpoint's qat_ranges). It had
// scored the unrounded activations and, handed the trainer's own executor back, the weights off
// their grid too: 0.967 where training said 0.351 (lenet, synthetic data, 2 epochs).
TEST(Cli, EvalOfAQatCheckpointGivesTheTrainingsTestFigures) {
  const std::string ckpt = temp_dir() + "/eval_qat.ckpt", trained_json = temp_dir() + "/eval_qat_train.json",
                    json = temp_dir() + "/eval_qat.json";
  const Outcome trained = run(std::string("train ") + kQuick + " --model lenet --epochs 2 --train-precision int8-qat " +
                              "--checkpoint " + ckpt + " --json " + trained_json);
  ASSERT_EQ(trained.code, 0) << trained.output;
  const Outcome scored = run("eval --checkpoint " + ckpt + " --threads 1 --json " + json);
  ASSERT_EQ(scored.code, 0) << scored.output;
  EXPECT_NE(scored.output.find("run by          int8-qat on the CPU"), std::string::npos) << scored.output;
  const nlohmann::json train_report = nlohmann::json::parse(read_all(trained_json));
  const nlohmann::json eval_report = nlohmann::json::parse(read_all(json));
  EXPECT_EQ(eval_report.at("test_accuracy").get<double>(), train_report.at("test_accuracy").get<double>());
  const double loss = train_report.at("test_loss").get<double>();
  EXPECT_NEAR(eval_report.at("test_loss").get<double>(), loss, 1e-6 * loss);  // summed in other batches
}

// train --profile: a row per layer with its three phases, in the text and in --json; each layer's
// time adds up to the layers' total (a GAN's: Cli.GanTrainsSavesAndResumes).
TEST(Cli, ProfileReportsEveryLayersPhases) {
  const std::string json = temp_dir() + "/profile.json";
  const Outcome timed = run(std::string("train ") + kQuick + " --model lenet --epochs 1 --profile --json " + json);
  ASSERT_EQ(timed.code, 0) << timed.output;
  EXPECT_NE(timed.output.find("layer profile"), std::string::npos) << timed.output;
  EXPECT_NE(timed.output.find("conv2          conv"), std::string::npos) << timed.output;
  const nlohmann::json profile = nlohmann::json::parse(read_all(json)).at("layer_profile");
  EXPECT_EQ(profile.at("steps").get<int>(), 10);  // 640 samples, batch 64
  EXPECT_EQ(profile.at("rows_per_step").get<double>(), 64.0);
  const nlohmann::json& layers = profile.at("layers");
  ASSERT_EQ(layers.size(), 11u);  // lenet's layers
  double sum = 0;
  for (const nlohmann::json& layer : layers) {
    for (const char* phase : {"forward", "weight_grad", "input_grad"}) {
      const nlohmann::json& ms = layer.at(phase).at("ms_per_step");
      if (!ms.is_null()) sum += ms.get<double>();
    }
  }
  EXPECT_NEAR(sum, profile.at("layers_ms_per_step").get<double>(), 1e-9 * sum);
  EXPECT_TRUE(layers[0].at("input_grad").at("ms_per_step").is_null()) << "conv1's dx is never computed";
  EXPECT_GT(layers[3].at("input_grad").at("gflops").get<double>(), 0.0) << layers[3];
  EXPECT_TRUE(layers[1].at("forward").at("gflops").is_null()) << "relu counts no products";
  // A short last step is a step: 650 samples are 11 of them.
  const Outcome uneven = run("train --data synthetic --limit 650 --batch 64 --threads 1 --epochs 1 --profile --json " +
                             json);
  ASSERT_EQ(uneven.code, 0) << uneven.output;
  const nlohmann::json eleven = nlohmann::json::parse(read_all(json)).at("layer_profile");
  EXPECT_EQ(eleven.at("steps").get<int>(), 11);
  EXPECT_DOUBLE_EQ(eleven.at("rows_per_step").get<double>(), 650.0 / 11);
  EXPECT_NE(uneven.output.find("(11 steps timed, 59 samples a step"), std::string::npos) << uneven.output;

}

// eval says what ran: an fp16 checkpoint in fp16 (its storage), and with --int8 quantized from
// the f32 model (calibration reads f32 activations), each named in the report and its JSON.
TEST(Cli, EvalNamesThePrecisionItRunsIn) {
  const std::string ckpt = temp_dir() + "/eval_f16.ckpt", json = temp_dir() + "/eval_f16.json";
  const Outcome trained = run(std::string("train ") + kQuick + " --epochs 1 --train-precision fp16 --checkpoint " + ckpt);
  ASSERT_EQ(trained.code, 0) << trained.output;
  const Outcome f16 = run("eval --checkpoint " + ckpt + " --threads 1 --json " + json);
  ASSERT_EQ(f16.code, 0) << f16.output;
  EXPECT_NE(f16.output.find("run by          fp16 (f16 activations, f32 math) on the CPU"), std::string::npos)
      << f16.output;
  EXPECT_EQ(nlohmann::json::parse(read_all(json)).at("precision"), "fp16");
  const Outcome int8 = run("eval --checkpoint " + ckpt + " --threads 1 --int8 --json " + json);
  ASSERT_EQ(int8.code, 0) << int8.output;
  EXPECT_NE(int8.output.find("--int8 quantizes the model from its f32 weights"), std::string::npos) << int8.output;
  EXPECT_NE(int8.output.find("run by          int8 ("), std::string::npos) << int8.output;
  EXPECT_EQ(nlohmann::json::parse(read_all(json)).at("precision"), "int8");
}

// eval --int8 --profile: each stage of the int8 model timed, in the table and in --json, its
// shares adding up to the stages' time and its GOP/s from the conv's direct products; --profile
// without --int8 (or with an OpenCL device) is refused before anything runs, and writes no JSON;
// --device cpu is the CPU.
TEST(Cli, EvalProfilesTheInt8Stages) {
  const std::string ckpt = temp_dir() + "/eval_profile.ckpt", json = temp_dir() + "/eval_profile.json";
  const Outcome trained = run(std::string("train --model lenet ") + kQuick + " --epochs 1 --checkpoint " + ckpt);
  ASSERT_EQ(trained.code, 0) << trained.output;
  std::remove(json.c_str());
  const Outcome refused = run("eval --checkpoint " + ckpt + " --threads 1 --profile --json " + json);
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.output.find("--profile times the stages of the CPU's int8 model: give it with --int8"),
            std::string::npos) << refused.output;
  EXPECT_FALSE(exists(json)) << "nothing is written when the options are refused";

  const Outcome on_device = run("eval --checkpoint " + ckpt + " --threads 1 --int8 --profile --device cl:0:0");
  EXPECT_NE(on_device.code, 0);
  EXPECT_NE(on_device.output.find("without an OpenCL --device"), std::string::npos) << on_device.output;
  const Outcome profiled = run("eval --checkpoint " + ckpt + " --threads 1 --int8 --profile --device cpu --json " + json);
  ASSERT_EQ(profiled.code, 0) << profiled.output;
  EXPECT_NE(profiled.output.find("int8 profile: "), std::string::npos) << profiled.output;
  EXPECT_NE(profiled.output.find("int8 direct conv 5x5 x 6 + 2x2 max pooling"), std::string::npos) << profiled.output;
  const nlohmann::json report = nlohmann::json::parse(read_all(json));
  const nlohmann::json& profile = report.at("int8_profile");
  EXPECT_EQ(profile.at("samples").get<int64_t>(), report.at("test_samples").get<int64_t>());
  EXPECT_GE(profile.at("calls").get<int64_t>(), 1);
  double shares = 0;
  int with_gops = 0;
  for (const nlohmann::json& stage : profile.at("stages")) {
    shares += stage.at("share").get<double>();
    if (stage.at("gops").is_number()) {
      EXPECT_GT(stage.at("gops").get<double>(), 0.0) << stage.dump();
      ++with_gops;
    }
  }
  EXPECT_NEAR(shares, 1.0, 1e-9);
  EXPECT_EQ(with_gops, 5) << "lenet's two convs and three dense layers: " << profile.dump();
  EXPECT_EQ(profile.at("stages").front().at("stage").get<std::string>().rfind("quantize", 0), 0u) << profile.dump();
}

// Issue 30: train's and eval's reports carry what learning nothing scores on the same test
// samples (data/chance.h), so a figure can be told from chance: the best constant answer's
// accuracy, answering the training mean's MSE (the GAN's, the untrained generator's score: below).
TEST(Cli, ReportsCarryTheChanceFigures) {
  const std::string ckpt = temp_dir() + "/chance.ckpt", json = temp_dir() + "/chance.json";
  const Outcome trained = run(std::string("train ") + kQuick + " --epochs 1 --checkpoint " + ckpt + " --json " + json);
  ASSERT_EQ(trained.code, 0) << trained.output;
  EXPECT_NE(trained.output.find("one class for all: 0."), std::string::npos) << trained.output;
  const nlohmann::json report = nlohmann::json::parse(read_all(json));
  EXPECT_EQ(report.at("classes").get<int>(), 10);
  const double chance = report.at("chance_accuracy").get<double>();
  EXPECT_GE(chance, 0.1);  // the largest of 10 shares is at least their mean
  EXPECT_LT(chance, 0.2);  // synthetic classes come about equally often
  EXPECT_FALSE(report.contains("test_mse_baseline"));
  const std::string eval_json = temp_dir() + "/chance_eval.json";
  const Outcome scored = run("eval --checkpoint " + ckpt + " --threads 1 --json " + eval_json);
  ASSERT_EQ(scored.code, 0) << scored.output;
  EXPECT_NE(scored.output.find("one class for all"), std::string::npos) << scored.output;
  const nlohmann::json eval_report = nlohmann::json::parse(read_all(eval_json));
  EXPECT_EQ(eval_report.at("chance_accuracy").get<double>(), chance) << "the same test samples";

  const std::string ae_json = temp_dir() + "/chance_ae.json";
  const Outcome autoencoder = run("train --model autoencoder --data synthetic --limit 256 --test-limit 64 --epochs 1 "
                                  "--threads 1 --json " + ae_json);
  ASSERT_EQ(autoencoder.code, 0) << autoencoder.output;
  EXPECT_NE(autoencoder.output.find("answering the mean: 0."), std::string::npos) << autoencoder.output;
  const nlohmann::json ae = nlohmann::json::parse(read_all(ae_json));
  EXPECT_GT(ae.at("test_mse_baseline").get<double>(), 0.0);
  EXPECT_LT(ae.at("test_mse_baseline").get<double>(), 0.25);  // pixels in [0, 1] about their mean
  EXPECT_FALSE(ae.contains("chance_accuracy"));
}

// The GAN's chance level: the untrained generator's score, recorded once, before G trains.
// A slow case (tools/slow_cases.sh): the judge and 100 scored samples take minutes emulated.
TEST(Cli, GanReportCarriesTheUntrainedGeneratorsScore) {
  const std::string gan = temp_dir() + "/chance_gan", gan_json = temp_dir() + "/chance_gan.json";
  const std::string quick = " --data synthetic --limit 128 --threads 1 --score-samples 100 --json " + gan_json;
  const Outcome first = run("train --model dcgan --judge-epochs 1 --epochs 2 --stop-after 1 --out " + gan + quick);
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(first.output.find("samples of the untrained generator (the chance level)"), std::string::npos) << first.output;
  const double floor = nlohmann::json::parse(read_all(gan_json)).at("chance_score").get<double>();
  EXPECT_GE(floor, 1.0);
  EXPECT_LE(floor, 10.0);
  const Outcome resumed = run("train --resume " + gan + quick);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(nlohmann::json::parse(read_all(gan_json)).at("chance_score").is_null()) << "G is trained already";
}

}  // namespace

// Issue 30: subnormal floats. --denormals reaches the run and its reports: train (and so
// precision and GAN runs) and eval record the mode they computed in, flush unless told.
namespace {

TEST(Cli, DenormalsModeIsRecordedInTheReports) {
  const std::string ckpt = temp_dir() + "/denormals.ckpt";
  for (const char* mode : {"", "keep", "flush"}) {
    const std::string json = temp_dir() + "/denormals_train_" + mode + ".json";
    const std::string option = *mode != '\0' ? std::string(" --denormals ") + mode : "";
    const Outcome trained = run("train --data synthetic --limit 128 --test-limit 64 --epochs 1 --threads 2 --checkpoint " +
                                ckpt + " --overwrite --json " + json + option);
    ASSERT_EQ(trained.code, 0) << trained.output;
    EXPECT_EQ(nlohmann::json::parse(read_all(json)).at("denormals"), *mode != '\0' ? mode : "flush");
  }
  const std::string json = temp_dir() + "/denormals_eval.json";
  const Outcome scored = run("eval --checkpoint " + ckpt + " --threads 2 --denormals keep --json " + json);
  ASSERT_EQ(scored.code, 0) << scored.output;
  EXPECT_EQ(nlohmann::json::parse(read_all(json)).at("denormals"), "keep");
}

}  // namespace
