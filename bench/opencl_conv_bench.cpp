// The device's implicit-GEMM convolutions (ocl::f32_conv_gemm, its weight gradient) per layer,
// pass and GEMM configuration: where issue 33's convolution time goes and which tile suits which
// layer, beside what the tuning picks (`auto`). Passes: forward y = conv(x, w); input gradient
// dx = conv(dy, flipped w) at stride 1 (as cl_conv.cpp's implicit backward); weight gradient
// dw = patches(x)^T dy. Each timing: LAUNCHES back-to-back calls to the queue's finish, by host
// wall time, divided by LAUNCHES; the median (and spread) of --reps after 2 warm-ups. GFLOP/s =
// 2 * rows * filters * patch size / s. Every configuration's output is compared with the
// first's bit for bit (gemm.cl's contract: the configuration changes the speed, never the bits):
// exit 1 on a difference.
//
// usage: opencl_conv_bench [--device cl:P:D] [--batch 256] [--reps 7] [--launches 5]
//          [--convs 28x28x32:32,14x14x64:64/s2,...]  (HxWxC:filters, 3x3 pad 1, /sS a stride)
//          [--configs auto,candidates,128x32x16/16x8/v4/p,...]  (candidates: gemm_config.h's list)
//          [--slices 0,100,200]  (the weight gradient's split over K; 0: gemm_k_slices decides)
// Built by bench/opencl_conv_bench.sh (against the build's static libraries).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/device_choice.h"
#include "opencl/gemm.h"
#include "opencl/gemm_tuning.h"

