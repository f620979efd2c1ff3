// im2col and col2im_add over a batch of NHWC images, as src/ops/im2col.h lays out the patch
// matrix for a ConvGeometry: image [height, width, channels] (channels innermost), square kernel,
// stride, zero padding; one patch row per output position (oh, ow), its columns ordered (kh, kw,
// c). The batch's images and patch matrices follow each other: images [batch, height, width,
// channels], cols [batch * out_h * out_w, kernel * kernel * channels]. im2col: one work-item per
// patch-matrix element. col2im_add: one per image element, gathering from every patch that holds
// it in the CPU's patch order, so overlapping patches never race. The depthwise convolution's
// passes (ops/depthwise.h) read the same geometry and need no patch matrix: one work-item per
// output, dx or dW element sums its taps or pixels in the CPU's order (padding adding 0 * w).
// Launchers: src/opencl/im2col.cpp.
#pragma OPENCL FP_CONTRACT OFF  // no arithmetic to fuse; kept as in every kernel file

// The geometry every kernel takes, in this order.
#define CONV_GEOMETRY uint height, uint width, uint channels, uint kernel_size, uint stride, uint pad, uint out_h, \
                      uint out_w

// cols [batch out_h out_w, kernel^2 channels]: element (patch (oh, ow), column (kh, kw, ch)) is
// image[oh stride - pad + kh, ow stride - pad + kw, ch], or +0 where that is padding (the
// CPU's memcpy of the inside and T(0) around it). n = batch out_h out_w kernel^2 channels.
__kernel void f32_im2col(uint n, CONV_GEOMETRY, __global const float* image, uint image_offset,
                         __global float* cols, uint cols_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, kw = i / channels % kernel_size, kh = i / channels / kernel_size % kernel_size;
  const uint patch = i / channels / kernel_size / kernel_size;  // over the whole batch
  const uint ow = patch % out_w, oh = patch / out_w % out_h, b = patch / out_w / out_h;
  const int ih = (int)(oh * stride + kh) - (int)pad, iw = (int)(ow * stride + kw) - (int)pad;
  float v = 0.0f;
  if (ih >= 0 && ih < (int)height && iw >= 0 && iw < (int)width)
    v = image[image_offset + ((b * height + (uint)ih) * width + (uint)iw) * channels + ch];
  cols[cols_offset + i] = v;
}

// The patches (oh or ow) holding input row (or column) i: o stride - pad <= i < o stride - pad +
// kernel_size, as [*first, *last] (empty when first > last: a stride above the kernel leaves gaps).
void patches_holding(int i, uint stride, uint pad, uint kernel_size, uint out, int* first, int* last) {
  const int top = i + (int)pad - (int)kernel_size + 1;  // the lowest patch start that still holds i
  *first = top <= 0 ? 0 : (top + (int)stride - 1) / (int)stride;
  *last = min((i + (int)pad) / (int)stride, (int)out - 1);
}

// image [batch, height, width, channels] (accumulate: +=, else =) the columns of every patch
// holding the element, added in patch order (oh, then ow) onto the image's value (accumulate) or
// onto +0: col2im_add adds the patch rows in that order (each patch holds an element once).
// n = batch height width channels.
__kernel void f32_col2im_add(uint n, CONV_GEOMETRY, uint accumulate, __global const float* cols, uint cols_offset,
                             __global float* image, uint image_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, iw = i / channels % width, ih = i / channels / width % height;
  const uint b = i / channels / width / height;
  const uint patch_size = kernel_size * kernel_size * channels;
  __global const float* batch_cols = cols + cols_offset + b * out_h * out_w * patch_size + ch;
  int oh0, oh1, ow0, ow1;
  patches_holding((int)ih, stride, pad, kernel_size, out_h, &oh0, &oh1);
  patches_holding((int)iw, stride, pad, kernel_size, out_w, &ow0, &ow1);
  float acc = accumulate ? image[image_offset + i] : 0.0f;
  for (int oh = oh0; oh <= oh1; ++oh) {
    const uint kh = (uint)((int)ih + (int)pad - oh * (int)stride);
    for (int ow = ow0; ow <= ow1; ++ow) {
      const uint kw = (uint)((int)iw + (int)pad - ow * (int)stride);
      acc = acc + batch_cols[((uint)oh * out_w + (uint)ow) * patch_size + (kh * kernel_size + kw) * channels];
    }
  }
  image[image_offset + i] = acc;
}

