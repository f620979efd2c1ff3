// Conv2D and ConvTranspose2D on the device: im2col (or col2im) and GEMM per chunk of samples,
// implicit GEMMs (the forward per chunk, the backward over the batch), or a Conv2D's forward and
// stride-1 dx by Winograd (cl_conv_layers.h says which when), as nn/conv.cpp computes them up to
// the GEMMs' summation order (Winograd: its rounding); bias in the GEMM (transposed: add_bias) and column_sum.
// DepthwiseConv2D: its three kernels (kernels/im2col.cl), no chunks.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "nn/layer_profile.h"
#include "opencl/activation.h"
#include "opencl/fill_copy.h"
#include "opencl/gemm.h"
#include "opencl/gemm_tuning.h"
#include "opencl/im2col.h"
#include "opencl/model/cl_conv_layers.h"
#include "opencl/model/cl_layer.h"
#include "opencl/winograd.h"

namespace rg::ocl {

namespace {
// Elements [first, first + count) of `span`.
DeviceSpan sub(DeviceSpan span, int64_t first, int64_t count) { return DeviceSpan{span.mem, span.offset + first, count}; }

// RETROGRAD_CL_CONV: "im2col", "implicit", "winograd" or "auto" (unset or empty: auto).
Result<std::string> conv_path_policy() {
  const char* env = std::getenv("RETROGRAD_CL_CONV");
  const std::string policy = env != nullptr && *env != '\0' ? env : "auto";
  if (policy != "im2col" && policy != "implicit" && policy != "winograd" && policy != "auto") {
    const std::string shown = policy.size() > 40 ? policy.substr(0, 40) + "... (" + std::to_string(policy.size()) +
                                                        " bytes)"
                                                  : policy;
    return Status::error("RETROGRAD_CL_CONV='" + shown + "': the conv paths are im2col, implicit, winograd or auto");
  }
  return policy;
}

// The wall time of `run`, enqueue to finish: launches count as well as kernels.
template <class Run>
Result<double> wall_seconds(Device& device, const Run& run) {
  RG_TRY(device.finish());
  const auto start = std::chrono::steady_clock::now();
  RG_TRY(run());
  RG_TRY(device.finish());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `path` twice each (the first run of a path also builds its kernels); the second runs'
// wall times decide. An implicit path the device cannot build or run leaves im2col, the path
// every device runs.
template <class Run>
Result<ClConv::Path> time_paths(Device& device, const Run& run) {
  using Path = ClConv::Path;
  double seconds[2] = {0, 0};
  const Path paths[2] = {Path::im2col, Path::implicit};
  for (int rep = 0; rep < 2; ++rep) {
    for (int p = 0; p < 2; ++p) {
      auto timed = wall_seconds(device, [&] { return run(paths[p]); });
      if (!timed.ok() && paths[p] == Path::implicit) {
        RG_TRY(run(Path::im2col));
        return Path::im2col;
      }
      RG_ASSIGN(seconds[p], timed);
    }
  }
  return seconds[1] < seconds[0] ? Path::implicit : Path::im2col;
}

// Where a convolution's timed choice of Winograd is kept in the tuning (GemmTuning::conv_winograd):
// "forward/28x28x32/p1/o32/n256" (the pass, the input's size and channels, the pad, the outputs
// per pixel, the batch: the first call's, so a run whose first call has another batch times again).
std::string winograd_choice_key(const std::string& pass, const ConvGeometry& g, int64_t c_out, int64_t n) {
  return pass + "/" + std::to_string(g.height) + "x" + std::to_string(g.width) + "x" + std::to_string(g.channels) +
         "/p" + std::to_string(g.pad) + "/o" + std::to_string(c_out) + "/n" + std::to_string(n);
}
}  // namespace

ClConv::ClConv(Device& device, const ConvLayer& host, bool transposed, int64_t chunk_elements)
    : device_(device),
      transposed_(transposed),
      g_(host.geometry()),
      filters_(host.options().filters),
      chunk_elements_(chunk_elements) {
  if (transposed_) {
    in_sample_ = g_.patches() * host.weight().shape()[0];  // [h, w, c]
    out_sample_ = g_.height * g_.width * filters_;
  } else {
    in_sample_ = g_.height * g_.width * g_.channels;
    out_sample_ = g_.patches() * filters_;
    if (g_.stride == 1 && g_.pad < g_.kernel && !g_.pointwise()) {
      auto flipped = conv_geometry(g_.out_h, g_.out_w, filters_, g_.kernel, 1, g_.kernel - 1 - g_.pad);
      direct_dx_ = flipped.ok() && flipped.value().out_h == g_.height && flipped.value().out_w == g_.width;
      if (direct_dx_) flipped_g_ = flipped.value();
    }
  }
}

Result<std::unique_ptr<ClConv>> ClConv::create(ConvLayer& host, Device& device, int64_t chunk_elements) {
  const bool transposed = dynamic_cast<ConvTranspose2D*>(&host) != nullptr;
  std::unique_ptr<ClConv> cl(new ClConv(device, host, transposed, chunk_elements));
  RG_ASSIGN(cl->policy_, conv_path_policy());
  // Winograd: the cfg's `algorithm` where it names one, else RETROGRAD_CL_CONV=winograd, else auto's timing.
  const auto* conv = dynamic_cast<const Conv2D*>(&host);
  const std::optional<ConvAlgorithm> cfg = conv != nullptr ? conv->options().algorithm : std::nullopt;
  const bool asked = cfg ? *cfg == ConvAlgorithm::winograd : cl->policy_ == "winograd";
  if (cl->policy_ == "winograd") cl->policy_ = "auto";  // the other choices where it does not decide
  const bool may_time = !cfg && cl->policy_ == "auto";
  // Winograd for a convolution of g with c_in input channels: always, a candidate, or never.
  auto use = [&](const ConvGeometry& g, int64_t c_in) {
    if (transposed || !cl_winograd_fits(g)) return Winograd::never;
    if (asked) return Winograd::always;
    return may_time && c_in >= 8 && gemm_tuning(device).size > 0 ? Winograd::candidate : Winograd::never;
  };
  const int64_t budget = device.memory().budget_bytes();
  const int64_t memory_floats = (budget > 0 ? budget : device.info().global_mem_bytes) / 4;
  cl->winograd_room_ = std::clamp(memory_floats / 32, chunk_elements, kWinogradChunkFactor * chunk_elements);
  cl->winograd_fwd_ = use(cl->g_, cl->g_.channels);
  cl->winograd_wgrad_ = cl->winograd_fwd_;
  if (cl->direct_dx_) cl->winograd_dx_ = use(cl->flipped_g_, cl->filters_);
  if (cl->winograd_fwd_ == Winograd::always) cl->path_ = Path::winograd;
  const std::vector<Param*> p = host.params();  // weight, then bias
  RG_ASSIGN(cl->weight_, upload_param(device, *p[0], true));
  if (p.size() > 1) {
    RG_ASSIGN(cl->bias_, upload_param(device, *p[1], true));
    cl->has_bias_ = true;
  }
  return cl;
}

std::vector<ClParam*> ClConv::params() {
  if (has_bias_) return {&weight_, &bias_};
  return {&weight_};
}

int64_t ClConv::chunk_samples(int64_t n) const {
  if (g_.pointwise()) return n;  // the patch matrix is the image itself: no chunks
  const int64_t per_sample = g_.patches() * g_.patch_size();
  return std::max<int64_t>(1, std::min(n, chunk_elements_ / per_sample));
}

// A chunk's patch matrix, or Winograd's: U and a chunk's V and M (the forward's, dx's), or the
// slices' partial sums and a chunk's V and D (the weight gradient's), where larger.
int64_t ClConv::workspace_elements(int64_t n) const {
  if (g_.pointwise()) return 0;
  const int64_t patches = chunk_samples(n) * g_.patches() * g_.patch_size();
  const int64_t fwd = winograd_fwd_ != Winograd::never ? winograd_workspace_elements(g_, filters_, n) : 0;
  const int64_t dx = winograd_dx_ != Winograd::never ? winograd_workspace_elements(flipped_g_, g_.channels, n) : 0;
  int64_t wgrad = 0;
  if (winograd_wgrad_ != Winograd::never) {
    const GradChunk chunk = winograd_grad_chunk(n);
    wgrad = winograd_grad_workspace(g_, filters_, chunk.slices).floats(chunk.images);
  }
  return std::max({patches, fwd, dx, wgrad});
}

// As many images as their V and D fit in winograd_room_ beside the partial sums of the most slices
// any batch takes (so the workspace grows with n: a short last batch fits what the full one reserved).
ClConv::GradChunk ClConv::winograd_grad_chunk(int64_t n) const {
  const int units = static_cast<int>(device_.info().compute_units);
  const int most = winograd_grad_most_slices(g_, filters_, units);
  const WinogradWorkspace parts = winograd_grad_workspace(g_, filters_, most);
  const int64_t images = std::max<int64_t>(1, std::min(n, (winograd_room_ - parts.weight) / parts.per_image));
  return {images, winograd_grad_slices(g_, filters_, images, units)};
}

int64_t ClConv::winograd_chunk(const ConvGeometry& g, int64_t c_out, int64_t n) const {
  const WinogradWorkspace parts = winograd_workspace(g, c_out);
  const int64_t room = winograd_room_ - parts.weight;
  return std::max<int64_t>(1, std::min(n, room / parts.per_image));
}

int64_t ClConv::winograd_workspace_elements(const ConvGeometry& g, int64_t c_out, int64_t n) const {
  return winograd_workspace(g, c_out).floats(winograd_chunk(g, c_out, n));
}

Status ClConv::winograd_conv(const ConvGeometry& g, int64_t c_out, ConvWeight read, int64_t n, DeviceSpan in,
                             DeviceSpan out, DeviceSpan ws, const GemmEpilogue& epilogue, float beta) {
  const WinogradWorkspace parts = winograd_workspace(g, c_out);
  const int64_t per_chunk = winograd_chunk(g, c_out, n), in_sample = g.height * g.width * g.channels;
  const int64_t out_sample = g.patches() * c_out;
  RG_CHECK(ws.count >= parts.floats(per_chunk),
           "Winograd workspace of " << ws.count << " floats for " << parts.floats(per_chunk));
  const DeviceSpan u = sub(ws, 0, parts.weight);
  RG_TRY(f32_winograd_weight(device_, g, c_out, weight_.value.f32(), read, u).status());
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0);
    RG_TRY(f32_winograd_conv(device_, g, count, sub(in, s0 * in_sample, count * in_sample), u, c_out,
                             sub(out, s0 * out_sample, count * out_sample),
                             sub(ws, parts.weight, count * parts.per_image), epilogue, beta)
               .status());
  }
  return Status();
}

