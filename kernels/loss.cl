// Losses on logits, as src/ops/loss.h computes them: softmax cross-entropy against class labels,
// MSE and binary cross-entropy with logits (row means of an elementwise term), and the argmax hits
// of count_correct. One work-item per row; the per-row losses are written in double (as the CPU sums
// them) for the host to add in row order. Needs cl_khr_fp64. Launchers: src/opencl/loss.cpp.
#pragma OPENCL FP_CONTRACT OFF  // two roundings where the CPU has two
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// x [rows x cols] logits, labels [rows] (int), row_loss [rows] = log sum_c e^(x_c - max) - (x_label - max),
// dx [rows x cols] = (float)(p_c - [c == label]) * grad_scale when write_grad (else dx is not touched).
// As softmax_xent: max in float, x_c - max in float, the sum and log in double, p = e^(x_c - max - log_sum).
// A label outside [0, cols) gives a NaN row loss and a gradient without the one-hot (no read outside the row).
__kernel void f32_softmax_cross_entropy(uint rows, uint cols, __global const float* x, uint x_offset,
                                        __global const int* labels, uint labels_offset, float grad_scale,
                                        uint write_grad, __global float* dx, uint dx_offset,
                                        __global double* row_loss, uint row_loss_offset) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  __global const float* xr = x + x_offset + r * cols;
  const int label = labels[labels_offset + r];
  const bool valid = label >= 0 && (uint)label < cols;
  float max = xr[0];
  for (uint c = 1; c < cols; ++c) max = xr[c] > max ? xr[c] : max;
  double sum = 0.0;
  for (uint c = 0; c < cols; ++c) sum += exp((double)(xr[c] - max));
  const double log_sum = log(sum);
  row_loss[row_loss_offset + r] = valid ? log_sum - (double)(xr[label] - max) : (double)NAN;
  if (write_grad == 0) return;
  __global float* dxr = dx + dx_offset + r * cols;
  for (uint c = 0; c < cols; ++c) {
    const double p = exp((double)(xr[c] - max) - log_sum);
    dxr[c] = (float)(p - ((int)c == label ? 1.0 : 0.0)) * grad_scale;
  }
}

// As elementwise_mean_loss: per row, the terms summed in double in column order, then divided by
// cols; dx = (float)(f' / cols) * grad_scale. f and f' are loss_term's, chosen by the define LOSS_TERM:
// 0 mse: f = (x - t)^2, f' = 2 (x - t); 1 bce_with_logits: f = max(x, 0) - x t + log1p(e^-|x|),
// f' = sigmoid(x) - t (ops/activation.h's two branches, in double).
double loss_term(double xi, double ti, double* derivative) {
#if LOSS_TERM == 0
  *derivative = 2.0 * (xi - ti);
  return (xi - ti) * (xi - ti);
#else
  double s;
  if (xi >= 0.0) {
    s = 1.0 / (1.0 + exp(-xi));
  } else {
    const double e = exp(xi);
    s = e / (1.0 + e);
  }
  *derivative = s - ti;
  return (xi > 0.0 ? xi : 0.0) - xi * ti + log1p(exp(-fabs(xi)));
#endif
}

// x, target [rows x cols]; row_loss [rows] = the row's mean term; dx as above when write_grad.
__kernel void f32_elementwise_mean_loss(uint rows, uint cols, __global const float* x, uint x_offset,
                                        __global const float* target, uint target_offset, float grad_scale,
                                        uint write_grad, __global float* dx, uint dx_offset,
                                        __global double* row_loss, uint row_loss_offset) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  const uint at = r * cols;
  double row = 0.0;
  for (uint c = 0; c < cols; ++c) {
    double derivative = 0.0;
    row += loss_term((double)x[x_offset + at + c], (double)target[target_offset + at + c], &derivative);
    if (write_grad != 0) dx[dx_offset + at + c] = (float)(derivative / (double)cols) * grad_scale;
  }
  row_loss[row_loss_offset + r] = row / (double)cols;
}

// hits[r] = 1 when the first largest of pred's row r (a later column wins only when strictly
// greater, so NaN never does, as count_correct) is labels[r], else 0. pred [rows x cols].
__kernel void f32_argmax_hits(uint rows, uint cols, __global const float* pred, uint pred_offset,
                              __global const int* labels, uint labels_offset, __global int* hits,
                              uint hits_offset) {
  const uint r = get_global_id(0);
  if (r >= rows) return;
  __global const float* p = pred + pred_offset + r * cols;
  uint best = 0;
  for (uint c = 1; c < cols; ++c)
    if (p[c] > p[best]) best = c;
  hits[hits_offset + r] = (int)best == labels[labels_offset + r] ? 1 : 0;
}
