// The device's implicit-GEMM convolutions (ocl::f32_conv_gemm, its weight gradient) per layer,
// pass and GEMM configuration: where issue 33's convolution time goes and which tile suits which
// layer, beside what the tuning picks (`auto`). Passes: forward y = conv(x, w); weight gradient
// dw = patches(x)^T dy, at each split asked for; input gradient dx = conv(dy, flipped w) at stride
// 1 only (cl_conv.cpp's implicit backward; a strided layer's dx is col2im, not timed here: its
// table says so). Each timing: LAUNCHES back-to-back calls to the queue's finish, by host wall
// time, divided by LAUNCHES; the median [min, max] of --reps after 2 warm-ups. GFLOP/s = 2 * rows
// * filters * patch size / s. Then the output and the split's scratch are set to NaN, the call
// runs once more, and its output must equal the first configuration's bit for bit (gemm.cl's
// contract: the configuration changes the speed, never the bits). Exit 1 on a difference or on
// a configuration that failed to run (the table names it), 2 on a bad command line.
//
// usage: opencl_conv_bench [--device cl:P:D] [--batch 256] [--reps 7] [--launches 5]
//          [--convs 28x28x32:32,14x14x64:64/s2,...]  (HxWxC:filters, 3x3 pad 1, /sS a stride)
//          [--configs auto,candidates,128x32x16/16x8/v4/p,...]  (candidates: gemm_config.h's list)
//          [--slices 0,100,200]  (the weight gradient's split over K; 0: gemm_k_slices decides)
// Built by bench/opencl_conv_bench.sh (against the build's static libraries).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/device_choice.h"
#include "opencl/gemm.h"
#include "opencl/gemm_tuning.h"

#include "bench_cli.h"
#include "bench_device.h"

using namespace rg;
using namespace rg::bench;

namespace {

struct ConvSpec {
  std::string text;
  ConvGeometry g;
  int64_t filters = 0;
};
// "HxWxC:F" or "HxWxC:F/sS", each a whole positive number; a 3x3 kernel with padding 1.
ConvSpec parse_conv(const std::string& text) {
  long long h = 0, w = 0, c = 0, f = 0, s = 1;
  int used = 0, used_stride = 0;
  const bool plain = std::sscanf(text.c_str(), "%lldx%lldx%lld:%lld%n", &h, &w, &c, &f, &used) == 4;
  const bool whole = plain && (static_cast<size_t>(used) == text.size() ||
                               (std::sscanf(text.c_str() + used, "/s%lld%n", &s, &used_stride) == 1 &&
                                static_cast<size_t>(used + used_stride) == text.size()));
  const long long most = 1 << 16;
  if (!whole || h < 1 || w < 1 || c < 1 || f < 1 || s < 1 || h > most || w > most || c > most || f > most || s > 64) {
    usage_error("--convs '" + text + "': the form is HxWxC:F or HxWxC:F/sS (e.g. 28x28x32:32/s2), each a whole number " +
         "from 1 (sides, channels and filters at most 65536, the stride at most 64)");
  }
  return {text, get_arg(conv_geometry(h, w, c, 3, s, 1), "--convs " + text), f};
}

struct Options {
  std::string device = "cl:0:0";
  int64_t batch = 256;
  int reps = 7, launches = 5;
  std::vector<ConvSpec> convs;
  std::vector<std::optional<ocl::GemmConfig>> configs;  // nullopt: the tuning's choice
  std::vector<int> slices = {0};
};

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> convs = {"28x28x32:32", "14x14x64:64"}, configs = {"auto", "candidates"}, slices;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return option_value(argc, argv, &i); };
    if (arg == "--device") o.device = value();
    else if (arg == "--batch") o.batch = integer(value(), "--batch", 1, 1 << 20);
    else if (arg == "--reps") o.reps = static_cast<int>(integer(value(), "--reps", 1, 1000));
    else if (arg == "--launches") o.launches = static_cast<int>(integer(value(), "--launches", 1, 1000));
    else if (arg == "--convs") convs = split(value());
    else if (arg == "--configs") configs = split(value());
    else if (arg == "--slices") slices = split(value());
    else usage_error("unknown argument " + arg + " (see the header of bench/opencl_conv_bench.cpp)");
  }
  for (const auto& t : convs) o.convs.push_back(parse_conv(t));
  for (const auto& t : configs) {
    if (t == "auto") o.configs.push_back(std::nullopt);
    else if (t == "candidates") o.configs.insert(o.configs.end(), ocl::gemm_candidates().begin(), ocl::gemm_candidates().end());
    else o.configs.push_back(get_arg(ocl::parse_gemm_config(t), "--configs"));
  }
  if (!slices.empty()) o.slices.clear();
  for (const auto& t : slices) o.slices.push_back(static_cast<int>(integer(t, "--slices", 0, 65535)));
  if (o.convs.empty() || o.configs.empty() || o.slices.empty()) usage_error("--convs, --configs and --slices need an entry each");
  return o;
}

