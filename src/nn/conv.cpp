// Conv2D, ConvTranspose2D and DepthwiseConv2D: chunks of samples; per chunk a padded copy that the gathered GEMM
// reads patches from (Winograd reads the images themselves), a strided adjoint's output phases
// (ops/conv_phases.h), or a GEMM into a patch matrix that col2im adds back (both threaded over
// samples, the GEMMs threaded inside); bias by the kernel table. The depthwise conv: rows through
// an indirection per image (ops/depthwise.h), f32 on the kernel table's depthwise kernels.
#include "nn/conv.h"

#include <algorithm>
#include <type_traits>

#include "base/int_math.h"
#include "cpu/kernel_tables.h"
#include "nn/cfg.h"
#include "nn/layer_profile.h"
#include "nn/layer_gemm.h"
#include "nn/workspace.h"
#include "ops/conv_planar.h"
#include "ops/depthwise.h"
#include "ops/elementwise.h"
#include "ops/gemm.h"

namespace rg {

const char* conv_algorithm_name(ConvAlgorithm a) { return a == ConvAlgorithm::winograd ? "winograd" : "gemm"; }

namespace {
// Patch-matrix elements per chunk: 4 MiB of f32 keeps the panel in L2/L3 on old CPUs while
// giving the GEMM a few thousand rows.
constexpr int64_t kConvChunkElements = int64_t{1} << 20;
// A sample's patch matrix over this many floats (16 samples' fill a 512 KB L2) is counted at
// kCol2imLanes multiply-adds a value against the planar dx (Conv2D::set_algorithm).
constexpr int64_t kLargePatchMatrix = 8192;
constexpr int64_t kCol2imLanes = 32;

// Whether a pass over a batch of `samples` splits it by samples (ops/elementwise.h's
// by_samples): where each thread gets some; else in blocks of values, every thread busy.
bool splits_by_samples(const LayerContext& ctx, int64_t samples) {
  return ctx.pool == nullptr || samples >= ctx.pool->threads();
}

// The end of a forward over `samples` samples of `pixels` output pixels each: the bias, and the
// relu that follows where the model runs it inside this layer (ctx.fused_relu:
// ConvLayer::fuses_relu), in one pass (splits_by_samples).
template <class T>
void finish_output(const LayerContext& ctx, const ConvOptions& o, const Param& bias, int64_t samples, int64_t pixels,
                   T* y) {
  if (!o.bias && !ctx.fused_relu) return;
  const T* b = o.bias ? bias.value.data<T>() : nullptr;
  if (!splits_by_samples(ctx, samples)) return bias_relu(ctx.pool, samples * pixels, o.filters, b, ctx.fused_relu, y);
  by_samples(ctx.pool, samples, samples * pixels * o.filters, [&](int64_t s0, int64_t s1) {
    bias_relu(nullptr, (s1 - s0) * pixels, o.filters, b, ctx.fused_relu, y + s0 * pixels * o.filters);
  });
}

// With a relu fused (ctx.fused_relu), dy (`samples` of `size` values), the relu's output
// gradient, becomes this layer's in place: dy where y, the relu's output, is > 0, which is where
// its input was (the relu's own backward, its bits) (splits_by_samples).
template <class T>
void take_relu_grad(const LayerContext& ctx, int64_t samples, int64_t size, const T* y, T* dy) {
  if (!ctx.fused_relu) return;
  if (!splits_by_samples(ctx, samples)) return unary_grad(ctx.pool, UnaryOp::relu, samples * size, T(0), y, dy, dy);
  by_samples(ctx.pool, samples, samples * size, [&](int64_t s0, int64_t s1) {
    unary_grad(nullptr, UnaryOp::relu, (s1 - s0) * size, T(0), y + s0 * size, dy + s0 * size, dy + s0 * size);
  });
}

// A conv section's `algorithm`: auto (unset), gemm or winograd (3x3, stride 1, pad <= 2).
Result<std::optional<ConvAlgorithm>> algorithm_from_cfg(const CfgSection& section, const ConvOptions& o) {
  RG_ASSIGN(const std::string name, section.get_string_or("algorithm", "auto"));
  if (name == "auto") return std::optional<ConvAlgorithm>();
  if (name == "gemm") return std::optional<ConvAlgorithm>(ConvAlgorithm::gemm);
  if (name != "winograd") {
    return Status::error(section.where("algorithm") + "'" + name + "' is not auto, gemm or winograd");
  }
  if (o.kernel != 3 || o.stride != 1 || o.pad > 2) {
    return Status::error(section.where("algorithm") +
                         "winograd (F(4x4, 3x3)) needs size = 3, stride = 1 and pad <= 2");
  }
  return std::optional<ConvAlgorithm>(ConvAlgorithm::winograd);
}

// The keys of a "conv", "conv_transpose" or "depthwise_conv" section (depthwise: no filters).
Result<ConvOptions> options_from_cfg(const CfgSection& section, bool transposed, bool depthwise = false) {
  ConvOptions o;
  if (!depthwise) {
    RG_ASSIGN(o.filters, section.get_int("filters", 1, 1 << 16));
  }
  RG_ASSIGN(o.kernel, section.get_int("size", 1, 64));
  RG_ASSIGN(o.stride, section.get_int_or("stride", 1, 1, 64));
  RG_ASSIGN(o.pad, section.get_int_or("pad", 0, 0, 63));
  if (transposed) {
    RG_ASSIGN(o.output_pad, section.get_int_or("output_pad", 0, 0, 63));
  }
  RG_ASSIGN(o.init, init_from_section(section));
  RG_ASSIGN(o.bias, section.get_bool_or("bias", true));
  if (!transposed && !depthwise) {
    RG_ASSIGN(o.algorithm, algorithm_from_cfg(section, o));
  }
  return o;
}

// The patch-matrix workspace for chunks of up to `per_chunk` samples (none when pointwise).
Tensor patch_panel(const LayerContext& ctx, const ConvGeometry& g, int64_t per_chunk, DType dtype) {
  if (g.pointwise()) return Tensor();
  return scratch(ctx, Shape{per_chunk * g.patches(), g.patch_size()}, dtype);
}

// images [count, h, w, c] = the sums of their patch rows in cols (the images are overwritten).
template <class T>
void scatter_patches(ThreadPool* pool, const ConvGeometry& g, const T* cols, int64_t count, T* images) {
  const int64_t image_size = g.height * g.width * g.channels, panel = g.patches() * g.patch_size();
  parallel_for(pool, count, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      T* image = images + i * image_size;
      std::fill(image, image + image_size, T(0));
      col2im_add(g, cols + i * panel, image);
    }
  });
}