Status ClConv::forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) {
  if (!transposed_) return forward_fused(n, x, y, ctx, ClEpilogue{});  // its GEMM adds the bias
  RG_TRY(transposed_forward(n, x, y, ctx.workspace));
  // y [n * pixels, filters] += b
  if (has_bias_) RG_TRY(f32_add_bias(device_, n * out_sample_ / filters_, filters_, bias_.value.f32(), y).status());
  return Status();
}

Status ClConv::forward_fused(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx, const ClEpilogue& epilogue) {
  RG_CHECK(!transposed_, "a transposed conv is no fusion head");
  const GemmEpilogue gemm{has_bias_ ? bias_.value.f32() : DeviceSpan{}, epilogue.affine, epilogue.activation};
  return conv_forward(n, x, y, ctx.workspace, gemm);
}

Status ClConv::backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) {
  return backward_fused(n, x, y, dy, dx, ctx, ClBackwardFusion{});
}

Status ClConv::backward_fused(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx,
                              const ClContext& ctx, const ClBackwardFusion& fusion) {
  (void)y;
  RG_CHECK(fusion.activation.kind == FusedActivation::none, "a conv takes no activation's backward");
  RG_CHECK(!fusion.add_to_dx || fusion_head().add_to_dx, "a conv adding onto dx off its implicit stride-1 path");
  const bool keep = ctx.host.accumulate_grads;
  if (has_bias_) {  // db [filters] (+)= column sums of dy [n * pixels, filters], over the whole batch as the CPU
    if (!keep) RG_TRY(f32_fill_zero(device_, bias_.grad.f32()).status());
    RG_TRY(f32_column_sum(device_, n * out_sample_ / filters_, filters_, dy, bias_.grad.f32()).status());
  }
  if (g_.pointwise()) return backward_by(Path::im2col, n, x, dy, dx, keep, ctx);  // no patch matrix
  if (backward_path_ == Path::unmeasured) return choose_backward_path(n, x, dy, dx, keep, ctx);
  return backward_by(backward_path_, n, x, dy, dx, keep, ctx, fusion.add_to_dx);
}

