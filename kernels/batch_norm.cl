// Batch normalisation over the innermost dimension of x [rows, channels] (rows = n h w of NHWC
// images, or n of [n, f] features), as src/nn/batch_norm.cpp computes it. Statistics: each block
// of 64 rows' mean and M2 (squared deviations about that mean) in float, then the blocks merged
// into double in block order within groups of 64 blocks, the groups in group order (the CPU's
// channel_stats); gradient sums: float sums over the blocks, added into double the same way (its
// channel_sums): the CPU's bits; the rest in double, as the CPU. The per-channel kernels (a
// work-group a channel) also leave each channel's float constants, computed from the doubles as
// the CPU computes them, for the elementwise kernels (one item per element, float only). `saved`
// (src/opencl/batch_norm.h's layout): double [4 channels] mean and inv_std (forward), sum dy and
// sum dy xhat (backward); float [CONSTANTS channels] the constants; then the block partials
// (floats). Needs cl_khr_fp64.
// Launchers: src/opencl/batch_norm.cpp.
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#include "fused_activation.h"

// ROW_BLOCK and BLOCK_GROUP (unsigned): src/ops/batch_norm_blocks.h's kStatsRowBlock and
// kStatsBlockGroup, given as build options by the launchers.
#if !defined(ROW_BLOCK) || !defined(BLOCK_GROUP)
#error "batch_norm.cl: build with -DROW_BLOCK and -DBLOCK_GROUP (src/opencl/batch_norm.cpp)"
#endif

// The channels' float constants in `saved`, after its 4 channels doubles: constant k of channel c at
// float [k channels + c]. CONSTANTS (unsigned, a build option): how many src/opencl/batch_norm.h keeps.
// y = x scale + shift (the forward's; keep_statistics); dx = a dy + b x + d (the backward's; keep_dx_terms).
// Written by the per-channel kernels (channel_constants), read by the elementwise ones (read_constants).
#define kScale 0u
#define kShift 1u
#define kDxA 2u
#define kDxB 3u
#define kDxD 4u
#if !defined(CONSTANTS) || CONSTANTS <= 4
#error "batch_norm.cl: build with -DCONSTANTS, at least 5 (src/opencl/batch_norm.cpp)"
#endif
inline __global float* channel_constants(__global double* saved, uint channels) {
  return (__global float*)(saved + 4 * channels);
}
inline __global const float* read_constants(__global const double* saved, uint channels) {
  return (__global const float*)(saved + 4 * channels);
}

// inv_std in inference: from the running variance (the CPU's bits).
inline double inference_inv_std(float running_var, double eps) { return 1.0 / sqrt((double)running_var + eps); }

// A channel's y = x * scale + shift constants: scale = (float)(gamma inv_std), shift = (float)(beta
// - mean gamma inv_std), from its doubles as the CPU computes them.
inline float2 channel_affine(double gamma, double beta, double mean, double inv_std) {
  return (float2)((float)(gamma * inv_std), (float)(beta - mean * gamma * inv_std));
}

// Reads a chain of dependent adds issues at once before adding them (the same adds in the same
// order): its loop then waits on memory once a round, not once a term. One a term left resnet20's
// batch norm at 0.4-0.6 TB/s on the H200, latency-bound (bench/RESULTS.md 2026-11-30).
#define kLoadsAhead 16u

// The gradient the backward starts from at element i: dy[i], or with `act` (FUSED_RELU or
// FUSED_LEAKY_RELU) that activation's backward first, read from its output: out > 0 ? dy : 0, or
// slope dy (activation.cl's f32_relu_backward and f32_leaky_relu_backward, the same values).
inline float act_grad(__global const float* dy, __global const float* out, uint i, uint act, float slope) {
  return act == FUSED_NONE ? dy[i] : fused_activation_grad(dy[i], out[i], act, slope);
}

