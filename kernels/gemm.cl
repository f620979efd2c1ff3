// f32 GEMM, row-major: C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C, op(X) = X
// or X^T, the contract of ops/gemm.h's gemm_ref (beta 0 ignores what C held, NaN included).
// Tiled through local memory and register-blocked. Every output's sum is added in the order
// p = 0, 1, ..., K-1 whatever the tile (padding past K adds exact zeros), so every configuration gives
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
//   PREFETCH              1: two panels of each operand in local memory: the next step's global
//                         words are read into registers before this step's products (their latency
//                         hidden behind them) and stored into the other panels after them, one
//                         barrier a step; 0: one panel each, loaded between two barriers
//   VLOAD                 1: the panels are read from global memory four words at a time (float4)
//                         from offsets kept from step to step, unchecked but in the last step; the
//                         launcher sets it only where that is aligned and in bounds (gemm.cpp's
//                         vector_loads_fit): A, B, lda, ldb multiples of 4 words, M a multiple of 4
//                         with TRANS_A, N with !TRANS_B; no IMPLICIT_CONV. Rows of op(A) past M
//                         (columns of op(B) past N) read row M - 1 (column N - 1) instead of 0:
//                         they feed only outputs that are never stored
//   USE_FMA               1: fma(a, b, acc); 0: acc + a * b, two roundings
//   IMPLICIT_CONV         1: op(A) is the patch matrix of a batch of NHWC images (src/ops/im2col.h's
//                         layout: row (image, oh, ow), column (kh, kw, c)), or with TRANS_A its
//                         transpose (a weight gradient), read from the images at A as it is needed
//                         instead of from a matrix im2col wrote: the same values (0 in the
//                         padding), so the same bits. lda unused. 2: op(B) is the patch matrix
//                         (TRANS_B 0; ldb unused): a transposed convolution's weight gradient. The geometry
//                         as defines (constant divisors): CONV_H, CONV_W, CONV_C, CONV_K (square
//                         kernel), CONV_S (stride), CONV_P (padding), CONV_OH, CONV_OW.
//   FLIPPED_B             1 (IMPLICIT_CONV 1, TRANS_B 1): op(B) is a Conv2D's weight W [taps, N, CONV_C]
//                         turned 180 degrees with its channel axes swapped (nn/conv.cpp's flip_weight,
//                         read in place): term q = (tap, f), column c is W[taps - 1 - tap][c][f]; the
//                         dx of a stride-1 conv as a conv over dy. ldb unused.
//   BATCHED               1: dimension 2 counts products and their slices: with S = ceil(K /
//                         slice_len) slices a product, group z is product z / S's slice z % S, which
//                         reads A + product (rows of A) lda and B + product (rows of B) ldb and
//                         writes its slice's sum, in order, into C + z M ldc (S = 1: each product
//                         whole into its C). The Winograd convolution's 36 products (winograd.cl;
//                         its weight gradient's in slices). No IMPLICIT_CONV.
// Global size: (ceil(N / TILE_N) * THREADS_N, ceil(M / TILE_M) * THREADS_M, slices, or BATCHED
// products x their slices).
#pragma OPENCL FP_CONTRACT OFF
#include "fused_activation.h"

