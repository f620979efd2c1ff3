// Activations, their gradients, the row softmax, the bias add over rows and the column sum,
// each written as the CPU's f32 kernels compute them (cpu/ukernels/f32_vector_impl.h,
// ops/activation.h, ops/elementwise.cpp).
// Elementwise kernels: one work-item per element, guard at n, an element offset per buffer.
// Row kernels: one work-item per row; column_sum: one per column, or a work-group of 256 per
// column. Launchers: src/opencl/activation.cpp.
// The activations of cpu/ukernels/unary_op.h's list are launched by name, f32_<op>_forward and
// f32_<op>_backward, all with the same arguments: `slope` (leaky relu's; the others ignore it)
// and the forward's x (or, for its gradient, x or y as the list says).
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two
#include "fused_activation.h"

// A fused activation's backward from its output y (act: FUSED_RELU or FUSED_LEAKY_RELU): dx = g,
// or with `add` dx = dx + g (f32_add's rounding), g = fused_activation_grad(dy, y).
__kernel void f32_fused_activation_backward(uint n, uint act, float slope, __global const float* y, uint y_offset,
                                            __global const float* dy, uint dy_offset, __global float* dx,
                                            uint dx_offset, uint add) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float g = fused_activation_grad(dy[dy_offset + i], y[y_offset + i], act, slope);
  dx[dx_offset + i] = add ? dx[dx_offset + i] + g : g;
}

// y = x > 0 ? x : 0 (a NaN gives 0, as in ops/activation.h)
__kernel void f32_relu_forward(uint n, float slope, __global const float* x, uint x_offset, __global float* y,
                               uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[x_offset + i];
  y[y_offset + i] = v > 0.0f ? v : 0.0f;
}

// dx = x > 0 ? dy : 0, x the forward's input
__kernel void f32_relu_backward(uint n, float slope, __global const float* x, uint x_offset, __global const float* dy,
                                uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  dx[dx_offset + i] = x[x_offset + i] > 0.0f ? dy[dy_offset + i] : 0.0f;
}

// y = x > 0 ? x : slope x
__kernel void f32_leaky_relu_forward(uint n, float slope, __global const float* x, uint x_offset, __global float* y,
                                     uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[x_offset + i];
  y[y_offset + i] = v > 0.0f ? v : slope * v;
}

// dx = x > 0 ? dy : slope dy, x the forward's input
__kernel void f32_leaky_relu_backward(uint n, float slope, __global const float* x, uint x_offset,
                                      __global const float* dy, uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float g = dy[dy_offset + i];
  dx[dx_offset + i] = x[x_offset + i] > 0.0f ? g : slope * g;
}

// y = x > 0 ? (x < 6 ? x : 6) : 0 (relu6; a NaN gives 0, as in ops/activation.h)
__kernel void f32_relu6_forward(uint n, float slope, __global const float* x, uint x_offset, __global float* y,
                                uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[x_offset + i];
  y[y_offset + i] = v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
}

// dx = 0 < x < 6 ? dy : 0, x the forward's input
__kernel void f32_relu6_backward(uint n, float slope, __global const float* x, uint x_offset, __global const float* dy,
                                 uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[x_offset + i];
  dx[dx_offset + i] = v > 0.0f && v < 6.0f ? dy[dy_offset + i] : 0.0f;
}

// y = 1 / (1 + e^-|x|) for x >= 0, else e^-|x| times that: neither branch overflows
__kernel void f32_sigmoid_forward(uint n, float slope, __global const float* x, uint x_offset, __global float* y,
                                  uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[x_offset + i];
  const float e = exp(-fabs(v));
  const float s = 1.0f / (1.0f + e);
  y[y_offset + i] = v >= 0.0f ? s : e * s;
}

// dx = dy y (1 - y), y the forward's output, multiplied left to right
__kernel void f32_sigmoid_backward(uint n, float slope, __global const float* y, uint y_offset,
                                   __global const float* dy, uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = y[y_offset + i];
  dx[dx_offset + i] = dy[dy_offset + i] * v * (1.0f - v);
}