// y = the convolution of x, then the epilogue (bias, fused layers): by Winograd, or by the GEMM
// paths (conv_forward_gemm); a Winograd candidate chooses at its first call.
Status ClConv::conv_forward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue) {
  auto winograd = [&] { return winograd_conv(g_, filters_, ConvWeight::plain, n, x, y, ws, epilogue, 0.0f); };
  if (winograd_fwd_ == Winograd::candidate) {  // the GEMM path's run: its own choice first (path_)
    auto gemm = [&] { return conv_forward_gemm(n, x, y, ws, epilogue); };
    RG_TRY(choose_winograd(winograd_fwd_, winograd_choice_key("forward", g_, filters_, n), gemm, winograd));
    if (winograd_fwd_ == Winograd::always) path_ = Path::winograd;
  }
  if (path_ == Path::winograd) return winograd();
  return conv_forward_gemm(n, x, y, ws, epilogue);
}

Status ClConv::choose_winograd(Winograd& use, const std::string& key, const std::function<Status()>& gemm,
                               const std::function<Status()>& winograd) {
  const GemmTuning& tuning = gemm_tuning(device_);
  if (auto kept = tuning.conv_winograd.find(key); kept != tuning.conv_winograd.end()) {
    use = kept->second ? Winograd::always : Winograd::never;
    return Status();
  }
  double seconds[2] = {0, 0};
  for (int rep = 0; rep < 2; ++rep) {
    RG_ASSIGN(seconds[0], wall_seconds(device_, gemm));
    auto timed = wall_seconds(device_, winograd);
    if (!timed.ok()) {  // its programs do not build or run here: the GEMM, not remembered (a later driver may)
      use = Winograd::never;
      return Status();
    }
    seconds[1] = timed.value();
  }
  use = seconds[1] < seconds[0] ? Winograd::always : Winograd::never;
  remember_conv_choice(device_, key, use == Winograd::always);
  return Status();
}

