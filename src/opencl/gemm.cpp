// The GEMM launcher: checks the shape against the spans, takes the configuration (given, or
// chosen from the device's tuning) and launches one work-group per C tile.
#include "opencl/gemm.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/serial.h"
#include "opencl/gemm_tuning.h"
#include "opencl/kernel_args.h"
#include "opencl/launch_1d.h"

namespace rg::ocl {

namespace detail {

EpilogueArgs epilogue_args(const GemmEpilogue& e, DeviceSpan c) {
  const bool bias = e.bias.mem != nullptr, affine = e.affine.mem != nullptr;
  return {bias, bias ? e.bias.mem : c.mem, static_cast<cl_uint>(bias ? e.bias.offset : 0), affine,
          affine ? e.affine.mem : c.mem, static_cast<cl_uint>(affine ? e.affine.offset : 0), e.activation.kind,
          e.activation.slope};
}

Status check_epilogue(const GemmEpilogue& e, int64_t n) {
  const int64_t limit = std::numeric_limits<cl_uint>::max();
  for (const auto& [span, count] : {std::make_pair(e.bias, n), std::make_pair(e.affine, 2 * n)}) {
    if (span.mem == nullptr) continue;
    RG_CHECK(span.count >= count, "gemm epilogue span of " << span.count << " for " << n << " columns");
    if (span.offset + count > limit) {
      return Status::error("the epilogue's bias or affine reaches past the 2^32 - 1 elements the kernel indexes");
    }
  }
  return Status();
}

}  // namespace detail

namespace {

using detail::check_epilogue;
using detail::EpilogueArgs;
using detail::epilogue_args;
using detail::matrix_extent;

// Whether `defines` make op(A) or op(B) an implicit convolution's patch matrix or weight (no matrix).
bool implicit_conv(const std::string& defines) { return defines.find("-DIMPLICIT_CONV=") != std::string::npos; }

// Where gemm.cl's VLOAD may read the panels a float4 at a time: every float4 16-byte aligned (A
// and B at multiples of 4 words, row strides too, so each product of a batch too) and wholly
// inside or wholly outside the matrix along M (TRANS_A) or N (!TRANS_B), the directions whose
// edges it clamps a float4 at; not for the implicit convolution, whose op(A) or op(B) is no matrix.
bool operands_allow_vector_loads(const GemmShape& s, DeviceSpan a, DeviceSpan b, const std::string& defines) {
  const bool ta = s.trans_a == Trans::yes, tb = s.trans_b == Trans::yes;
  return !implicit_conv(defines) && a.offset % 4 == 0 && b.offset % 4 == 0 && s.lda % 4 == 0 && s.ldb % 4 == 0 &&
         (!ta || s.m % 4 == 0) && (tb || s.n % 4 == 0);
}
bool vector_loads_fit(const GemmShape& s, const GemmConfig& config, DeviceSpan a, DeviceSpan b,
                      const std::string& defines) {
  return config.quads_fit() && operands_allow_vector_loads(s, a, b, defines);
}

// `defines`: more build options (the implicit convolution's geometry), after the configuration's.
std::string options(Device& device, const GemmShape& s, const GemmConfig& config, bool vload,
                    const std::string& defines) {
  return config.build_options(s.trans_a == Trans::yes, s.trans_b == Trans::yes, device_has_fma(device), vload) +
         defines;
}

// Builds the programs of `configs` for this product at once (ProgramCache::build_all): a search
// then times each without waiting on its build.
void build_programs(Device& device, const GemmShape& s, const std::vector<GemmConfig>& configs, DeviceSpan a,
                    DeviceSpan b, const std::string& defines) {
  std::vector<std::string> all;
  for (const GemmConfig& c : configs) all.push_back(options(device, s, c, vector_loads_fit(s, c, a, b, defines), defines));
  device.programs().build_all("gemm.cl", all);
}

Result<const Kernel*> f32_gemm_kernel(Device& device, const GemmShape& s, const GemmConfig& config, bool vload,
                                      const std::string& defines) {
  RG_ASSIGN(const Kernel* kernel, device.kernel("gemm.cl", "f32_gemm", options(device, s, config, vload, defines)));
  if (kernel->max_work_group_size < static_cast<size_t>(config.threads())) {
    return Status::error(device.label() + ": GEMM " + config.name() + " needs " + std::to_string(config.threads()) +
                         " work-items, the kernel runs " + std::to_string(kernel->max_work_group_size));
  }
  return kernel;
}

// One launch of `slices` slices of slice_len terms each (one slice: the whole product into c).
Result<Event> launch_gemm(Device& device, const Kernel& kernel, const GemmShape& s, const GemmConfig& config,
                          int64_t slices, int64_t slice_len, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                          DeviceSpan c, const GemmEpilogue& epilogue) {
  const EpilogueArgs e = epilogue_args(epilogue, c);
  const cl_uint m = static_cast<cl_uint>(s.m), n = static_cast<cl_uint>(s.n), k = static_cast<cl_uint>(s.k);
  RG_TRY(set_kernel_args(device, kernel, m, n, k, static_cast<cl_uint>(slice_len), alpha, a.mem,
                         static_cast<cl_uint>(a.offset), static_cast<cl_uint>(s.lda), b.mem, static_cast<cl_uint>(b.offset),
                         static_cast<cl_uint>(s.ldb), beta, c.mem, static_cast<cl_uint>(c.offset),
                         static_cast<cl_uint>(s.ldc), e.has_bias, e.bias, e.bias_offset, e.has_affine, e.affine,
                         e.affine_offset, e.act, e.slope));
  const size_t local[3] = {static_cast<size_t>(config.threads_n), static_cast<size_t>(config.threads_m), 1};
  const size_t global[3] = {static_cast<size_t>((s.n + config.tile_n - 1) / config.tile_n) * local[0],
                            static_cast<size_t>((s.m + config.tile_m - 1) / config.tile_m) * local[1],
                            static_cast<size_t>(slices)};
  return device.run(kernel, 3, global, local);
}

// What a product's timed choice is kept under: transposes, one slice's m x n x k, the slices,
// whether float4 reads fit the operands, and the implicit convolution's geometry (hashed).
std::string product_key(const GemmShape& slice_shape, int64_t slices, bool vloads, const std::string& defines) {
  const bool ta = slice_shape.trans_a == Trans::yes, tb = slice_shape.trans_b == Trans::yes;
  return std::string(ta ? "T" : "N") + (tb ? "T" : "N") + "/" + std::to_string(slice_shape.m) + "x" +
         std::to_string(slice_shape.n) + "x" + std::to_string(slice_shape.k) + "/s" + std::to_string(slices) +
         (vloads ? "/v" : "") + (defines.empty() ? "" : "/c" + fnv1a_hex(defines));
}

// Runs the product's main launch with a configuration and its kernel: the trial below times it.
using TrialLaunch = std::function<Result<Event>(const GemmConfig&, const Kernel&)>;

// The first kTrialConfigs of the ranking, built at once, each timed on the product itself (median
// of 3 after a warm-up): the fastest, or none when no trial ran (a configuration that fails to build or run is
// passed over). All configurations write the same bits, so the trials' writes are what the
// product writes anyway.
constexpr size_t kTrialConfigs = 3;
using BuildKernel = std::function<Result<const Kernel*>(const GemmConfig&)>;
using BuildAll = std::function<void(const std::vector<GemmConfig>&)>;
std::optional<GemmConfig> timed_choice(Device& device, const std::vector<GemmConfig>& ranked, const BuildKernel& build,
                                       const BuildAll& build_all, const TrialLaunch& launch) {
  std::optional<GemmConfig> best;
  double best_seconds = std::numeric_limits<double>::infinity();
  const std::vector<GemmConfig> trials(ranked.begin(), ranked.begin() + std::min(kTrialConfigs, ranked.size()));
  build_all(trials);
  for (const GemmConfig& config : trials) {
    auto kernel = build(config);
    if (!kernel.ok()) continue;
    auto seconds = median_launch_seconds(device, [&] { return launch(config, *kernel.value()); }, 3);
    if (seconds.ok() && seconds.value() < best_seconds) best_seconds = seconds.value(), best = config;
  }
  return best;
}

// The configuration: the one given; else, on a tuned device, this product's timed choice (kept
// in the tuning and its cache file; timed now with `trial` on its first call, where the caller
// can run the product more than once: null where it cannot); else the ranking's first. One the
// device cannot build or run is dropped from the tuning for good (a failed build is not cached,
// so it would be tried again every call). `a` and `b` decide whether it reads float4s.
Result<std::pair<GemmConfig, const Kernel*>> pick(Device& device, const GemmShape& slice_shape, int64_t slices,
                                                  const GemmConfig* given, DeviceSpan a, DeviceSpan b,
                                                  const std::string& defines, const TrialLaunch& trial) {
  const BuildKernel build = [&](const GemmConfig& config) {
    return f32_gemm_kernel(device, slice_shape, config, vector_loads_fit(slice_shape, config, a, b, defines), defines);
  };
  const BuildAll build_all = [&](const std::vector<GemmConfig>& configs) {
    build_programs(device, slice_shape, configs, a, b, defines);
  };
  if (given != nullptr) {
    RG_ASSIGN(const Kernel* kernel, build(*given));
    return std::make_pair(*given, kernel);
  }
  GemmTuning& tuning = gemm_tuning(device);
  const int pair = (slice_shape.trans_a == Trans::yes) * 2 + (slice_shape.trans_b == Trans::yes);
  std::vector<GemmRate> rates;  // the ranking less what this pair of transposes could not build or run
  for (const GemmRate& r : tuning.rates) {
    const std::vector<GemmConfig>& out = tuning.refused[pair];
    if (std::find(out.begin(), out.end(), r.config) == out.end()) rates.push_back(r);
  }
  const int all_units = static_cast<int>(std::max<uint32_t>(1, device.info().compute_units));
  const int units = static_cast<int>(std::max<int64_t>(1, all_units / slices));
  const bool tuned = tuning.size > 0;
  const std::string key =
      tuned ? product_key(slice_shape, slices, operands_allow_vector_loads(slice_shape, a, b, defines), defines) : "";
  if (auto kept = tuning.products.find(key); tuned && kept != tuning.products.end()) {
    if (auto kernel = build(kept->second); kernel.ok()) return std::make_pair(kept->second, kernel.value());
    tuning.products.erase(kept);
  }
  std::string refused;
  while (!rates.empty()) {
    const std::vector<GemmConfig> ranked = rank_gemm_configs(rates, slice_shape, units, tuning.size, all_units);
    const std::optional<GemmConfig> timed =
        tuned && trial ? timed_choice(device, ranked, build, build_all, trial) : std::nullopt;
    const GemmConfig chosen = timed ? *timed : ranked.front();
    auto kernel = build(chosen);
    if (kernel.ok()) {
      if (timed) remember_product_choice(device, key, chosen);
      return std::make_pair(chosen, kernel.value());
    }
    refused += (refused.empty() ? "" : "; ") + kernel.status().message();
    // A plain product's refusal holds for the device; a variant's (the implicit conv) only for
    // itself: its caller falls back to the plain path.
    if (!defines.empty()) break;
    tuning.refused[pair].push_back(chosen);
    rates.erase(std::find_if(rates.begin(), rates.end(), [&](const GemmRate& r) { return r.config == chosen; }));
  }
  return Status::error(device.label() + ": no GEMM configuration runs on this device (" + refused + ")");
}

int64_t scratch_floats(Device& device) {
  const std::unique_ptr<Buffer>& scratch = device.gemm_scratch_slot();
  return scratch ? scratch->bytes() / 4 : 0;
}

// Slices of slice_len terms (a multiple of 16) for `asked` slices of K (at most that many, the last
// shorter); asked <= 1 or K = 0: one slice of the whole depth.
struct KSlices {
  int64_t count, len;
};
KSlices k_slices_of(int64_t k, int64_t asked) {
  if (asked <= 1 || k == 0) return {1, std::max<int64_t>(k, 1)};
  const int64_t len = ((k + asked - 1) / asked + 15) / 16 * 16;
  return {(k + len - 1) / len, len};
}

// The product after its checks: the split, the configuration, the launch(es). `defines` go to
// every kernel built for it (both kernels of a split).
Result<Event> run(Device& device, const GemmShape& s, float alpha, DeviceSpan a, DeviceSpan b, float beta, DeviceSpan c,
                  const GemmLaunch& how, const std::string& defines) {
  const int64_t scratch = scratch_floats(device);
  const int units = static_cast<int>(device.info().compute_units);
  const KSlices split = k_slices_of(s.k, how.k_slices > 0 ? how.k_slices : gemm_k_slices(s, units, scratch));
  const int64_t slices = split.count, slice_len = split.len;
  GemmShape slice_shape = s;
  slice_shape.k = std::min(s.k, slice_len);
  RG_TRY(check_epilogue(how.epilogue, s.n));
  if (slices > 1 && slices * s.m * s.n > scratch) {
    return Status::error(device.label() + ": f32_gemm in " + std::to_string(slices) + " slices needs " +
                         std::to_string(slices * s.m * s.n) + " floats of GEMM scratch, the device has " +
                         std::to_string(scratch) + " (reserve_gemm_scratch)");
  }
  // The main launch: the whole product into c, or the slices' partials into the scratch. It may
  // run more than once (a trial) unless it reads what it writes (one slice, beta != 0).
  const DeviceSpan partials = slices > 1 ? device.gemm_scratch_slot()->f32(0, slices * s.m * s.n) : DeviceSpan{};
  GemmShape packed = s;
  packed.ldc = s.n;
  const TrialLaunch main_launch = [&](const GemmConfig& config, const Kernel& kernel) {
    return slices == 1 ? launch_gemm(device, kernel, s, config, 1, slice_len, alpha, a, b, beta, c, how.epilogue)
                       : launch_gemm(device, kernel, packed, config, slices, slice_len, 1.0f, a, b, 0.0f, partials, {});
  };
  const bool repeatable = slices > 1 || beta == 0.0f;
  RG_ASSIGN(const auto picked,
            pick(device, slice_shape, slices, how.config, a, b, defines, repeatable ? main_launch : TrialLaunch()));
  if (slices == 1) return main_launch(picked.first, *picked.second);
  RG_TRY(main_launch(picked.first, *picked.second).status());
  const EpilogueArgs e = epilogue_args(how.epilogue, c);
  const bool vload = vector_loads_fit(slice_shape, picked.first, a, b, defines);  // the product's program
  return detail::launch_1d(device, "gemm.cl", "f32_gemm_sum_slices", options(device, s, picked.first, vload, defines),
                           s.m * s.n,
                           static_cast<cl_uint>(s.m), static_cast<cl_uint>(s.n), static_cast<cl_uint>(slices), alpha,
                           partials.mem, beta, c.mem, static_cast<cl_uint>(c.offset), static_cast<cl_uint>(s.ldc),
                           e.has_bias, e.bias, e.bias_offset, e.has_affine, e.affine, e.affine_offset, e.act, e.slope);
}

// `batch` packed products in one launch (gemm.cl's BATCHED): each whole, or in `split` slices whose
// sums go into c apart (f32_gemm_batched's contract).
Result<Event> run_batched(Device& device, const GemmShape& s, int64_t batch, KSlices split, float alpha, DeviceSpan a,
                          DeviceSpan b, float beta, DeviceSpan c, const GemmLaunch& how) {
  const std::string defines = " -DBATCHED=1";
  RG_TRY(check_epilogue(how.epilogue, s.n));
  GemmShape slice_shape = s;
  slice_shape.k = std::min(s.k, split.len);
  const TrialLaunch launch = [&](const GemmConfig& config, const Kernel& kernel) {
    return launch_gemm(device, kernel, s, config, batch * split.count, split.len, alpha, a, b, beta, c, how.epilogue);
  };
  RG_ASSIGN(const auto picked, pick(device, slice_shape, batch * split.count, how.config, a, b, defines,
                                    beta == 0.0f ? launch : TrialLaunch()));
  return launch(picked.first, *picked.second);
}


}  // namespace

int64_t gemm_slices_made(int64_t k, int64_t asked) { return k_slices_of(k, asked).count; }

int gemm_k_slices(const GemmShape& s, int compute_units, int64_t scratch_floats) {
  constexpr int64_t kMinSliceTerms = 256;
  const int64_t tiles = ((s.m + 63) / 64) * ((s.n + 63) / 64), units = std::max(1, compute_units);
  const int64_t want = tiles >= 2 * units ? 1 : (kGemmSplitGroupsPerUnit * units + tiles - 1) / tiles;
  const int64_t by_depth = s.k / kMinSliceTerms;
  const int64_t by_scratch = s.m * s.n > 0 ? scratch_floats / (s.m * s.n) : 0;
  return static_cast<int>(std::max<int64_t>(1, std::min({want, by_depth, by_scratch, int64_t{65535}})));
}

int64_t gemm_scratch_bytes(const Device& device) {
  // gemm_k_slices's partials: about kGemmSplitGroupsPerUnit x compute units slices of at most one 64x64 tile each.
  return kGemmSplitGroupsPerUnit * static_cast<int64_t>(std::max<uint32_t>(1, device.info().compute_units)) * 64 * 64 * 4;
}

Status reserve_gemm_scratch(Device& device) {
  std::unique_ptr<Buffer>& slot = device.gemm_scratch_slot();
  if (slot) return Status();
  RG_ASSIGN(Buffer scratch, Buffer::allocate(device, gemm_scratch_bytes(device), "the GEMM's split-K partial sums"));
  slot = std::make_unique<Buffer>(std::move(scratch));
  return Status();
}

void release_gemm_scratch(Device& device) { device.gemm_scratch_slot().reset(); }

void build_gemm_programs(Device& device, const GemmShape& shape, const std::vector<GemmConfig>& configs, DeviceSpan a,
                         DeviceSpan b) {
  build_programs(device, shape, configs, a, b, "");
}

namespace {
// The shape against its spans and the kernel's 32-bit indices, for `batch` products packed one
// after another (each operand's matrices back to back at its row stride).
Status check_gemm(const char* name, const GemmShape& s, int64_t batch, DeviceSpan a, DeviceSpan b, DeviceSpan c,
                  int64_t c_batch) {
  const bool ta = s.trans_a == Trans::yes, tb = s.trans_b == Trans::yes;
  RG_CHECK(s.m >= 0 && s.n >= 0 && s.k >= 0 && batch >= 1, "" << name << " shape " << s.m << " x " << s.n << " x " << s.k
                                                                 << " x " << batch);
  RG_CHECK(s.lda >= (ta ? s.m : s.k) && s.ldb >= (tb ? s.k : s.n) && s.ldc >= s.n,
           "" << name << " row strides lda " << s.lda << ", ldb " << s.ldb << ", ldc " << s.ldc << " for m " << s.m << ", n "
                << s.n << ", k " << s.k);
  const int64_t a_rows = ta ? s.k : s.m, b_rows = tb ? s.n : s.k;
  const int64_t a_extent = (batch - 1) * a_rows * s.lda + matrix_extent(a_rows, ta ? s.m : s.k, s.lda);
  const int64_t b_extent = (batch - 1) * b_rows * s.ldb + matrix_extent(b_rows, tb ? s.k : s.n, s.ldb);
  const int64_t c_extent = (c_batch - 1) * s.m * s.ldc + matrix_extent(s.m, s.n, s.ldc);
  RG_CHECK(a.count >= a_extent && b.count >= b_extent && c.count >= c_extent,
           "" << name << " spans of " << a.count << ", " << b.count << ", " << c.count << " elements for matrices of "
                << a_extent << ", " << b_extent << ", " << c_extent);
  const int64_t limit = std::numeric_limits<cl_uint>::max();
  if (a.offset + a_extent > limit || b.offset + b_extent > limit || c.offset + c_extent > limit) {
    return Status::error(std::string(name) + " " + std::to_string(s.m) + " x " + std::to_string(s.n) + " x " +
                         std::to_string(s.k) + ": a matrix reaches past the 2^32 - 1 elements the kernel indexes");
  }
  return Status();
}
}  // namespace

Result<Event> f32_gemm(Device& device, const GemmShape& s, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                       DeviceSpan c, const GemmLaunch& how) {
  RG_TRY(check_gemm("f32_gemm", s, 1, a, b, c, 1));
  if (s.m == 0 || s.n == 0) return Event();
  return run(device, s, alpha, a, b, beta, c, how, "");
}

Result<Event> f32_gemm_batched(Device& device, const GemmShape& s, int64_t batch, float alpha, DeviceSpan a,
                               DeviceSpan b, float beta, DeviceSpan c, const GemmLaunch& how) {
  RG_CHECK(s.k >= 0, "f32_gemm_batched depth " << s.k);
  const KSlices split = k_slices_of(s.k, how.k_slices);
  RG_CHECK(split.count == 1 || (alpha == 1.0f && beta == 0.0f && how.epilogue.bias.mem == nullptr &&
                                how.epilogue.affine.mem == nullptr && how.epilogue.activation.kind == FusedActivation::none),
           "f32_gemm_batched in slices: alpha 1, beta 0, no epilogue");
  RG_TRY(check_gemm("f32_gemm_batched", s, batch, a, b, c, batch * split.count));
  if (batch * split.count > 65535) {
    return Status::error("f32_gemm_batched: " + std::to_string(batch) + " products in " + std::to_string(split.count) +
                         " slices, at most 65535 in all");
  }
  if (s.m == 0 || s.n == 0) return Event();
  return run_batched(device, s, batch, split, alpha, a, b, beta, c, how);
}

namespace {

// The implicit products' checks: the images, the patch matrix's other operand (`b_floats`) and
// its result (`c_floats`) within their spans and the kernels' 32-bit indices (the patch matrix's
// rows and columns each: it is never in memory, nothing indexes its words); then the geometry as
// gemm.cl's build options, the patch matrix standing for `operand` 1 (A) or 2 (B).
Result<std::string> conv_gemm_defines(const char* name, const ConvGeometry& g, int64_t batch, DeviceSpan images,
                                      DeviceSpan b, int64_t b_floats, DeviceSpan c, int64_t c_floats, int operand = 1) {
  RG_CHECK(batch >= 0 && g.out_h > 0 && g.out_w > 0, "implicit " << name << " of " << batch << " images");
  const int64_t image_floats = batch * g.height * g.width * g.channels, patch_rows = batch * g.patches();
  RG_CHECK(images.count >= image_floats && b.count >= b_floats && c.count >= c_floats,
           "implicit " << name << " spans of " << images.count << ", " << b.count << ", " << c.count << " elements for "
                << image_floats << ", " << b_floats << ", " << c_floats);
  const int64_t limit = std::numeric_limits<cl_uint>::max();
  if (images.offset + image_floats > limit || b.offset + b_floats > limit || c.offset + c_floats > limit ||
      patch_rows > limit) {
    return Status::error(std::string(name) + " of " + std::to_string(batch) + " images: the patch matrix's rows or "
                         "an operand reach past the 2^32 - 1 elements the kernel indexes");
  }
  return " -DIMPLICIT_CONV=" + std::to_string(operand) + " -DCONV_H=" + std::to_string(g.height) + " -DCONV_W=" + std::to_string(g.width) +
         " -DCONV_C=" + std::to_string(g.channels) + " -DCONV_K=" + std::to_string(g.kernel) + " -DCONV_S=" +
         std::to_string(g.stride) + " -DCONV_P=" + std::to_string(g.pad) + " -DCONV_OH=" + std::to_string(g.out_h) +
         " -DCONV_OW=" + std::to_string(g.out_w);
}

}  // namespace

Result<Event> f32_conv_gemm(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan images, DeviceSpan weight,
                            int64_t filters, DeviceSpan y, const GemmLaunch& how, ConvWeight weight_read, float beta) {
  RG_CHECK(filters > 0, "conv gemm of " << filters << " filters");
  const int64_t rows = batch * g.patches(), k = g.patch_size();
  RG_ASSIGN(std::string defines,
            conv_gemm_defines("f32_conv_gemm", g, batch, images, weight, k * filters, y, rows * filters));
  if (rows == 0) return Event();
  // flipped: op(B) read along the dy channels of each tap (gemm.cl's FLIPPED_B), ldb unused
  if (weight_read == ConvWeight::flipped) defines += " -DFLIPPED_B=1";
  const Trans trans_b = weight_read == ConvWeight::plain ? Trans::no : Trans::yes;
  const int64_t ldb = weight_read == ConvWeight::transposed ? k : weight_read == ConvWeight::flipped ? g.channels : filters;
  return run(device, GemmShape{Trans::no, trans_b, rows, filters, k, k, ldb, filters}, 1.0f, images, weight, beta, y,
             how, defines);
}

Result<Event> f32_conv_gemm_weight_grad(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan images,
                                        DeviceSpan dy, int64_t filters, float beta, DeviceSpan dw,
                                        const GemmLaunch& how) {
  RG_CHECK(filters > 0, "conv weight gradient of " << filters << " filters");
  const int64_t rows = batch * g.patches(), k = g.patch_size();
  RG_ASSIGN(const std::string defines, conv_gemm_defines("f32_conv_gemm_weight_grad", g, batch, images, dy,
                                                         rows * filters, dw, k * filters));
  // dw [k, filters] = beta dw + patches^T [k x rows] * dy [rows x filters]; no rows: beta dw
  return run(device, GemmShape{Trans::yes, Trans::no, k, filters, rows, k, filters, filters}, 1.0f, images, dy, beta,
             dw, how, defines);
}

Result<Event> f32_conv_gemm_transposed_weight_grad(Device& device, const ConvGeometry& g, int64_t batch, DeviceSpan x,
                                                   int64_t channels, DeviceSpan images, float beta, DeviceSpan dw,
                                                   const GemmLaunch& how) {
  RG_CHECK(channels > 0, "transposed conv weight gradient of " << channels << " channels");
  const int64_t rows = batch * g.patches(), k = g.patch_size();
  RG_ASSIGN(const std::string defines, conv_gemm_defines("f32_conv_gemm_transposed_weight_grad", g, batch, images, x,
                                                         rows * channels, dw, channels * k, 2));
  // dw [channels, k] = beta dw + x^T [channels x rows] * patches [rows x k]; no rows: beta dw
  return run(device, GemmShape{Trans::yes, Trans::no, channels, k, rows, channels, k, k}, 1.0f, x, images, beta, dw,
             how, defines);
}

}  // namespace rg::ocl