// Depthwise: y [batch out_h out_w, channels] = bias (has_bias, else +0) + the sum over taps (kh,
// then kw) of x * w [kernel^2, channels], as depthwise_rows. n = batch out_h out_w channels.
__kernel void f32_depthwise_forward(uint n, CONV_GEOMETRY, uint has_bias, __global const float* x, uint x_offset,
                                    __global const float* w, uint w_offset, __global const float* bias,
                                    uint bias_offset, __global float* y, uint y_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, ow = i / channels % out_w, oh = i / channels / out_w % out_h;
  const uint b = i / channels / out_w / out_h;
  float acc = has_bias ? bias[bias_offset + ch] : 0.0f;
  for (uint kh = 0; kh < kernel_size; ++kh)
    for (uint kw = 0; kw < kernel_size; ++kw) {
      const int ih = (int)(oh * stride + kh) - (int)pad, iw = (int)(ow * stride + kw) - (int)pad;
      float v = 0.0f;
      if (ih >= 0 && ih < (int)height && iw >= 0 && iw < (int)width)
        v = x[x_offset + ((b * height + (uint)ih) * width + (uint)iw) * channels + ch];
      acc = acc + v * w[w_offset + (kh * kernel_size + kw) * channels + ch];
    }
  y[y_offset + i] = acc;
}

// Depthwise dx [batch height width, channels] = the sum over taps (kh, then kw) of the dy value
// whose window put that tap on the element (+0 where none does) times w, from +0, as
// depthwise_input_grad_offsets reads them. n = batch height width channels.
__kernel void f32_depthwise_input_grad(uint n, CONV_GEOMETRY, __global const float* dy, uint dy_offset,
                                       __global const float* w, uint w_offset, __global float* dx, uint dx_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, iw = i / channels % width, ih = i / channels / width % height;
  const uint b = i / channels / width / height;
  float acc = 0.0f;
  for (uint kh = 0; kh < kernel_size; ++kh)
    for (uint kw = 0; kw < kernel_size; ++kw) {
      const int oh = (int)(ih + pad) - (int)kh, ow = (int)(iw + pad) - (int)kw;
      float v = 0.0f;
      if (oh >= 0 && ow >= 0 && oh % (int)stride == 0 && ow % (int)stride == 0 && oh / (int)stride < (int)out_h &&
          ow / (int)stride < (int)out_w)
        v = dy[dy_offset + ((b * out_h + (uint)oh / stride) * out_w + (uint)ow / stride) * channels + ch];
      acc = acc + v * w[w_offset + (kh * kernel_size + kw) * channels + ch];
    }
  dx[dx_offset + i] = acc;
}

// Depthwise dW [kernel^2, channels] (accumulate: onto its value, else onto +0) + the sum over
// the batch's output pixels in order (image, oh, ow) of x at the tap times dy, as
// depthwise_weight_grad_rows image after image. n = kernel^2 channels.
__kernel void f32_depthwise_weight_grad(uint n, CONV_GEOMETRY, uint batch, uint accumulate, __global const float* x,
                                        uint x_offset, __global const float* dy, uint dy_offset, __global float* dw,
                                        uint dw_offset) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const uint ch = i % channels, kw = i / channels % kernel_size, kh = i / channels / kernel_size;
  float acc = accumulate ? dw[dw_offset + i] : 0.0f;
  for (uint b = 0; b < batch; ++b)
    for (uint oh = 0; oh < out_h; ++oh)
      for (uint ow = 0; ow < out_w; ++ow) {
        const int ih = (int)(oh * stride + kh) - (int)pad, iw = (int)(ow * stride + kw) - (int)pad;
        float v = 0.0f;
        if (ih >= 0 && ih < (int)height && iw >= 0 && iw < (int)width)
          v = x[x_offset + ((b * height + (uint)ih) * width + (uint)iw) * channels + ch];
        acc = acc + v * dy[dy_offset + ((b * out_h + oh) * out_w + ow) * channels + ch];
      }
  dw[dw_offset + i] = acc;
}