struct Buffers {
  ocl::Buffer x, w, y, dy, dx, dw;
};
// The layer's operands, random in [-1, 1]; refused before any allocation where one would pass
// the device's largest buffer.
Buffers make_buffers(ocl::Device& device, const ConvSpec& c, int64_t batch, std::mt19937& rng) {
  const double sizes[3] = {1.0 * batch * c.g.height * c.g.width * c.g.channels, 1.0 * batch * c.g.patches() * c.filters,
                           1.0 * c.g.patch_size() * c.filters};  // in double: no overflow before the check
  for (double n : sizes) {
    if (4 * n > static_cast<double>(device.max_buffer_bytes())) {
      char bytes[32];
      std::snprintf(bytes, sizeof bytes, "%.3g", 4 * n);
      usage_error("--convs " + c.text + " at batch " + std::to_string(batch) + ": a buffer of " + bytes +
                  " bytes, the device's largest is " + std::to_string(device.max_buffer_bytes()));
    }
  }
  const int64_t in = static_cast<int64_t>(sizes[0]), out = static_cast<int64_t>(sizes[1]);
  const int64_t weights = static_cast<int64_t>(sizes[2]);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto random = [&](int64_t n, const char* what) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = uniform(rng);
    return get(ocl::upload(device, v, what), std::string("uploading ") + what);
  };
  return {random(in, "x"), random(weights, "w"), random(out, "y"), random(out, "dy"), random(in, "dx"),
          random(weights, "dw")};
}

void poison(const ocl::Buffer& buffer) {
  const std::vector<float> nans(static_cast<size_t>(buffer.bytes() / 4), std::numeric_limits<float>::quiet_NaN());
  check(ocl::write_buffer(buffer, 0, nans.data(), buffer.bytes()), "filling a buffer with NaN");
}

struct Pass {
  std::string name;
  const ocl::Buffer* out;
  std::function<Result<ocl::Event>(ocl::GemmLaunch)> run;
};

// The layer's passes: forward, the weight gradient at each split, the input gradient at stride 1.
std::vector<Pass> passes(ocl::Device& device, const ConvSpec& c, int64_t batch, const std::vector<int>& slices,
                         const Buffers& b) {
  std::vector<Pass> out = {{"forward", &b.y, [&device, &c, &b, batch](ocl::GemmLaunch l) {
                              return f32_conv_gemm(device, c.g, batch, b.x.f32(), b.w.f32(), c.filters, b.y.f32(), l);
                            }}};
  for (int split : slices) {
    out.push_back({"weight gradient" + (split > 0 ? " in " + std::to_string(split) + " slices" : std::string()), &b.dw,
                   [&device, &c, &b, batch, split](ocl::GemmLaunch l) {
                     l.k_slices = split;
                     return f32_conv_gemm_weight_grad(device, c.g, batch, b.x.f32(), b.dy.f32(), c.filters, 0.0f,
                                                      b.dw.f32(), l);
                   }});
  }
  if (c.g.stride != 1) return out;
  const ConvGeometry flipped = get(conv_geometry(c.g.out_h, c.g.out_w, c.filters, 3, 1, 1), "the flipped geometry");
  out.push_back({"input gradient", &b.dx, [&device, &c, &b, batch, flipped](ocl::GemmLaunch l) {
                   return f32_conv_gemm(device, flipped, batch, b.dy.f32(), b.w.f32(), c.g.channels, b.dx.f32(), l);
                 }});
  return out;
}