#ifndef VLOAD
#define VLOAD 0
#endif
#define THREADS (THREADS_M * THREADS_N)
#define WPT_M (TILE_M / THREADS_M)  // rows of C per item
#define WPT_N (TILE_N / THREADS_N)  // columns of C per item
#define LOADS_A (TILE_M * TILE_K / THREADS)  // global words each item moves per step
#define LOADS_B (TILE_K * TILE_N / THREADS)
#if WPT_M % VEC || WPT_N % VEC || (TILE_M * TILE_K) % THREADS || (TILE_K * TILE_N) % THREADS
#error "gemm.cl: the tile, the items and VEC do not divide evenly"
#endif
#ifndef BATCHED
#define BATCHED 0
#endif
#if BATCHED && IMPLICIT_CONV
#error "gemm.cl: BATCHED reads matrices, not images"
#endif
#if VLOAD && (LOADS_A % 4 || LOADS_B % 4 || TILE_M % 4 || TILE_N % 4 || TILE_K % 4 || IMPLICIT_CONV)
#error "gemm.cl: VLOAD needs whole float4s of each panel per item and no IMPLICIT_CONV"
#endif
// Panel rows padded by VEC words: keeps them VEC-aligned and shifts the banks of each row.
#define A_STRIDE (TILE_M + VEC)
#define B_STRIDE (TILE_N + VEC)
#define PANELS (PREFETCH ? 2 : 1)  // panels of each operand in local memory

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
// TAP_MASKS: op(A) is the patch matrix (not transposed) and each item's words of a panel share
// one column (the work-group a multiple of TILE_K), so a row's place is worked out once (patch_row)
// and a step's column once; up to 32 taps (a kernel of at most 5 x 5).
#if IMPLICIT_CONV == 1 && !TRANS_A && THREADS % TILE_K == 0 && CONV_K * CONV_K <= 32
#define TAP_MASKS 1
// Patch row r = (image b, oh, ow): the image word of its tap (0, 0), channel 0, modulo 2^32
// (negative where the patch hangs over the top or left padding: a tap's offset brings it back),
// and bit kh * CONV_K + kw set where that tap lies inside the image; rows past M: no taps (they
// feed outputs never stored: the guard keeps their reads inside the images, as does LOAD_STEP's
// q < k_end for terms past the slice, which meet B's zeros).
inline void patch_row(uint M, uint r, uint* base, uint* taps) {
  const uint ow = r % CONV_OW, oh = r / CONV_OW % CONV_OH, b = r / (CONV_OW * CONV_OH);
  const int ih = (int)(oh * CONV_S) - CONV_P, iw = (int)(ow * CONV_S) - CONV_P;
  *base = ((b * CONV_H + (uint)ih) * CONV_W + (uint)iw) * CONV_C;
  uint mask = 0;
  for (int kh = 0; kh < CONV_K; ++kh)
    for (int kw = 0; kw < CONV_K; ++kw)
      if (ih + kh >= 0 && ih + kh < CONV_H && iw + kw >= 0 && iw + kw < CONV_W) mask |= 1u << (kh * CONV_K + kw);
  *taps = r < M ? mask : 0u;
}
#else
#define TAP_MASKS 0
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
#elif FLIPPED_B && (IMPLICIT_CONV != 1 || !TRANS_B)
#error "gemm.cl: FLIPPED_B reads a conv's weight along f (TRANS_B 1) for the implicit conv (IMPLICIT_CONV 1)"
#elif FLIPPED_B  // neighbouring l: neighbouring q, so neighbouring f, neighbouring words of W
  return (q < K && c < N) ? B[((CONV_K * CONV_K - 1 - q / CONV_C) * N + c) * CONV_C + q % CONV_C] : 0.0f;
#elif TRANS_B
  return (q < K && c < N) ? B[c * ldb + q] : 0.0f;
#else
  return (q < K && c < N) ? B[q * ldb + c] : 0.0f;
#endif
}

#if VLOAD
// Float4 f of a step's op(A) panel (f < TILE_M * TILE_K / 4): its first element (i, p), the
// four words running along K without TRANS_A (A's rows), along M with it (A's rows then are op(A)'s
// columns); neighbouring f read neighbouring global words.
inline void a_quad(uint f, uint* i, uint* p) {
#if TRANS_A
  *i = 4 * f % TILE_M, *p = 4 * f / TILE_M;
#else
  *p = 4 * f % TILE_K, *i = 4 * f / TILE_K;
#endif
}
// Float4 f of op(B)'s panel: its first element (p, j), the words along N without TRANS_B, along K with it.
inline void b_quad(uint f, uint* p, uint* j) {
#if TRANS_B
  *p = 4 * f % TILE_K, *j = 4 * f / TILE_K;
#else
  *j = 4 * f % TILE_N, *p = 4 * f / TILE_N;
#endif
}
inline float4 load4(__global const float* at) { return *(__global const float4*)at; }

// A float4 of the last step, whose terms may run past k_end (they read 0): `along_k` says whether
// its words are consecutive terms (q, q + 1, ...) or four rows / columns of term q.
inline float4 load4_tail(__global const float* at, uint q, uint k_end, int along_k) {
  if (!along_k) return q < k_end ? load4(at) : (float4)(0.0f);
  return (float4)(q < k_end ? at[0] : 0.0f, q + 1 < k_end ? at[1] : 0.0f, q + 2 < k_end ? at[2] : 0.0f,
                  q + 3 < k_end ? at[3] : 0.0f);
}

// Writes a float4 into a panel at word `at`: along the panel's row (one vector store where the
// rows keep vectors aligned), or down a column (`stride` words apart).
inline void stash4(__local float* panel, uint at, int along_row, uint stride, float4 v) {
#if VEC == 4
  if (along_row) {
    *(__local float4*)(panel + at) = v;
    return;
  }
#endif
  const uint d = along_row ? 1 : stride;
  panel[at] = v.s0, panel[at + d] = v.s1, panel[at + 2 * d] = v.s2, panel[at + 3 * d] = v.s3;
}
#endif