// Per chunk: cols [rows, K] = im2col(x); y [rows, F] = cols * W [K, F]  (rows = count * patches), or
// the implicit GEMM reading cols from x as it goes (path_, timed on the first chunk); then the epilogue.
Status ClConv::conv_forward_gemm(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws, const GemmEpilogue& epilogue) {
  const int64_t per_chunk = chunk_samples(n);
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0);
    const DeviceSpan xs = sub(x, s0 * in_sample_, count * in_sample_), ys = sub(y, s0 * out_sample_, count * out_sample_);
    if (!g_.pointwise() && path_ == Path::unmeasured) {
      RG_TRY(choose_forward_path(count, xs, ys, ws, epilogue));
      continue;
    }
    RG_TRY(conv_forward_chunk(g_.pointwise() ? Path::im2col : path_, count, xs, ys, ws, epilogue));
  }
  return Status();
}

Status ClConv::conv_forward_chunk(Path path, int64_t count, DeviceSpan x, DeviceSpan y, DeviceSpan ws,
                                  const GemmEpilogue& epilogue) {
  const int64_t rows = count * g_.patches(), k = g_.patch_size(), f = filters_;
  GemmLaunch how;
  how.epilogue = epilogue;  // y [rows, F] (+ b, then the fused layers) in the GEMM's last step
  if (path == Path::implicit) return f32_conv_gemm(device_, g_, count, x, weight_.value.f32(), f, y, how).status();
  DeviceSpan cols = x;  // pointwise: the patch matrix is the image itself
  if (!g_.pointwise()) {
    cols = sub(ws, 0, rows * k);
    RG_TRY(f32_im2col(device_, g_, count, x, cols).status());
  }
  return f32_gemm(device_, GemmShape{Trans::no, Trans::no, rows, f, k, k, f, f}, 1.0f, cols, weight_.value.f32(), 0.0f,
                  y, how)
      .status();
}

