// retrograd's OpenCL SGEMM (ocl::f32_gemm, each configuration) vs CLBlast's CLBlastSgemm on the same
// device, queue and buffers: square row-major C = A * B, no transposes, alpha 1, beta 0.
// Times are the OpenCL events' profiling times (device time of the launch); the host's
// enqueue-to-finish wall time is kept too, since CLBlast's event covers only its last kernel.
// CLBlast is dlopen'ed at run time ($RETROGRAD_CLBLAST_LIBRARY, default libclblast.so.1): no
// build-time dependency, and without it the tool still times ours and says why.
//
// usage: opencl_gemm_bench [--device cl:P:D] [--sizes 1024,2048,4096,8192] [--reps 10]
//                          [--configs auto,128x128x16/16x16/v4/p,...] [--max-bytes B] [--json FILE]
// `auto` is the device's tuning (searched first if the cache has none: opencl/gemm_tuning.h);
// its source and every candidate's rate are printed before the table.
// Output: one row per size (TFLOP/s = 2n^3 / s, median (best) of the reps after 2 warm-ups);
// exit 1 when a result differs from CLBlast's by max|diff| / max|C| >= 1e-4, or on errors; 2 on a bad command line.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
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

#include "bench_cli.h"
#include "bench_device.h"

using namespace rg;
using namespace rg::bench;

