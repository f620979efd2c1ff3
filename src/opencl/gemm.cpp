// The GEMM launcher: checks the shape against the spans, picks the tile (build options of
// kernels/gemm.cl) and launches one work-group per C tile.
#include "opencl/gemm.h"

#include <limits>
#include <string>

#include "opencl/kernel_args.h"

namespace rg::ocl {

namespace {

struct TileConfig {
  GemmTile tile;
  int tile_m, tile_n, tile_k, threads_m, threads_n;
};
// Largest first: `automatic` takes the first the device runs.
constexpr TileConfig kTiles[] = {
    {GemmTile::t64x64, 64, 64, 16, 16, 16},
    {GemmTile::t32x32, 32, 32, 16, 8, 8},
    {GemmTile::t16x16, 16, 16, 16, 4, 4},
};

std::string build_options(const GemmShape& s, const TileConfig& t) {
  return "-DTRANS_A=" + std::to_string(s.trans_a == Trans::yes) + " -DTRANS_B=" + std::to_string(s.trans_b == Trans::yes) +
         " -DTILE_M=" + std::to_string(t.tile_m) + " -DTILE_N=" + std::to_string(t.tile_n) +
         " -DTILE_K=" + std::to_string(t.tile_k) + " -DTHREADS_M=" + std::to_string(t.threads_m) +
         " -DTHREADS_N=" + std::to_string(t.threads_n);
}

// Elements a stored rows x cols matrix with row stride ld spans: the last row needs only cols.
int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols; }

}  // namespace

const char* gemm_tile_name(GemmTile tile) {
  switch (tile) {
    case GemmTile::automatic: return "automatic";
    case GemmTile::t64x64: return "64x64";
    case GemmTile::t32x32: return "32x32";
    case GemmTile::t16x16: return "16x16";
  }
  return "?";
}

Result<Event> f32_gemm(Device& device, const GemmShape& s, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                       DeviceSpan c, GemmTile tile) {
  const bool ta = s.trans_a == Trans::yes, tb = s.trans_b == Trans::yes;
  RG_CHECK(s.m >= 0 && s.n >= 0 && s.k >= 0, "gemm shape " << s.m << " x " << s.n << " x " << s.k);
  RG_CHECK(s.lda >= (ta ? s.m : s.k) && s.ldb >= (tb ? s.k : s.n) && s.ldc >= s.n,
           "gemm row strides lda " << s.lda << ", ldb " << s.ldb << ", ldc " << s.ldc << " for m " << s.m << ", n "
                                   << s.n << ", k " << s.k);
  const int64_t a_extent = ta ? extent(s.k, s.m, s.lda) : extent(s.m, s.k, s.lda);
  const int64_t b_extent = tb ? extent(s.n, s.k, s.ldb) : extent(s.k, s.n, s.ldb);
  const int64_t c_extent = extent(s.m, s.n, s.ldc);
  RG_CHECK(a.count >= a_extent && b.count >= b_extent && c.count >= c_extent,
           "gemm spans of " << a.count << ", " << b.count << ", " << c.count << " elements for matrices of "
                            << a_extent << ", " << b_extent << ", " << c_extent);
  const int64_t limit = std::numeric_limits<cl_uint>::max();
  if (a.offset + a_extent > limit || b.offset + b_extent > limit || c.offset + c_extent > limit) {
    return Status::error("f32_gemm " + std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) +
                         ": a matrix reaches past the 2^32 - 1 elements the kernel indexes");
  }
  if (s.m == 0 || s.n == 0) return Event();

  std::string refused;
  for (const TileConfig& config : kTiles) {
    if (tile != GemmTile::automatic && tile != config.tile) continue;
    RG_ASSIGN(const Kernel* kernel, device.kernel("gemm.cl", "f32_gemm", build_options(s, config)));
    const size_t threads = static_cast<size_t>(config.threads_m * config.threads_n);
    if (kernel->max_work_group_size < threads) {
      refused += std::string(refused.empty() ? "" : ", ") + gemm_tile_name(config.tile) + " needs " +
                 std::to_string(threads) + " items, the kernel runs " + std::to_string(kernel->max_work_group_size);
      continue;
    }
    const cl_uint m = static_cast<cl_uint>(s.m), n = static_cast<cl_uint>(s.n), k = static_cast<cl_uint>(s.k);
    RG_TRY(set_kernel_args(device, *kernel, m, n, k, alpha, a.mem, static_cast<cl_uint>(a.offset),
                           static_cast<cl_uint>(s.lda), b.mem, static_cast<cl_uint>(b.offset), static_cast<cl_uint>(s.ldb),
                           beta, c.mem, static_cast<cl_uint>(c.offset), static_cast<cl_uint>(s.ldc)));
    const size_t local[2] = {static_cast<size_t>(config.threads_n), static_cast<size_t>(config.threads_m)};
    const size_t global[2] = {static_cast<size_t>((s.n + config.tile_n - 1) / config.tile_n) * local[0],
                              static_cast<size_t>((s.m + config.tile_m - 1) / config.tile_m) * local[1]};
    return device.run(*kernel, 2, global, local);
  }
  return Status::error(device.label() + ": no GEMM tile runs on this device (" + refused + ")");
}

}  // namespace rg::ocl