__kernel __attribute__((reqd_work_group_size(THREADS_N, THREADS_M, 1)))
void f32_gemm(uint M, uint N, uint K, uint slice_len, float alpha,
              __global const float* A, uint a_offset, uint lda,
              __global const float* B, uint b_offset, uint ldb, float beta,
              __global float* C, uint c_offset, uint ldc, EPILOGUE_PARAMS) {
  // Declared as vectors so that VEC-wide reads are aligned. With PREFETCH, step t reads panel
  // t % 2 while the next step's words go into the other.
  __local vec_t a_panels_v[PANELS][TILE_K * A_STRIDE / VEC];  // [p][i] = op(A)[row0 + i][p0 + p]
  __local vec_t b_panels_v[PANELS][TILE_K * B_STRIDE / VEC];  // [p][j] = op(B)[p0 + p][col0 + j]
  const uint tx = get_local_id(0);
  const uint ty = get_local_id(1);
  const uint item = ty * THREADS_N + tx;
  const uint row0 = get_group_id(1) * TILE_M;
  const uint col0 = get_group_id(0) * TILE_N;
#if BATCHED  // a slice of product z / S, its operands packed one after another
  const uint slices = max(1u, (K + slice_len - 1) / slice_len), product = get_group_id(2) / slices;
  const uint k_begin = (get_group_id(2) - product * slices) * slice_len;
  const uint k_end = min(K, k_begin + slice_len);
  A += a_offset + product * (TRANS_A ? K : M) * lda;
  B += b_offset + product * (TRANS_B ? N : K) * ldb;
#else
  const uint k_begin = get_group_id(2) * slice_len;
  const uint k_end = min(K, k_begin + slice_len);  // this slice's terms: [k_begin, k_end)
  A += a_offset;
  B += b_offset;
#endif
  C += c_offset + get_group_id(2) * M * ldc;

  float acc[WPT_M][WPT_N];
#pragma unroll
  for (uint i = 0; i < WPT_M; ++i)
#pragma unroll
    for (uint j = 0; j < WPT_N; ++j) acc[i][j] = 0.0f;

#if VLOAD
  // The item's float4s of each panel: where each starts in global memory at step k_begin (kept:
  // a step only adds its distance), where it goes in the panel, and the words held in registers
  // between the global read and the local store.
#define QUADS_A (LOADS_A / 4)
#define QUADS_B (LOADS_B / 4)
  uint a_from[QUADS_A], a_at[QUADS_A], b_from[QUADS_B], b_at[QUADS_B];
  float4 a_quads[QUADS_A], b_quads[QUADS_B];
#pragma unroll
  for (uint s = 0; s < QUADS_A; ++s) {
    uint i, p;
    a_quad(item + s * THREADS, &i, &p);
    a_at[s] = p * A_STRIDE + i;
    a_from[s] = TRANS_A ? (k_begin + p) * lda + min(row0 + i, M - 4) : min(row0 + i, M - 1) * lda + k_begin + p;
  }
#pragma unroll
  for (uint s = 0; s < QUADS_B; ++s) {
    uint p, j;
    b_quad(item + s * THREADS, &p, &j);
    b_at[s] = p * B_STRIDE + j;
    b_from[s] = TRANS_B ? min(col0 + j, N - 1) * ldb + k_begin + p : (k_begin + p) * ldb + min(col0 + j, N - 4);
  }
  // Step p0's float4s into registers: unchecked while the whole step is within k_end.
#define LOAD_STEP(p0)                                                            \
  do {                                                                           \
    const uint da = TRANS_A ? ((p0) - k_begin) * lda : (p0) - k_begin;           \
    const uint db = TRANS_B ? (p0) - k_begin : ((p0) - k_begin) * ldb;           \
    if ((p0) + TILE_K <= k_end) {                                                \
      for (uint s = 0; s < QUADS_A; ++s) a_quads[s] = load4(A + a_from[s] + da); \
      for (uint s = 0; s < QUADS_B; ++s) b_quads[s] = load4(B + b_from[s] + db); \
    } else {                                                                     \
      for (uint s = 0; s < QUADS_A; ++s) {                                       \
        uint i, p;                                                               \
        a_quad(item + s * THREADS, &i, &p);                                      \
        a_quads[s] = load4_tail(A + a_from[s] + da, (p0) + p, k_end, !TRANS_A);  \
      }                                                                          \
      for (uint s = 0; s < QUADS_B; ++s) {                                       \
        uint p, j;                                                               \
        b_quad(item + s * THREADS, &p, &j);                                      \
        b_quads[s] = load4_tail(B + b_from[s] + db, (p0) + p, k_end, TRANS_B);   \
      }                                                                          \
    }                                                                            \
  } while (0)
#define STORE_STEP(panel)                                                                   \
  do {                                                                                      \
    for (uint s = 0; s < QUADS_A; ++s)                                                      \
        stash4((__local float*)a_panels_v[panel], a_at[s], TRANS_A, A_STRIDE, a_quads[s]);  \
    for (uint s = 0; s < QUADS_B; ++s)                                                      \
        stash4((__local float*)b_panels_v[panel], b_at[s], !TRANS_B, B_STRIDE, b_quads[s]); \
  } while (0)
#else
  // The step's global words, held in registers until their panel is free.
  float a_words[LOADS_A], b_words[LOADS_B];
  uint a_at[LOADS_A], b_at[LOADS_B];
#if TAP_MASKS
  // The item's rows of the patch matrix are the same every step (its column, item % TILE_K
  // past the step's first, the same for all of them): each row's image offset and tap mask
  // once, then a step decomposes its one column and reads each row's word by a mask test.
  uint a_base[LOADS_A], a_taps[LOADS_A];
  for (uint s = 0; s < LOADS_A; ++s) {
    const uint i = (item + s * THREADS) / TILE_K;
    a_at[s] = item % TILE_K * A_STRIDE + i;
    patch_row(M, row0 + i, &a_base[s], &a_taps[s]);
  }
#define LOAD_STEP(p0)                                                                                                   \
  do {                                                                                                                  \
    const uint q = (p0) + item % TILE_K, tap = q / CONV_C;                                                              \
    const uint off = ((tap / CONV_K) * CONV_W + tap % CONV_K) * CONV_C + q % CONV_C;                                    \
    for (uint s = 0; s < LOADS_A; ++s) a_words[s] = q < k_end && (a_taps[s] >> tap & 1) ? A[a_base[s] + off] : 0.0f;  \
    for (uint s = 0; s < LOADS_B; ++s) b_words[s] = load_b(B, ldb, k_end, N, col0, (p0), item + s * THREADS, &b_at[s]); \
  } while (0)
#else
#define LOAD_STEP(p0)                                                                                                   \
  do {                                                                                                                  \
    for (uint s = 0; s < LOADS_A; ++s) a_words[s] = load_a(A, lda, M, k_end, row0, (p0), item + s * THREADS, &a_at[s]); \
    for (uint s = 0; s < LOADS_B; ++s) b_words[s] = load_b(B, ldb, k_end, N, col0, (p0), item + s * THREADS, &b_at[s]); \
  } while (0)
#endif
#define STORE_STEP(panel)                                             \
  do {                                                                \
    __local float* a_panel = (__local float*)a_panels_v[panel];       \
    __local float* b_panel = (__local float*)b_panels_v[panel];       \
    for (uint s = 0; s < LOADS_A; ++s) a_panel[a_at[s]] = a_words[s]; \
    for (uint s = 0; s < LOADS_B; ++s) b_panel[b_at[s]] = b_words[s]; \
  } while (0)
#endif

  LOAD_STEP(k_begin);
  STORE_STEP(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  uint panel = 0;
  for (uint p0 = k_begin; p0 < k_end; p0 += TILE_K) {
    const bool more = p0 + TILE_K < k_end;
#if PREFETCH
    // The next step's words are read now and stored after the products, into the other panels:
    // those were last read in the step before, which every item finished before the barrier
    // that ended it.
    if (more) LOAD_STEP(p0 + TILE_K);
#endif
    // The item's first vectors of this step's panels: every read below is at a constant offset
    // from them (one local load each, no index arithmetic between the multiply-adds).
    const __local vec_t* a_mine = a_panels_v[panel] + ty;
    const __local vec_t* b_mine = b_panels_v[panel] + tx;
#pragma unroll
    for (uint p = 0; p < TILE_K; ++p) {
      float a_regs[WPT_M], b_regs[WPT_N];
#pragma unroll
      for (uint g = 0; g < WPT_M / VEC; ++g) {
        const vec_t v = a_mine[p * (A_STRIDE / VEC) + g * THREADS_M];
        VEC_TO_REGS(v, a_regs, g * VEC);
      }
#pragma unroll
      for (uint h = 0; h < WPT_N / VEC; ++h) {
        const vec_t v = b_mine[p * (B_STRIDE / VEC) + h * THREADS_N];
        VEC_TO_REGS(v, b_regs, h * VEC);
      }
#pragma unroll
      for (uint i = 0; i < WPT_M; ++i)
#pragma unroll
        for (uint j = 0; j < WPT_N; ++j) acc[i][j] = MUL_ADD(a_regs[i], b_regs[j], acc[i][j]);
    }
#if PREFETCH
    if (more) STORE_STEP(panel ^ 1);
    panel ^= 1;
    barrier(CLK_LOCAL_MEM_FENCE);
#else
    if (more) {
      barrier(CLK_LOCAL_MEM_FENCE);  // the panels are overwritten next
      LOAD_STEP(p0 + TILE_K);
      STORE_STEP(0);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
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
      *out = gemm_epilogue(v, c, N, EPILOGUE_ARGS);
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
  *out = gemm_epilogue(v, e % N, N, EPILOGUE_ARGS);
}