// The chunk's images as the direct convolution reads them: `images` itself without padding,
// else their padded copy in `space` [count, padded_size], made over the pool by samples.
template <class T>
const T* padded_chunk(ThreadPool* pool, const ConvGeometry& g, const T* images, int64_t count, T* space) {
  if (g.pad == 0) return images;
  const int64_t image_size = g.height * g.width * g.channels;
  parallel_for(pool, count, 1, [&](int64_t b, int64_t e) {
    pad_images(g, images + b * image_size, e - b, space + b * g.padded_size());
  });
  return space;
}

// flipped [k, k, filters, c] = weight [k, k, c, filters] turned 180 degrees with its channel
// axes swapped: the weight of the convolution that takes dy to dx at stride 1.
template <class T>
void flip_weight(int64_t k, int64_t c, int64_t filters, const T* weight, T* flipped) {
  for (int64_t kh = 0; kh < k; ++kh)
    for (int64_t kw = 0; kw < k; ++kw) {
      const T* tap = weight + ((k - 1 - kh) * k + (k - 1 - kw)) * c * filters;  // [c, filters]
      T* out = flipped + (kh * k + kw) * filters * c;                           // [filters, c]
      for (int64_t f = 0; f < filters; ++f)
        for (int64_t ch = 0; ch < c; ++ch) out[f * c + ch] = tap[ch * filters + f];
    }
}

// The f32 products of a convolution, Winograd where the layer chose it and the context runs
// f32 products (int8 training's stay on the GEMM), else the gathered GEMM over `at`.
// y[pixels x filters] = patches[pixels x k] * W[k x filters]; `winograd_space` holds the
// transformed weight (already made from W) and the lanes.
struct ConvPass {
  const ConvGeometry* g;
  const PatchOffsets* at;
  const WinogradConv* winograd;  // null: the gathered GEMM
  float* winograd_space;
};
// Whether a pass runs Winograd: the layer chose it (`winograd` given) and the products are f32.
// Winograd reads the images unpadded (the pixels past them a zero row): no padded copy is made.
template <class T>
bool runs_winograd(const LayerContext& ctx, const WinogradConv* winograd) {
  return std::is_same_v<T, float> && winograd != nullptr && ctx.gemm == GemmPrecision::f32;
}

// Whether a pass of `filters` columns runs the planar form (ops/conv_planar.h): f32 products of a
// shape it takes. It pads each sample itself: no padded copy is made.
template <class T>
bool runs_planar(const LayerContext& ctx, const ConvGeometry& g, int64_t filters) {
  return std::is_same_v<T, float> && ctx.gemm == GemmPrecision::f32 && planar_conv_wins(g, filters);
}

// Whether the adjoint runs by phases: the layer has them and the products are f32.
template <class T>
bool runs_phases(const LayerContext& ctx, bool has_phases) {
  return std::is_same_v<T, float> && has_phases && ctx.gemm == GemmPrecision::f32;
}

// The pass of one convolution of a call: Winograd (w's transform made in `space`) where
// runs_winograd, else the gathered GEMM's.
template <class T>
ConvPass winograd_pass(const LayerContext& ctx, const WinogradConv* winograd, const T* w, T* space,
                       const ConvGeometry& g, const PatchOffsets& at) {
  if constexpr (std::is_same_v<T, float>) {
    if (runs_winograd<T>(ctx, winograd)) {
      winograd->transform_weight(ctx.pool, w, space);
      return ConvPass{&g, &at, winograd, space};
    }
  }
  return ConvPass{&g, &at, nullptr, nullptr};
}

// The images a pass reads: as they are for Winograd and the planar form (`as_they_are`), else
// their padded copy made in `space`.
template <class T>
const T* pass_images(ThreadPool* pool, bool as_they_are, const ConvGeometry& g, const T* images, int64_t count,
                     T* space) {
  return as_they_are ? images : padded_chunk(pool, g, images, count, space);
}