// One configuration's timing of `pass` (ms a call), then its output after a run on NaN-filled
// output and scratch; an error where a call failed.
struct Timed {
  Spread ms;
  std::vector<float> out;
  std::string error;
};
Timed time_pass(ocl::Device& device, const Pass& pass, const ocl::GemmLaunch& how, const Options& o) {
  Timed t;
  auto call = [&] {
    if (auto e = pass.run(how); !e.ok()) t.error = e.status().message();
    return t.error.empty();
  };
  t.ms = time_launches(device, o.reps, o.launches, 1e3, call).wall;
  if (!t.error.empty()) return t;
  poison(*pass.out);
  if (device.gemm_scratch_slot()) poison(*device.gemm_scratch_slot());
  call();
  check(device.finish(), "finish");
  t.out = get(ocl::download<float>(*pass.out, pass.out->bytes() / 4), "reading back");
  return t;
}

// The table's rows of one layer; false where a configuration failed or gave other bits.
bool bench_layer(ocl::Device& device, const ConvSpec& c, const Options& o, std::mt19937& rng) {
  const Buffers b = make_buffers(device, c, o.batch, rng);
  const double flops = 2.0 * o.batch * c.g.patches() * c.filters * c.g.patch_size();
  bool good = true;
  for (const Pass& pass : passes(device, c, o.batch, o.slices, b)) {
    std::vector<float> first;
    for (const auto& config : o.configs) {
      ocl::GemmLaunch how;
      if (config) how.config = &*config;
      const std::string name = config ? config->name() : "auto";
      const Timed t = time_pass(device, pass, how, o);
      if (!t.error.empty()) {
        std::printf("| %s | %s | %s | FAILED: %s | |\n", c.text.c_str(), pass.name.c_str(), name.c_str(), t.error.c_str());
        good = false;
        continue;
      }
      const bool same = first.empty() || std::memcmp(first.data(), t.out.data(), t.out.size() * 4) == 0;
      if (first.empty()) first = t.out;
      good &= same;
      std::printf("| %s | %s | %s | %.4f [%.4f, %.4f] | %.0f%s |\n", c.text.c_str(), pass.name.c_str(), name.c_str(),
                  t.ms.median, t.ms.low, t.ms.high, flops / (t.ms.median * 1e-3) * 1e-9,
                  same ? "" : " (OTHER BITS than the first)");
    }
  }
  if (c.g.stride != 1)
    std::printf("| %s | input gradient | - | not timed: stride %lld (col2im) | |\n", c.text.c_str(),
                static_cast<long long>(c.g.stride));
  std::fflush(stdout);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  auto device = open_opencl_device(o.device);
  check(ocl::reserve_gemm_scratch(*device), "the GEMM scratch");
  print_device_line(*device);
  std::printf("tuning:  %s\n", ocl::gemm_tuning(*device).source.c_str());
  std::printf("batch %lld; ms a call: median [min, max] of %d rounds of %d calls after 2 warm-ups (host wall, to finish)\n\n",
              static_cast<long long>(o.batch), o.reps, o.launches);
  std::printf("| conv | pass | configuration | ms | GFLOP/s |\n|---|---|---|---:|---:|\n");
  std::mt19937 rng(42);
  bool good = true;
  for (const ConvSpec& c : o.convs) good &= bench_layer(*device, c, o, rng);
  if (!good) fail("a configuration failed or gave other bits than the first (see the table)");
  return 0;
}
