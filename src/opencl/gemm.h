// Host launcher of kernels/gemm.cl: C = alpha * op(A) * op(B) + beta * C, row-major, with
// ops/gemm.h's GemmShape (the CPU's contract, so a layer can call either backend alike).
#pragma once

#include <vector>

#include "base/status.h"
#include "ops/gemm.h"
#include "ops/im2col.h"
#include "opencl/buffer.h"
#include "opencl/device.h"
#include "opencl/fused_activation.h"
#include "opencl/gemm_config.h"

namespace rg::ocl {

// How a product runs. `config` null: the device's tuning chooses (gemm_tuning.h: a tuned device
// times the ranking's first three on the product's first call, gemm.cpp's timed_choice; else
// rank_gemm_configs' first). Every configuration adds each output's terms in the same order, so
// the choice changes the speed, never the bits. `k_slices` 0: gemm_k_slices decides; 1: no split;
// S > 1: the K terms in slices of ceil(K / S) rounded up to 16 (so at most S of them, the last
// shorter) summed apart into the device's GEMM scratch, then added slice by slice (other bits
// than one slice, the same every run). K = 0 never splits.
// `epilogue`: elementwise work on each output C[r][c] in the product's last kernel (the tile's
// store, or the split's sum), in this order, each with the bits of its own launch after the
// product: one launch and one pass over C less per step.
struct GemmEpilogue {
  DeviceSpan bias;    // [n]: + bias[c], as f32_add_bias (the CPU's add_bias after its GEMM); mem null: none
  DeviceSpan affine;  // [2 n]: * scale[c] + shift[c] (scale, then shift), as f32_batch_norm_apply in
                      // inference with f32_batch_norm_inference_affine's constants; mem null: none
  FusedActivation activation;  // then relu or leaky relu, as their kernels
};
struct GemmLaunch {
  const GemmConfig* config = nullptr;
  int k_slices = 0;
  GemmEpilogue epilogue;
};

// `a`, `b`, `c` hold the matrices as stored (A is k x m when trans_a, etc.) with the shape's
// row strides; spans too short are a bug, as is C overlapping A or B. m or n = 0 enqueues nothing. Errors: sizes past the
// kernels' 32-bit indices, a configuration the device cannot build or run (none, when choosing),
// slices asked for without the scratch to hold them, and the OpenCL calls'.
Result<Event> f32_gemm(Device& device, const GemmShape& shape, float alpha, DeviceSpan a, DeviceSpan b, float beta,
                       DeviceSpan c, const GemmLaunch& launch = {});

// `batch` products of one shape in one launch (gemm.cl's BATCHED): product z reads A + z (rows
// of A) lda, B + z (rows of B) ldb and writes C + z m ldc, over its whole depth (bits: f32_gemm's
// for it in one slice, GemmLaunch::k_slices 1). With launch.k_slices S > 1 (slices as f32_gemm's:
// at most S of ceil(K / S) rounded up to 16 terms, the last shorter; alpha 1, beta 0, no epilogue)
// each product's slices are summed apart, slice s of product z into C + (z S' + s) m ldc, S' the
// slices made, for the caller to add up. Never split unasked; the tuning times its configuration
// as f32_gemm's. At most 65535 products and slices in all.
Result<Event> f32_gemm_batched(Device& device, const GemmShape& shape, int64_t batch, float alpha, DeviceSpan a,
                               DeviceSpan b, float beta, DeviceSpan c, const GemmLaunch& launch = {});

namespace detail {
// The epilogue's trailing kernel arguments (kernels/fused_activation.h's EPILOGUE_PARAMS, every
// kernel that takes one: gemm.cl, winograd.cl): has_bias, bias, bias_offset, has_affine, affine,
// affine_offset, act, slope. The output's buffer `c` stands in for an absent bias or affine: it is
// never read.
struct EpilogueArgs {
  cl_uint has_bias;
  cl_mem bias;
  cl_uint bias_offset;
  cl_uint has_affine;
  cl_mem affine;
  cl_uint affine_offset;
  cl_uint act;
  float slope;
};
EpilogueArgs epilogue_args(const GemmEpilogue& e, DeviceSpan c);
// The epilogue's spans hold what n columns need and sit within the kernels' 32-bit indices.
Status check_epilogue(const GemmEpilogue& e, int64_t n);
}  // namespace detail

// Builds the programs f32_gemm would run `shape` with for each of `configs` (a, b as it would be
// given them), several at once (ProgramCache::build_all); one that fails to build is left for
// f32_gemm to report. A search calls it before timing the configurations one by one.
void build_gemm_programs(Device& device, const GemmShape& shape, const std::vector<GemmConfig>& configs, DeviceSpan a,
                         DeviceSpan b);

// A convolution as one product with the patch matrix read from the images as it is needed
// (implicit GEMM): y [batch * patches, filters] = patches(images) [.., patch_size] *
// weight [patch_size, filters] (then the epilogue), images [batch, height, width, channels] NHWC. The same
// values as f32_im2col then f32_gemm, so the same bits, without the patch matrix in memory.
// `beta` 1: y += the product (f32_add's bits after a product into y's place with beta 0).
enum class ConvWeight {
  plain,       // [patch_size, filters]
  transposed,  // [filters, patch_size]: a transposed convolution's dx
  flipped,     // a Conv2D's weight [k, k, filters, geometry.channels] (its channels, then its
               // filters: dy's channels here) read turned 180 degrees with its channel axes swapped
               // (nn/conv.cpp's flip_weight): the Conv2D's dx at stride 1 as a conv over dy, no copy
};
Result<Event> f32_conv_gemm(Device& device, const ConvGeometry& geometry, int64_t batch, DeviceSpan images,
                            DeviceSpan weight, int64_t filters, DeviceSpan y, const GemmLaunch& launch = {},
                            ConvWeight weight_read = ConvWeight::plain, float beta = 0.0f);
// Its weight gradient the same way: dw [patch_size, filters] = beta dw + patches(images)^T *
// dy [batch * patches, filters]: the values of f32_im2col then f32_gemm (A transposed) over the
// whole batch at once, split over its rows as f32_gemm splits a deep product.
Result<Event> f32_conv_gemm_weight_grad(Device& device, const ConvGeometry& geometry, int64_t batch,
                                        DeviceSpan images, DeviceSpan dy, int64_t filters, float beta, DeviceSpan dw,
                                        const GemmLaunch& launch = {});
// A transposed convolution's weight gradient: dw [channels, patch_size] = beta dw + x^T [channels x
// batch * patches] * patches(images) [batch * patches, patch_size] (op(B) the patch matrix read
// from the images), x [batch * patches, channels].
Result<Event> f32_conv_gemm_transposed_weight_grad(Device& device, const ConvGeometry& geometry, int64_t batch,
                                                   DeviceSpan x, int64_t channels, DeviceSpan images, float beta,
                                                   DeviceSpan dw, const GemmLaunch& launch = {});

// How many 64x64 work-groups a split product aims at per compute unit (gemm_k_slices, and the
// Winograd weight gradient's slices): a weight gradient's product (a few C tiles, hundreds of
// thousands of terms, each A word an image gather) waits on memory and needs many groups in flight
// (measured on the H200: bench/RESULTS.md, 2026-11-30).
constexpr int64_t kGemmSplitGroupsPerUnit = 8;

// How many slices a product of depth k is cut into when `asked` for that many (f32_gemm's and
// f32_gemm_batched's rule: slices of ceil(k / asked) terms rounded up to 16, so at most `asked`).
int64_t gemm_slices_made(int64_t k, int64_t asked);

// The split over K for products with too few C tiles to fill the device (fewer than two of
// 64x64 per compute unit): enough slices for about eight work-groups of 64x64 per compute unit,
// each slice at least 256 terms deep, their partials within `scratch_floats`. 1: no split.
// Depends on the shape, the device and its scratch only, so a run gives the same bits whatever
// configuration the tuning picks.
int gemm_k_slices(const GemmShape& shape, int compute_units, int64_t scratch_floats);

// The scratch the automatic split needs on this device (bytes), and its allocation, counted in
// the device's memory account (a model reserves it with its buffers; without it no product splits).
// Between products it also holds f32_column_sum's block partials (activation.h).
int64_t gemm_scratch_bytes(const Device& device);
Status reserve_gemm_scratch(Device& device);
void release_gemm_scratch(Device& device);

}  // namespace rg::ocl