// y of `count` images: Winograd's and the planar form's (f32 products, few filters: the gathered
// GEMM's bits, ops/conv_planar.h) over them as they are, the gathered GEMM's over their padded copy.
template <class T>
void conv_pass(const LayerContext& ctx, GemmRoles roles, int64_t weight_channels, const ConvPass& pass, int64_t count,
               const T* images, const T* w, int64_t filters, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (pass.winograd != nullptr) {
      float* u = pass.winograd_space;
      pass.winograd->run(ctx.pool, count, images, u, y, u + pass.winograd->weight_elements());
      return;
    }
    if (runs_planar<T>(ctx, *pass.g, filters)) {
      f32_conv_planar(ctx.pool, *pass.g, count, images, w, filters, y);
      return;
    }
  }
  layer_gemm_gathered(ctx, roles, weight_channels, count * pass.g->patches(), filters, pass.g->patch_size(), T(1),
                      GatheredA<T>{images, pass.at->pixels.data(), pass.at->taps.data()}, w, filters, T(0), y, filters);
}

// dW[k x filters] (+)= keep dW + patches^T * dy over the gathered patches (split over the pixels
// into `partials`, ConvLayer::weight_grad_partials), or Winograd's sums (scratch in `space`)
// where the layer runs Winograd and the products are f32, or the planar form's (its sample blocks
// in the same partials) where it runs that.
template <class T>
void weight_grad_pass(const LayerContext& ctx, const WinogradConv* winograd, const ConvGeometry& g,
                      const PatchOffsets& at, int64_t count, const T* images, const T* dy, int64_t filters, T keep,
                      T* dw, T* space, T* partials) {
  if constexpr (std::is_same_v<T, float>) {
    if (runs_winograd<T>(ctx, winograd)) {
      winograd->weight_grad(ctx.pool, count, images, dy, keep, dw, space);
      return;
    }
    if (runs_planar<T>(ctx, g, filters)) {
      f32_conv_planar_weight_grad(ctx.pool, g, count, images, dy, filters, keep, dw, partials);
      return;
    }
  }
  layer_gemm_gathered_depth_split(ctx, kWeightGradProduct, g.patch_size(), filters, count * g.patches(), T(1),
                                  GatheredA<T>{images, at.taps.data(), at.pixels.data()}, dy, filters, keep, dw, filters,
                                  partials);
}

// Whether a pass over a batch runs the planar form over all its samples at once rather than in
// chunk_samples' chunks: it gathers no patch matrix and pads each sample itself (no chunk
// scratch), and Conv2D::weight_grad_partials reserves its weight gradient's partials for the
// batch. So each thread keeps the samples the passes around it split the same way (a pool's, the
// relu's, by_samples): lenet's conv1 ran in chunks of 50 and 14.
template <class T>
bool planar_whole_batch(const LayerContext& ctx, const WinogradConv* winograd, const ConvGeometry& g, int64_t filters) {
  return !runs_winograd<T>(ctx, winograd) && runs_planar<T>(ctx, g, filters);
}

Status expect_image(const Shape& input) {
  if (input.rank() != 3) {
    return Status::error("a convolution takes images (height x width x channels), not " + input.str());
  }
  return Status();
}
// The depthwise sums, picked here: f32 by the kernel table, f64 by ops' scalar loops.
template <class T>
void depthwise_pass(int64_t c, int64_t pixels, int64_t taps, const T* const* rows, const T* w, const T* bias, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    f32_vector().depthwise(c, pixels, taps, rows, w, bias, out);
  } else {
    depthwise_rows(c, pixels, taps, rows, w, bias, out);
  }
}

template <class T>
void depthwise_weight_grad_pass(int64_t c, int64_t pixels, int64_t taps, const T* const* rows, const T* dy, T* dw) {
  if constexpr (std::is_same_v<T, float>) {
    f32_vector().depthwise_weight_grad(c, pixels, taps, rows, dy, dw);
  } else {
    depthwise_weight_grad_rows(c, pixels, taps, rows, dy, dw);
  }
}
}  // namespace

// ---------------------------------------------------------------- shared

Status ConvLayer::init(Rng& rng, DType dtype) {
  RG_ASSIGN(weight_.value, Tensor::zeros(weight_shape_, dtype, name() + ".weight"));
  weight_.channels = options_.filters;  // the fastest axis of [patch, filters] and [channels, (tap, filter)]
  RG_ASSIGN(weight_.grad, Tensor::zeros(weight_shape_, dtype, name() + ".weight.grad"));
  weight_.name = name() + ".weight";
  initialise(weight_.value, options_.init, fan_in_, fan_out_, rng);
  if (options_.bias) {
    RG_ASSIGN(bias_.value, Tensor::zeros(Shape{options_.filters}, dtype, name() + ".bias"));
    RG_ASSIGN(bias_.grad, Tensor::zeros(Shape{options_.filters}, dtype, name() + ".bias.grad"));
    bias_.name = name() + ".bias";
  }
  return Status();
}

std::vector<Param*> ConvLayer::params() {
  if (options_.bias) return {&weight_, &bias_};
  return {&weight_};
}

int64_t ConvLayer::parameter_count() const {
  return weight_shape_.numel() + (options_.bias ? options_.filters : 0);
}

int64_t ConvLayer::chunk_samples(int64_t n) const {
  const int64_t per_sample = std::max<int64_t>(1, scratch_per_sample());
  return std::max<int64_t>(1, std::min(n, kConvChunkElements / per_sample));
}

int64_t ConvLayer::workspace_elements(int64_t n) const {
  return chunk_samples(n) * scratch_per_sample() + scratch_fixed(chunk_samples(n)) + weight_grad_partials(n);
}