__kernel void f32_tanh_forward(uint n, float slope, __global const float* x, uint x_offset, __global float* y,
                               uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  y[y_offset + i] = tanh(x[x_offset + i]);
}

// dx = dy (1 - y y), y the forward's output
__kernel void f32_tanh_backward(uint n, float slope, __global const float* y, uint y_offset, __global const float* dy,
                                uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = y[y_offset + i];
  dx[dx_offset + i] = dy[dy_offset + i] * (1.0f - v * v);
}

// y[r] = e^(x[r] - max) / sum over the row [cols], one item per row: max and sum in column
// order, then a multiply by 1 / sum (as the CPU does). The CPU's sum goes in vector lanes.
__kernel void f32_softmax_rows_forward(uint rows, uint cols, __global const float* x, uint x_offset,
                                       __global float* y, uint y_offset) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  __global const float* in = x + x_offset + r * cols;
  __global float* out = y + y_offset + r * cols;
  float max = -INFINITY;
  for (uint c = 0; c < cols; ++c) max = in[c] > max ? in[c] : max;
  float sum = 0.0f;
  for (uint c = 0; c < cols; ++c) {
    const float e = exp(in[c] - max);
    out[c] = e;
    sum += e;
  }
  const float inverse = 1.0f / sum;
  for (uint c = 0; c < cols; ++c) out[c] = out[c] * inverse;
}

// dx[r][c] = y[r][c] (dy[r][c] - sum_k dy[r][k] y[r][k]), the dot in column order (ops/activation.h)
__kernel void f32_softmax_rows_backward(uint rows, uint cols, __global const float* y, uint y_offset,
                                        __global const float* dy, uint dy_offset, __global float* dx,
                                        uint dx_offset) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  __global const float* yr = y + y_offset + r * cols;
  __global const float* dyr = dy + dy_offset + r * cols;
  __global float* dxr = dx + dx_offset + r * cols;
  float dot = 0.0f;
  for (uint c = 0; c < cols; ++c) dot += dyr[c] * yr[c];
  for (uint c = 0; c < cols; ++c) dxr[c] = yr[c] * (dyr[c] - dot);
}

// y[r][c] += bias[c] over y [rows x cols]: one item per element of y, n = rows cols
__kernel void f32_add_bias(uint n, uint cols, __global const float* bias, uint bias_offset, __global float* y,
                           uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  y[y_offset + i] = y[y_offset + i] + bias[bias_offset + i % cols];
}

// The column sum, as ops/elementwise.cpp: rows go in blocks of block_rows (rows_per_block(cols));
// with one block, each column's rows are added in order onto sums[c]; with more, each block is
// summed from 0 in row order and the block sums are added onto sums[c] in block order. The
// adds within a block are one chain (their order is the result): the parallelism is across
// blocks and columns, and each chain is kept fed from local memory (f32_column_sum_blocks).

// total + column[r0] + ... + column[r1 - 1], in row order, rows `cols` floats apart. The loads go
// 16 rows ahead of the adds (registers): one item's chain of strided loads is bound by memory
// latency, and 16 in flight halved its time on the H100 (8: 1.3x, 32: no better than 16).
float column_run(__global const float* column, uint cols, uint r0, uint r1, float total) {
  uint r = r0;
  for (; r1 - r >= 16; r += 16) {
    float v[16];
    for (int k = 0; k < 16; ++k) v[k] = column[(r + k) * cols];
    for (int k = 0; k < 16; ++k) total += v[k];
  }
  for (; r < r1; ++r) total += column[r * cols];
  return total;
}

