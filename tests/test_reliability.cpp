// Reliability end to end: training killed with SIGKILL at random moments and resumed ends
// with the weights of an uninterrupted run; every checkpoint left behind is a good one.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "portable.h"
#include "base/output_file.h"
#include "train/checkpoint.h"

#if !defined(_WIN32)
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

#if !defined(_WIN32)
using Clock = std::chrono::steady_clock;

// A command running in the background (through /bin/sh, its output into `log`).
class Child {
 public:
  Child(const std::string& command, const std::string& log) {
    // exec: the shell becomes the program (or the exe wrapper that runs it), so the kill
    // reaches it and not only a shell around it. Made before fork: the child only execs.
    const std::string line = "exec " + command + " > '" + log + "' 2>&1";
    pid_ = fork();
    if (pid_ == 0) {
      execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  bool started() const { return pid_ > 0; }
  // Waits up to `delay`; kills it with SIGKILL if it is still running then. True if it was
  // killed, false if it had ended (its exit code in *code).
  bool kill_after(std::chrono::milliseconds delay, int* code) {
    if (pid_ <= 0) {  // never kill(-1) or wait for any child
      *code = -1;
      return false;
    }
    const auto until = Clock::now() + delay;
    int status = 0;
    while (Clock::now() < until) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  }

 private:
  pid_t pid_ = -1;
};
#endif

#if !defined(_WIN32)
struct KilledRun {
  int kills = 0;          // SIGKILLs that hit a running process
  int resumed_kills = 0;  // of those, kills of a resumed run
};

// Trains to `epochs` with kills: each run is killed at a random moment of what it has left
// (`run_time` is an uninterrupted run's length) until `kills` have landed, then left to end.
// A run starts from `checkpoint` when there is one. Failures are recorded where they happen.
KilledRun train_with_kills(const std::string& dir, const std::string& options, const std::string& data, int epochs,
                           std::chrono::milliseconds run_time, int kills, std::mt19937& random) {
  const std::string checkpoint = dir + "/killed.ckpt";
  std::remove(checkpoint.c_str());
  KilledRun out;
  for (int attempt = 0; attempt < 100; ++attempt) {
    int epochs_done = 0;
    const bool resume = exists(checkpoint);
    if (resume) {
      // Whatever moment the last kill hit, the file there is a whole checkpoint.
      auto ck = rg::read_checkpoint(checkpoint);
      EXPECT_TRUE(ck.ok()) << "after kill " << out.kills << ": " << ck.status().message();
      if (!ck.ok()) return out;
      epochs_done = std::stoi(ck.value().settings.at("epochs_done"));
      if (epochs_done == epochs) return out;  // killed after its last checkpoint: done
    }
    const std::string command = retrograd_binary() + " train " +
                                (resume ? "--resume " + checkpoint + " " + data : options + " --checkpoint " + checkpoint);
    const double left = (epochs - epochs_done + 0.5) / (epochs + 0.5);
    const double at = std::uniform_real_distribution<double>(0.05, 0.6)(random) * left;
    const auto delay = out.kills < kills ? std::chrono::milliseconds(static_cast<int64_t>(at * run_time.count()))
                                         : std::chrono::milliseconds(600000);
    Child child(command, dir + "/run.log");
    if (!child.started()) {
      ADD_FAILURE() << "fork failed";
      return out;
    }
    int code = -1;
    if (!child.kill_after(delay, &code)) {
      EXPECT_EQ(code, 0) << command << "\n" << read_all(dir + "/run.log");
      return out;
    }
    ++out.kills;
    if (resume) ++out.resumed_kills;
  }
  ADD_FAILURE() << "100 runs and not done";
  return out;
}
#endif

TEST(CrashSafety, KilledAtRandomMomentsAndResumedEqualsOneRun) {
#if defined(_WIN32)
  GTEST_SKIP() << "SIGKILL and fork are POSIX; the checkpoint's atomic replace on Windows is tested by Train.*";
#else
  const std::string dir = make_temp_folder("retrograd_crash_");
  const std::string data = "--data synthetic --limit 1920 --threads 2";
  const int epochs = 8;
  const std::string options = data + " --batch 32 --epochs " + std::to_string(epochs) + " --seed 5";

  // The uninterrupted run, timed: kills are drawn within a run's expected length.
  const auto start = Clock::now();
  const Outcome reference = run("train " + options + " --checkpoint " + dir + "/reference.ckpt");
  const auto run_time = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  ASSERT_EQ(reference.code, 0) << reference.output;

  const uint32_t seed = std::random_device{}();
  std::mt19937 random(seed);
  SCOPED_TRACE("kill times drawn with seed " + std::to_string(seed));
  // A run may outpace the timing above and end before its kills: then the whole sequence again.
  KilledRun killed;
  for (int sequence = 0; sequence < 3 && (killed.kills < 5 || killed.resumed_kills < 1); ++sequence) {
    killed = train_with_kills(dir, options, data, epochs, run_time, 5, random);
    if (HasFailure()) return;
    EXPECT_TRUE(read_all(dir + "/killed.ckpt") == read_all(dir + "/reference.ckpt"))
        << "killed " << killed.kills << " times and resumed: the final checkpoint must be the uninterrupted run's, byte for byte";
  }
  EXPECT_GE(killed.kills, 5);
  EXPECT_GE(killed.resumed_kills, 1) << "no kill hit a resumed run";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {  // the last run removed what kills left
    const std::string name = entry.path().filename().string();
    EXPECT_FALSE(rg::is_temporary_of(dir + "/killed.ckpt", name) || name == "killed.ckpt.lock") << name;
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);  // kept to look at when it failed
#endif
}

// An allocation the machine refuses (here: ulimit -v under an explicit, larger --mem-budget) is
// a message naming the tensor and its size, exit 2; never a crash.
TEST(MemoryGuards, AFailedAllocationNamesTheTensorAndItsSize) {
#if defined(_WIN32)
  GTEST_SKIP() << "ulimit -v is POSIX";
#else
  if (std::getenv("MESON_EXE_WRAPPER") != nullptr) GTEST_SKIP() << "qemu-user maps the guest's address space itself";
  if (kUnderAddressSanitizer) GTEST_SKIP() << "AddressSanitizer's shadow memory needs more address space than any such limit";
  const std::string dir = make_temp_folder("retrograd_alloc_");
  const Outcome o = run_command("ulimit -v 300000 && " + retrograd_binary() +
                                " train --model cnn --data synthetic --batch 6000 --epochs 1 --threads 2"
                                " --mem-budget 4G --checkpoint " + dir + "/never.ckpt");
  EXPECT_EQ(o.code, 2) << o.output;
  // Which tensor meets the limit first depends on what the C library maps; here (glibc 2.36,
  // x86-64) the first conv's output: "allocation of 287.1 MiB for conv1 output [3000, 28, 28,
  // 32] f32 failed (host memory in use: ...)" (the budget above the address space: a warning).
  EXPECT_NE(o.output.find("retrograd: allocation of "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find(" failed (host memory in use: "), std::string::npos) << o.output;
  EXPECT_FALSE(exists(dir + "/never.ckpt"));
  std::filesystem::remove_all(dir);
#endif
}

// The budget itself: a tensor past it is refused by name before anything is allocated.
TEST(MemoryGuards, ABudgetTooSmallForTheModelNamesWhatItNeeds) {
  const Outcome o = run("train --model mlp --data synthetic --limit 640 --epochs 1 --threads 1 --mem-budget 300k");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("--mem-budget 300.0 KiB cannot hold this training even one sample at a time: that needs "
                          "8.0 MiB (parameters and gradients 1.8 MiB, data (in memory) 5.3 MiB"), std::string::npos)
      << o.output;
}


// Issue 29, section 2: an input that is not what it should be is refused by what it is, at once:
// never read whole (a device), waited on (a FIFO) or allocated for (a size past memory).
TEST(HostileInputs, DevicesFoldersAndFifosAreRefusedByWhatTheyAre) {
  const std::string dir = make_temp_folder("retrograd_inputs_");
  const std::string quick = " --data synthetic --limit 64 --epochs 1 --threads 1";
  struct Case {
    std::string args, message;
  };
  std::vector<Case> cases = {
      {"eval --checkpoint " + dir, dir + " is a folder, not a checkpoint"},
      {"train --model " + dir + quick, dir + " is a folder, not a cfg file"},
      {"train --data " + dir + "/x.cfg --model mlp --epochs 1", dir + "/x.cfg is a regular file, not a dataset folder"},
  };
  std::ofstream(dir + "/x.cfg") << "[net]\n";
#if !defined(_WIN32)
  cases.push_back({"train --model /dev/zero" + quick, "/dev/zero is a character device, not a cfg file"});
  cases.push_back({"eval --checkpoint /dev/urandom", "/dev/urandom is a character device, not a checkpoint"});
  cases.push_back({"train --resume /dev/zero", "/dev/zero is a character device, not a checkpoint"});
  const std::string fifo = dir + "/pipe";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  cases.push_back({"train --model " + fifo + quick, fifo + " is a FIFO (named pipe), not a cfg file"});
  cases.push_back({"train --resume " + fifo, fifo + " is a FIFO (named pipe), not a checkpoint"});
#endif
  for (const Case& c : cases) {
    const Outcome o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find("retrograd: " + c.message), std::string::npos) << c.args << "\n" << o.output;
  }
  std::filesystem::remove_all(dir);
}

TEST(HostileInputs, CfgFilesPastTheirLimitsAreRefusedBeforeTheyAreBuilt) {
  const std::string dir = make_temp_folder("retrograd_cfg_limits_");
  const std::string quick = " --data synthetic --limit 64 --epochs 1 --threads 1";
  std::string relus = "[net]\ninput = 28x28x1\n";
  for (int i = 0; i < 20000; ++i) relus += "[relu]\n";
  std::ofstream(dir + "/relu.cfg") << relus << "[dense]\nunits = 10\n";  // 140 KB, 20002 sections
  std::ofstream(dir + "/large.cfg") << "[net]\ninput = 28x28x1\n[dense]\nunits = 10\n" << std::string(2 << 20, '#');
  std::ofstream(dir + "/wide.cfg") << "[net]\ninput = 4096x4096x3\n[dense]\nunits = 16777216\n";
  std::ofstream(dir + "/bom.cfg") << "\xEF\xBB\xBF[net]\ninput = 28x28x1\n[dense]\nunits 10\n";
  const struct {
    std::string args, message;
  } cases[] = {
      {"train --model " + dir + "/relu.cfg" + quick, dir + "/relu.cfg:10002: section 10001: a cfg holds at most 10000 sections"},
      {"train --model " + dir + "/large.cfg" + quick, dir + "/large.cfg: 2.0 MiB, more than the 1.0 MiB a cfg file may hold"},
      {"train --model " + dir + "/wide.cfg" + quick, dir + "/wide.cfg:3: [dense]: the model reaches more than 4294967296 parameters"},
      // The mark is skipped: line 1 is [net], and the first error is line 4's.
      {"train --model " + dir + "/bom.cfg" + quick, dir + "/bom.cfg:4: 'units 10' is neither"},
  };
  for (const auto& c : cases) {
    const Outcome o = run(c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_NE(o.output.find("retrograd: " + c.message), std::string::npos) << c.args << "\n" << o.output;
  }
  std::filesystem::remove_all(dir);
}


// Issue 29, section 7: a path a checkpoint stored, used in a message, says where it came from.
TEST(HostileInputs, AStoredDataFolderThatFailsSaysItCameFromTheCheckpoint) {
  const std::string dir = make_temp_folder("retrograd_stored_data_");
  const std::string data = dir + "/data", checkpoint = dir + "/run.ckpt";
  ASSERT_EQ(run("make-data --out " + data + " --samples 64 --test-samples 16").code, 0);
  const Outcome trained = run("train --data " + data + " --epochs 1 --threads 1 --checkpoint " + checkpoint);
  ASSERT_EQ(trained.code, 0) << trained.output;
  std::filesystem::rename(data, dir + "/moved");
  for (const std::string& args : {"eval --checkpoint " + checkpoint, "train --resume " + checkpoint + " --epochs 2"}) {
    const Outcome o = run(args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find("retrograd: " + data + ": "), std::string::npos) << args << "\n" << o.output;
    EXPECT_NE(o.output.find("(" + data + " is from the checkpoint " + checkpoint + ", the data it was trained on; --data "
                            "DIR says where that data is now)"), std::string::npos) << args << "\n" << o.output;
  }
  const Outcome moved = run("eval --checkpoint " + checkpoint + " --data " + dir + "/moved");
  EXPECT_EQ(moved.code, 0) << moved.output;
  std::filesystem::remove_all(dir);
}

// Issue 29, section 3 (and section 5's budget): plans are checked against the machine before
// anything is allocated; a run planned under a budget resumes under it, bit for bit.

// A batch far larger than the data sizes no buffer past the data; a plan over the memory
// available (stated through RETROGRAD_MEM_AVAILABLE) is refused with both figures and a
// --mem-budget that fits, which then runs.
TEST(MachinePlans, APlanOverTheAvailableMemoryIsRefusedAndItsSuggestionRuns) {
  const std::string quick = " --model mlp --data synthetic --limit 2000 --test-limit 500 --epochs 1 --threads 1";
  const Outcome huge_batch = run("train --batch 1048576" + quick);
  EXPECT_EQ(huge_batch.code, 0) << huge_batch.output;
  EXPECT_NE(huge_batch.output.find("batch 1048576 in one piece (buffers for 2000 samples"), std::string::npos)
      << huge_batch.output;
  {
    const ScopedEnv stated("RETROGRAD_MEM_AVAILABLE", "8M");
    const Outcome refused = run("train --batch 2000" + quick);
    EXPECT_EQ(refused.code, 2) << refused.output;
    EXPECT_NE(refused.output.find("is more than the 8.0 MiB available (RETROGRAD_MEM_AVAILABLE); --mem-budget 8M runs it"),
              std::string::npos) << refused.output;
    EXPECT_EQ(refused.output.find("Epoch"), std::string::npos) << "refused before training";
    const Outcome suggested = run("train --batch 2000 --mem-budget 8M" + quick);
    EXPECT_EQ(suggested.code, 0) << suggested.output;
    const Outcome above = run("train --batch 2000 --mem-budget 64M" + quick);
    EXPECT_EQ(above.code, 0) << above.output;
    EXPECT_NE(above.output.find("warning: --mem-budget 64.0 MiB is more than the 8.0 MiB available"), std::string::npos)
        << above.output;
  }
  const ScopedEnv tiny("RETROGRAD_MEM_AVAILABLE", "1M");
  const Outcome model = run("train --batch 64" + quick);
  EXPECT_EQ(model.code, 2) << model.output;
  EXPECT_NE(model.output.find("the parameters and their gradients (235146 values each): 1.8 MiB needed, more than the "
                              "1.0 MiB this machine has available (RETROGRAD_MEM_AVAILABLE)"), std::string::npos)
      << model.output;
}

TEST(MachinePlans, ARunPlannedUnderABudgetResumesUnderItExactly) {
  const std::string dir = make_temp_folder("retrograd_budget_resume_");
  ASSERT_EQ(run("make-data --out " + dir + "/data --samples 2000 --test-samples 500").code, 0);
  const std::string common = " --data " + dir + "/data --threads 1 --mem-budget 5M";
  const Outcome whole = run("train --model mlp --epochs 2" + common + " --checkpoint " + dir + "/whole.ckpt");
  ASSERT_EQ(whole.code, 0) << whole.output;
  EXPECT_NE(whole.output.find("micro-batches"), std::string::npos) << "the budget is tight: " << whole.output;
  EXPECT_NE(whole.output.find("a checkpoint while it is loaded"), std::string::npos) << whole.output;
  const Outcome first = run("train --model mlp --epochs 2 --stop-after 1" + common + " --checkpoint " + dir + "/run.ckpt");
  ASSERT_EQ(first.code, 0) << first.output;
  const Outcome resumed = run("train --resume " + dir + "/run.ckpt" + common);
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  EXPECT_TRUE(read_all(dir + "/run.ckpt") == read_all(dir + "/whole.ckpt")) << "resumed under the same plan, bit for bit";
  // Scoring with a batch far past the test set sizes its buffers by the test set.
  const Outcome scored = run("eval --checkpoint " + dir + "/run.ckpt --batch 1048576 --threads 1");
  EXPECT_EQ(scored.code, 0) << scored.output;
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace

// Issue 29, section 1: labels are checked where the data meets the model, in every command that
// reads them, before any training: a label the model has no output for is named by its file and
// sample, exit 2, and nothing is written.
namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

std::string big_endian(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// An MNIST-layout folder of `n` 28x28 images per split, labels i % `classes`, the test label of
// sample `bad_test` (when >= 0) replaced by `bad_label`.
std::string labelled_idx_folder(const std::string& dir, int n, int classes, int bad_test = -1, int bad_label = 0) {
  std::filesystem::create_directories(dir);
  std::string images = big_endian(0x803) + big_endian(static_cast<uint32_t>(n)) + big_endian(28) + big_endian(28);
  for (int i = 0; i < n; ++i) {
    for (int p = 0; p < 784; ++p) images += static_cast<char>(p % 28 == (i % classes) * 2 ? 255 : 0);
  }
  std::string labels = big_endian(0x801) + big_endian(static_cast<uint32_t>(n));
  for (int i = 0; i < n; ++i) labels += static_cast<char>(i % classes);
  std::string test_labels = labels;
  if (bad_test >= 0) test_labels[static_cast<size_t>(8 + bad_test)] = static_cast<char>(bad_label);
  write_bytes(dir + "/train-images-idx3-ubyte", images);
  write_bytes(dir + "/train-labels-idx1-ubyte", labels);
  write_bytes(dir + "/t10k-images-idx3-ubyte", images);
  write_bytes(dir + "/t10k-labels-idx1-ubyte", test_labels);
  return dir;
}

void expect_refused(const Outcome& o, const std::string& message) {
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("retrograd: " + message), std::string::npos) << o.output;
  EXPECT_EQ(o.output.find("Epoch 1/"), std::string::npos) << "refused before training\n" << o.output;
}

// A test label of 255 in an IDX folder: train refuses before the first epoch, eval before scoring.
TEST(Labels, ATestLabelOutsideTheClassesIsNamedByTrainAndEval) {
  const std::string dir = make_temp_folder("retrograd_labels_");
  const std::string bad = labelled_idx_folder(dir + "/bad", 40, 10, 17, 255);
  const std::string good = labelled_idx_folder(dir + "/good", 40, 10);
  const std::string where = bad + "/t10k-labels-idx1-ubyte: sample 17 has label 255; the model has 10 outputs "
                                  "(classes 0 to 9)";
  const std::string quick = " --epochs 1 --batch 8 --threads 1";
  expect_refused(run("train --data " + bad + " --checkpoint " + dir + "/never.ckpt" + quick), where);
  EXPECT_FALSE(exists(dir + "/never.ckpt"));
  expect_refused(run("precision --data " + bad + quick), where);
  expect_refused(run("train --data " + bad + " --val-split 0.25" + quick), where);
  const Outcome trained = run("train --data " + good + " --checkpoint " + dir + "/run.ckpt" + quick);
  ASSERT_EQ(trained.code, 0) << trained.output;
  const std::string before = read_all(dir + "/run.ckpt");
  expect_refused(run("eval --checkpoint " + dir + "/run.ckpt --data " + bad), where);
  expect_refused(run("eval --checkpoint " + dir + "/run.ckpt --int8 --data " + bad), where);
  EXPECT_EQ(read_all(dir + "/run.ckpt"), before);
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// A model of 4 outputs (trained on 4 classes) scored on 10: named, never read past its outputs.
TEST(Labels, AModelWithFewerOutputsThanTheDataHasClassesIsRefused) {
  const std::string dir = make_temp_folder("retrograd_labels_");
  const std::string four = labelled_idx_folder(dir + "/four", 40, 4);
  const std::string ten = labelled_idx_folder(dir + "/ten", 40, 10);
  write_bytes(dir + "/four.cfg", "[net]\ninput = 28x28x1\n[dense]\nunits = 16\n[relu]\n[dense]\nunits = 4\n");
  const std::string quick = " --epochs 1 --batch 8 --threads 1";
  const Outcome trained = run("train --model " + dir + "/four.cfg --data " + four + " --checkpoint " + dir +
                              "/four.ckpt" + quick);
  ASSERT_EQ(trained.code, 0) << trained.output;
  const std::string where = "sample 4 has label 4; the model has 4 outputs (classes 0 to 3)";
  expect_refused(run("eval --checkpoint " + dir + "/four.ckpt --data " + ten), ten + "/t10k-labels-idx1-ubyte: " + where);
  expect_refused(run("train --model " + dir + "/four.cfg --data " + ten + quick),
                 ten + "/train-labels-idx1-ubyte: " + where);
  const Outcome scored = run("eval --checkpoint " + dir + "/four.ckpt --data " + four);
  EXPECT_EQ(scored.code, 0) << scored.output;
  EXPECT_NE(scored.output.find("test accuracy"), std::string::npos) << scored.output;
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// Issue 29, section 4: outputs replace nothing but what they name, and are checked before the
// first step. Section 5: a resumed run reads the data its run read, or is refused.

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* kQuickRun = "train --data synthetic --limit 256 --threads 1";

TEST(Outputs, AnExistingCheckpointIsReplacedOnlyWhenTold) {
  const std::string dir = make_temp_folder("retrograd_outputs_");
  const std::string ckpt = dir + "/run.ckpt";
  ASSERT_EQ(run(std::string(kQuickRun) + " --epochs 1 --checkpoint " + ckpt).code, 0);
  const std::string first = file_bytes(ckpt);
  const Outcome again = run(std::string(kQuickRun) + " --epochs 1 --seed 2 --checkpoint " + ckpt);
  EXPECT_EQ(again.code, 2) << again.output;
  EXPECT_TRUE(has(again.output, "--checkpoint " + ckpt + ": a file is there already")) << again.output;
  EXPECT_TRUE(has(again.output, "--overwrite")) << again.output;
  EXPECT_FALSE(has(again.output, "Epoch")) << "refused before training";
  EXPECT_EQ(file_bytes(ckpt), first);
  // Resuming it continues into it; a resume that names another existing file is refused too.
  const Outcome resumed = run("train --resume " + ckpt + " --epochs 2 --threads 1");
  EXPECT_EQ(resumed.code, 0) << resumed.output;
  const std::string other = dir + "/other.ckpt";
  write_bytes(other, "an earlier run's");
  const Outcome elsewhere = run("train --resume " + ckpt + " --epochs 3 --threads 1 --checkpoint " + other);
  EXPECT_EQ(elsewhere.code, 2) << elsewhere.output;
  EXPECT_EQ(file_bytes(other), "an earlier run's");
  const Outcome told = run(std::string(kQuickRun) + " --epochs 1 --seed 2 --checkpoint " + ckpt + " --overwrite");
  EXPECT_EQ(told.code, 0) << told.output;
  EXPECT_NE(file_bytes(ckpt), first);
  std::filesystem::remove_all(dir);
}

TEST(Outputs, UnwritableOutputsAreRefusedBeforeTheFirstStep) {
  const std::string dir = make_temp_folder("retrograd_outputs_");
  struct Case {
    std::string option, path, expect;
  };
  std::filesystem::create_directory(dir + "/folder");
  for (const Case& c : std::vector<Case>{{"--json", dir + "/folder", dir + "/folder is a folder"},
                                         {"--checkpoint", dir + "/folder", dir + "/folder is a folder"},
                                         {"--csv", dir + "/no/such/x.csv", "the folder " + dir + "/no/such does not exist"}}) {
    const std::string precision = c.option == "--csv" ? " --precision fp32" : "";
    const Outcome o = run(std::string(kQuickRun) + " --epochs 1" + precision + " " + c.option + " " + c.path);
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_TRUE(has(o.output, c.option + " " + c.path)) << o.output;
    EXPECT_TRUE(has(o.output, c.expect)) << o.output;
    EXPECT_FALSE(has(o.output, "Epoch")) << "refused before training: " << o.output;
  }
#if defined(_WIN32)
  GTEST_SKIP() << "folder permission bits and setpriv are POSIX";
#else
  // A folder this user cannot write: as root, the run drops to uid 65534 (root writes anyway).
  std::string as_user;
  if (geteuid() == 0) {
    if (run_command("setpriv --reuid=65534 --regid=65534 --clear-groups true").code != 0) {
      GTEST_SKIP() << "running as root without setpriv: cannot drop privileges";
    }
    as_user = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  const std::string locked = dir + "/read_only";
  std::filesystem::create_directory(locked);
  std::filesystem::permissions(locked, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                           std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  for (const std::string option : {"--json", "--checkpoint"}) {
    const Outcome o = run_command(as_user + retrograd_binary() + " " + kQuickRun + " --epochs 1 " + option + " " + locked + "/x");
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_TRUE(has(o.output, option + " " + locked + "/x: cannot create a file in the folder " + locked)) << o.output;
    EXPECT_FALSE(has(o.output, "Epoch")) << "refused before training: " << o.output;
  }
  std::filesystem::permissions(locked, std::filesystem::perms::owner_all);
  std::filesystem::remove_all(dir);
#endif
}

TEST(Outputs, ASecondRunWritingTheSameCheckpointIsRefusedAndAKilledOnesLeftoversGo) {
#if defined(_WIN32)
  GTEST_SKIP() << "the background run and SIGKILL are POSIX; OutputLock's tests run everywhere";
#else
  const std::string dir = make_temp_folder("retrograd_outputs_");
  const std::string ckpt = dir + "/shared.ckpt";
  Child first(retrograd_binary() + " " + kQuickRun + " --epochs 100000 --checkpoint " + ckpt, dir + "/first.log");
  ASSERT_TRUE(first.started());
  for (int waited = 0; waited < 3000 && !exists(ckpt); ++waited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(exists(ckpt + ".lock")) << read_all(dir + "/first.log");
  const Outcome second = run(std::string(kQuickRun) + " --epochs 1 --overwrite --checkpoint " + ckpt);
  EXPECT_EQ(second.code, 2) << second.output;
  EXPECT_TRUE(has(second.output, "--checkpoint " + ckpt + " is being written by process ")) << second.output;
  int code = 0;
  EXPECT_TRUE(first.kill_after(std::chrono::milliseconds(0), &code));
  // What a SIGKILL mid-write leaves (the lock file, a temporary) does not stop the next run.
  write_bytes(ckpt + ".tmp-999999-0123abcd", "half a checkpoint");
  const Outcome next = run(std::string(kQuickRun) + " --epochs 1 --overwrite --checkpoint " + ckpt);
  EXPECT_EQ(next.code, 0) << next.output;
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"first.log", "shared.ckpt"}));
  std::filesystem::remove_all(dir);
#endif
}

// An MNIST-layout folder of 300 training and 100 test images; `label_shift` changes the labels.
void write_small_mnist(const std::string& dir, int label_shift) {
  std::filesystem::create_directories(dir);
  auto header = [](std::initializer_list<uint32_t> words) {
    std::string out;
    for (uint32_t w : words) out += {char(w >> 24), char(w >> 16), char(w >> 8), char(w)};
    return out;
  };
  for (const auto& [prefix, n] : {std::make_pair(std::string("train"), 300u), std::make_pair(std::string("t10k"), 100u)}) {
    std::string images = header({0x803, n, 28, 28}), labels = header({0x801, n});
    for (uint32_t i = 0; i < n * 784; ++i) images += static_cast<char>((i * 7) % 256);
    for (uint32_t i = 0; i < n; ++i) labels += static_cast<char>((i + label_shift) % 10);
    write_bytes(dir + "/" + prefix + "-images-idx3-ubyte", images);
    write_bytes(dir + "/" + prefix + "-labels-idx1-ubyte", labels);
  }
}

TEST(Resume, TheDataOptionsComeFromTheCheckpointAndAnotherValueIsRefused) {
  const std::string dir = make_temp_folder("retrograd_resume_data_");
  const std::string stopped = dir + "/stopped.ckpt", whole = dir + "/whole.ckpt";
  const std::string run_options = " --data synthetic --limit 512 --test-limit 200 --epochs 2 --threads 1";
  ASSERT_EQ(run("train" + run_options + " --stop-after 1 --checkpoint " + stopped).code, 0);
  const std::string kept = file_bytes(stopped);
  struct Case {
    std::string args, expect;
  };
  for (const Case& c : std::vector<Case>{
           {"--limit 256", "--limit 256: the run in " + stopped + " had --limit 512"},
           {"--test-limit 100", "--test-limit 100: the run in " + stopped + " had --test-limit 200"},
           {"--image-fit crop", "--image-fit crop: the run in " + stopped + " had no --image-fit"},
           {"--data " + dir + "/other", "--data " + dir + "/other: not the data the run in " + stopped}}) {
    write_small_mnist(dir + "/other", 0);
    const Outcome o = run("train --resume " + stopped + " --threads 1 " + c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.output;
    EXPECT_TRUE(has(o.output, c.expect)) << o.output;
    EXPECT_EQ(file_bytes(stopped), kept) << c.args;
  }
  // Given again with the same value, or not at all: the uninterrupted run's checkpoint, byte for byte.
  const Outcome resumed = run("train --resume " + stopped + " --threads 1 --limit 512");
  ASSERT_EQ(resumed.code, 0) << resumed.output;
  ASSERT_EQ(run("train" + run_options + " --checkpoint " + whole).code, 0);
  EXPECT_TRUE(file_bytes(stopped) == file_bytes(whole)) << "resumed and uninterrupted runs must end alike";
  std::filesystem::remove_all(dir);
}

TEST(Resume, DataChangedAtTheSamePathIsRefused) {
  const std::string dir = make_temp_folder("retrograd_resume_data_");
  const std::string data = dir + "/mnist", ckpt = dir + "/run.ckpt";
  write_small_mnist(data, 0);
  ASSERT_EQ(run("train --data " + data + " --epochs 2 --stop-after 1 --threads 1 --checkpoint " + ckpt).code, 0);
  write_small_mnist(data, 3);  // the same files, sizes and names; other labels
  const Outcome o = run("train --resume " + ckpt + " --threads 1");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_TRUE(has(o.output, "the data in " + data + " changed since " + ckpt + " was written")) << o.output;
  // A copy of the same data elsewhere is the same run's data.
  write_small_mnist(data, 0);
  write_small_mnist(dir + "/copy", 0);
  const Outcome moved = run("train --resume " + ckpt + " --threads 1 --data " + dir + "/copy");
  EXPECT_EQ(moved.code, 0) << moved.output;
  EXPECT_TRUE(has(moved.output, "its run read " + data + ": the same samples")) << moved.output;
  std::filesystem::remove_all(dir);
}


}  // namespace
