// libFuzzer target: the command line (app/commands.h's run_command, which main() is). Input: a
// byte choosing the subcommand (train, eval, precision, probe, make-data), then its arguments,
// one a line (newline or NUL ends a word). Each input runs in a fresh folder of this process's
// own holding small fixtures to name: `mnist` (an IDX folder, the training images gzipped),
// `images` (two class folders of PNGs), `tiny.cfg` (a 28x28x1 -> 10 model) and `mlp.ckpt` (a
// checkpoint of one epoch). The exit code must be 0 or 2; anything else, a crash, a sanitizer
// report or an internal check is a finding.
//
// Every run is bounded and stays inside that folder. Not run (the input is rejected):
// - a word with a slash, a backslash or "..": paths are names inside the folder;
// - a value above its cap for the options that size a run (kCaps), in any form strtod reads
//   (1e9, 0x1000, inf, nan);
// - --model naming a large preset (kLargePresets): many seconds a run under the sanitizers.
// Options that size a run and were not given are added at their caps' small defaults, and
// --data synthetic where a command would read the default data (Fashion-MNIST). OpenCL is
// switched off (RETROGRAD_OPENCL_LIBRARY names no file): probing a device is not bounded here.
// Left out: study (minutes, and it starts this program again as a child) and advise (with no
// study of the model at hand it starts a study).
#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "app/commands.h"
#include "base/memory.h"
#include "base/serial.h"
#include "data/dataset.h"
#include "data/generated_images.h"
#include "data/image_io.h"
#include "fuzz_input.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxWords = 24;
constexpr size_t kMaxWordBytes = 64;

struct Command {
  const char* name;
  std::vector<const char*> added;  // "--option value" pairs added when the option is not given
};

const Command kCommands[] = {
    {"train", {"--data", "synthetic", "--epochs", "1", "--limit", "64", "--test-limit", "32", "--threads", "1"}},
    {"eval", {"--data", "synthetic", "--checkpoint", "mlp.ckpt", "--threads", "1"}},
    {"precision", {"--data", "synthetic", "--epochs", "1", "--limit", "64", "--test-limit", "32", "--threads", "1",
                   "--calib-batches", "1", "--infer-batch", "32"}},
    {"probe", {"--threads", "1"}},
    {"make-data", {"--out", "made", "--samples", "64", "--test-samples", "16"}},
};

// The options that size a run, and the largest value an input may give each.
struct Cap {
  const char* option;
  double most;
};
const Cap kCaps[] = {{"epochs", 2},       {"limit", 64},         {"test-limit", 64},  {"batch", 64},
                     {"threads", 2},      {"qat-epochs", 1},     {"calib-batches", 2}, {"infer-batch", 64},
                     {"judge-epochs", 1}, {"score-samples", 64}, {"samples", 256},     {"test-samples", 256}};

// Presets too large for a run of a few seconds under the sanitizers (a training of cnn on 128
// samples took 97 s, lenet 6 s at batch 1); precision trains five times, so lenet is too
// large there.
const char* const kLargePresets[] = {"cnn", "catdog", "rcnn", "conv-autoencoder", "dcgan", "dcgan-generator",
                                     "dcgan-discriminator"};
const char* const kLargeForPrecision = "lenet";

// The input's words after the command byte; false when the input is outside the limits.
bool split_words(const uint8_t* data, size_t size, std::vector<std::string>* words) {
  std::string word;
  for (size_t i = 0; i <= size; ++i) {
    if (i == size || data[i] == '\n' || data[i] == '\0') {
      if (words->size() == kMaxWords) return false;
      words->push_back(word);
      word.clear();
      continue;
    }
    if (word.size() == kMaxWordBytes) return false;
    word += static_cast<char>(data[i]);
  }
  if (!words->empty() && words->back().empty()) words->pop_back();  // a final newline ends the last word
  return true;
}

// "--name=value" or "--name" then the next word: the value, or null when the option is absent.
const std::string* option_value(const std::vector<std::string>& words, const std::string& name, std::string* joined) {
  const std::string flag = "--" + name;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] == flag) return i + 1 < words.size() ? &words[i + 1] : nullptr;
    if (words[i].compare(0, flag.size() + 1, flag + "=") == 0) {
      *joined = words[i].substr(flag.size() + 1);
      return joined;
    }
  }
  return nullptr;
}

bool given(const std::vector<std::string>& words, const std::string& name) {
  const std::string flag = "--" + name;
  for (const std::string& w : words) {
    if (w == flag || w.compare(0, flag.size() + 1, flag + "=") == 0) return true;
  }
  return false;
}

// Whether the words keep `command`'s run bounded and inside its folder (the rules at the top).
bool bounded(const std::string& command, const std::vector<std::string>& words) {
  for (const std::string& w : words) {
    if (w.find_first_of("/\\") != std::string::npos || w.find("..") != std::string::npos) return false;
  }
  std::string joined;
  for (const Cap& cap : kCaps) {
    const std::string* value = option_value(words, cap.option, &joined);
    if (value == nullptr) continue;
    char* end = nullptr;
    const double v = std::strtod(value->c_str(), &end);
    if (end != value->c_str() && !(v <= cap.most)) return false;
  }
  if (const std::string* model = option_value(words, "model", &joined)) {
    for (const char* large : kLargePresets) {
      if (*model == large) return false;
    }
    if (command == "precision" && *model == kLargeForPrecision) return false;
  }
  return true;
}

