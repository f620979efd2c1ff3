// The GEMM launcher: checks the shape against the spans, takes the configuration (given, or
// chosen from the device's tuning) and launches one work-group per C tile.
#include "opencl/gemm.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "opencl/gemm_tuning.h"
#include "opencl/kernel_args.h"

namespace rg::ocl {

namespace {

// Elements a stored rows x cols matrix with row stride ld spans: the last row needs only cols.
int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols; }

Result<const Kernel*> gemm_kernel(Device& device, const GemmShape& s, const GemmConfig& config) {
  RG_ASSIGN(const Kernel* kernel,
            device.kernel("gemm.cl", "f32_gemm",
                          config.build_options(s.trans_a == Trans::yes, s.trans_b == Trans::yes, device_has_fma(device))));
  if (kernel->max_work_group_size < static_cast<size_t>(config.threads())) {
    return Status::error(device.label() + ": GEMM " + config.name() + " needs " + std::to_string(config.threads()) +
                         " work-items, the kernel runs " + std::to_string(kernel->max_work_group_size));
  }
  return kernel;
}

Result<Event> launch(Device& device, const Kernel& kernel, const GemmShape& s, const GemmConfig& config, float alpha,
                     DeviceSpan a, DeviceSpan b, float beta, DeviceSpan c) {
  const cl_uint m = static_cast<cl_uint>(s.m), n = static_cast<cl_uint>(s.n), k = static_cast<cl_uint>(s.k);
  RG_TRY(set_kernel_args(device, kernel, m, n, k, alpha, a.mem, static_cast<cl_uint>(a.offset), static_cast<cl_uint>(s.lda),
                         b.mem, static_cast<cl_uint>(b.offset), static_cast<cl_uint>(s.ldb), beta, c.mem,
                         static_cast<cl_uint>(c.offset), static_cast<cl_uint>(s.ldc)));
  const size_t local[2] = {static_cast<size_t>(config.threads_n), static_cast<size_t>(config.threads_m)};
  const size_t global[2] = {static_cast<size_t>((s.n + config.tile_n - 1) / config.tile_n) * local[0],
                            static_cast<size_t>((s.m + config.tile_m - 1) / config.tile_m) * local[1]};
  return device.run(kernel, 2, global, local);
}

}  // namespace

Result<Event> f32_gemm(Device& device, const GemmShape& s, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                       DeviceSpan c, const GemmConfig* config) {
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

  if (config != nullptr) {
    RG_ASSIGN(const Kernel* kernel, gemm_kernel(device, s, *config));
    return launch(device, *kernel, s, *config, alpha, a, b, beta, c);
  }
  // The tuning's choice for this shape; one the device cannot build or run is dropped from the
  // tuning for good (a failed build is not cached, so it would be tried again every call).
  std::vector<GemmRate>& rates = gemm_tuning(device).rates[ta * 2 + tb];
  std::string refused;
  while (!rates.empty()) {
    const GemmConfig chosen = choose_gemm_config(rates, s, static_cast<int>(device.info().compute_units));
    auto kernel = gemm_kernel(device, s, chosen);
    if (kernel.ok()) return launch(device, *kernel.value(), s, chosen, alpha, a, b, beta, c);
    refused += (refused.empty() ? "" : "; ") + kernel.status().message();
    rates.erase(std::find_if(rates.begin(), rates.end(), [&](const GemmRate& r) { return r.config == chosen; }));
  }
  return Status::error(device.label() + ": no GEMM configuration runs on this device (" + refused + ")");
}

}  // namespace rg::ocl
