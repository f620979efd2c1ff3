// The start-up search for the fastest kernels/gemm.cl configuration on a device: every
// candidate timed on a square product (A B, no transposes), the rates cached on disk per device,
// driver and kernel source, and read back by later runs (issue 9); with them each product's own
// timed choice (gemm.cpp), kept in the same file, as is each convolution's choice of Winograd
// (model/cl_conv.cpp).
//
// RETROGRAD_CL_GEMM_TUNE: unset or "auto" tunes GPUs and accelerators (a CPU device such as PoCL
// keeps the untuned choice: its kernels' speed is no claim); "1" tunes any device; "0" never.
// The cache: cache_folder()/opencl-gemm-<device and driver tag>.txt (base/files.h).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "opencl/device.h"
#include "opencl/gemm_config.h"

namespace rg::ocl {

struct GemmTuning {
  int size = 0;                    // the square size timed (0: nothing measured)
  // Every candidate's rate on the square A B, best first: the ranking products of any transposes
  // start from. The four orders ranked the candidates alike on the H200 (the first five the same
  // five; bench/RESULTS.md 2026-11-30), and each product's first call times the top three of the
  // ranking on itself, so timing the other three orders (51 more builds, a minute) bought nothing.
  std::vector<GemmRate> rates;
  // Configurations a pair of transposes (trans_a * 2 + trans_b) could not build or run on this
  // device: left out of that pair's ranking for the rest of the run (not cached on disk).
  std::vector<GemmConfig> refused[4];
  // The fastest configuration of each product timed on itself (gemm.cpp's product_key): the
  // square search's rates misjudge products of few tiles (how many items keep a unit busy).
  std::map<std::string, GemmConfig> products;
  // Each convolution's timed algorithm by pass, shape and batch (model/cl_conv.cpp's
  // winograd_choice_key): true where Winograd ran faster than the GEMM. Winograd rounds otherwise,
  // so the choice, once timed, is kept for every later run on this device and driver: their bits
  // do not depend on a measurement again.
  std::map<std::string, bool> conv_winograd;
  std::string source;              // how it was found, for the log: "tuned now ...", "read from ..."
};

struct GemmTuneOptions {
  std::vector<GemmConfig> candidates = gemm_candidates();
  int min_size = 128, max_size = 2048;  // the size doubles from min while one product takes < target
  double target_seconds = 2e-3;
  int reps = 3;  // timed runs per candidate after one warm-up; the median counts
};

// Median device seconds of `reps` runs of `launch` on `device` after one warm-up (their events
// kept: Device::KeepEvents): how the search times a candidate and a product's first call times
// its trials (gemm.cpp).
Result<double> median_launch_seconds(Device& device, const std::function<Result<Event>()>& launch, int reps);

// Times every candidate on this device now, their programs built first (ProgramCache::build_all).
// Buffers of 3 size^2 floats are counted against the device's budget (the size halves while they
// do not fit). Candidates that fail to build or run are left out; an error when none runs.
Result<GemmTuning> tune_gemm(Device& device, const GemmTuneOptions& options = {});

// The cache file of this device and driver, and its text form. Reading checks the format, the
// device, the driver and the kernel source's hash: a file made for another one is an error
// saying so, as is any malformed line (named by file and line).
std::string gemm_tuning_path(const Device& device);
std::string gemm_tuning_text(const Device& device, const GemmTuning& tuning);
Result<GemmTuning> parse_gemm_tuning(const Device& device, const std::string& text, const std::string& file);

// Keeps `config` as the product `key`'s choice, in the tuning and in its cache file (rewritten
// whole; a file that cannot be written costs nothing but the next run's timing again).
void remember_product_choice(Device& device, const std::string& key, const GemmConfig& config);

// Keeps whether Winograd ran the convolution `key` faster, likewise.
void remember_conv_choice(Device& device, const std::string& key, bool winograd);

// The tuning f32_gemm uses: kept with the device after the first call; else read from the cache
// file; else searched now (RETROGRAD_CL_GEMM_TUNE) and written there; else every candidate
// with no rate (choose_gemm_config's untuned order). `source` says which, and why a cache file
// could not be read or written (that costs nothing else).
GemmTuning& gemm_tuning(Device& device);

}  // namespace rg::ocl