int64_t ConvLayer::weight_grad_partials(int64_t n) const {
  // Both products have the patch's taps as rows: Conv2D's dW, ConvTranspose2D's dW^T.
  return gemm_depth_partials(patch_cols(), weight_shape_.numel() / patch_cols(), chunk_samples(n) * patch_rows());
}

int64_t Conv2D::weight_grad_partials(int64_t n) const {
  const int64_t gathered = ConvLayer::weight_grad_partials(n);
  if (!planar_conv_wins(geometry_, options_.filters)) return gathered;
  return std::max(gathered, planar_weight_grad_partials(geometry_, options_.filters, n));
}

void ConvLayer::prepare_offsets(int64_t count) {
  if (count == offsets_count_) return;
  offsets_ = patch_offsets(geometry_, count);
  offsets_count_ = count;
}

void ConvLayer::set_weight_shape(const Shape& shape, int64_t fan_in, int64_t fan_out) {
  weight_shape_ = shape;
  fan_in_ = fan_in;
  fan_out_ = fan_out;
}

std::string ConvLayer::describe() const {
  std::string text = std::to_string(options_.kernel) + "x" + std::to_string(options_.kernel) + " stride " +
                     std::to_string(options_.stride) + " pad " + std::to_string(options_.pad);
  if (options_.output_pad > 0) text += " output_pad " + std::to_string(options_.output_pad);
  text += std::string(", init ") + init_name(options_.init) + (options_.bias ? "" : ", no bias");
  return text + describe_algorithm();
}

// ---------------------------------------------------------------- Conv2D

Result<std::unique_ptr<Layer>> Conv2D::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const ConvOptions options, options_from_cfg(section, false));
  return std::unique_ptr<Layer>(new Conv2D(options));
}

Result<Shape> Conv2D::configure(const Shape& input) {
  RG_TRY(expect_image(input));
  const ConvOptions& o = options_;
  RG_ASSIGN(geometry_, conv_geometry(input[0], input[1], input[2], o.kernel, o.stride, o.pad));
  set_weight_shape(Shape{geometry_.patch_size(), o.filters}, geometry_.patch_size(), o.kernel * o.kernel * o.filters);
  RG_TRY(set_algorithm(o.algorithm.value_or(ConvAlgorithm::gemm)));
  return Shape{geometry_.out_h, geometry_.out_w, o.filters};
}

// A chunk's scratch: [padded x | padded dy (direct dx), or dx's patch matrix or phases (the padded
// dy and the largest phase's output), whichever is larger]; a layer that may
// run Winograd (forced, or auto: the choice comes after the memory plan) keeps room for both.
// The sizes depend on which algorithms the layer may run, never on the one chosen (an auto
// layer's plan is made before the choice, and chunks stay the same either way).
int64_t Conv2D::scratch_per_sample() const {
  const int64_t padded_x = geometry_.pad > 0 ? geometry_.padded_size() : 0;
  const int64_t padded_dy = flipped_geometry_.padded_size(), cols = patch_rows() * patch_cols();
  const int64_t cols_or_phases = std::max(cols, has_phases_ ? phases_.scratch_per_sample() : 0);
  return padded_x + std::max(gemm_direct_dx_ ? padded_dy : cols_or_phases, reserves_winograd_ ? padded_dy : 0);
}

// The flipped weight (direct dx) or the phases' weights, then the larger of Winograd's forward and
// dx parts (the transformed weight and the lanes) where the layer may run it.
int64_t Conv2D::scratch_fixed(int64_t per_chunk) const {
  if (has_phases_) return phases_.weight_elements();  // a stride above 1: neither of the others
  const int64_t flipped = gemm_direct_dx_ || reserves_winograd_ ? weight_shape_.numel() : 0;
  if (!reserves_winograd_) return flipped;
  const int64_t forward = winograd_.weight_elements() + winograd_.scratch_elements(per_chunk);
  const int64_t dw_or_dx = std::max(winograd_.weight_grad_scratch_elements(per_chunk), winograd_dx_.scratch_elements(per_chunk));
  return flipped + std::max(forward, winograd_dx_.weight_elements() + dw_or_dx);  // dx's U stays over the chunks
}

std::string Conv2D::describe_algorithm() const {
  return algorithm_ == ConvAlgorithm::winograd ? ", winograd" : "";
}

int64_t Conv2D::executed_flops_per_sample(int phase) const {
  const WinogradConv* plan = winograd(phase == 2);
  if (plan != nullptr) return plan->executed_flops_per_sample(phase == 1);
  // The planar form's lanes, the rows rounded to its tile and the padded width (f32 products).
  const bool dx = phase == 2 && direct_dx_;
  const ConvGeometry& g = dx ? dx_geometry_ : geometry_;
  const int64_t columns = dx ? geometry_.channels : options_.filters;
  if ((phase == 0 || dx) && planar_conv_wins(g, columns)) return 2 * planar_conv_lanes(g, columns);
  if (phase == 1 && planar_conv_wins(geometry_, options_.filters))
    return 2 * planar_weight_grad_lanes(geometry_, options_.filters);
  return 0;
}

const WinogradConv* Conv2D::winograd(bool dx) const {
  if (algorithm_ != ConvAlgorithm::winograd) return nullptr;
  return dx ? &winograd_dx_ : &winograd_;
}

