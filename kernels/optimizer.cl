// Optimizer updates, one work-item per parameter element (guard at n, an element offset per
// buffer), each the same operations in the same order as cpu/ukernels/f32_vector_impl.h's
// sgd and adam, so an IEEE device matches the CPU bit for bit. Adam divides and takes a square
// root: its launcher builds it correctly rounded where the device can. Launchers: src/opencl/optimizer.cpp.
#pragma OPENCL FP_CONTRACT OFF  // lr * g and w - that stay two roundings, as on the CPU

// The update guard (the CPU's kernels return whether every gradient and updated weight was
// finite): flags[flag] = 1 when item i's gradient or new weight is Inf or NaN (exponent all ones;
// every item that finds one writes 1), and where: flags[flag + 1] the largest n - i over the items
// whose gradient is, flags[flag + 2] over those whose new weight is (n - the first such i; 0 for
// none), so that one launch over many params names the first bad one. The caller zeroes the
// three and reads them back.
inline bool non_finite(float v) { return (as_uint(v) & 0x7f800000u) == 0x7f800000u; }
void flag_non_finite(float grad, float updated, __global int* flags, uint flag, uint n, uint i) {
  const bool bad_grad = non_finite(grad), bad_new = non_finite(updated);
  if (!bad_grad && !bad_new) return;
  flags[flag] = 1;
  volatile __global uint* where = (volatile __global uint*)(flags + flag);
  if (bad_grad) atomic_max(where + 1, n - i);
  if (bad_new) atomic_max(where + 2, n - i);
}

// No momentum: g = grad + wd w;  w = w - lr g
__kernel void f32_sgd(uint n, float lr, float weight_decay, __global float* w, uint w_offset,
                      __global const float* grad, uint grad_offset, __global int* flags, uint flag) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float wv = w[w_offset + i];
  const float g = grad[grad_offset + i] + weight_decay * wv;
  const float updated = wv - lr * g;
  w[w_offset + i] = updated;
  flag_non_finite(grad[grad_offset + i], updated, flags, flag, n, i);
}

// g = grad + wd w;  v = mu v + g;  w = w - lr (nesterov ? g + mu v : v)
__kernel void f32_sgd_momentum(uint n, float lr, float momentum, float weight_decay, uint nesterov,
                               __global float* w, uint w_offset, __global const float* grad, uint grad_offset,
                               __global float* v, uint v_offset, __global int* flags, uint flag) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float wv = w[w_offset + i];
  const float g = grad[grad_offset + i] + weight_decay * wv;
  const float velocity = momentum * v[v_offset + i] + g;
  v[v_offset + i] = velocity;
  const float updated = wv - lr * (nesterov ? g + momentum * velocity : velocity);
  w[w_offset + i] = updated;
  flag_non_finite(grad[grad_offset + i], updated, flags, flag, n, i);
}

// g = grad + wd w;  m = b1 m + (1 - b1) g;  s = b2 s + ((1 - b2) g) g;
// w = w - (step_size m) / (sqrt(s) / correction2_sqrt + eps)   (AdamStep's fields, f32_vector.h)
__kernel void f32_adam(uint n, float step_size, float correction2_sqrt, float beta1, float beta2,
                       float one_minus_beta1, float one_minus_beta2, float eps, float weight_decay,
                       __global float* w, uint w_offset, __global const float* grad, uint grad_offset,
                       __global float* m, uint m_offset, __global float* s, uint s_offset,
                       __global int* flags, uint flag) {
  const uint i = get_global_id(0);
  if (i >= n) return;
  const float wv = w[w_offset + i];
  const float g = grad[grad_offset + i] + weight_decay * wv;
  const float mv = beta1 * m[m_offset + i] + one_minus_beta1 * g;
  const float sv = beta2 * s[s_offset + i] + one_minus_beta2 * g * g;
  m[m_offset + i] = mv;
  s[s_offset + i] = sv;
  const float updated = wv - step_size * mv / (sqrt(sv) / correction2_sqrt + eps);
  w[w_offset + i] = updated;
  flag_non_finite(grad[grad_offset + i], updated, flags, flag, n, i);
}
