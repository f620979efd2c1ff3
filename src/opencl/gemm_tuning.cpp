// The GEMM search, its cache file, and the per-device tuning f32_gemm consults.
#include "opencl/gemm_tuning.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/files.h"
#include "base/rng.h"
#include "base/serial.h"
#include "base/text_format.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/gemm.h"
#include "opencl/kernel_sources.h"

namespace rg::ocl {

namespace {

// Version 1 held a ranking per pair of transposes: read as a file of another format (searched again).
constexpr const char* kTuningFileMagic = "retrograd-opencl-gemm-tuning 2";

// What a cache file must have been made for: the device, its driver, gemm.cl's and winograd.cl's
// text (the convolutions' Winograd choices are kept there too) and the candidates (a file from a
// shorter list would never time the ones added since).
std::string tuning_identity(const Device& device) {
  std::string candidates;
  for (const GemmConfig& c : gemm_candidates()) candidates += (candidates.empty() ? "" : ",") + c.name();
  return measured_identity(device.info().name, device.info().driver_version, {"gemm.cl", "winograd.cl"}) + " | " +
         fnv1a_hex(candidates);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Median device seconds of `reps` products after one warm-up.
Result<double> time_product(Device& device, const GemmShape& shape, const Buffer& a, const Buffer& b, const Buffer& c,
                            const GemmConfig& config, int reps) {
  return median_launch_seconds(
      device, [&] { return f32_gemm(device, shape, 1.0f, a.f32(), b.f32(), 0.0f, c.f32(), GemmLaunch{&config, 1, {}}); }, reps);
}

struct Operands {
  Buffer a, b, c;
  int size = 0;
};

// Three size^2 buffers of values in [-1, 1], the size halved while the budget refuses them.
Result<Operands> make_operands(Device& device, int size, int min_size) {
  std::vector<float> values;
  for (;; size /= 2) {
    const int64_t count = static_cast<int64_t>(size) * size;
    values.resize(count);
    Rng rng(12345);
    for (float& v : values) v = rng.uniform_f32() * 2.0f - 1.0f;
    auto a = upload(device, values, "GEMM tuning A");
    auto b = a.ok() ? upload(device, values, "GEMM tuning B") : Result<Buffer>(a.status());
    auto c = b.ok() ? Buffer::allocate(device, count * 4, "GEMM tuning C") : Result<Buffer>(b.status());
    if (c.ok()) return Operands{a.take(), b.take(), c.take(), size};
    if (size / 2 < min_size) return c.status().with_context("GEMM tuning: ");
  }
}

bool tune_this_device(const Device& device, std::string* why_not) {
  const char* env = std::getenv("RETROGRAD_CL_GEMM_TUNE");
  const std::string policy = env ? env : "";
  if (policy == "0" || policy == "off") return *why_not = "not tuned (RETROGRAD_CL_GEMM_TUNE=" + policy + ")", false;
  if (policy == "1" || policy == "on") return true;
  if (device.info().type == "GPU" || device.info().type == "accelerator") return true;
  *why_not = "not tuned: a " + device.info().type + " device (RETROGRAD_CL_GEMM_TUNE=1 tunes it)";
  return false;
}

GemmTuning untuned(const std::string& why) {
  GemmTuning t;
  for (const GemmConfig& c : gemm_candidates()) t.rates.push_back({c, 0});
  t.source = why;
  return t;
}

// Over a regular file or nothing only (write_cache_file): the tuning is otherwise not cached.
Status write_tuning(const Device& device, const GemmTuning& tuning) {
  const std::string text = gemm_tuning_text(device, tuning);
  return write_cache_file(gemm_tuning_path(device), std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace

Result<double> median_launch_seconds(Device& device, const std::function<Result<Event>()>& launch, int reps) {
  RG_CHECK(reps >= 1, "median of " << reps << " launches");
  const Device::KeepEvents timed(device);
  std::vector<double> seconds;
  for (int r = 0; r <= reps; ++r) {
    RG_ASSIGN(const Event event, launch());
    RG_ASSIGN(const double s, event.seconds());
    if (r > 0) seconds.push_back(s);
  }
  return median(seconds);
}

Result<GemmTuning> tune_gemm(Device& device, const GemmTuneOptions& options) {
  RG_CHECK(!options.candidates.empty() && options.min_size > 0 && options.max_size >= options.min_size,
           "GEMM tuning options");
  const auto start = std::chrono::steady_clock::now();
  RG_ASSIGN(Operands ops, make_operands(device, options.max_size, options.min_size));
  // The size: doubled from min_size while the first candidate that runs is quicker than the target.
  GemmTuning tuning;
  tuning.size = std::min(options.min_size, ops.size);
  auto at = [](int n) { return GemmShape{Trans::no, Trans::no, n, n, n, n, n, n}; };
  build_gemm_programs(device, at(ops.size), options.candidates, ops.a.f32(), ops.b.f32());  // the size is no build option
  for (const GemmConfig& config : options.candidates) {
    auto s = time_product(device, at(tuning.size), ops.a, ops.b, ops.c, config, 1);
    if (!s.ok()) continue;
    double seconds = s.value();
    while (seconds < options.target_seconds && tuning.size * 2 <= ops.size) {
      tuning.size *= 2;
      RG_ASSIGN(seconds, time_product(device, at(tuning.size), ops.a, ops.b, ops.c, config, 1));
    }
    break;
  }
  std::string skipped;
  const GemmShape shape = at(tuning.size);
  for (const GemmConfig& config : options.candidates) {
    auto s = time_product(device, shape, ops.a, ops.b, ops.c, config, options.reps);
    if (!s.ok()) {
      skipped += "; " + config.name() + ": " + s.status().message();
      continue;
    }
    tuning.rates.push_back({config, 2.0 * shape.m * shape.n * shape.k / s.value() * 1e-9});
  }
  if (tuning.rates.empty()) return Status::error(device.label() + ": no GEMM configuration runs" + skipped);
  std::stable_sort(tuning.rates.begin(), tuning.rates.end(),
                   [](const GemmRate& x, const GemmRate& y) { return x.gflops > y.gflops; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char text[200];
  std::snprintf(text, sizeof text, "tuned now in %.1f s at %d^3: best %s %.0f GFLOP/s (A B)", seconds, tuning.size,
                tuning.rates[0].config.name().c_str(), tuning.rates[0].gflops);
  tuning.source = text + skipped;
  return tuning;
}

std::string gemm_tuning_path(const Device& device) {
  return join_path(cache_folder(), "opencl-gemm-" + fnv1a_hex(device.info().name + "|" + device.info().driver_version) + ".txt");
}

std::string gemm_tuning_text(const Device& device, const GemmTuning& tuning) {
  std::ostringstream out;
  out << kTuningFileMagic << "\nfor " << tuning_identity(device) << "\nsize " << tuning.size << "\n";
  for (const GemmRate& r : tuning.rates) out << "rate " << r.config.name() << " " << r.gflops << "\n";
  for (const auto& [key, config] : tuning.products) out << "product " << key << " " << config.name() << "\n";
  for (const auto& [key, winograd] : tuning.conv_winograd) out << "conv " << key << (winograd ? " winograd\n" : " gemm\n");
  return out.str();
}

namespace {

// A configuration a cache line names: parsed, and one of the candidates (a file naming another was
// edited by hand: its kernel may build and still not run, failing that product every run).
template <class Bad>
Result<GemmConfig> candidate_named(const std::string& name, const Bad& bad) {
  auto config = parse_gemm_config(name);
  if (!config.ok()) return bad(config.status().message());
  const std::vector<GemmConfig>& candidates = gemm_candidates();
  if (std::find(candidates.begin(), candidates.end(), config.value()) == candidates.end())
    return bad("GEMM configuration '" + name + "' is not one of the candidates");
  return config.value();
}

}  // namespace

Result<GemmTuning> parse_gemm_tuning(const Device& device, const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  int number = 0;
  auto bad = [&](const std::string& rule) {
    return Status::error(file + ":" + std::to_string(number) + ": " + rule);
  };
  GemmTuning tuning;
  const std::string want = "for " + tuning_identity(device);
  std::map<std::string, int> seen;  // "product KEY" and "conv KEY": the line that named each
  auto once = [&](const std::string& what) {
    const auto [at, fresh] = seen.emplace(what, number);
    return fresh ? Status() : bad("'" + what + "' again (line " + std::to_string(at->second) + " has it): one line a key");
  };
  while (read_line(in, line)) {
    ++number;
    if (number == 1 && line != kTuningFileMagic)
      return bad("not a GEMM tuning file (the first line must be '" + std::string(kTuningFileMagic) + "')");
    if (number == 2 && line != want) return bad("made for another device, driver or kernel ('" + line + "', this is '" + want + "')");
    if (number <= 2) continue;
    std::istringstream fields(line);
    std::string key, name, rest;
    double gflops = 0;
    if (number == 3) {
      if (!(fields >> key >> tuning.size) || key != "size" || tuning.size <= 0 || (fields >> rest))
        return bad("want 'size N' with N > 0, got '" + line + "'");
      continue;
    }
    if (line.rfind("product ", 0) == 0) {
      if (!(fields >> key >> key >> name) || (fields >> rest))
        return bad("want 'product KEY CONFIG', got '" + line + "'");
      RG_TRY(once("product " + key));
      RG_ASSIGN(tuning.products[key], candidate_named(name, bad));
      continue;
    }
    if (line.rfind("conv ", 0) == 0) {
      if (!(fields >> key >> key >> name) || (fields >> rest) || (name != "winograd" && name != "gemm"))
        return bad("want 'conv KEY winograd|gemm', got '" + line + "'");
      RG_TRY(once("conv " + key));
      tuning.conv_winograd[key] = name == "winograd";
      continue;
    }
    if (!(fields >> key >> name >> gflops) || key != "rate" || (fields >> rest) || !(gflops > 0))
      return bad("want 'rate CONFIG GFLOPS' with GFLOPS > 0, 'product KEY CONFIG' or 'conv KEY winograd|gemm', got '" +
                 line + "'");
    RG_ASSIGN(const GemmConfig config, candidate_named(name, bad));
    tuning.rates.push_back({config, gflops});
  }
  if (number < 3) return Status::error(file + ": truncated after line " + std::to_string(number));
  if (tuning.rates.empty()) return Status::error(file + ": no rate");
  return tuning;
}

namespace {
// A tuning file's text: a regular file of at most 1 MiB (one holds some hundred lines of rates,
// products and convolutions' choices), its size checked before it is read whole.
Result<std::string> read_tuning_file(const std::string& path) {
  constexpr int64_t kMaxTuningFileBytes = int64_t{1} << 20;
  RG_ASSIGN(const std::vector<uint8_t> bytes, read_file_bytes(path, "a GEMM tuning file", kMaxTuningFileBytes));
  return std::string(bytes.begin(), bytes.end());
}
}  // namespace

GemmTuning& gemm_tuning(Device& device) {
  std::unique_ptr<GemmTuning>& slot = device.gemm_tuning_slot();
  if (slot) return *slot;
  const std::string path = gemm_tuning_path(device);
  std::string why_not, cache_note;
  if (auto text = read_tuning_file(path); text.ok()) {
    auto parsed = parse_gemm_tuning(device, text.value(), path);
    if (parsed.ok()) {
      slot = std::make_unique<GemmTuning>(parsed.take());
      slot->source = "read from " + path;
      return *slot;
    }
    cache_note = "; the cache was not used: " + parsed.status().message();
  } else if (path_exists(path)) {  // something else than a cache file is there: say what
    cache_note = "; the cache was not used: " + text.status().message();
  }
  if (!tune_this_device(device, &why_not)) {
    slot = std::make_unique<GemmTuning>(untuned(why_not + cache_note));
    return *slot;
  }
  auto tuned = tune_gemm(device);
  if (!tuned.ok()) {
    slot = std::make_unique<GemmTuning>(untuned("not tuned: " + tuned.status().message() + cache_note));
    return *slot;
  }
  slot = std::make_unique<GemmTuning>(tuned.take());
  slot->source += cache_note;
  const Status made = write_tuning(device, *slot);
  slot->source += made.ok() ? "; written to " + gemm_tuning_path(device) : "; not cached: " + made.message();
  return *slot;
}

void remember_product_choice(Device& device, const std::string& key, const GemmConfig& config) {
  GemmTuning& tuning = gemm_tuning(device);
  tuning.products[key] = config;
  (void)write_tuning(device, tuning);  // unwritten: timed again next run, nothing else lost
}

void remember_conv_choice(Device& device, const std::string& key, bool winograd) {
  GemmTuning& tuning = gemm_tuning(device);
  tuning.conv_winograd[key] = winograd;
  (void)write_tuning(device, tuning);  // unwritten: timed again next run (its bits may then differ)
}

}  // namespace rg::ocl