// Under the GEMM, dx directly at stride 1 when its multiply-adds, tiles of 16 columns counted,
// cost less than im2col's route, whose GEMM writes a patch matrix that col2im (~4 adds per value)
// reads back; under Winograd always (the same Winograd convolution over dy, padded by 2 - pad).
// Where a sample's patch matrix is large (kLargePatchMatrix) and the direct dx would run in the
// planar form (few channels, ops/conv_planar.h), that form's lanes are its count and a patch
// value costs kCol2imLanes: lenet's conv2 (14x14x6, 16 filters; a 3.8 MB matrix a step) ran its
// im2col dx at 3.8 ms a step and the planar one at 1.23 on the Zen 3 VM (512 KB of L2), 0.76-
// 0.84 against 0.60-0.62 ms on the Xeon (bench/RESULTS.md), where the old count said im2col's was
// half the cost: the matrix's way out of L2 and back (its write, the read for ownership, col2im's
// read and add) and a GEMM of depth 16 cost ~3x the count. By the shape alone (the two routes'
// bits differ): no preset's other layer changes route (a 4-channel rcl of test_memory_plan's pins does).
Status Conv2D::set_algorithm(ConvAlgorithm a) {
  const ConvGeometry& g = geometry_;
  const ConvOptions& o = options_;
  if (a == ConvAlgorithm::winograd && !winograd_fits()) {
    return Status::error(name() + ": Winograd F(4x4, 3x3) needs a 3x3 kernel at stride 1 with a pad of at most 2, not " +
                         describe());
  }
  gemm_direct_dx_ = o.stride == 1 && direct_dx_costs_less();
  direct_dx_ = a == ConvAlgorithm::winograd || gemm_direct_dx_;
  reserves_winograd_ = a == ConvAlgorithm::winograd || (!o.algorithm && winograd_candidate());
  has_phases_ = o.stride > 1 && ConvPhases::fits(g, o.filters);
  if (has_phases_) phases_ = ConvPhases(g, o.filters);
  flipped_geometry_ = ConvGeometry{};
  if (gemm_direct_dx_ || reserves_winograd_) {
    RG_ASSIGN(flipped_geometry_, conv_geometry(g.out_h, g.out_w, o.filters, o.kernel, 1, o.kernel - 1 - o.pad));
  }
  dx_geometry_ = direct_dx_ ? flipped_geometry_ : ConvGeometry{};
  if (reserves_winograd_) {
    winograd_ = WinogradConv(g, o.filters);
    winograd_dx_ = WinogradConv(flipped_geometry_, g.channels);
  }
  algorithm_ = a;
  offsets_count_ = 0;  // dx_offsets_ to be rebuilt
  return Status();
}

bool Conv2D::direct_dx_costs_less() const {
  const ConvGeometry& g = geometry_;
  const ConvOptions& o = options_;
  int64_t direct = g.height * g.width * o.kernel * o.kernel * o.filters * round_up(g.channels, 16);
  int64_t col2im = 4;
  if (g.patches() * g.patch_size() > kLargePatchMatrix) {
    const ConvGeometry flipped = conv_geometry(g.out_h, g.out_w, o.filters, o.kernel, 1, o.kernel - 1 - o.pad).value();
    if (planar_conv_wins(flipped, g.channels)) {
      direct = planar_conv_lanes(flipped, g.channels);
      col2im = kCol2imLanes;
    }
  }
  return direct <= g.patches() * (o.filters * round_up(g.patch_size(), 16) + col2im * g.patch_size());
}

void Conv2D::prepare_offsets(int64_t count) {
  if (count == offsets_count_) return;
  ConvLayer::prepare_offsets(count);
  if (direct_dx_) dx_offsets_ = patch_offsets(dx_geometry_, count);
}

void Conv2D::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0], filters = options_.filters;
  const int64_t in_sample = x.numel() / n, out_sample = y.numel() / n;
  const int64_t chunk = chunk_samples(n);
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Tensor space = scratch(ctx, Shape{workspace_elements(n)}, x.dtype());
    prepare_offsets(chunk);
    const ConvPass pass = winograd_pass<T>(ctx, winograd(), weight_.value.data<T>(),
                                           space.data<T>() + chunk * scratch_per_sample(), geometry_, offsets_);
    const int64_t per_chunk = planar_whole_batch<T>(ctx, winograd(), geometry_, filters) ? n : chunk;
    for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
      const int64_t count = std::min(per_chunk, n - s0);
      const T* images = pass_images(ctx.pool, pass.winograd != nullptr || runs_planar<T>(ctx, geometry_, filters),
                                    geometry_, x.data<T>() + s0 * in_sample, count, space.data<T>());
      T* y_chunk = y.data<T>() + s0 * out_sample;
      conv_pass(ctx, kForwardProduct, filters, pass, count, images, weight_.value.data<T>(), filters, y_chunk);
      finish_output(ctx, options_, bias_, count, patch_rows(), y_chunk);  // the chunk still in cache
    }
  });
}

