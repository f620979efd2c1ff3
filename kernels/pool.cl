// Max and average pooling, forward and backward, as src/ops/pool2d.h computes them for each
// sample: x [batch, height, width, channels] (channels innermost), square window, stride, zero
// padding (padding never wins a max and counts 0 in an average). Forwards: one work-item per
// output element. Backwards: one per input element, gathering from every window that holds it
// in the CPU's window order, so overlapping windows never race. Launchers: src/opencl/pool.cpp.
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two

// The geometry every kernel takes, in this order.
#define POOL_GEOMETRY uint batch, uint height, uint width, uint channels, uint kernel_size, uint stride, uint pad, \
                      uint out_h, uint out_w

// y [batch, out_h, out_w, channels]: the window's positions inside the image row by row; max:
// y = y < x ? x : y from -inf (std::max keeps y for NaN or equal x); average: y += x from 0, then
// y * scale (scale = 1 / kernel^2 in float, the host's). n = batch out_h out_w channels.
__kernel void f32_pool_forward(uint n, POOL_GEOMETRY, uint is_max, float scale, __global const float* x,
                               uint x_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, ow = i / channels % out_w, oh = i / channels / out_w % out_h;
  const uint b = i / channels / out_w / out_h;
  __global const float* image = x + x_offset + b * height * width * channels + ch;
  float acc = is_max ? -INFINITY : 0.0f;
  for (uint kh = 0; kh < kernel_size; ++kh) {
    const int ih = (int)(oh * stride + kh) - (int)pad;
    if (ih < 0 || ih >= (int)height) continue;
    for (uint kw = 0; kw < kernel_size; ++kw) {
      const int iw = (int)(ow * stride + kw) - (int)pad;
      if (iw < 0 || iw >= (int)width) continue;
      const float v = image[((uint)ih * width + (uint)iw) * channels];
      acc = is_max ? (acc < v ? v : acc) : acc + v;
    }
  }
  y[y_offset + i] = is_max ? acc : acc * scale;
}

// The windows (oh, ow) holding input row ih: oh*stride - pad <= ih < oh*stride - pad + kernel_size,
// as [*first, *last] (empty when first > last).
void windows_holding(int i, uint stride, uint pad, uint kernel_size, uint out, int* first, int* last) {
  const int top = i + (int)pad - (int)kernel_size + 1;  // the lowest window start that still holds i
  *first = top <= 0 ? 0 : (top + (int)stride - 1) / (int)stride;
  *last = min((i + (int)pad) / (int)stride, (int)out - 1);
}

// dx [batch, height, width, channels] = the sum of the shares of every window holding the
// element, in window order (oh, then ow), from +0: as max_pool_backward/avg_pool_backward, which
// add the shares of windows in that order onto a zeroed dx (or write 0 + share where windows
// are disjoint: the same bits). Max: a window's dy goes to its first position (row by row) whose x
// equals its y (the forward's output), else 0; average: each position gets dy * scale.
// n = batch height width channels.
__kernel void f32_pool_backward(uint n, POOL_GEOMETRY, uint is_max, float scale, __global const float* x,
                                uint x_offset, __global const float* y, uint y_offset, __global const float* dy,
                                uint dy_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, iw = i / channels % width, ih = i / channels / width % height;
  const uint b = i / channels / width / height;
  __global const float* image = x + x_offset + b * height * width * channels + ch;
  const uint out_base = b * out_h * out_w * channels + ch;
  int oh0, oh1, ow0, ow1;
  windows_holding((int)ih, stride, pad, kernel_size, out_h, &oh0, &oh1);
  windows_holding((int)iw, stride, pad, kernel_size, out_w, &ow0, &ow1);
  float acc = 0.0f;
  for (int oh = oh0; oh <= oh1; ++oh) {
    for (int ow = ow0; ow <= ow1; ++ow) {
      const uint at = out_base + ((uint)oh * out_w + (uint)ow) * channels;
      const float g = dy[dy_offset + at];
      float share;
      if (is_max) {
        // Is this element the window's first position (inside the image) equal to its y?
        const float want = y[y_offset + at];
        const int top = oh * (int)stride - (int)pad, left = ow * (int)stride - (int)pad;
        const int h0 = max(top, 0), w0 = max(left, 0);
        const int h1 = min(top + (int)kernel_size, (int)height), w1 = min(left + (int)kernel_size, (int)width);
        int first_h = -1, first_w = -1;
        for (int h = h0; h < h1 && first_h < 0; ++h)
          for (int w = w0; w < w1; ++w)
            if (image[((uint)h * width + (uint)w) * channels] == want) {
              first_h = h, first_w = w;
              break;
            }
        share = first_h == (int)ih && first_w == (int)iw ? g : 0.0f;
      } else {
        share = g * scale;
      }
      acc = acc + share;
    }
  }
  dx[dx_offset + i] = acc;
}
