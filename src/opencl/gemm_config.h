// The shapes kernels/gemm.cl is built in (tile, work-group, vector width, prefetch), the
// candidates the tuner times, and the choice of one for a GEMM's shape from measured rates.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "ops/gemm.h"

namespace rg::ocl {

class Device;

struct GemmConfig {
  int tile_m = 64, tile_n = 64, tile_k = 16;  // the C tile of a work-group, the depth of a step
  int threads_m = 16, threads_n = 16;         // the work-group
  int vec = 1;                                // local reads and C columns in groups of 1, 2 or 4
  bool prefetch = false;                      // next step's global words read before this step's products
                                              // (and two panels in local memory: one barrier a step)

  int threads() const { return threads_m * threads_n; }
  std::string name() const;  // "128x128x16/16x16/v4/p" (no "/p" without prefetch)
  // kernels/gemm.cl's defines for these transposes; `fma` picks USE_FMA, `vload` VLOAD (the
  // panels read a float4 at a time: only where vector_loads_fit says the operands allow it).
  std::string build_options(bool trans_a, bool trans_b, bool fma, bool vload) const;
  // True when each item's share of both panels is whole float4s (gemm.cl's VLOAD needs it).
  bool quads_fit() const;
  bool operator==(const GemmConfig& o) const { return name() == o.name(); }
};

// Parses GemmConfig::name()'s form; errors name the text and the rule.
Result<GemmConfig> parse_gemm_config(const std::string& text);

// What the search times, square-ish tiles largest first, then narrow ones; every one is valid for gemm.cl.
const std::vector<GemmConfig>& gemm_candidates();

// A configuration with its measured rate (GFLOP/s) on the tuning size; rate 0: not measured.
struct GemmRate {
  GemmConfig config;
  double gflops = 0;
};

// The configuration for `shape` among `rates`: the measured rate scaled by the share of the
// device's compute units the tiles keep busy and by the share of each tile that is real work
// (small products on big tiles waste both). Unmeasured rates count as sqrt(tile area), so an
// untuned device prefers big tiles for big products and small ones for small products.
// `tuned_size` > 0: the rates were measured on that square product with `tuned_units` compute
// units, and are first divided by the same two shares there (the search's own product leaves
// some units idle under the biggest tiles: 128 tiles of 128x256 at 2048 on 132 units).
GemmConfig choose_gemm_config(const std::vector<GemmRate>& rates, const GemmShape& shape, int compute_units,
                              int tuned_size = 0, int tuned_units = 0);
// Every configuration of `rates` in choose_gemm_config's order, its choice first (a tie keeps
// the rates' order): the candidates a product's own timing tries (gemm.cpp).
std::vector<GemmConfig> rank_gemm_configs(const std::vector<GemmRate>& rates, const GemmShape& shape,
                                          int compute_units, int tuned_size = 0, int tuned_units = 0);

// True when the device has a hardware single-precision fused multiply-add (CL_FP_FMA).
bool device_has_fma(const Device& device);

}  // namespace rg::ocl