void Conv2D::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx, const LayerContext& ctx) {
  const ConvGeometry& g = geometry_;
  const int64_t n = x.shape()[0], filters = options_.filters, k = patch_cols();
  const int64_t in_sample = x.numel() / n, out_sample = dy.numel() / n;
  const int64_t chunk = chunk_samples(n);
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const Tensor space = scratch(ctx, Shape{workspace_elements(n)}, x.dtype());
    T* padded_x = space.data<T>();
    T* dx_space = padded_x + (g.pad > 0 ? chunk * g.padded_size() : 0);
    T* flipped = padded_x + chunk * scratch_per_sample();
    prepare_offsets(chunk);
    // Without dx (a first layer) only the weight gradient reads the chunks.
    const int64_t per_chunk = !dx.defined() && planar_whole_batch<T>(ctx, winograd(), g, filters) ? n : chunk;
    const PatchOffsets& at = offsets_;
    T* dw_space = flipped + weight_shape_.numel() + (reserves_winograd_ ? winograd_dx_.weight_elements() : 0);
    ConvPass dx_pass{&dx_geometry_, &dx_offsets_, nullptr, nullptr};
    const bool phases = dx.defined() && runs_phases<T>(ctx, has_phases_);
    if (phases) {
      const InputGradScope timed(ctx);
      if constexpr (std::is_same_v<T, float>)
        phases_.transform_weight(weight_.value.data<T>(), ConvWeightLayout{g.channels * filters, filters, 1}, flipped);
    }
    if (dx.defined() && direct_dx_) {
      const InputGradScope timed(ctx);
      flip_weight(options_.kernel, g.channels, filters, weight_.value.data<T>(), flipped);
      dx_pass = winograd_pass<T>(ctx, winograd(true), flipped, flipped + weight_shape_.numel(), dx_geometry_,
                                 dx_offsets_);
    }
    for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
      const int64_t count = std::min(per_chunk, n - s0), pixels = count * patch_rows();
      T* g_chunk = dy.data<T>() + s0 * out_sample;
      take_relu_grad(ctx, count, out_sample, y.data<T>() + s0 * out_sample, g_chunk);  // then read from cache
      const bool as_they_are = runs_winograd<T>(ctx, winograd()) || runs_planar<T>(ctx, g, filters);
      const T* images = pass_images(ctx.pool, as_they_are, g, x.data<T>() + s0 * in_sample, count, padded_x);
      // dW[k x filters] (+)= patches^T * dy: the transposed patch matrix is gathered too, taps
      // as rows and pixels as depth (or Winograd's sums where the forward runs Winograd, or the
      // planar form's where it runs that). The first chunk overwrites unless accumulating.
      const T keep = (s0 > 0 || ctx.accumulate_grads) ? T(1) : T(0);
      weight_grad_pass(ctx, winograd(), g, at, count, images, g_chunk, filters, keep, weight_.grad.data<T>(), dw_space,
                       weight_grad_partials_in<T>(space, n));
      if (!dx.defined()) continue;
      const InputGradScope timed(ctx);
      T* dx_chunk = dx.data<T>() + s0 * in_sample;
      if (direct_dx_) {
        // dx[h*w x c] = patches of padded dy [h*w x k*k*filters] * flipped [k*k*filters x c]
        const bool as_they_are = dx_pass.winograd != nullptr || runs_planar<T>(ctx, dx_geometry_, g.channels);
        const T* dy_images = pass_images(ctx.pool, as_they_are, dx_geometry_, g_chunk, count, dx_space);
        conv_pass(ctx, kInputGradProduct, filters, dx_pass, count, dy_images, flipped, g.channels, dx_chunk);
        continue;
      }
      if constexpr (std::is_same_v<T, float>) {
        if (phases) {  // by phases, their weights in `flipped`'s place
          phases_.run(ctx.pool, count, g_chunk, flipped, dx_chunk, dx_space);
          continue;
        }
      }
      // d(patches)[pixels x k] = dy * W^T, then each patch row added back where it was read
      layer_gemm(ctx, kInputGradProduct, filters, GemmShape{Trans::no, Trans::yes, pixels, k, filters, filters, filters, k}, T(1),
                 g_chunk, weight_.value.data<T>(), T(0), dx_space);
      scatter_patches(ctx.pool, g, dx_space, count, dx_chunk);
    }
    if (options_.bias) {  // over dy as the chunks left it (the relu's gradient taken)
      if (!ctx.accumulate_grads) bias_.grad.fill_zero();
      column_sum(ctx.pool, n * patch_rows(), filters, dy.data<T>(), bias_.grad.data<T>());
    }
  });
}

// ---------------------------------------------------------------- ConvTranspose2D

Result<std::unique_ptr<Layer>> ConvTranspose2D::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const ConvOptions options, options_from_cfg(section, true));
  return std::unique_ptr<Layer>(new ConvTranspose2D(options));
}

Result<Shape> ConvTranspose2D::configure(const Shape& input) {
  RG_TRY(expect_image(input));
  const ConvOptions& o = options_;
  if (o.output_pad >= o.stride) {
    return Status::error("output_pad " + std::to_string(o.output_pad) + " must be smaller than the stride " +
                         std::to_string(o.stride));
  }
  const int64_t out_h = (input[0] - 1) * o.stride - 2 * o.pad + o.kernel + o.output_pad;
  const int64_t out_w = (input[1] - 1) * o.stride - 2 * o.pad + o.kernel + o.output_pad;
  if (out_h < 1 || out_w < 1) {
    return Status::error("pad " + std::to_string(o.pad) + " leaves no output for a " + std::to_string(input[0]) + "x" +
                         std::to_string(input[1]) + " input");
  }
  // The output is the image of a convolution whose patch grid is this layer's input.
  RG_ASSIGN(geometry_, conv_geometry(out_h, out_w, o.filters, o.kernel, o.stride, o.pad));
  if (geometry_.out_h != input[0] || geometry_.out_w != input[1]) {
    return Status::error("internal: transposed geometry does not invert for " + input.str());
  }
  set_weight_shape(Shape{input[2], geometry_.patch_size()}, geometry_.patch_size(), o.kernel * o.kernel * input[2]);
  has_phases_ = !geometry_.pointwise() && ConvPhases::fits(geometry_, input[2]);
  if (has_phases_) phases_ = ConvPhases(geometry_, input[2]);
  return Shape{out_h, out_w, o.filters};
}

