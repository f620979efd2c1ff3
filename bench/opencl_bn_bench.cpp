// The device's batch norm in training (ocl::f32_batch_norm_forward and _backward, a relu fused
// as resnet20's and dcgan's are) per shape: where issue 33's batch-norm time goes (28% of
// resnet20's kernels at batch 256 on the H200) and what a change to kernels/batch_norm.cl buys.
// Each pass: LAUNCHES back-to-back calls to the queue's finish, by host wall time, divided by
// LAUNCHES; the median [min, max] of --reps after 2 warm-ups. GB/s: the least traffic the pass
// needs (forward: x read, y written; backward: x, dy and y read, dx written; 4 bytes each) over
// that time, to set beside the card's bandwidth. Then one call of each pass with the device's
// profiling on: each kernel's device time (us), the launches apart. Exit 2 on a bad command line.
//
// usage: opencl_bn_bench [--device cl:P:D] [--reps 7] [--launches 10]
//          [--shapes 200704x16,50176x32,12544x64]  (ROWSxCHANNELS: rows = n h w; the defaults are
//          resnet20's three stages at batch 256)
// Built by bench/opencl_bn_bench.sh (against the build's static libraries).
#include <cstdio>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "opencl/batch_norm.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/device_choice.h"
#include "opencl/loss.h"  // element_span

#include "bench_cli.h"
#include "bench_device.h"

using namespace rg;
using namespace rg::bench;

namespace {

struct Shape2 {
  std::string text;
  int64_t rows = 0, channels = 0;
};
Shape2 parse_shape(const std::string& text) {
  long long rows = 0, channels = 0;
  int used = 0;
  if (std::sscanf(text.c_str(), "%lldx%lld%n", &rows, &channels, &used) != 2 || static_cast<size_t>(used) != text.size() ||
      rows < 1 || channels < 1 || rows > (1LL << 28) || channels > (1LL << 16)) {
    usage_error("--shapes '" + text + "': the form is ROWSxCHANNELS (e.g. 200704x16), rows from 1 to 2^28, channels " +
                "from 1 to 65536");
  }
  return {text, rows, channels};
}

struct Options {
  std::string device = "cl:0:0";
  int reps = 7, launches = 10;
  std::vector<Shape2> shapes;
};

Options parse_options(int argc, char** argv) {
  Options o;
  std::vector<std::string> shapes = {"200704x16", "50176x32", "12544x64"};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return option_value(argc, argv, &i); };
    if (arg == "--device") o.device = value();
    else if (arg == "--reps") o.reps = static_cast<int>(integer(value(), "--reps", 1, 1000));
    else if (arg == "--launches") o.launches = static_cast<int>(integer(value(), "--launches", 1, 1000));
    else if (arg == "--shapes") shapes = split(value());
    else usage_error("unknown argument " + arg + " (see the header of bench/opencl_bn_bench.cpp)");
  }
  for (const auto& t : shapes) o.shapes.push_back(parse_shape(t));
  if (o.shapes.empty()) usage_error("--shapes needs an entry");
  return o;
}

struct Buffers {
  ocl::Buffer x, y, dy, dx, gamma, beta, running_mean, running_var, saved, dgamma, dbeta;
};
Buffers make_buffers(ocl::Device& device, const Shape2& s, std::mt19937& rng) {
  if (4.0 * s.rows * s.channels > static_cast<double>(device.max_buffer_bytes()))
    usage_error("--shapes " + s.text + ": a buffer larger than the device's largest");
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  auto random = [&](int64_t n, const char* what) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = uniform(rng);
    return get(ocl::upload(device, v, what), std::string("uploading ") + what);
  };
  const int64_t n = s.rows * s.channels, c = s.channels;
  auto saved = get(ocl::Buffer::allocate(device, 8 * ocl::batch_norm_saved_count(c, s.rows), "saved"), "saved");
  return {random(n, "x"),     random(n, "y"),    random(n, "dy"),           random(n, "dx"),
          random(c, "gamma"), random(c, "beta"), random(c, "running mean"), random(c, "running var"),
          std::move(saved),   random(c, "dgamma"), random(c, "dbeta")};
}

struct Pass {
  std::string name;
  double bytes;  // the least traffic
  std::function<Result<ocl::Event>()> run;
};
std::vector<Pass> passes(ocl::Device& device, const Shape2& s, const Buffers& b) {
  const ocl::FusedActivation relu{ocl::FusedActivation::relu, 0.0f};
  const double n = static_cast<double>(s.rows * s.channels);
  auto saved = [&b]() { return ocl::element_span(b.saved, 8); };
  return {{"forward", 8 * n,
           [&device, &s, &b, relu, saved]() {
             return ocl::f32_batch_norm_forward(device, s.rows, s.channels, true, 0.1, 1e-5, b.x.f32(), b.gamma.f32(),
                                                b.beta.f32(), b.running_mean.f32(), b.running_var.f32(), saved(),
                                                b.y.f32(), relu);
           }},
          {"backward", 16 * n, [&device, &s, &b, relu, saved]() {
             ocl::BatchNormBackwardFusion fused;
             fused.activation = relu;
             fused.activation_output = b.y.f32();
             return ocl::f32_batch_norm_backward(device, s.rows, s.channels, true, false, b.x.f32(), b.dy.f32(),
                                                 b.gamma.f32(), saved(), b.dgamma.f32(), b.dbeta.f32(), b.dx.f32(), fused);
           }}};
}

Spread time_pass(ocl::Device& device, const Pass& pass, const Options& o) {
  return time_launches(device, o.reps, o.launches, 1e3, [&] {
           check(pass.run().status(), pass.name);
           return true;
         }).wall;
}

// One profiled call: each kernel's device time, "name us" apart.
std::string kernel_times(ocl::Device& device, const Pass& pass) {
  const std::map<std::string, ocl::Device::KernelTime> before = device.kernel_times();
  device.set_profiling(true);
  check(pass.run().status(), pass.name);
  check(device.finish(), "finish");
  device.set_profiling(false);
  std::string out;
  for (const auto& [name, t] : device.kernel_times()) {
    const auto was = before.find(name);
    const double seconds = t.seconds - (was != before.end() ? was->second.seconds : 0.0);
    const int64_t launches = t.launches - (was != before.end() ? was->second.launches : 0);
    if (launches == 0) continue;
    char cell[160];
    std::snprintf(cell, sizeof cell, "%s%s %.1f%s", out.empty() ? "" : ", ", name.c_str(), 1e6 * seconds,
                  launches > 1 ? (" (" + std::to_string(launches) + " launches)").c_str() : "");
    out += cell;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  auto device = open_opencl_device(o.device);
  print_device_line(*device);
  std::printf("ms a call: median [min, max] of %d rounds of %d calls after 2 warm-ups (host wall, to finish); "
              "GB/s: the least traffic over the median; kernels: one profiled call's device us\n\n",
              o.reps, o.launches);
  std::printf("| rows x channels | pass | ms | GB/s | kernels (us) |\n|---|---|---:|---:|---|\n");
  std::mt19937 rng(42);
  for (const Shape2& s : o.shapes) {
    const Buffers b = make_buffers(*device, s, rng);
    for (const Pass& pass : passes(*device, s, b)) {
      const Spread ms = time_pass(*device, pass, o);
      std::printf("| %s | %s | %.4f [%.4f, %.4f] | %.0f | %s |\n", s.text.c_str(), pass.name.c_str(), ms.median, ms.low,
                  ms.high, pass.bytes / (ms.median * 1e-3) * 1e-9, kernel_times(*device, pass).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}
