// The elementwise activations, named for kernels and layers alike, written once in
// RG_UNARY_OP_LIST: the enum, the cfg and kernel names (the layer kind `relu`, the device kernels
// f32_relu_forward/backward in kernels/activation.cl) and what each gradient reads come from it.
#pragma once

namespace rg {

// X(name, reads): `reads` is what the gradient is written from: x (the forward's input) or y
// (its output). A new activation is an entry here, its scalar math in ops/activation.h, its
// vector case in cpu/ukernels/f32_vector_impl.h and its device kernels in kernels/activation.cl.
#define RG_UNARY_OP_LIST(X) \
  X(relu, x)                \
  X(leaky_relu, x)          \
  X(sigmoid, y)             \
  X(tanh, y)                \
  X(relu6, x)

#define RG_UNARY_OP_ENUM(name, reads) name,
enum class UnaryOp : int { RG_UNARY_OP_LIST(RG_UNARY_OP_ENUM) };
#undef RG_UNARY_OP_ENUM

#define RG_UNARY_OP_ONE(name, reads) +1
constexpr int kUnaryOps = 0 RG_UNARY_OP_LIST(RG_UNARY_OP_ONE);
#undef RG_UNARY_OP_ONE

// "relu": the layer kind and the stem of its device kernels' names.
inline const char* unary_op_name(UnaryOp op) {
#define RG_UNARY_OP_NAME(name, reads) #name,
  static constexpr const char* kNames[] = {RG_UNARY_OP_LIST(RG_UNARY_OP_NAME)};
#undef RG_UNARY_OP_NAME
  return kNames[static_cast<int>(op)];
}

// The gradient of `op` is written from the forward's input x (else from its output y).
inline bool unary_grad_reads_input(UnaryOp op) {
#define RG_UNARY_OP_READS_X(name, reads) (#reads[0] == 'x'),
  static constexpr bool kReadsX[] = {RG_UNARY_OP_LIST(RG_UNARY_OP_READS_X)};
#undef RG_UNARY_OP_READS_X
  return kReadsX[static_cast<int>(op)];
}

}  // namespace rg