// One block (rows <= block_rows): one item per column, the rows in order onto sums[c].
__kernel void f32_column_sum(uint rows, uint cols, __global const float* x, uint x_offset, __global float* sums,
                             uint sums_offset) {
  const uint c = get_global_id(0);
  if (c >= cols) return;
  sums[sums_offset + c] = column_run(x + x_offset + c, cols, 0, rows, sums[sums_offset + c]);
}

// Several blocks, many of them (blocks x cols items fill the device): one item per (block, column),
// the items of a row's columns side by side (their loads coalesce), each block's rows in order
// from 0 into partials [blocks][cols]; f32_column_sum then adds those rows onto sums in block order.
__kernel void f32_column_sum_block_partials(uint rows, uint cols, uint block_rows, __global const float* x,
                                            uint x_offset, __global float* partials) {
  const uint i = get_global_id(0), blocks = (rows + block_rows - 1) / block_rows;
  if (i >= blocks * cols) return;
  const uint b = i / cols, c = i % cols, r0 = b * block_rows;
  partials[i] = column_run(x + x_offset + c, cols, r0, min(rows, r0 + block_rows), 0.0f);
}

// Several blocks, few of them: one work-group per column (group c) takes the blocks in rounds of up to its
// size, and walks a round's blocks together in tiles of tile_rows rows each: all items load the
// tile of every block of the round into local memory (tile [blocks in the round][tile_rows], at
// most tile_capacity floats and 16 per item, each item's loads issued before any is stored), then
// item b adds block b's tile onto its running sum in row order: a chain fed from local memory.
// (One item per block, loading its own rows 16 ahead, took 345 us on the H100 for lenet's conv1
// bias gradient, 50176 x 6 in 10 blocks of 5461 rows; staging by those 10 items alone, 930 us.)
// At a round's end item 0 adds its blocks' sums onto the column's total in block order.
// partial: one float per item.
__kernel void f32_column_sum_blocks(uint rows, uint cols, uint block_rows, uint tile_capacity, __global const float* x,
                                    uint x_offset, __global float* sums, uint sums_offset, __local float* tile,
                                    __local float* partial) {
  const uint c = get_group_id(0), item = get_local_id(0), items = get_local_size(0);
  const uint blocks = (rows + block_rows - 1) / block_rows, capacity = min(tile_capacity, 16 * items);
  __global const float* column = x + x_offset + c;
  float total = item == 0 ? sums[sums_offset + c] : 0.0f;
  for (uint round = 0; round < blocks; round += items) {  // the same rounds and tiles for every item
    const uint in_round = min(items, blocks - round);
    uint tile_rows = capacity / in_round;
    tile_rows -= tile_rows > 1 && tile_rows % 2 == 0;  // odd: the chains' reads fall in different banks
    float block_sum = 0.0f;                            // item < in_round: block round + item so far
    for (uint t0 = 0; t0 < block_rows; t0 += tile_rows) {
      const uint count = min(tile_rows, block_rows - t0), n = in_round * count;
      float v[16];
      for (uint k = 0; k < 16; ++k) {
        const uint i = item + k * items;
        const ulong r = (ulong)(round + i / count) * block_rows + t0 + i % count;
        v[k] = i < n && r < rows ? column[(uint)r * cols] : 0.0f;
      }
      for (uint k = 0; k < 16; ++k) {
        const uint i = item + k * items;
        if (i < n) tile[i] = v[k];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      if (item < in_round) {
        const ulong r0 = (ulong)(round + item) * block_rows + t0;
        const uint valid = r0 >= rows ? 0 : (uint)min((ulong)count, rows - r0);
        __local const float* mine = tile + item * count;
        for (uint t = 0; t < valid; ++t) block_sum += mine[t];
      }
      barrier(CLK_LOCAL_MEM_FENCE);  // the tile is read before the next one is loaded
    }
    if (item < in_round) partial[item] = block_sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (item == 0) {
      for (uint k = 0; k < in_round; ++k) total += partial[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // partial is read before the next round writes it
  }
  if (item == 0) sums[sums_offset + c] = total;
}