// The fixtures every run starts from, made once: scratch_folder()/fixtures.
std::string make_fixtures() {
  const std::string dir = rg::fuzz::scratch_folder() + "/fixtures";
  fs::create_directories(dir + "/mnist");
  const auto fail = [](const std::string& what, const rg::Status& s) {
    std::fprintf(stderr, "fuzz_cli: cannot make the fixture %s: %s\n", what.c_str(), s.message().c_str());
    std::abort();
  };
  const rg::Dataset train = rg::generated_images("train", rg::Shape{28, 28, 1}, 64, 10, 1, 1);
  const rg::Dataset test = rg::generated_images("test", rg::Shape{28, 28, 1}, 16, 10, 2, 1);
  rg::Status s = rg::write_idx_pair(train, dir + "/mnist/train-images-idx3-ubyte", dir + "/mnist/train-labels-idx1-ubyte");
  if (s.ok()) s = rg::write_idx_pair(test, dir + "/mnist/t10k-images-idx3-ubyte", dir + "/mnist/t10k-labels-idx1-ubyte");
  if (!s.ok()) fail("mnist", s);
  auto raw = rg::read_file_bytes(dir + "/mnist/train-images-idx3-ubyte");
  if (!raw.ok()) fail("mnist", raw.status());
  gzFile gz = gzopen((dir + "/mnist/train-images-idx3-ubyte.gz").c_str(), "wb");
  if (gz == nullptr || gzwrite(gz, raw.value().data(), static_cast<unsigned>(raw.value().size())) <= 0 ||
      gzclose(gz) != Z_OK) {
    fail("mnist", rg::Status::error("gzip failed"));
  }
  fs::remove(dir + "/mnist/train-images-idx3-ubyte");
  for (const char* cls : {"a", "b"}) {
    fs::create_directories(dir + "/images/" + cls);
    for (int i = 0; i < 3; ++i) {
      const std::vector<uint8_t> pixels(8 * 8, static_cast<uint8_t>(40 * i + (cls[0] == 'a' ? 0 : 120)));
      s = rg::write_png(dir + "/images/" + cls + "/" + std::to_string(i) + ".png", 8, 8, 1, pixels.data());
      if (!s.ok()) fail("images", s);
    }
  }
  rg::fuzz::write_scratch_file("fixtures/tiny.cfg", "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n\n"
                                                    "[dense]\nunits = 10\n");
  std::vector<std::string> words = {"retrograd", "train", "--data", "synthetic", "--limit", "64", "--test-limit",
                                    "16", "--epochs", "1", "--threads", "1", "--checkpoint", dir + "/mlp.ckpt"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  if (rg::run_command(static_cast<int>(argv.size()), argv.data()) != 0) fail("mlp.ckpt", rg::Status::error("train failed"));
  return dir;
}

// Once: the environment (no OpenCL, no chosen ISA, a cache of our own) and stdout to /dev/null
// (the progress lines; messages go to stderr) unless RETROGRAD_FUZZ_VERBOSE is set.
const std::string& fixtures() {
  static const std::string dir = [] {
    const std::string scratch = rg::fuzz::scratch_folder();
    setenv("RETROGRAD_OPENCL_LIBRARY", (scratch + "/no-opencl-here.so").c_str(), 1);
    setenv("RETROGRAD_CACHE", (scratch + "/cache").c_str(), 1);
    unsetenv("RETROGRAD_ISA");
    if (std::getenv("RETROGRAD_FUZZ_VERBOSE") == nullptr) {
      const int null = open("/dev/null", O_WRONLY);
      if (null >= 0) dup2(null, STDOUT_FILENO);
    }
    return make_fixtures();
  }();
  return dir;
}

// `from` copied afresh to `run`. A copy interrupted by a signal (libFuzzer's -timeout alarm: seen
// under gVisor as EINTR from the file copy) is started again; any other failure stops the run.
void copy_fixtures(const std::string& from, const std::string& run) {
  std::error_code error;
  for (int attempt = 0; attempt < 10; ++attempt) {
    std::error_code ignored;
    fs::remove_all(run, ignored);
    fs::copy(from, run, fs::copy_options::recursive, error);
    if (!error) return;
    if (error.value() != EINTR) break;
  }
  std::fprintf(stderr, "fuzz_cli: cannot copy %s to %s: %s\n", from.c_str(), run.c_str(), error.message().c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const Command& command = kCommands[data[0] % (sizeof kCommands / sizeof kCommands[0])];
  std::vector<std::string> words;
  if (!split_words(data + 1, size - 1, &words) || !bounded(command.name, words)) return -1;
  for (size_t i = 0; i + 1 < command.added.size(); i += 2) {
    if (!given(words, command.added[i] + 2)) words.insert(words.end(), {command.added[i], command.added[i + 1]});
  }
  words.insert(words.begin(), {"retrograd", command.name});

  // A fresh copy of the fixtures to run in, removed after.
  const std::string& from = fixtures();
  const std::string run = rg::fuzz::scratch_folder() + "/run";
  std::error_code ignored;
  copy_fixtures(from, run);
  if (chdir(run.c_str()) != 0) std::abort();

  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  rg::host_memory().set_budget(0);  // --mem-budget sets the process's budget: not for the next input
  const int code = rg::run_command(static_cast<int>(words.size()), argv.data());
  if (code != 0 && code != 2) {
    std::fprintf(stderr, "fuzz_cli: exit code %d (only 0 and 2 are exit codes of retrograd)\n", code);
    std::abort();
  }
  rg::fuzz::report(command.name, code == 0 ? rg::Status() : rg::Status::error("exit code 2"));

  if (chdir(rg::fuzz::scratch_folder().c_str()) != 0) std::abort();
  fs::remove_all(run, ignored);
  fs::remove_all(rg::fuzz::scratch_folder() + "/cache", ignored);
  return 0;
}
