// The activation a fused kernel applies to its result (gemm.cl's epilogue, batch_norm.cl's apply):
// relu as activation.cl's f32_relu_forward and leaky relu as its
// f32_leaky_relu_forward, the same float operations, so fusing changes no bit. `act` is
// src/opencl/fused_activation.h's FusedActivation::Kind. Not a program: the program cache pastes
// it where a kernel file says #include "fused_activation.h" (after its FP_CONTRACT pragma).
#define FUSED_NONE 0u
#define FUSED_RELU 1u
#define FUSED_LEAKY_RELU 2u

inline float fused_activation(float v, uint act, float slope) {
  if (act == FUSED_RELU) return v > 0.0f ? v : 0.0f;  // a NaN gives 0
  if (act == FUSED_LEAKY_RELU) return v > 0.0f ? v : slope * v;
  return v;
}
