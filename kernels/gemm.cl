// f32 GEMM, row-major: C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C, op(X) = X
// or X^T, the contract of ops/gemm.h's gemm_ref (beta 0 ignores what C held, NaN included).
// Tiled through local memory and register-blocked. Every output's sum is added in the order
// p = 0, 1, ..., K-1 whatever the tile (padding adds exact zeros), so every configuration gives
// the same bits; with USE_FMA 0 (FP_CONTRACT off, a product then a sum) an IEEE device matches
// gemm_ref bit for bit, with USE_FMA 1 each step is one fused multiply-add.
// Split over K (work-group dimension 2): slice z sums p in [z * slice_len, (z + 1) * slice_len) in
// order into C + z * M * ldc (a scratch of partials, alpha 1, beta 0), and f32_gemm_sum_slices adds
// the slices in order; one slice (slice_len >= K) is the plain product.
// The epilogue, applied to each output v = alpha * sum + beta * C[r][c] in this order, each step
// as its unfused kernel computes it after the plain product (the same bits, fewer launches):
//   has_bias:    v = v + bias[c]                  (f32_add_bias; the CPU adds it after its product)
//   has_affine:  v = v * affine[c] + affine[N + c] (f32_batch_norm_apply in inference: scale, shift)
//   act:         fused_activation.h (relu, leaky relu with `slope`)
// Launcher and configurations: src/opencl/gemm.cpp, gemm_config.h.
//
// Build-time defines (each set is one program in the cache):
//   TRANS_A, TRANS_B      0 or 1: op(A), op(B)
//   TILE_M, TILE_N        the C tile of one work-group
//   TILE_K                the depth of one step (panels of op(A) TILE_M x TILE_K, op(B) TILE_K x TILE_N)
//   THREADS_M, THREADS_N  the work-group: THREADS_N x THREADS_M items (dimension 0 along N)
//   VEC                   1, 2 or 4: an item owns groups of VEC neighbouring rows and columns,
//                         read from local memory VEC words at a time. Item (tx, ty) computes
//                         rows ty*VEC + g*THREADS_M*VEC + v and columns tx*VEC + h*THREADS_N*VEC + w,
//                         so neighbouring items read neighbouring local words.
//   PREFETCH              1: the next step's global words are read into registers before this
//                         step's products (their latency hidden behind them)
//   USE_FMA               1: fma(a, b, acc); 0: acc + a * b, two roundings
//   IMPLICIT_CONV         1: op(A) is the patch matrix of a batch of NHWC images (src/ops/im2col.h's
//                         layout: row (image, oh, ow), column (kh, kw, c)), or with TRANS_A its
//                         transpose (a weight gradient), read from the images at A as it is needed
//                         instead of from a matrix im2col wrote: the same values (0 in the
//                         padding), so the same bits. lda unused. 2: op(B) is the patch matrix
//                         (TRANS_B 0; ldb unused): a transposed convolution's weight gradient. The geometry
//                         as defines (constant divisors): CONV_H, CONV_W, CONV_C, CONV_K (square
//                         kernel), CONV_S (stride), CONV_P (padding), CONV_OH, CONV_OW.
// Global size: (ceil(N / TILE_N) * THREADS_N, ceil(M / TILE_M) * THREADS_M, slices).
#pragma OPENCL FP_CONTRACT OFF
#include "fused_activation.h"

#define THREADS (THREADS_M * THREADS_N)
#define WPT_M (TILE_M / THREADS_M)  // rows of C per item
#define WPT_N (TILE_N / THREADS_N)  // columns of C per item
#define LOADS_A (TILE_M * TILE_K / THREADS)  // global words each item moves per step
#define LOADS_B (TILE_K * TILE_N / THREADS)
#if WPT_M % VEC || WPT_N % VEC || (TILE_M * TILE_K) % THREADS || (TILE_K * TILE_N) % THREADS
#error "gemm.cl: the tile, the items and VEC do not divide evenly"
#endif
// Panel rows padded by VEC words: keeps them VEC-aligned and shifts the banks of each row.
#define A_STRIDE (TILE_M + VEC)
#define B_STRIDE (TILE_N + VEC)

#if VEC == 4
typedef float4 vec_t;
#define VEC_TO_REGS(v, r, at) (r[at] = v.s0, r[at + 1] = v.s1, r[at + 2] = v.s2, r[at + 3] = v.s3)
#elif VEC == 2
typedef float2 vec_t;
#define VEC_TO_REGS(v, r, at) (r[at] = v.s0, r[at + 1] = v.s1)
#else
typedef float vec_t;
#define VEC_TO_REGS(v, r, at) (r[at] = v)
#endif