Status ClConv::choose_forward_path(int64_t count, DeviceSpan x, DeviceSpan y, DeviceSpan ws,
                                   const GemmEpilogue& epilogue) {
  if (policy_ != "auto") {
    path_ = policy_ == "im2col" ? Path::im2col : Path::implicit;
    return conv_forward_chunk(path_, count, x, y, ws, epilogue);
  }
  RG_ASSIGN(path_, time_paths(device_, [&](Path p) { return conv_forward_chunk(p, count, x, y, ws, epilogue); }));
  return Status();
}

Status ClConv::backward_by(Path path, int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                           const ClContext& ctx, bool add_dx) {
  return transposed_ ? transposed_backward_by(path, n, x, dy, dx, keep, ctx)
                     : conv_backward_by(path, n, x, dy, dx, keep, ctx, add_dx);
}

// Not timed, unlike the forward: the paths' bits differ (dW's chunks, dx's order of sums), and a
// run's bits must not depend on a measurement made anew (the implicit path's Winograd dx and
// weight gradient are timed, but kept in the tuning's file for later runs). Auto: a Conv2D's
// implicit path wherever it builds and runs; a ConvTranspose2D's im2col (its implicit path is
// not yet measured on a GPU).
Status ClConv::choose_backward_path(int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                                    const ClContext& ctx) {
  const bool implicit = policy_ == "implicit" || (policy_ == "auto" && !transposed_);
  backward_path_ = implicit ? Path::implicit : Path::im2col;
  const Status ran = backward_by(backward_path_, n, x, dy, dx, keep, ctx);
  if (ran.ok() || policy_ != "auto") return ran;
  backward_path_ = Path::im2col;
  return backward_by(backward_path_, n, x, dy, dx, keep, ctx);
}

