// Reliability end to end: training killed with SIGKILL at random moments and resumed ends
// with the weights of an uninterrupted run; every checkpoint left behind is a good one.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "portable.h"
#include "train/checkpoint.h"

#if !defined(_WIN32)
#include <signal.h>
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

#if !defined(_WIN32)
using Clock = std::chrono::steady_clock;

bool exists(const std::string& path) { return std::ifstream(path).good(); }

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
  EXPECT_NE(model.output.find("parameters, their gradients and the optimizer's state need"), std::string::npos)
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