#if USE_FMA
#define MUL_ADD(a, b, acc) fma(a, b, acc)
#else
#define MUL_ADD(a, b, acc) ((acc) + (a) * (b))
#endif

#if IMPLICIT_CONV
// Patch-matrix row r = (image b, oh, ow), column q = (kh, kw, ch): an image word or padding.
inline float patch_value(__global const float* A, uint r, uint q) {
  const uint ch = q % CONV_C, kw = q / CONV_C % CONV_K, kh = q / (CONV_C * CONV_K);
  const uint ow = r % CONV_OW, oh = r / CONV_OW % CONV_OH, b = r / (CONV_OW * CONV_OH);
  const int ih = (int)(oh * CONV_S + kh) - CONV_P, iw = (int)(ow * CONV_S + kw) - CONV_P;
  return (ih >= 0 && ih < CONV_H && iw >= 0 && iw < CONV_W) ? A[((b * CONV_H + ih) * CONV_W + iw) * CONV_C + ch] : 0.0f;
}
#endif

// Element l (< TILE_M * TILE_K) of this step's op(A) panel: its global word (0 past the edges)
// and its place in the local panel. Neighbouring l read neighbouring global words in either layout
// (the patch matrix's transpose: neighbouring channels of one tap).
inline float load_a(__global const float* A, uint lda, uint M, uint K, uint row0, uint p0, uint l, uint* at) {
#if TRANS_A
  const uint i = l % TILE_M, p = l / TILE_M;  // A stored K x M: op(A)[r][q] = A[q][r]
#else
  const uint p = l % TILE_K, i = l / TILE_K;  // A stored M x K, or the patch matrix
#endif
  const uint r = row0 + i, q = p0 + p;
  *at = p * A_STRIDE + i;
  if (r >= M || q >= K) return 0.0f;
#if IMPLICIT_CONV == 1 && TRANS_A
  return patch_value(A, q, r);  // op(A) = the patch matrix transposed (a weight gradient)
#elif IMPLICIT_CONV == 1
  return patch_value(A, r, q);
#elif TRANS_A
  return A[q * lda + r];
#else
  return A[r * lda + q];
#endif
}

inline float load_b(__global const float* B, uint ldb, uint K, uint N, uint col0, uint p0, uint l, uint* at) {
#if TRANS_B
  const uint p = l % TILE_K, j = l / TILE_K;  // B stored N x K: op(B)[q][c] = B[c][q]
#else
  const uint j = l % TILE_N, p = l / TILE_N;  // B stored K x N
#endif
  const uint q = p0 + p, c = col0 + j;
  *at = p * B_STRIDE + j;
#if IMPLICIT_CONV == 2 && TRANS_B
#error "gemm.cl: IMPLICIT_CONV 2 reads op(B) = the patch matrix itself (TRANS_B 0)"
#elif IMPLICIT_CONV == 2
  return (q < K && c < N) ? patch_value(B, q, c) : 0.0f;
#elif TRANS_B
  return (q < K && c < N) ? B[c * ldb + q] : 0.0f;
#else
  return (q < K && c < N) ? B[q * ldb + c] : 0.0f;
#endif
}

// The epilogue's arguments, the same in both kernels (offsets applied by the caller).
#define EPILOGUE_PARAMS                                                                                  \
  uint has_bias, __global const float *bias, uint bias_offset, uint has_affine, __global const float *affine, \
      uint affine_offset, uint act, float slope
#define EPILOGUE_ARGS has_bias, bias + bias_offset, has_affine, affine + affine_offset, act, slope

// Output v of column c (of N) through the epilogue (see the top of the file).
inline float epilogue(float v, uint c, uint N, uint has_bias, __global const float* bias, uint has_affine,
                      __global const float* affine, uint act, float slope) {
  if (has_bias) v += bias[c];
  if (has_affine) v = v * affine[c] + affine[N + c];  // two roundings: FP_CONTRACT is off
  return fused_activation(v, act, slope);
}