// im2col: per chunk dW [K, F] (+)= cols^T * dy, cols = im2col(x); then dx by col2im. implicit: dx
// first (a program that does not build then leaves the gradients as they were, for the fallback),
// as the convolution of dy with the weight read flipped at stride 1, else by col2im;
// then dW over the whole batch from x as it is read.
Status ClConv::conv_backward_by(Path path, int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                                const ClContext& ctx, bool add_dx) {
  const int64_t per_chunk = chunk_samples(n), k = g_.patch_size(), f = filters_;
  const DeviceSpan ws = ctx.workspace;
  if (path == Path::implicit) {
    if (dx.mem != nullptr) {
      const InputGradScope timed(ctx.host);  // --profile-device: as the input gradient
      RG_TRY(direct_dx_ ? dx_direct(n, dy, dx, ws, add_dx) : dx_by_col2im(n, dy, dx, ws));
    }
    return weight_grad(n, x, dy, keep, ws);
  }
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0), rows = count * g_.patches();
    DeviceSpan cols = sub(x, s0 * in_sample_, count * in_sample_);
    if (!g_.pointwise()) {
      RG_TRY(f32_im2col(device_, g_, count, cols, sub(ws, 0, rows * k)).status());
      cols = sub(ws, 0, rows * k);
    }
    const float beta = (s0 > 0 || keep) ? 1.0f : 0.0f;  // the first chunk overwrites unless accumulating
    RG_TRY(f32_gemm(device_, GemmShape{Trans::yes, Trans::no, k, f, rows, k, f, f}, 1.0f, cols,
                    sub(dy, s0 * out_sample_, count * out_sample_), beta, weight_.grad.f32())
               .status());
  }
  if (dx.mem == nullptr) return Status();
  // The queue is in order: the weight gradient has read the workspace before dx_by_col2im writes it.
  const InputGradScope timed(ctx.host);
  return dx_by_col2im(n, dy, dx, ws);
}

// dx as the convolution of dy with the weight read flipped: by Winograd or the implicit GEMM,
// a candidate timed first (its first call: dx overwritten, add_dx false, so repeatable).
Status ClConv::dx_direct(int64_t n, DeviceSpan dy, DeviceSpan dx, DeviceSpan ws, bool add_dx) {
  const float beta = add_dx ? 1.0f : 0.0f;
  auto winograd = [&] { return winograd_conv(flipped_g_, g_.channels, ConvWeight::flipped, n, dy, dx, ws, {}, beta); };
  auto gemm = [&] {
    return f32_conv_gemm(device_, flipped_g_, n, dy, weight_.value.f32(), g_.channels, dx, {}, ConvWeight::flipped, beta)
        .status();
  };
  if (winograd_dx_ == Winograd::candidate) {
    RG_CHECK(!add_dx, "a conv's dx added onto before its path was chosen");
    RG_TRY(choose_winograd(winograd_dx_, winograd_choice_key("dx", flipped_g_, g_.channels, n), gemm, winograd));
  }
  return winograd_dx_ == Winograd::always ? winograd() : gemm();
}

// A candidate is timed at a call that overwrites dW (keep false: repeatable), else the GEMM's.
Status ClConv::weight_grad(int64_t n, DeviceSpan x, DeviceSpan dy, bool keep, DeviceSpan ws) {
  const float beta = keep ? 1.0f : 0.0f;
  auto gemm = [&] {
    return f32_conv_gemm_weight_grad(device_, g_, n, x, dy, filters_, beta, weight_.grad.f32()).status();
  };
  auto winograd = [&] { return winograd_weight_grad(n, x, dy, beta, ws); };
  if (winograd_wgrad_ == Winograd::candidate && !keep) {
    RG_TRY(choose_winograd(winograd_wgrad_, winograd_choice_key("wgrad", g_, filters_, n), gemm, winograd));
  }
  return winograd_wgrad_ == Winograd::always ? winograd() : gemm();
}

// Chunks of winograd_grad_chunk's images, the first at `beta`, the others added (no images: beta
// dW, as the GEMM's). A chunk after the first that fails leaves dW part-summed: the caller's
// fallback (conv_backward_by's) then adds onto it.
Status ClConv::winograd_weight_grad(int64_t n, DeviceSpan x, DeviceSpan dy, float beta, DeviceSpan ws) {
  const int64_t per_chunk = winograd_grad_chunk(n).images;
  const int units = static_cast<int>(device_.info().compute_units);
  for (int64_t s0 = 0; s0 == 0 || s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0);
    const int slices = winograd_grad_slices(g_, filters_, count, units);
    RG_TRY(f32_winograd_weight_grad(device_, g_, count, sub(x, s0 * in_sample_, count * in_sample_),
                                    sub(dy, s0 * out_sample_, count * out_sample_), filters_, slices,
                                    s0 == 0 ? beta : 1.0f, weight_.grad.f32(), ws)
               .status());
  }
  return Status();
}