// Forward: the patch matrix col2im reads (none when pointwise: the GEMM writes y itself) or the
// phases' padded x and output; backward: the padded dy its patches are gathered from.
int64_t ConvTranspose2D::scratch_per_sample() const {
  const int64_t cols = geometry_.pointwise() ? 0 : patch_rows() * patch_cols();
  return std::max({cols, geometry_.padded_size(), has_phases_ ? phases_.scratch_per_sample() : 0});
}

int64_t ConvTranspose2D::scratch_fixed(int64_t) const { return 2 * weight_shape_.numel(); }

void ConvTranspose2D::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0];
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (runs_phases<T>(ctx, has_phases_)) {
      if constexpr (std::is_same_v<T, float>) forward_by_phases(x, y, ctx);
    } else {
      forward_by_patches<T>(x, y, ctx);
    }
    finish_output(ctx, options_, bias_, n, geometry_.height * geometry_.width, y.data<T>());
  });
}

// y by im2col's route: per chunk, cols[rows x k] = x * W, then col2im adds the patch rows back
// (the GEMM writes y itself when pointwise).
template <class T>
void ConvTranspose2D::forward_by_patches(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0], channels = x.shape()[3], k = patch_cols();
  const int64_t in_sample = x.numel() / n, out_sample = y.numel() / n, per_chunk = chunk_samples(n);
  const Tensor panel = patch_panel(ctx, geometry_, per_chunk, x.dtype());
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    const int64_t count = std::min(per_chunk, n - s0), rows = count * patch_rows();
    T* y_chunk = y.data<T>() + s0 * out_sample;
    T* cols = panel.defined() ? panel.data<T>() : y_chunk;
    // cols[rows x k] = x[rows x channels] * W[channels x k]
    layer_gemm(ctx, kForwardProduct, options_.filters, GemmShape{Trans::no, Trans::no, rows, k, channels, channels, k, k},
               T(1), x.data<T>() + s0 * in_sample, weight_.value.data<T>(), T(0), cols);
    if (geometry_.pointwise()) continue;
    scatter_patches(ctx.pool, geometry_, cols, count, y_chunk);
  }
}

// y = the adjoint of x by phases (the bias not added): [phases' scratch a chunk | their weights].
void ConvTranspose2D::forward_by_phases(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const int64_t n = x.shape()[0], in_sample = x.numel() / n, out_sample = y.numel() / n, per_chunk = chunk_samples(n);
  const Tensor space = scratch(ctx, Shape{workspace_elements(n)}, DType::f32);
  float* phase_weights = space.f32() + per_chunk * scratch_per_sample();
  phases_.transform_weight(weight_.value.f32(), ConvWeightLayout{options_.filters, 1, patch_cols()}, phase_weights);
  for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
    phases_.run(ctx.pool, std::min(per_chunk, n - s0), x.f32() + s0 * in_sample, phase_weights,
                y.f32() + s0 * out_sample, space.f32());
  }
}

void ConvTranspose2D::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                               const LayerContext& ctx) {
  const ConvGeometry& g = geometry_;  // over dy: its patches are this layer's input pixels
  const int64_t n = x.shape()[0], channels = x.shape()[3], k = patch_cols();
  const int64_t in_sample = x.numel() / n, out_sample = dy.numel() / n;
  const int64_t per_chunk = chunk_samples(n);
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    take_relu_grad(ctx, n, dy.numel() / n, y.data<T>(), dy.data<T>());
    if (options_.bias) {
      if (!ctx.accumulate_grads) bias_.grad.fill_zero();
      column_sum(ctx.pool, n * g.height * g.width, options_.filters, dy.data<T>(), bias_.grad.data<T>());
    }
    // Scratch: [padded dy chunk | W^T [k x channels] | a chunk's dW^T [k x channels] | dW's partials].
    const Tensor space = scratch(ctx, Shape{workspace_elements(n)}, x.dtype());
    T* padded_dy = space.data<T>();
    T* weight_t = padded_dy + per_chunk * scratch_per_sample();
    T* grad_t = weight_t + k * channels;
    const T* weight = weight_.value.data<T>();  // [channels, k]
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t t = 0; t < k; ++t) weight_t[t * channels + c] = weight[c * k + t];
    prepare_offsets(per_chunk);
    T* grad = weight_.grad.data<T>();  // [channels, k]
    for (int64_t s0 = 0; s0 < n; s0 += per_chunk) {
      const int64_t count = std::min(per_chunk, n - s0), pixels = count * patch_rows();
      const T* images = padded_chunk(ctx.pool, g, dy.data<T>() + s0 * out_sample, count, padded_dy);
      const T* x_chunk = x.data<T>() + s0 * in_sample;
      // dW^T[k x channels] = dcols^T * x, dcols being dy's patch matrix, gathered (taps as rows)
      layer_gemm_gathered_depth_split(ctx, kWeightGradProductErrorsFirst, k, channels, pixels, T(1),
                                      GatheredA<T>{images, offsets_.taps.data(), offsets_.pixels.data()}, x_chunk,
                                      channels, T(0), grad_t, channels, weight_grad_partials_in<T>(space, n));
      const bool keep = s0 > 0 || ctx.accumulate_grads;  // the first chunk overwrites unless accumulating
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t t = 0; t < k; ++t) grad[c * k + t] = (keep ? grad[c * k + t] : T(0)) + grad_t[t * channels + c];
      // dx[pixels x channels] = dcols * W^T
      if (dx.defined()) {
        const InputGradScope timed(ctx);
        layer_gemm_gathered(ctx, kInputGradProduct, options_.filters, pixels, channels, k, T(1),
                            GatheredA<T>{images, offsets_.pixels.data(), offsets_.taps.data()}, weight_t, channels,
                            T(0), dx.data<T>() + s0 * in_sample, channels);
      }
    }
  });
}