using namespace rg;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "opencl_conv_bench: %s\n", what.c_str());
  std::exit(1);
}
template <class T>
T get(Result<T> r, const std::string& doing) {
  if (!r.ok()) fail(doing + ": " + r.status().message());
  return r.take();
}
void check(const Status& s, const std::string& doing) {
  if (!s.ok()) fail(doing + ": " + s.message());
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

struct ConvSpec {
  std::string text;
  ConvGeometry g;
  int64_t filters = 0;
};
ConvSpec parse_conv(const std::string& text) {
  long long h = 0, w = 0, c = 0, f = 0, s = 1;
  int used = 0;
  const int got = std::sscanf(text.c_str(), "%lldx%lldx%lld:%lld%n/s%lld", &h, &w, &c, &f, &used, &s);
  if (got < 4 || f <= 0) fail("--convs: '" + text + "' is not HxWxC:F or HxWxC:F/sS");
  return {text, get(conv_geometry(h, w, c, 3, s, 1), "--convs " + text), f};
}

// Median and spread (min, max) of the samples.
struct Spread {
  double median, low, high;
};
Spread spread(std::vector<double> s) {
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return {n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2, s.front(), s.back()};
}

struct Buffers {
  ocl::Buffer x, w, y, dy, dx, dw;
};
Buffers make_buffers(ocl::Device& device, const ConvSpec& c, int64_t batch, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto random = [&](int64_t n, const char* what) {
    std::vector<float> v(n);
    for (float& e : v) e = uniform(rng);
    return get(ocl::upload(device, v, what), std::string("uploading ") + what);
  };
  const int64_t in = batch * c.g.height * c.g.width * c.g.channels, out = batch * c.g.patches() * c.filters;
  const int64_t weights = c.g.patch_size() * c.filters;
  return {random(in, "x"), random(weights, "w"), random(out, "y"), random(out, "dy"), random(in, "dx"),
          random(weights, "dw")};
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_text = "cl:0:0";
  std::vector<std::string> conv_list = {"28x28x32:32", "14x14x64:64"}, config_list = {"auto", "candidates"},
                           slice_list = {"0"};
  int64_t batch = 256;
  int reps = 7, launches = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) fail(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--device") device_text = value();
    else if (arg == "--batch") batch = std::atoll(value().c_str());
    else if (arg == "--reps") reps = std::atoi(value().c_str());
    else if (arg == "--launches") launches = std::atoi(value().c_str());
    else if (arg == "--convs") conv_list = split(value());
    else if (arg == "--configs") config_list = split(value());
    else if (arg == "--slices") slice_list = split(value());
    else fail("unknown argument " + arg + " (see the header of bench/opencl_conv_bench.cpp)");
  }
  if (reps < 1 || launches < 1 || batch < 1) fail("--reps, --launches and --batch must be >= 1");
  std::vector<std::optional<ocl::GemmConfig>> configs;  // nullopt: the tuning's choice
  for (const auto& t : config_list) {
    if (t == "auto") configs.push_back(std::nullopt);
    else if (t == "candidates") configs.insert(configs.end(), ocl::gemm_candidates().begin(), ocl::gemm_candidates().end());
    else configs.push_back(get(ocl::parse_gemm_config(t), "--configs"));
  }
  const ocl::DeviceChoice choice = get(ocl::parse_device_choice(device_text), "--device " + device_text);
  if (!choice.opencl) fail("--device must be an OpenCL device cl:P:D");
  auto device = get(ocl::Device::open(choice), "opening " + device_text);
  check(ocl::reserve_gemm_scratch(*device), "the GEMM scratch");
  std::printf("device:  %s, driver %s\n", device->label().c_str(), device->info().driver_version.c_str());
  std::printf("tuning:  %s\n", ocl::gemm_tuning(*device).source.c_str());
  std::printf("batch %lld; ms a call: median [min, max] of %d rounds of %d calls after 2 warm-ups (host wall, to finish)\n\n",
              static_cast<long long>(batch), reps, launches);
  std::printf("| conv | pass | configuration | ms | GFLOP/s |\n|---|---|---|---:|---:|\n");
  std::vector<int> slices;
  for (const auto& t : slice_list) slices.push_back(std::atoi(t.c_str()));
  std::mt19937 rng(42);
  bool differs = false;
  for (const std::string& text : conv_list) {
    const ConvSpec c = parse_conv(text);
    Buffers b = make_buffers(*device, c, batch, rng);
    const double flops = 2.0 * batch * c.g.patches() * c.filters * c.g.patch_size();
    std::optional<ConvGeometry> flipped;  // the input gradient's geometry (stride 1 only)
    if (c.g.stride == 1) flipped = get(conv_geometry(c.g.out_h, c.g.out_w, c.filters, 3, 1, 1), "flipped geometry");
    struct Pass {
      std::string name;
      const ocl::Buffer* out;
      std::function<Result<ocl::Event>(const ocl::GemmLaunch&)> run;
    };
    std::vector<Pass> passes = {
        {"forward", &b.y, [&](const ocl::GemmLaunch& l) { return f32_conv_gemm(*device, c.g, batch, b.x.f32(), b.w.f32(), c.filters, b.y.f32(), l); }},
    };
    for (int split : slices) {
      passes.push_back({"weight gradient" + (split > 0 ? " in " + std::to_string(split) + " slices" : std::string()),
                        &b.dw, [&, split](ocl::GemmLaunch l) {
                          l.k_slices = split;
                          return f32_conv_gemm_weight_grad(*device, c.g, batch, b.x.f32(), b.dy.f32(), c.filters, 0.0f,
                                                           b.dw.f32(), l);
                        }});
    }
    if (flipped) {
      passes.push_back({"input gradient", &b.dx, [&](const ocl::GemmLaunch& l) {
                          return f32_conv_gemm(*device, *flipped, batch, b.dy.f32(), b.w.f32(), c.g.channels, b.dx.f32(), l);
                        }});
    }
    for (const Pass& pass : passes) {
      std::vector<float> first;
      for (const auto& config : configs) {
        ocl::GemmLaunch how;
        if (config) how.config = &*config;
        const std::string name = config ? config->name() : "auto";
        std::vector<double> ms;
        std::string error;
        for (int r = 0; r < 2 + reps && error.empty(); ++r) {
          check(device->finish(), "finish");
          const auto t0 = std::chrono::steady_clock::now();
          for (int l = 0; l < launches && error.empty(); ++l)
            if (auto e = pass.run(how); !e.ok()) error = e.status().message();
          check(device->finish(), "finish");
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / launches;
          if (r >= 2) ms.push_back(1e3 * s);
        }
        if (!error.empty()) {
          std::printf("| %s | %s | %s | failed: %s | |\n", text.c_str(), pass.name.c_str(), name.c_str(), error.c_str());
          continue;
        }
        const std::vector<float> out = get(ocl::download<float>(*pass.out, pass.out->bytes() / 4), "reading back");
        const bool same = first.empty() || std::memcmp(first.data(), out.data(), out.size() * 4) == 0;
        if (first.empty()) first = out;
        differs |= !same;
        const Spread t = spread(ms);
        std::printf("| %s | %s | %s | %.4f [%.4f, %.4f] | %.0f%s |\n", text.c_str(), pass.name.c_str(), name.c_str(), t.median,
                    t.low, t.high, flops / (t.median * 1e-3) * 1e-9, same ? "" : " (OTHER BITS than the first)");
      }
    }
    std::fflush(stdout);
  }
  if (differs) fail("a configuration gave other bits than the first (see the table)");
  return 0;
}