// The statistics and sums run in two steps so that every row block is worked at once: one item
// per (row block, channel) takes its block in float, in row order (f32_batch_norm_block_sums),
// then one work-group per channel merges the blocks into double, an item a group of 64 blocks,
// then the groups in order (the finish kernels): the CPU's operations, in its order. The partials
// live in `saved` after its doubles and the constants (src/opencl/batch_norm.cpp's block_sums_of),
// as floats [2][blocks][channels] (pass 0: the block's mean, sum x / rows, and its M2, sum (x -
// that mean)^2; pass 1: sum dy and sum dy xhat).
__kernel void f32_batch_norm_block_sums(uint rows, uint channels, uint pass, __global const float* x, uint x_offset,
                                        __global const float* dy, uint dy_offset, uint act, float slope,
                                        __global const float* act_out, uint act_out_offset,
                                        __global const double* saved, uint saved_offset, __global float* blocks,
                                        uint blocks_offset) {
  const uint i = get_global_id(0), block_count = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
  if (i >= block_count * channels) return;
  const uint b = i / channels, c = i % channels;
  const uint r0 = b * ROW_BLOCK, r1 = min(rows, r0 + ROW_BLOCK);
  __global const float* xc = x + x_offset + c;
  __global const double* s = saved + saved_offset;
  __global float* out = blocks + blocks_offset;
  float p0 = 0.0f, p1 = 0.0f;
  if (pass == 0) {
    // A whole block's x in registers (one read), then the two float chains over it in row order.
    float v[ROW_BLOCK];
#pragma unroll
    for (uint j = 0; j < ROW_BLOCK; ++j) v[j] = r0 + j < r1 ? xc[(r0 + j) * channels] : 0.0f;
    const uint n = r1 - r0;
#pragma unroll
    for (uint j = 0; j < ROW_BLOCK; ++j)
      if (j < n) p0 = p0 + v[j];
    p0 = p0 / (float)n;
#pragma unroll
    for (uint j = 0; j < ROW_BLOCK; ++j) {
      const float d = v[j] - p0;
      if (j < n) p1 = p1 + d * d;
    }
  } else {
    __global const float* dyc = dy + dy_offset + c;
    __global const float* oc = act_out + act_out_offset + c;
    const float mean = (float)s[c], inv_std = (float)s[channels + c];
    // Each round's reads issued before its adds, none behind a branch on `act` (without one, the
    // output read is dy's: the launcher passes dy for it).
    // kLoadsAhead rows of the three a round: 32 and 64 ran slower on the H200 (bench/RESULTS.md 2026-12-01).
    for (uint r = r0; r < r1; r += kLoadsAhead) {
      float g[kLoadsAhead], ov[kLoadsAhead], xv[kLoadsAhead];
#pragma unroll
      for (uint j = 0; j < kLoadsAhead; ++j) {
        const bool in = r + j < r1;
        g[j] = in ? dyc[(r + j) * channels] : 0.0f;
        ov[j] = in ? oc[(r + j) * channels] : 0.0f;
        xv[j] = in ? xc[(r + j) * channels] : 0.0f;
      }
#pragma unroll
      for (uint j = 0; j < kLoadsAhead; ++j) g[j] = fused_activation_grad(g[j], ov[j], act, slope);
#pragma unroll
      for (uint j = 0; j < kLoadsAhead; ++j) {
        if (r + j >= r1) break;
        p0 = p0 + g[j];
        p1 = p1 + g[j] * (xv[j] - mean) * inv_std;
      }
    }
  }
  out[i] = p0;
  out[block_count * channels + i] = p1;
}

// Channel c's partials of blocks [b, b + kLoadsAhead) of both passes ([2][blocks][channels]
// floats), 0 from b1 on: one round's loads, issued before its adds.
inline void load_partials(__global const float* blocks, uint block_count, uint channels, uint c, uint b, uint b1,
                          float* first, float* second) {
#pragma unroll
  for (uint j = 0; j < kLoadsAhead; ++j) {
    first[j] = b + j < b1 ? blocks[(b + j) * channels + c] : 0.0f;
    second[j] = b + j < b1 ? blocks[(block_count + b + j) * channels + c] : 0.0f;
  }
}

// Channel c's partials of blocks [b0, b1) of both passes ([2][blocks][channels] floats), each
// added into double in block order from 0: one group's sums (the CPU's channel_sums).
inline void group_sums(__global const float* blocks, uint block_count, uint channels, uint c, uint b0, uint b1,
                       double* first, double* second) {
  double s0 = 0.0, s1 = 0.0;
  for (uint b = b0; b < b1; b += kLoadsAhead) {
    float v0[kLoadsAhead], v1[kLoadsAhead];
    load_partials(blocks, block_count, channels, c, b, b1, v0, v1);
#pragma unroll
    for (uint j = 0; j < kLoadsAhead; ++j) {
      if (b + j >= b1) break;
      s0 = s0 + (double)v0[j];
      s1 = s1 + (double)v1[j];
    }
  }
  *first = s0;
  *second = s1;
}