// ---------------------------------------------------------------- DepthwiseConv2D

Result<std::unique_ptr<Layer>> DepthwiseConv2D::from_cfg(const CfgSection& section) {
  RG_ASSIGN(const ConvOptions options, options_from_cfg(section, false, true));
  return std::unique_ptr<Layer>(new DepthwiseConv2D(options));
}

Result<Shape> DepthwiseConv2D::configure(const Shape& input) {
  RG_TRY(expect_image(input));
  const int64_t k = options_.kernel, c = input[2];
  RG_ASSIGN(geometry_, conv_geometry(input[0], input[1], c, k, options_.stride, options_.pad));
  options_.filters = c;
  set_weight_shape(Shape{k * k, c}, k * k, k * k);
  return Shape{geometry_.out_h, geometry_.out_w, c};
}

void DepthwiseConv2D::forward(const Tensor& x, const Tensor& y, const LayerContext& ctx) {
  const ConvGeometry& g = geometry_;
  const int64_t n = x.shape()[0], taps = g.kernel * g.kernel;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* w = weight_.value.data<T>();
    const T* bias = options_.bias ? bias_.value.data<T>() : nullptr;
    T* out = y.data<T>();
    const int64_t out_sample = g.patches() * g.channels, in_sample = x.numel() / n, row = g.out_w * g.channels;
    const T* images = x.data<T>();
    depthwise_each_row(
        ctx.pool, n, g.out_h, g.out_w * taps, g.channels, T(0),
        [&](int64_t s, int64_t r, const T* pad, const T** rows) {
          depthwise_forward_row(g, r, images + s * in_sample, pad, rows);
        },
        [&](int64_t s, int64_t r, const T* const* rows) {
          depthwise_pass(g.channels, g.out_w, taps, rows, w, bias, out + s * out_sample + r * row);
        });
    bias_relu(ctx.pool, n * g.patches(), g.channels, static_cast<const T*>(nullptr), ctx.fused_relu, out);
  });
}

void DepthwiseConv2D::backward(const Tensor& x, const Tensor& y, const Tensor& dy, const Tensor& dx,
                               const LayerContext& ctx) {
  const ConvGeometry& g = geometry_;
  const int64_t n = x.shape()[0], c = g.channels, taps = g.kernel * g.kernel, out_sample = g.patches() * c;
  dispatch_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    take_relu_grad(ctx, n, dy.numel() / n, y.data<T>(), dy.data<T>());
    if (options_.bias) {
      if (!ctx.accumulate_grads) bias_.grad.fill_zero();
      column_sum(ctx.pool, n * g.patches(), c, dy.data<T>(), bias_.grad.data<T>());
    }
    if (!ctx.accumulate_grads) weight_.grad.fill_zero();
    T* dw = weight_.grad.data<T>();
    const T* g_all = dy.data<T>();
    // dW[t, ch] += x's rows times dy, row after row in order (no pool: the sum's order is fixed)
    const T* images = x.data<T>();
    const int64_t in_sample = x.numel() / n, out_row = g.out_w * c;
    depthwise_each_row(
        static_cast<ThreadPool*>(nullptr), n, g.out_h, g.out_w * taps, c, T(0),
        [&](int64_t s, int64_t r, const T* pad, const T** rows) {
          depthwise_forward_row(g, r, images + s * in_sample, pad, rows);
        },
        [&](int64_t s, int64_t r, const T* const* rows) {
          depthwise_weight_grad_pass(c, g.out_w, taps, rows, g_all + s * out_sample + r * out_row, dw);
        });
    if (!dx.defined()) return;
    const InputGradScope timed(ctx);
    // dx[pixel, ch] = sum over taps of the dy row whose window put that tap on the pixel, times w
    const T* w = weight_.value.data<T>();
    T* dx_all = dx.data<T>();
    const int64_t in_row = g.width * c;
    depthwise_each_row(
        ctx.pool, n, g.height, g.width * taps, c, T(0),
        [&](int64_t s, int64_t r, const T* pad, const T** rows) {
          depthwise_input_grad_row(g, r, g_all + s * out_sample, pad, rows);
        },
        [&](int64_t s, int64_t r, const T* const* rows) {
          depthwise_pass(c, g.width, taps, rows, w, static_cast<const T*>(nullptr), dx_all + s * in_sample + r * in_row);
        });
  });
}

}  // namespace rg