// Per chunk: dcols [rows, K] = dy * W^T, dx = col2im(dcols) (pointwise: dx = dcols).
Status ClConv::dx_by_col2im(int64_t n, DeviceSpan dy, DeviceSpan dx, DeviceSpan ws) {
  const int64_t per_chunk = chunk_samples(n), k = g_.patch_size(), f = filters_;
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0), rows = count * g_.patches();
    const DeviceSpan dx_chunk = sub(dx, s0 * in_sample_, count * in_sample_);
    const DeviceSpan dcols = g_.pointwise() ? dx_chunk : sub(ws, 0, rows * k);
    RG_TRY(f32_gemm(device_, GemmShape{Trans::no, Trans::yes, rows, k, f, f, f, k}, 1.0f,
                    sub(dy, s0 * out_sample_, count * out_sample_), weight_.value.f32(), 0.0f, dcols)
               .status());
    if (!g_.pointwise()) RG_TRY(f32_col2im_add(device_, g_, count, dcols, dx_chunk, false).status());
  }
  return Status();
}

// Per chunk: cols [rows, K] = x [rows, C] * W [C, K]; y = col2im(cols) over the output geometry.
Status ClConv::transposed_forward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan ws) {
  const int64_t per_chunk = chunk_samples(n), k = g_.patch_size(), c = in_sample_ / g_.patches();
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0), rows = count * g_.patches();
    const DeviceSpan y_chunk = sub(y, s0 * out_sample_, count * out_sample_);
    const DeviceSpan cols = g_.pointwise() ? y_chunk : sub(ws, 0, rows * k);
    RG_TRY(f32_gemm(device_, GemmShape{Trans::no, Trans::no, rows, k, c, c, k, k}, 1.0f,
                    sub(x, s0 * in_sample_, count * in_sample_), weight_.value.f32(), 0.0f, cols)
               .status());
    if (!g_.pointwise()) RG_TRY(f32_col2im_add(device_, g_, count, cols, y_chunk, false).status());
  }
  return Status();
}

// im2col, per chunk: dcols [rows, K] = im2col(dy); dW [C, K] (+)= x^T * dcols; dx [rows, C] =
// dcols * W^T. implicit: the same two products over the whole batch, dcols read from dy as they
// are needed (dx first, as conv_backward_by).
Status ClConv::transposed_backward_by(Path path, int64_t n, DeviceSpan x, DeviceSpan dy, DeviceSpan dx, bool keep,
                                      const ClContext& ctx) {
  const int64_t per_chunk = chunk_samples(n), k = g_.patch_size(), c = in_sample_ / g_.patches();
  const DeviceSpan ws = ctx.workspace;
  if (path == Path::implicit) {
    if (dx.mem != nullptr) {
      const InputGradScope timed(ctx.host);  // --profile-device: as the input gradient
      RG_TRY(f32_conv_gemm(device_, g_, n, dy, weight_.value.f32(), c, dx, {}, ConvWeight::transposed).status());
    }
    return f32_conv_gemm_transposed_weight_grad(device_, g_, n, x, c, dy, keep ? 1.0f : 0.0f, weight_.grad.f32())
        .status();
  }
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0), rows = count * g_.patches();
    const DeviceSpan dy_chunk = sub(dy, s0 * out_sample_, count * out_sample_);
    DeviceSpan dcols = dy_chunk;
    if (!g_.pointwise()) {
      dcols = sub(ws, 0, rows * k);
      RG_TRY(f32_im2col(device_, g_, count, dy_chunk, dcols).status());
    }
    const float beta = (s0 > 0 || keep) ? 1.0f : 0.0f;
    RG_TRY(f32_gemm(device_, GemmShape{Trans::yes, Trans::no, c, k, rows, c, k, k}, 1.0f,
                    sub(x, s0 * in_sample_, count * in_sample_), dcols, beta, weight_.grad.f32())
               .status());
    if (dx.mem == nullptr) continue;
    const InputGradScope timed(ctx.host);  // --profile-device: as the input gradient
    RG_TRY(f32_gemm(device_, GemmShape{Trans::no, Trans::yes, rows, c, k, k, k, c}, 1.0f, dcols, weight_.value.f32(),
                    0.0f, sub(dx, s0 * in_sample_, count * in_sample_))
               .status());
  }
  return Status();
}

