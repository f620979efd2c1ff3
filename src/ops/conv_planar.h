// A stride-1 convolution with few filters, the pixels in the vector lanes. The gathered GEMM
// (ops/gemm.h) puts a conv's pixels in C's rows and its filters in the tile's columns: 6 filters
// (lenet's conv1, the dx of its conv2) fill 6 of a 16-wide tile's lanes. Here each sample is
// turned into channel planes [c, padded h, padded w]; a filter's output over the padded-width grid
// of rows is then a product whose B row for tap (kh, kw, c) is plane c read from kh * padded_w +
// kw on: the kernel table's shifted tiles (f32_gemm.h), 6 filters by 8-32 pixels. The columns past
// the image's width in each row are computed and dropped (padded_w / out_w of the work).
//
// Same bits as f32_gemm_gathered over the padded image with patch_offsets' taps: each output is
// one FMA chain over the taps in the weight's order (kh, kw, c), in the gathered GEMM's depth
// blocks of 256 (each block's sum added to the last), so which of the two runs is a speed choice
// only. Samples are spread over the pool, each sample's outputs on one thread.
// The weight gradient reads the same planes: dW[tap][filter] sums, over the grid, the planes at
// the tap's shift times dy's planes (dy turned into planes over the same grid, zero past the
// image's columns), on the dot tiles (f32_gemm.h: C = X Y^T in 16 lanes).
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "ops/im2col.h"

namespace rg {

// Whether the planar form runs this convolution with a weight of `filters` columns: at most one
// tile's 6 rows of filters, fewer multiply-adds (lanes counted) than the gathered GEMM's tiles
// would do, and a sample's channel planes within a cache's reach: by the shape alone.
bool planar_conv_wins(const ConvGeometry& g, int64_t filters);
// The multiply-adds a sample's planar convolution runs (the rows rounded to 6 and the padded width).
int64_t planar_conv_lanes(const ConvGeometry& g, int64_t filters);
// The multiply-adds a sample's planar weight gradient runs (the padded-width grid rounded to 16).
int64_t planar_weight_grad_lanes(const ConvGeometry& g, int64_t filters);

// y [count, out_h, out_w, filters] = the stride-1 convolution of `images` [count, height,
// width, c] (zero-padded by g.pad: each sample's planes are padded as they are made, no padded
// copy is read) with w [kernel * kernel * c, filters] (rows in (kh, kw, c) order).
void f32_conv_planar(ThreadPool* pool, const ConvGeometry& g, int64_t count, const float* images, const float* w,
                     int64_t filters, float* y);

// dw [kernel * kernel * c, filters] = keep * dw + the weight gradient of that convolution whose
// output gradient is dy [count, out_h, out_w, filters] (images unpadded, as above): per sample,
// the dot tiles (f32_gemm.h) over its planes at each tap's shift and dy's planes over the same
// padded-width grid (its columns past the image zero), a sum in 16 lanes per sample. The samples
// go in blocks by the shape alone (at most gemm_depth_blocks(taps, filters, count * patches),
// whose partials [(blocks - 1) x taps x filters] the caller gives), each block's samples in order
// on one thread, then the blocks' sums added in order: no result depends on the thread count.
void f32_conv_planar_weight_grad(ThreadPool* pool, const ConvGeometry& g, int64_t count, const float* images,
                                 const float* dy, int64_t filters, float keep, float* dw, float* partials);
// The floats of partials f32_conv_planar_weight_grad takes for `count` samples.
int64_t planar_weight_grad_partials(const ConvGeometry& g, int64_t filters, int64_t count);

}  // namespace rg
