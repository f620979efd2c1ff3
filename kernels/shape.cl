// Upsample (nearest neighbour) and global average pooling over NHWC images, forward and
// backward, as src/nn/shape_layers.cpp and src/nn/pooling.cpp compute them (bit-exact), and the
// column slices of Concat (src/nn/merge_layers.cpp) both ways: one
// work-item per output element; the backwards gather, so no two items write one element.
// Launchers: src/opencl/shape_ops.cpp.
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two

// x [batch, height, width, channels] -> y [batch, height*scale, width*scale, channels]: a copy.
// n = batch height width scale^2 channels.
__kernel void f32_upsample_forward(uint n, uint height, uint width, uint channels, uint scale,
                                   __global const float* x, uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint out_w = width * scale, out_h = height * scale;
  const uint ch = i % channels, ow = i / channels % out_w, oh = i / channels / out_w % out_h;
  const uint b = i / channels / out_w / out_h;
  y[y_offset + i] = x[x_offset + ((b * height + oh / scale) * width + ow / scale) * channels + ch];
}

// dx [batch, height, width, channels] = the sum of the scale^2 copies in dy, from +0, kh outer
// and kw inner, as Upsample::backward adds them. n = batch height width channels.
__kernel void f32_upsample_backward(uint n, uint height, uint width, uint channels, uint scale,
                                    __global const float* dy, uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint out_w = width * scale;
  const uint ch = i % channels, iw = i / channels % width, r = i / channels / width;  // r = b height + ih
  float acc = 0.0f;
  for (uint kh = 0; kh < scale; ++kh) {
    __global const float* row = dy + dy_offset + (r * scale + kh) * out_w * channels;
    for (uint kw = 0; kw < scale; ++kw) acc = acc + row[(iw * scale + kw) * channels + ch];
  }
  dx[dx_offset + i] = acc;
}

// y [batch, channels] = (the sum over pixels of x [batch, pixels, channels], pixel by pixel from
// +0) * scale, scale = 1 / pixels in float (the host's), as GlobalAvgPool::forward.
// n = batch channels.
__kernel void f32_global_avgpool_forward(uint n, uint pixels, uint channels, float scale, __global const float* x,
                                         uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, b = i / channels;
  __global const float* image = x + x_offset + b * pixels * channels + ch;
  float acc = 0.0f;
  for (uint p = 0; p < pixels; ++p) acc = acc + image[p * channels];
  y[y_offset + i] = acc * scale;
}

// dx [batch, pixels, channels] = dy [batch, channels] * scale. n = batch pixels channels.
__kernel void f32_global_avgpool_backward(uint n, uint pixels, uint channels, float scale, __global const float* dy,
                                          uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, b = i / channels / pixels;
  dx[dx_offset + i] = dy[dy_offset + b * channels + ch] * scale;
}

// Concat's forward, one input: y[p, column + c] = x[p, c], x [positions, slice] and y
// [positions, width]. n = positions slice.
__kernel void f32_columns_into(uint n, uint slice, uint width, uint column, __global const float* x, uint x_offset,
                               __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  y[y_offset + i / slice * width + column + i % slice] = x[x_offset + i];
}

// Concat's backward, one input: dx[p, c] = dy[p, column + c], or dx[p, c] + that when accumulate
// (the input feeds other layers too, as Concat::backward_inputs adds). n = positions slice.
__kernel void f32_columns_from(uint n, uint slice, uint width, uint column, uint accumulate, __global const float* dy,
                               uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float g = dy[dy_offset + i / slice * width + column + i % slice];
  dx[dx_offset + i] = accumulate ? dx[dx_offset + i] + g : g;
}