__kernel __attribute__((reqd_work_group_size(THREADS_N, THREADS_M, 1)))
void f32_gemm(uint M, uint N, uint K, uint slice_len, float alpha,
              __global const float* A, uint a_offset, uint lda,
              __global const float* B, uint b_offset, uint ldb, float beta,
              __global float* C, uint c_offset, uint ldc, EPILOGUE_PARAMS) {
  // Declared as vectors so that VEC-wide reads are aligned; written word by word.
  __local vec_t a_panel_v[TILE_K * A_STRIDE / VEC];  // [p][i] = op(A)[row0 + i][p0 + p]
  __local vec_t b_panel_v[TILE_K * B_STRIDE / VEC];  // [p][j] = op(B)[p0 + p][col0 + j]
  __local float* a_panel = (__local float*)a_panel_v;
  __local float* b_panel = (__local float*)b_panel_v;
  const uint tx = get_local_id(0);
  const uint ty = get_local_id(1);
  const uint item = ty * THREADS_N + tx;
  const uint row0 = get_group_id(1) * TILE_M;
  const uint col0 = get_group_id(0) * TILE_N;
  const uint k_begin = get_group_id(2) * slice_len;
  const uint k_end = min(K, k_begin + slice_len);  // this slice's terms: [k_begin, k_end)
  A += a_offset;
  B += b_offset;
  C += c_offset + get_group_id(2) * M * ldc;

  float acc[WPT_M][WPT_N];
#pragma unroll
  for (uint i = 0; i < WPT_M; ++i)
#pragma unroll
    for (uint j = 0; j < WPT_N; ++j) acc[i][j] = 0.0f;

  // The step's global words, held in registers until the panels are free.
  float a_words[LOADS_A], b_words[LOADS_B];
  uint a_at[LOADS_A], b_at[LOADS_B];
#define LOAD_STEP(p0)                                                                                          \
  do {                                                                                                         \
    for (uint s = 0; s < LOADS_A; ++s) a_words[s] = load_a(A, lda, M, k_end, row0, (p0), item + s * THREADS, &a_at[s]); \
    for (uint s = 0; s < LOADS_B; ++s) b_words[s] = load_b(B, ldb, k_end, N, col0, (p0), item + s * THREADS, &b_at[s]); \
  } while (0)

  LOAD_STEP(k_begin);
  for (uint p0 = k_begin; p0 < k_end; p0 += TILE_K) {
#pragma unroll
    for (uint s = 0; s < LOADS_A; ++s) a_panel[a_at[s]] = a_words[s];
#pragma unroll
    for (uint s = 0; s < LOADS_B; ++s) b_panel[b_at[s]] = b_words[s];
    barrier(CLK_LOCAL_MEM_FENCE);
#if PREFETCH
    if (p0 + TILE_K < k_end) LOAD_STEP(p0 + TILE_K);
#endif
#pragma unroll
    for (uint p = 0; p < TILE_K; ++p) {
      float a_regs[WPT_M], b_regs[WPT_N];
#pragma unroll
      for (uint g = 0; g < WPT_M / VEC; ++g) {
        const vec_t v = a_panel_v[(p * A_STRIDE + (ty + g * THREADS_M) * VEC) / VEC];
        VEC_TO_REGS(v, a_regs, g * VEC);
      }
#pragma unroll
      for (uint h = 0; h < WPT_N / VEC; ++h) {
        const vec_t v = b_panel_v[(p * B_STRIDE + (tx + h * THREADS_N) * VEC) / VEC];
        VEC_TO_REGS(v, b_regs, h * VEC);
      }
#pragma unroll
      for (uint i = 0; i < WPT_M; ++i)
#pragma unroll
        for (uint j = 0; j < WPT_N; ++j) acc[i][j] = MUL_ADD(a_regs[i], b_regs[j], acc[i][j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the panels are overwritten next step
#if !PREFETCH
    if (p0 + TILE_K < k_end) LOAD_STEP(p0 + TILE_K);
#endif
  }

#pragma unroll
  for (uint i = 0; i < WPT_M; ++i) {
    const uint r = row0 + (ty + (i / VEC) * THREADS_M) * VEC + i % VEC;
    if (r >= M) continue;
#pragma unroll
    for (uint j = 0; j < WPT_N; ++j) {
      const uint c = col0 + (tx + (j / VEC) * THREADS_N) * VEC + j % VEC;
      if (c >= N) continue;
      __global float* out = C + r * ldc + c;
      const float v = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * *out);
      *out = epilogue(v, c, N, EPILOGUE_ARGS);
    }
  }
}

// C[r][c] = alpha * (((0 + P[0]) + P[1]) + ... + P[slices - 1])[r][c] + beta * C[r][c], P the
// slices' partials (slices x M x N, packed), then the epilogue. One work-item per element of C.
__kernel void f32_gemm_sum_slices(uint M, uint N, uint slices, float alpha, __global const float* P, float beta,
                                  __global float* C, uint c_offset, uint ldc, EPILOGUE_PARAMS) {
  const uint e = get_global_id(0);
  if (e >= M * N) return;
  float sum = 0.0f;
  for (uint z = 0; z < slices; ++z) sum += P[z * M * N + e];
  __global float* out = C + c_offset + (e / N) * ldc + e % N;
  const float v = alpha * sum + (beta == 0.0f ? 0.0f : beta * *out);
  *out = epilogue(v, e % N, N, EPILOGUE_ARGS);
}