// Sums over the blocks of both passes' partials for channel c, by the work-group of channel c:
// each item sums whole groups of BLOCK_GROUP blocks (group_sums) into local memory, then item 0
// adds the groups' sums in group order, in rounds of what `tile` (`capacity` floats: two
// doubles a group) holds. The chain of dependent adds is a group long, then a group count, not
// a block count (resnet20's at batch 256: 3136 blocks, 26 us a launch on the H200 one a block).
// Item 0's results; every item must call it (barriers).
void block_totals(__global const float* blocks, uint block_count, uint channels, uint c, __local double* tile,
                  uint capacity, double* first, double* second) {
  const uint item = get_local_id(0), items = get_local_size(0), share = capacity / 4;
  const uint group_count = (block_count + BLOCK_GROUP - 1) / BLOCK_GROUP;
  double total0 = 0.0, total1 = 0.0;
  for (uint g0 = 0; g0 < group_count; g0 += share) {
    const uint count = min(share, group_count - g0);
    for (uint k = item; k < count; k += items) {
      const uint b0 = (g0 + k) * BLOCK_GROUP;
      double s0, s1;
      group_sums(blocks, block_count, channels, c, b0, min(block_count, b0 + BLOCK_GROUP), &s0, &s1);
      tile[2 * k] = s0;
      tile[2 * k + 1] = s1;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (item == 0) {
      for (uint k = 0; k < count; ++k) {
        total0 = total0 + tile[2 * k];
        total1 = total1 + tile[2 * k + 1];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the tile is read before the next round writes it
  }
  *first = total0;
  *second = total1;
}

// Chan, Golub and LeVeque's update (batch_norm.cpp's chan_merge with its ChanWeights): mean and m2
// of `before` values merged with a part of `added` values of mean part_mean and M2 part_m2, the
// weights w = added / (before + added) and v = before w given.
inline void chan_merge(double w, double v, double part_mean, double part_m2, double* mean, double* m2) {
  const double delta = part_mean - *mean;
  *mean = *mean + delta * w;
  *m2 = *m2 + (part_m2 + delta * delta * v);
}
inline double2 chan_weights(double before, double added) {
  const double w = added / (before + added);
  return (double2)(w, before * w);
}

// Channel c's mean and M2 over the rows of blocks [b0, b1) (one group) from the blocks' means and
// M2s (pass 0), merged from 0 in block order. A whole block's weights come from `full` (block k
// of a group: before 64 k rows, 64 added; the same divisions, done once a work-group), so the
// chain holds no division (one a block in it cost cnn's variance kernel 3x).
inline void group_stats(__global const float* blocks, uint rows, uint block_count, uint channels, uint c, uint b0,
                        uint b1, __local const double2* full, double* mean, double* m2) {
  double mu = 0.0, sum2 = 0.0;
  for (uint b = b0; b < b1; b += kLoadsAhead) {
    float means[kLoadsAhead], m2s[kLoadsAhead];
    load_partials(blocks, block_count, channels, c, b, b1, means, m2s);
#pragma unroll
    for (uint j = 0; j < kLoadsAhead; ++j) {
      if (b + j >= b1) break;
      const uint r0 = (b + j) * ROW_BLOCK, added = min(rows, r0 + ROW_BLOCK) - r0;
      const double2 k =
          added == ROW_BLOCK ? full[b + j - b0] : chan_weights((double)(r0 - b0 * ROW_BLOCK), (double)added);
      chan_merge(k.x, k.y, (double)means[j], (double)m2s[j], &mu, &sum2);
    }
  }
  *mean = mu;
  *m2 = sum2;
}

// Channel c's mean and M2 over every row (pass 0's partials), by the work-group of channel c: each
// item merges whole groups of BLOCK_GROUP blocks (group_stats) into local memory, with the group's
// merge weights, then item 0 merges the groups in group order (the CPU's channel_stats, the same
// operations; no division left in its chain), in rounds of what `tile` (`capacity` floats: four
// doubles a group) holds; `full` [BLOCK_GROUP]: group_stats' table, filled here. Item 0's result;
// every item must call it (barriers).
void block_stats(__global const float* blocks, uint rows, uint channels, uint c, __local double* tile,
                 uint capacity, __local double2* full, double* mean, double* m2) {
  const uint item = get_local_id(0), items = get_local_size(0), share = capacity / 8;
  for (uint k = item; k < BLOCK_GROUP; k += items) full[k] = chan_weights((double)(k * ROW_BLOCK), (double)ROW_BLOCK);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint block_count = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
  const uint group_count = (block_count + BLOCK_GROUP - 1) / BLOCK_GROUP, group_rows = BLOCK_GROUP * ROW_BLOCK;
  double mu = 0.0, sum2 = 0.0;
  for (uint g0 = 0; g0 < group_count; g0 += share) {
    const uint count = min(share, group_count - g0);
    for (uint k = item; k < count; k += items) {
      const uint b0 = (g0 + k) * BLOCK_GROUP;
      double g_mean, g_m2;
      group_stats(blocks, rows, block_count, channels, c, b0, min(block_count, b0 + BLOCK_GROUP), full, &g_mean, &g_m2);
      const uint first_row = (g0 + k) * group_rows;
      const double2 w = chan_weights((double)first_row, (double)(min(rows, first_row + group_rows) - first_row));
      tile[4 * k] = g_mean;
      tile[4 * k + 1] = g_m2;
      tile[4 * k + 2] = w.x;
      tile[4 * k + 3] = w.y;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (item == 0) {
      for (uint k = 0; k < count; ++k) chan_merge(tile[4 * k + 2], tile[4 * k + 3], tile[4 * k], tile[4 * k + 1], &mu, &sum2);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the tile is read before the next round writes it
  }
  *mean = mu;
  *m2 = sum2;
}

// Channel c's mean and inv_std into saved, and the forward's scale and shift from them (channel_affine).
inline void keep_statistics(__global double* s, uint channels, uint c, double mean, double inv_std, float gamma,
                            float beta) {
  s[c] = mean;
  s[channels + c] = inv_std;
  const float2 a = channel_affine((double)gamma, (double)beta, mean, inv_std);
  __global float* k = channel_constants(s, channels);
  k[kScale * channels + c] = a.s0;
  k[kShift * channels + c] = a.s1;
}

// Training, after pass 0: mean and var = M2 / rows (biased) (block_stats), inv_std = 1 / sqrt(var +
// eps) into saved, running stats = (1 - momentum) running + momentum (mean, M2 / (rows - 1) when
// rows > 1, else var). Inference (no blocks read): inv_std from the running variance and mean =
// running_mean. Either way the channel's scale and shift (keep_statistics). momentum and eps come
// as the bits of the host's doubles.
__kernel void f32_batch_norm_variance(uint rows, uint channels, uint capacity, uint training, ulong momentum_bits,
                                      ulong eps_bits, __global const float* blocks, uint blocks_offset,
                                      __global float* running_mean, uint running_mean_offset,
                                      __global float* running_var, uint running_var_offset,
                                      __global const float* gamma, uint gamma_offset, __global const float* beta,
                                      uint beta_offset, __global double* saved, uint saved_offset,
                                      __local double* tile) {
  __local double2 full[BLOCK_GROUP];  // block_stats' table (local memory lives at a kernel's scope)
  const uint c = get_group_id(0);
  const double momentum = as_double(momentum_bits), eps = as_double(eps_bits);  // the host's doubles, bit for bit
  __global float* rm = running_mean + running_mean_offset + c;
  __global float* rv = running_var + running_var_offset + c;
  __global double* s = saved + saved_offset;
  const float g = gamma[gamma_offset + c], b = beta[beta_offset + c];
  if (!training) {  // the same for every item of the group: no barrier is skipped by some
    if (get_local_id(0) == 0) keep_statistics(s, channels, c, (double)*rm, inference_inv_std(*rv, eps), g, b);
    return;
  }
  double mean, m2;
  block_stats(blocks + blocks_offset, rows, channels, c, tile, capacity, full, &mean, &m2);
  if (get_local_id(0) != 0) return;
  const double var = m2 / (double)rows;
  keep_statistics(s, channels, c, mean, 1.0 / sqrt(var + eps), g, b);
  const double unbiased = rows > 1 ? m2 / (double)(rows - 1) : var;
  *rm = (float)((1 - momentum) * (double)*rm + momentum * mean);
  *rv = (float)((1 - momentum) * (double)*rv + momentum * unbiased);
}

// y = act(x * scale + shift) (the variance kernel's constants; act: fused_activation.h, FUSED_NONE
// for none). n = rows channels.
__kernel void f32_batch_norm_apply(uint n, uint channels, __global const float* x, uint x_offset,
                                   __global const double* saved, uint saved_offset, __global float* y, uint y_offset,
                                   uint act, float slope) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint c = i % channels;
  __global const float* k = read_constants(saved + saved_offset, channels);
  y[y_offset + i] = fused_activation(x[x_offset + i] * k[kScale * channels + c] + k[kShift * channels + c], act, slope);
}

// Inference's constants for a product's epilogue (gemm.cl's affine): affine [2][channels] = scale,
// then shift, from the running statistics, the floats f32_batch_norm_apply reads after
// f32_batch_norm_variance in inference. One item per channel.
__kernel void f32_batch_norm_inference_affine(uint channels, ulong eps_bits, __global const float* gamma,
                                              uint gamma_offset, __global const float* beta, uint beta_offset,
                                              __global const float* running_mean, uint running_mean_offset,
                                              __global const float* running_var, uint running_var_offset,
                                              __global float* affine, uint affine_offset) {
  const uint c = get_global_id(0);
  if (c >= channels) return;
  const double inv_std = inference_inv_std(running_var[running_var_offset + c], as_double(eps_bits));
  const float2 a = channel_affine((double)gamma[gamma_offset + c], (double)beta[beta_offset + c],
                                  (double)running_mean[running_mean_offset + c], inv_std);
  affine[affine_offset + c] = a.s0;
  affine[affine_offset + channels + c] = a.s1;
}

// dx = a dy + b x + d's constants of channel c into saved: with k = gamma inv_std and, training
// (over m = rows), q = k inv_std sum_dy_xhat / m: a = (float)k, b = (float)-q, d = (float)(-k sum_dy
// / m + q mean); inference: a = (float)k, b = d = 0 (the CPU's BatchNorm::backward).
inline void keep_dx_terms(__global double* s, uint rows, uint channels, uint c, uint training, float gamma) {
  const double inv_std = s[channels + c], k = (double)gamma * inv_std;
  float b = 0.0f, d = 0.0f;
  if (training) {
    const double m = (double)rows, q = k * inv_std * s[3 * channels + c] / m;
    b = (float)(-q);
    d = (float)(-k * s[2 * channels + c] / m + q * s[c]);
  }
  __global float* t = channel_constants(s, channels);
  t[kDxA * channels + c] = (float)k;
  t[kDxB * channels + c] = b;
  t[kDxD * channels + c] = d;
}

// After pass 1: sum dy and sum dy (x - mean) inv_std (mean, inv_std rounded to float; the terms in
// float as (dy (x - mean)) inv_std) into saved[2 channels ...], dbeta, dgamma = (accumulate ? the
// old value : 0) + those sums, rounded once to float, and dx's constants (keep_dx_terms).
__kernel void f32_batch_norm_grad_sums(uint rows, uint channels, uint capacity, uint accumulate, uint training,
                                       __global const float* blocks, uint blocks_offset, __global const float* gamma,
                                       uint gamma_offset, __global double* saved, uint saved_offset,
                                       __global float* dgamma, uint dgamma_offset, __global float* dbeta,
                                       uint dbeta_offset, __local double* tile) {
  const uint c = get_group_id(0);
  const uint block_count = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
  __global const float* sums = blocks + blocks_offset;
  double sum_dy, sum_dy_xhat;
  block_totals(sums, block_count, channels, c, tile, capacity, &sum_dy, &sum_dy_xhat);
  if (get_local_id(0) != 0) return;
  __global double* s = saved + saved_offset;
  s[2 * channels + c] = sum_dy;
  s[3 * channels + c] = sum_dy_xhat;
  __global float* dg = dgamma + dgamma_offset + c;
  __global float* db = dbeta + dbeta_offset + c;
  *dg = (float)((accumulate ? (double)*dg : 0.0) + sum_dy_xhat);
  *db = (float)((accumulate ? (double)*db : 0.0) + sum_dy);
  keep_dx_terms(s, rows, channels, c, training, gamma[gamma_offset + c]);
}

// dx = a dy + b x + d (the gradient sums' constants, keep_dx_terms), dy through act_grad; with
// `add` also sum += dx (f32_add's rounding). n = rows channels.
__kernel void f32_batch_norm_dx(uint n, uint channels, __global const float* x, uint x_offset,
                                __global const float* dy, uint dy_offset, uint act, float slope,
                                __global const float* act_out, uint act_out_offset, __global const double* saved,
                                uint saved_offset, __global float* dx, uint dx_offset, uint add, __global float* sum,
                                uint sum_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint c = i % channels;
  __global const float* t = read_constants(saved + saved_offset, channels);
  const float v = t[kDxA * channels + c] * act_grad(dy + dy_offset, act_out + act_out_offset, i, act, slope) +
                  t[kDxB * channels + c] * x[x_offset + i] + t[kDxD * channels + c];
  dx[dx_offset + i] = v;
  if (add) sum[sum_offset + i] = sum[sum_offset + i] + v;
}
