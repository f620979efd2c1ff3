// GEMM configurations: names, build options, the candidate list and the choice by shape.
#include "opencl/gemm_config.h"

#include <cmath>
#include <cstdio>

#include "opencl/device.h"

namespace rg::ocl {

std::string GemmConfig::name() const {
  char text[64];
  std::snprintf(text, sizeof text, "%dx%dx%d/%dx%d/v%d%s", tile_m, tile_n, tile_k, threads_m, threads_n, vec,
                prefetch ? "/p" : "");
  return text;
}

std::string GemmConfig::build_options(bool trans_a, bool trans_b, bool fma, bool vload) const {
  char text[220];
  std::snprintf(text, sizeof text,
                "-DTRANS_A=%d -DTRANS_B=%d -DTILE_M=%d -DTILE_N=%d -DTILE_K=%d -DTHREADS_M=%d -DTHREADS_N=%d "
                "-DVEC=%d -DPREFETCH=%d -DUSE_FMA=%d -DVLOAD=%d",
                trans_a, trans_b, tile_m, tile_n, tile_k, threads_m, threads_n, vec, prefetch, fma, vload);
  return text;
}

bool GemmConfig::quads_fit() const {
  return tile_m % 4 == 0 && tile_n % 4 == 0 && tile_k % 4 == 0 && (tile_m * tile_k) % (4 * threads()) == 0 &&
         (tile_k * tile_n) % (4 * threads()) == 0;
}

Result<GemmConfig> parse_gemm_config(const std::string& text) {
  GemmConfig c;
  char tail[8] = "";
  int used = 0;
  const int got = std::sscanf(text.c_str(), "%dx%dx%d/%dx%d/v%d%n%7s", &c.tile_m, &c.tile_n, &c.tile_k, &c.threads_m,
                              &c.threads_n, &c.vec, &used, tail);
  c.prefetch = got == 7 && std::string(tail) == "/p";
  const bool whole = (got == 6 && static_cast<size_t>(used) == text.size()) || (c.prefetch && text.size() == used + 2u);
  auto bad = [&](const std::string& rule) {
    return Status::error("GEMM configuration '" + text + "': " + rule + " (the form is TMxTNxTK/THMxTHN/vV[/p], e.g. " +
                         gemm_candidates().front().name() + ")");
  };
  if (!whole) return bad("not of the form");
  if (c.vec != 1 && c.vec != 2 && c.vec != 4) return bad("the vector width must be 1, 2 or 4");
  if (c.tile_m <= 0 || c.tile_n <= 0 || c.tile_k <= 0 || c.threads_m <= 0 || c.threads_n <= 0)
    return bad("sizes must be positive");
  // Bounds before any product of them (a cache file is outside input): tiles up to 256 a side,
  // 64 deep, at most 1024 work-items, at most 128 sums a work-item keeps in registers.
  if (c.tile_m > 256 || c.tile_n > 256 || c.tile_k > 64 || c.threads_m > 1024 || c.threads_n > 1024 || c.threads() > 1024)
    return bad("tiles at most 256 x 256 x 64, work-groups at most 1024 items");
  if (c.tile_m % (c.threads_m * c.vec) == 0 && c.tile_n % (c.threads_n * c.vec) == 0 &&
      (c.tile_m / c.threads_m) * (c.tile_n / c.threads_n) > 128)
    return bad("at most 128 outputs a work-item");
  if (c.tile_m % (c.threads_m * c.vec) || c.tile_n % (c.threads_n * c.vec))
    return bad("each tile side must be a multiple of its items times the vector width");
  if ((c.tile_m * c.tile_k) % c.threads() || (c.tile_k * c.tile_n) % c.threads())
    return bad("each panel's words must split evenly over the work-items");
  return c;
}

const std::vector<GemmConfig>& gemm_candidates() {
  // tile_m, tile_n, tile_k, threads_m, threads_n, vec, prefetch; square-ish tiles largest first,
  // then the narrow ones (tests index this list: new ones go last). The two 8x16 / 16x8-a-item
  // tiles first: on the H200 128x256x8 ran 48.6 TFLOP/s at 4096 against 46.5 for 128x128x8
  // (fewer local reads a multiply-add, one work-group a compute unit); the small ones stay for
  // small products. 64x64x16/16x16/v4/p (4 x 4 sums an item) loses to 64x64x16/8x8/v4/p in the
  // square search but wins where a product has few tiles (resnet20's 7x7x64 layers at batch
  // 256: 196 work-groups of 64 items leave the H200's 132 units short of warps; without it their
  // forward took 0.090 ms, not 0.059); 32x32x16/8x8/v1 likewise for narrow weight gradients.
  static const std::vector<GemmConfig> candidates = {
      {128, 256, 8, 16, 16, 4, true},  {256, 128, 8, 16, 16, 4, true},  {128, 128, 8, 16, 16, 4, true},
      {128, 128, 16, 16, 16, 4, true}, {128, 128, 16, 16, 16, 4, false}, {128, 128, 8, 16, 16, 2, true},
      {128, 64, 16, 16, 16, 4, true},  {64, 128, 16, 16, 16, 4, true},   {64, 64, 16, 16, 16, 4, true},
      {64, 64, 16, 8, 8, 4, true},     {64, 64, 16, 16, 16, 1, false},  {32, 32, 16, 8, 8, 4, true},
      {32, 32, 16, 8, 8, 1, false},    {16, 16, 16, 4, 4, 1, false},
      // Narrow tiles for products of 32 or 16 columns (convolutions of 32 or 16 filters: a
      // 64-wide tile wastes half or three quarters of its sums), tall to keep 8 x 4 sums an item.
      {128, 32, 16, 16, 8, 4, true},   {64, 32, 16, 8, 8, 4, true},     {128, 16, 16, 16, 4, 4, true},
  };
  return candidates;
}

namespace {

// The share of `compute_units` the tiles of an m x n product keep busy times the share of those
// tiles that is real work.
double tile_fill(const GemmConfig& c, int64_t m, int64_t n, int compute_units) {
  const double groups_m = std::ceil(static_cast<double>(m) / c.tile_m);
  const double groups_n = std::ceil(static_cast<double>(n) / c.tile_n);
  const double groups = groups_m * groups_n;
  const double busy = std::min(1.0, groups / std::max(1, compute_units));
  const double useful = static_cast<double>(m) * n / (groups * c.tile_m * c.tile_n);
  return busy * useful;
}

}  // namespace

std::vector<GemmConfig> rank_gemm_configs(const std::vector<GemmRate>& rates, const GemmShape& shape,
                                          int compute_units, int tuned_size, int tuned_units) {
  RG_CHECK(!rates.empty(), "no GEMM configurations to choose from");
  std::vector<std::pair<double, const GemmConfig*>> scored;
  for (const GemmRate& r : rates) {
    const GemmConfig& c = r.config;
    double rate = r.gflops > 0 ? r.gflops : std::sqrt(static_cast<double>(c.tile_m) * c.tile_n);
    if (r.gflops > 0 && tuned_size > 0) rate /= tile_fill(c, tuned_size, tuned_size, tuned_units);
    scored.emplace_back(rate * tile_fill(c, shape.m, shape.n, compute_units), &c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  std::vector<GemmConfig> ranked;
  for (const auto& [score, config] : scored) ranked.push_back(*config);
  return ranked;
}

GemmConfig choose_gemm_config(const std::vector<GemmRate>& rates, const GemmShape& shape, int compute_units,
                              int tuned_size, int tuned_units) {
  return rank_gemm_configs(rates, shape, compute_units, tuned_size, tuned_units).front();
}

bool device_has_fma(const Device& device) {
  cl_device_fp_config config = 0;
  const cl_int code = device.api().clGetDeviceInfo(device.id(), CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config, nullptr);
  return code == CL_SUCCESS && (config & CL_FP_FMA) != 0;
}

}  // namespace rg::ocl