namespace {

Result<std::unique_ptr<ClLayer>> make_cl_conv(Layer& layer, const Shape& input, Device& device) {
  (void)input;
  RG_ASSIGN(std::unique_ptr<ClConv> cl, ClConv::create(dynamic_cast<ConvLayer&>(layer), device));
  return std::unique_ptr<ClLayer>(std::move(cl));
}

// DepthwiseConv2D: x [n, h, w, c] -> y [n, oh, ow, c], W [k*k, c]; the CPU's sums in its order.
class ClDepthwise : public ClLayer {
 public:
  ClDepthwise(Device& device, const DepthwiseConv2D& host) : device_(device), g_(host.geometry()) {}

  Status upload(DepthwiseConv2D& host) {
    const std::vector<Param*> p = host.params();  // weight, then bias
    RG_ASSIGN(weight_, upload_param(device_, *p[0], true));
    has_bias_ = p.size() > 1;
    if (has_bias_) {
      RG_ASSIGN(bias_, upload_param(device_, *p[1], true));
    }
    return Status();
  }

  Status forward(int64_t n, DeviceSpan x, DeviceSpan y, const ClContext& ctx) override {
    (void)ctx;
    const DeviceSpan bias = has_bias_ ? bias_.value.f32() : DeviceSpan{};
    return f32_depthwise_forward(device_, g_, n, x, weight_.value.f32(), bias, y).status();
  }

  Status backward(int64_t n, DeviceSpan x, DeviceSpan y, DeviceSpan dy, DeviceSpan dx, const ClContext& ctx) override {
    (void)y;
    const bool keep = ctx.host.accumulate_grads;
    if (has_bias_) {  // db [c] (+)= column sums of dy [n * pixels, c], as the CPU
      if (!keep) RG_TRY(f32_fill_zero(device_, bias_.grad.f32()).status());
      RG_TRY(f32_column_sum(device_, n * g_.patches(), g_.channels, dy, bias_.grad.f32()).status());
    }
    RG_TRY(f32_depthwise_weight_grad(device_, g_, n, x, dy, keep, weight_.grad.f32()).status());
    if (dx.mem == nullptr) return Status();
    const InputGradScope timed(ctx.host);  // --profile-device: as the input gradient
    return f32_depthwise_input_grad(device_, g_, n, dy, weight_.value.f32(), dx).status();
  }

  std::vector<ClParam*> params() override {
    if (has_bias_) return {&weight_, &bias_};
    return {&weight_};
  }

 private:
  Device& device_;
  ConvGeometry g_;
  bool has_bias_ = false;
  ClParam weight_, bias_;
};

Result<std::unique_ptr<ClLayer>> make_cl_depthwise(Layer& layer, const Shape& input, Device& device) {
  (void)input;
  auto& host = dynamic_cast<DepthwiseConv2D&>(layer);
  auto cl = std::make_unique<ClDepthwise>(device, host);
  RG_TRY(cl->upload(host));
  return std::unique_ptr<ClLayer>(std::move(cl));
}

// This file's device layer makers, registered at start-up (cl_layer.h).
const bool kConvMakersRegistered =
    register_cl_layer_makers({"conv", "conv_transpose"}, make_cl_conv) &&
    register_cl_layer_makers({"depthwise_conv"}, make_cl_depthwise);

}  // namespace

}  // namespace rg::ocl