namespace {

// From CLBlast 1.5.3's clblast_c.h (only what SGEMM needs).
typedef enum { CLBlastLayoutRowMajor = 101 } CLBlastLayout;
typedef enum { CLBlastTransposeNo = 111, CLBlastTransposeYes = 112 } CLBlastTranspose;
typedef int CLBlastStatusCode;  // an int enum; 0 is CLBlastSuccess, negatives are OpenCL's codes
typedef CLBlastStatusCode (*SgemmFn)(CLBlastLayout, CLBlastTranspose, CLBlastTranspose, size_t, size_t, size_t, float,
                                     cl_mem, size_t, size_t, cl_mem, size_t, size_t, float, cl_mem, size_t, size_t,
                                     cl_command_queue*, cl_event*);

// One side's figures at one size; `error` set when it could not run.
struct Side {
  explicit Side(std::string n) : name(std::move(n)) {}
  std::string name, error;
  Spread event, wall;  // seconds; low: the best
  double max_diff = -1;  // vs the reference, -1: not compared
};

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_text = "cl:0:0", json_path;
  std::vector<std::string> size_list = {"1024", "2048", "4096", "8192"}, config_list = {"auto"};
  int reps = 10;
  int64_t max_bytes = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] { return option_value(argc, argv, &i); };
    if (arg == "--device") device_text = value();
    else if (arg == "--sizes") size_list = split(value());
    else if (arg == "--configs") config_list = split(value());
    else if (arg == "--reps") reps = static_cast<int>(integer(value(), "--reps", 1, 1000000));
    else if (arg == "--max-bytes") max_bytes = integer(value(), "--max-bytes", 1, 1LL << 50);
    else if (arg == "--json") json_path = value();
    else usage_error("unknown argument " + arg + " (see the header of bench/opencl_gemm_bench.cpp)");
  }
  // The JSON file is opened before minutes of timing, so a path that cannot be written fails first.
  std::ofstream json_out;
  if (!json_path.empty()) {
    json_out.open(json_path);
    if (!json_out) usage_error("--json " + json_path + ": cannot open it for writing");
  }
  // Configurations to time; nullopt: the tuning's choice per size.
  std::vector<std::optional<ocl::GemmConfig>> tiles;
  for (const auto& t : config_list) {
    if (t == "auto") tiles.push_back(std::nullopt);
    else tiles.push_back(get_arg(ocl::parse_gemm_config(t), "--configs"));
  }
  auto tile_name = [](const std::optional<ocl::GemmConfig>& c) { return c ? c->name() : std::string("auto"); };

  auto device = open_opencl_device(device_text);
  const ocl::ClApi& api = device->api();
  const ocl::DeviceInfo& info = device->info();
  if (max_bytes <= 0) max_bytes = info.global_mem_bytes / 4 * 3;  // leave room for CLBlast's temporaries

  // CLBlast, if it loads.
  const char* env_lib = std::getenv("RETROGRAD_CLBLAST_LIBRARY");
  const std::string clblast_lib = env_lib && *env_lib ? env_lib : "libclblast.so.1";
  std::string clblast_missing;
  SgemmFn sgemm = nullptr;
  if (void* handle = dlopen(clblast_lib.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    sgemm = reinterpret_cast<SgemmFn>(dlsym(handle, "CLBlastSgemm"));
    if (!sgemm) clblast_missing = clblast_lib + " has no CLBlastSgemm";
  } else {
    clblast_missing = dlerror();
  }

  std::printf("device:  %s, %s, driver %s\n", device->label().c_str(), info.platform_name.c_str(),
              info.driver_version.c_str());
  std::printf("clblast: %s\n", sgemm ? clblast_lib.c_str() : ("NOT LOADED: " + clblast_missing).c_str());
  std::printf("reps:    %d after 2 warm-ups; TFLOP/s = 2n^3 / device time of the launch, median (best)\n", reps);
  const ocl::GemmTuning& tuning = ocl::gemm_tuning(*device);
  std::printf("tuning:  %s\n", tuning.source.c_str());
  std::printf("  A B:");
  for (const auto& r : tuning.rates) std::printf(" %s %.0f;", r.config.name().c_str(), r.gflops);
  std::printf("\n");
  std::printf("\n");

  // The table: per tile, CLBlast, then the ratio of our best tile (by median) to CLBlast.
  std::string hdr = "| n |";
  std::string rule = "|---:|";
  for (const auto& t : tiles) hdr += " ours " + tile_name(t) + " |", rule += "---:|";
  hdr += " CLBlast (last kernel's event) | ours best / CLBlast, by wall time | wall: ours best, CLBlast | max rel diff |";
  rule += "---:|---:|---:|---:|";
  std::printf("%s\n%s\n", hdr.c_str(), rule.c_str());

  std::ostringstream json;
  json << "{\n  \"device\": " << json_str(info.name) << ",\n  \"label\": " << json_str(device->label())
       << ",\n  \"platform\": " << json_str(info.platform_name) << ",\n  \"driver\": " << json_str(info.driver_version)
       << ",\n  \"device_version\": " << json_str(info.version) << ",\n  \"clblast\": "
       << json_str(sgemm ? clblast_lib : "") << ",\n  \"clblast_missing\": " << json_str(clblast_missing)
       << ",\n  \"reps\": " << reps << ",\n  \"sizes\": [";
  bool mismatch = false, first_size = true;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  for (const auto& size_text : size_list) {
    const int64_t n = integer(size_text, "--sizes", 1, 1 << 20);
    const int64_t bytes = n * n * 4;
    const double flops = 2.0 * n * n * n;
    if (bytes > device->max_buffer_bytes() || 3 * bytes > max_bytes) {
      std::printf("| %lld | skipped: a matrix is %lld bytes (max buffer %lld), three %lld (limit %lld) |\n",
                  (long long)n, (long long)bytes, (long long)device->max_buffer_bytes(), (long long)(3 * bytes),
                  (long long)max_bytes);
      continue;
    }
    std::vector<float> host_a(n * n), host_b(n * n);
    for (auto& x : host_a) x = uniform(rng);
    for (auto& x : host_b) x = uniform(rng);
    ocl::Buffer a = get(ocl::upload(*device, host_a, "A"), "uploading A");
    ocl::Buffer b = get(ocl::upload(*device, host_b, "B"), "uploading B");
    ocl::Buffer c = get(ocl::Buffer::allocate(*device, bytes, "C"), "allocating C");
    const GemmShape shape{Trans::no, Trans::no, n, n, n, n, n, n};

    // Runs `launch` (which returns the device seconds of one call) 2 + reps times; the wall
    // time is enqueue to clFinish, so it covers every kernel the call enqueued.
    auto measure = [&](Side& side, const std::function<Result<double>()>& launch) {
      std::vector<double> event_s, wall_s;
      for (int r = 0; r < 2 + reps && side.error.empty(); ++r) {
        check(device->finish(), "finish");
        const auto t0 = std::chrono::steady_clock::now();
        Result<double> s = launch();
        if (!s.ok()) { side.error = s.status().message(); break; }
        check(device->finish(), "finish after " + side.name);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (r >= 2) event_s.push_back(s.value()), wall_s.push_back(wall);
      }
      if (side.error.empty()) side.event = spread(event_s), side.wall = spread(wall_s);
    };

    // CLBlast first: its C is the reference the tiles are compared with.
    Side blast{"CLBlast"};
    std::vector<float> reference;
    if (!sgemm) {
      blast.error = "not loaded";
    } else {
      measure(blast, [&]() -> Result<double> {
        cl_command_queue queue = device->queue();
        cl_event event = nullptr;
        const CLBlastStatusCode code =
            sgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n, 1.0f, a.mem(), 0, n, b.mem(),
                  0, n, 0.0f, c.mem(), 0, n, &queue, &event);
        if (code != 0) return Status::error("CLBlastSgemm returned status " + std::to_string(code));
        ocl::Event ev(&api, event);  // releases the event
        return ev.seconds();
      });
      if (blast.error.empty()) reference = get(ocl::download<float>(c, n * n), "reading CLBlast's C");
    }
    float ref_max = 0;
    for (float x : reference) ref_max = std::max(ref_max, std::fabs(x));

    std::vector<Side> ours;
    for (auto tile : tiles) {
      Side side{tile_name(tile)};
      measure(side, [&]() -> Result<double> {
        const ocl::Device::KeepEvents timed(*device);
        RG_ASSIGN(ocl::Event ev, ocl::f32_gemm(*device, shape, 1.0f, a.f32(), b.f32(), 0.0f, c.f32(), ocl::GemmLaunch{tile ? &*tile : nullptr, 0, {}}));
        return ev.seconds();
      });
      if (side.error.empty() && !reference.empty()) {
        const auto got = get(ocl::download<float>(c, n * n), "reading our C");
        double diff = 0;
        for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, (double)std::fabs(got[i] - reference[i]));
        side.max_diff = diff / std::max(ref_max, 1e-30f);
        if (!(side.max_diff < 1e-4)) mismatch = true;  // NaN fails too
      }
      if (!side.error.empty()) std::fprintf(stderr, "n %lld, tile %s: %s\n", (long long)n, side.name.c_str(), side.error.c_str());
      ours.push_back(side);
    }

    // The row.
    auto tflops = [&](const Side& s) -> std::string {
      if (!s.error.empty()) return "-";
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3f (%.3f)", flops / s.event.median * 1e-12, flops / s.event.low * 1e-12);
      return buf;
    };
    const Side* best = nullptr;
    double worst_diff = -1;
    std::string row = "| " + std::to_string(n) + " |";
    for (const auto& s : ours) {
      row += " " + tflops(s) + " |";
      if (s.error.empty() && (!best || s.event.median < best->event.median)) best = &s;
      worst_diff = std::max(worst_diff, s.max_diff);
    }
    char buf[160];
    row += " " + tflops(blast) + " |";
    auto wall = [&](const Side* s) {
      if (!s || !s->error.empty()) return std::string("-");
      std::snprintf(buf, sizeof buf, "%.3f", flops / s->wall.median * 1e-12);
      return std::string(buf);
    };
    if (best && blast.error.empty()) {
      // Wall against wall: CLBlast's event covers only its last kernel (it may pad or transpose first).
      std::snprintf(buf, sizeof buf, " %.2fx (%s) |", blast.wall.median / best->wall.median, best->name.c_str());
      row += buf;
    } else {
      row += " - |";
    }
    row += " " + wall(best) + ", " + wall(&blast) + " |";
    if (worst_diff >= 0) std::snprintf(buf, sizeof buf, " %.2e%s |", worst_diff, worst_diff < 1e-4 ? "" : " MISMATCH");
    else std::snprintf(buf, sizeof buf, " not checked |");
    std::printf("%s%s\n", row.c_str(), buf);
    std::fflush(stdout);

    // JSON: every figure, in seconds and TFLOP/s.
    auto side_json = [&](const Side& s) {
      std::ostringstream o;
      o << "{\"name\": " << json_str(s.name);
      if (!s.error.empty()) return o.str() + ", \"error\": " + json_str(s.error) + "}";
      o << ", \"event_s_median\": " << s.event.median << ", \"event_s_best\": " << s.event.low
        << ", \"wall_s_median\": " << s.wall.median << ", \"wall_s_best\": " << s.wall.low
        << ", \"tflops_median\": " << flops / s.event.median * 1e-12 << ", \"tflops_best\": " << flops / s.event.low * 1e-12
        << ", \"wall_tflops_median\": " << flops / s.wall.median * 1e-12;
      if (s.max_diff >= 0) o << ", \"max_rel_diff_vs_clblast\": " << s.max_diff;
      return o.str() + "}";
    };
    json << (first_size ? "\n" : ",\n") << "    {\"n\": " << n << ", \"ours\": [";
    for (size_t i = 0; i < ours.size(); ++i) json << (i ? ", " : "") << side_json(ours[i]);
    json << "],\n     \"clblast\": " << side_json(blast);
    if (best && blast.error.empty()) json << ", \"ratio_ours_best_vs_clblast_wall\": " << blast.wall.median / best->wall.median
                                          << ", \"ours_best_tile\": " << json_str(best->name);
    json << "}";
    first_size = false;
  }
  json << "\n  ],\n  \"mismatch\": " << (mismatch ? "true" : "false") << "\n}\n";

  if (json_out.is_open()) {
    json_out << json.str() << std::flush;  // a full disk shows at the flush
    if (!json_out) fail("--json " + json_path + ": the write failed");
  }
  if (!sgemm) std::printf("\nCLBlast was not measured: %s\n", clblast_missing.c_str());
  if (mismatch) {
    std::printf("\nFAILED: a result differs from CLBlast's by max|diff| / max|C| >= 1e-4\n");
    return 1;
  }
  return 0;
}
