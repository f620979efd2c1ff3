// The CPU's Winograd F(4x4, 3x3) convolution alone (ops/winograd_conv.h), per shape: the
// weight's transform, the forward (run) and the weight gradient, each timed on its own over the
// same images, so a change to the transforms, the tiles or their order is measured without a
// training step's other layers (issue 32: cnn's 3x3 layers' executed share of the peak). Medians
// [min, max] of --reps calls after 2 warm-ups, by wall time; GFLOP/s effective (the direct
// convolution's multiply-adds, 2 flops each) and executed (WinogradConv::executed_flops_per_sample:
// the products and the tiles' transforms). The level is the process's (RETROGRAD_ISA caps it);
// --threads 1 runs without a pool. Exit 2 on a bad command line.
//
// usage: winograd_bench [--shapes 32x32x28,32x64x14,64x64x14] [--samples 64] [--reps 21] [--threads 1]
//          (CxFxS: C input channels, F filters, an S x S image, pad 1: cnn's conv2, conv3 and conv4)
// Built by bench/winograd_bench.sh (against the build's static libraries).
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "cpu/isa.h"
#include "ops/winograd_conv.h"

#include "bench_cli.h"

using namespace rg;
using namespace rg::bench;

namespace {

struct ConvShape {
  std::string text;
  int64_t c = 0, f = 0, side = 0;
};
ConvShape parse_shape(const std::string& text) {
  long long c = 0, f = 0, side = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lldx%lldx%lld%n", &c, &f, &side, &used) != 3 ||
      static_cast<size_t>(used) != text.size() || c < 1 || f < 1 || side < 1 || c > 4096 || f > 4096 || side > 1024) {
    usage_error("--shapes '" + text + "': the form is CxFxS (e.g. 32x32x28), C and F from 1 to 4096, S from 1 to 1024");
  }
  return {text, c, f, side};
}

struct Options {
  int reps = 21, threads = 1;
  int64_t samples = 64;
  std::vector<ConvShape> shapes;
};

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> shapes = {"32x32x28", "32x64x14", "64x64x14"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return option_value(argc, argv, &i); };
    if (arg == "--reps") o.reps = static_cast<int>(integer(value(), "--reps", 1, 1000));
    else if (arg == "--samples") o.samples = integer(value(), "--samples", 1, 4096);
    else if (arg == "--threads") o.threads = static_cast<int>(integer(value(), "--threads", 1, 256));
    else if (arg == "--shapes") shapes = split(value());
    else usage_error("unknown argument " + arg + " (see the header of bench/winograd_bench.cpp)");
  }
  for (const auto& t : shapes) o.shapes.push_back(parse_shape(t));
  if (o.shapes.empty()) usage_error("--shapes needs an entry");
  return o;
}

// Seconds of each of `reps` calls of `call` after 2 warm-ups.
std::vector<double> time_calls(int reps, const std::function<void()>& call) {
  std::vector<double> seconds;
  for (int r = -2; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 0) seconds.push_back(s);
  }
  return seconds;
}

void print_row(const char* pass, const Spread& s, double direct_flops, double executed_flops) {
  std::printf("  %-18s %8.3f [%.3f, %.3f] ms", pass, s.median * 1e3, s.low * 1e3, s.high * 1e3);
  if (direct_flops > 0)
    std::printf("  %7.1f GFLOP/s effective, %6.1f executed", direct_flops / s.median * 1e-9,
                executed_flops / s.median * 1e-9);
  std::printf("\n");
}

void bench_shape(const Options& o, const ConvShape& k, ThreadPool* pool) {
  const ConvGeometry g = get_arg(conv_geometry(k.side, k.side, k.c, 3, 1, 1), "--shapes " + k.text);
  const WinogradConv conv(g, k.f);
  const int64_t scratch_floats = std::max(conv.scratch_elements(o.samples), conv.weight_grad_scratch_elements(o.samples));
  const double floats = double(o.samples) * (double(g.height * g.width * k.c) + 2.0 * double(g.patches() * k.f)) +
                        double(conv.weight_elements()) + 18.0 * double(k.c * k.f) +
                        double(scratch_floats);
  if (floats * 4 > 4e9)
    usage_error("--shapes " + k.text + " with --samples " + std::to_string(o.samples) + ": over 4 GB of buffers");
  std::vector<float> images(static_cast<size_t>(o.samples * g.height * g.width * k.c));
  std::vector<float> w(static_cast<size_t>(9 * k.c * k.f));
  std::vector<float> u(static_cast<size_t>(conv.weight_elements())), dw(w.size());
  std::vector<float> y(static_cast<size_t>(o.samples * g.patches() * k.f)), dy(y.size());
  std::vector<float> scratch(static_cast<size_t>(scratch_floats));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(i % 13) * 0.1f - 0.6f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(i % 7) * 0.01f;
  for (size_t i = 0; i < dy.size(); ++i) dy[i] = float(i % 11) * 0.01f - 0.05f;
  const double direct = 2.0 * 9 * double(k.c) * double(k.f) * double(g.patches()) * double(o.samples);
  std::printf("%s (%lld samples, pad 1), %s, %d thread(s):\n", k.text.c_str(), static_cast<long long>(o.samples),
              isa_name(active_isa()), o.threads);
  print_row("weight transform", spread(time_calls(o.reps, [&] { conv.transform_weight(pool, w.data(), u.data()); })), 0,
            0);
  print_row("forward", spread(time_calls(o.reps, [&] {
              conv.run(pool, o.samples, images.data(), u.data(), y.data(), scratch.data());
            })),
            direct, double(conv.executed_flops_per_sample(false) * o.samples));
  print_row("weight gradient", spread(time_calls(o.reps, [&] {
              conv.weight_grad(pool, o.samples, images.data(), dy.data(), 0.0f, dw.data(), scratch.data());
            })),
            direct, double(conv.executed_flops_per_sample(true) * o.samples));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::unique_ptr<ThreadPool> pool(o.threads > 1 ? new ThreadPool(o.threads) : nullptr);
  for (const ConvShape& k : o.shapes) bench_shape(o, k, pool.get());
  return 0;
}
