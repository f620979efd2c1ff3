// Activations (leaky relu, sigmoid, tanh; relu is in elementwise.cl), their gradients, the
// row softmax, the bias add over rows and the column sum, each written as the CPU's f32
// kernels compute them (cpu/ukernels/f32_vector_impl.h, ops/activation.h, ops/elementwise.cpp).
// Elementwise kernels: one work-item per element, guard at n, an element offset per buffer.
// Row kernels: one work-item per row; column_sum: one per column. Launchers: src/opencl/activation.cpp.
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two

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

// y = 1 / (1 + e^-|x|) for x >= 0, else e^-|x| times that: neither branch overflows
__kernel void f32_sigmoid_forward(uint n, __global const float* x, uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = x[x_offset + i];
  const float e = exp(-fabs(v));
  const float s = 1.0f / (1.0f + e);
  y[y_offset + i] = v >= 0.0f ? s : e * s;
}

// dx = dy y (1 - y), y the forward's output, multiplied left to right
__kernel void f32_sigmoid_backward(uint n, __global const float* y, uint y_offset, __global const float* dy,
                                   uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float v = y[y_offset + i];
  dx[dx_offset + i] = dy[dy_offset + i] * v * (1.0f - v);
}

__kernel void f32_tanh_forward(uint n, __global const float* x, uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  y[y_offset + i] = tanh(x[x_offset + i]);
}

// dx = dy (1 - y y), y the forward's output
__kernel void f32_tanh_backward(uint n, __global const float* y, uint y_offset, __global const float* dy,
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

// sums[c] += the sum of x[r][c] over rows, one item per column. As ops/elementwise.cpp: with
// rows <= block_rows, down the rows in order onto sums[c]; else each block of block_rows rows
// summed from 0, and the block sums added onto sums[c] in block order.
__kernel void f32_column_sum(uint rows, uint cols, uint block_rows, __global const float* x, uint x_offset,
                             __global float* sums, uint sums_offset) {
  const uint c = get_global_id(0);
  if (c >= cols) return;
  __global const float* column = x + x_offset + c;
  float total = sums[sums_offset + c];
  if (rows <= block_rows) {
    for (uint r = 0; r < rows; ++r) total += column[r * cols];
  } else {
    for (uint r0 = 0; r0 < rows; r0 += block_rows) {
      const uint r1 = min(rows, r0 + block_rows);
      float block = 0.0f;
      for (uint r = r0; r < r1; ++r) block += column[r * cols];
      total += block;
    }
  }
  sums[sums_offset + c] = total;
}
