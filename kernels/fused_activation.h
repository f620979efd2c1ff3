// The activation a fused kernel applies to its result (gemm.cl's epilogue, batch_norm.cl's apply,
// elementwise.cl's add): relu as activation.cl's f32_relu_forward and leaky relu as its
// f32_leaky_relu_forward, the same float operations, so fusing changes no bit; and its backward
// read from its output (batch_norm.cl, activation.cl's f32_fused_activation_backward). `act` is
// src/opencl/fused_activation.h's FusedActivation::Kind. Not a program: the program cache pastes
// it where a kernel file says #include "fused_activation.h" (after its FP_CONTRACT pragma).
// Below it, the whole epilogue a product applies (gemm.cl, winograd.cl).
#define FUSED_NONE 0u
#define FUSED_RELU 1u
#define FUSED_LEAKY_RELU 2u

inline float fused_activation(float v, uint act, float slope) {
  if (act == FUSED_RELU) return v > 0.0f ? v : 0.0f;  // a NaN gives 0
  if (act == FUSED_LEAKY_RELU) return v > 0.0f ? v : slope * v;
  return v;
}

// The gradient g of the activation's output `out` taken back through it: f32_relu_backward's and
// f32_leaky_relu_backward's values (they read x; out > 0 exactly where x > 0 for the activations
// fused, src/opencl/model/cl_layer.h's FusionTail).
inline float fused_activation_grad(float g, float out, uint act, float slope) {
  if (act == FUSED_NONE || out > 0.0f) return g;
  return act == FUSED_RELU ? 0.0f : slope * g;
}

// A product's epilogue (gemm.cl's, winograd.cl's output), applied to output v of column c (of N)
// in this order: + bias[c] (f32_add_bias), * affine[c] + affine[N + c] (batch norm's inference
// affine, two roundings: FP_CONTRACT is off), the activation. Its arguments are the same in every
// kernel that takes one (offsets applied by the caller; launchers: src/opencl/gemm.cpp's epilogue_args).
#define EPILOGUE_PARAMS                                                                                  \
  uint has_bias, __global const float *bias, uint bias_offset, uint has_affine, __global const float *affine, \
      uint affine_offset, uint act, float slope
#define EPILOGUE_ARGS has_bias, bias + bias_offset, has_affine, affine + affine_offset, act, slope

inline float gemm_epilogue(float v, uint c, uint N, uint has_bias, __global const float* bias, uint has_affine,
                           __global const float* affine, uint act, float slope) {
  if (has_bias) v += bias[c];
  if (has_affine) v = v * affine[c] + affine[N + c];
  return fused_activation(v, act, slope);
}
