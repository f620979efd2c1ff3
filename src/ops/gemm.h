// Matrix multiply, row-major: C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C,
// op(X) = X or X^T. gemm_ref is the readable reference (float and double); f32_gemm is
// the packed, register-blocked, threaded path the layers use.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"

namespace rg {

enum class Trans : bool { no = false, yes = true };

struct GemmShape {
  Trans trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;  // row strides of A, B, C as stored
};

// The reference loop: C[i][j] = alpha * sum_p a_at(i, p) * b_at(p, j) + beta * C[i][j].
template <class T, class AAt, class BAt>
void gemm_ref_loop(int64_t m, int64_t n, int64_t k, T alpha, const AAt& a_at, const BAt& b_at, T beta, T* c,
                   int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) sum += a_at(i, p) * b_at(p, j);
      T& out = c[i * ldc + j];
      out = alpha * sum + (beta == T(0) ? T(0) : beta * out);  // beta 0 ignores NaN in C
    }
  }
}

template <class T>
void gemm_ref(const GemmShape& s, T alpha, const T* a, const T* b, T beta, T* c) {
  gemm_ref_loop(
      s.m, s.n, s.k, alpha,
      [&](int64_t i, int64_t p) { return s.trans_a == Trans::yes ? a[p * s.lda + i] : a[i * s.lda + p]; },
      [&](int64_t p, int64_t j) { return s.trans_b == Trans::yes ? b[j * s.ldb + p] : b[p * s.ldb + j]; }, beta, c,
      s.ldc);
}

// f32 products under this many flops stay on one thread: the pool's fork-join would cost more
// (1 MFLOP is 10-25 us on one AVX-512 core of the Xeon, a region 2-5 us at 4 threads; lenet's
// dense2, 1.3 MFLOP, took 0.080 ms a step's three phases on one thread of 4 and 0.058 split).
constexpr int64_t kGemmMinFlopsToSplit = int64_t{1} << 20;

// The gathered GEMM's depth blocks: each tile sums this many steps of depth at most, and adds
// a block's sum to C's (ops/conv_planar.h keeps the same blocks, so the same bits).
constexpr int64_t kGatheredDepthBlock = 256;

// With few rows of C, each panel of B serves few tiles and packing it costs more than it saves:
// both GEMM drivers read an untransposed B in place, NR-wide column strips ldb apart, for a
// thread's part of at most this many rows of C.
constexpr int64_t kGemmMaxRowsForBInPlace = 96;

// Packs a depth x width strip of a matrix into panels `w` wide, `depth * w` floats apart:
// panel[p * w + r] = element (p, r) = src[p * stride_p + r * stride_r]; lanes past `width` are 0
// (both f32 GEMM drivers' packing).
void f32_pack_panels(const float* src, int64_t stride_p, int64_t stride_r, int64_t depth, int64_t width, int64_t w,
                     float* out);

// C[m x n] = beta * C (beta 0 ignores what C held): a product with nothing to add.
void f32_gemm_scale_c(int64_t m, int64_t n, float beta, float* c, int64_t ldc);

// A matrix that is gathered, not stored: A[i][p] = base[row_offsets[i] + depth_offsets[p]].
// A convolution's patch matrix is one (rows = output pixels, depth = kernel taps), and so is
// its transpose (rows = taps, depth = pixels), both read straight from the image.
template <class T>
struct GatheredA {
  const T* base;
  const int32_t* row_offsets;    // m entries
  const int32_t* depth_offsets;  // k entries
  T at(int64_t i, int64_t p) const { return base[row_offsets[i] + depth_offsets[p]]; }
};

// C[m x n] = alpha * A * B + beta * C, A gathered, B [k x n] row-major (row stride ldb).
template <class T>
void gemm_gathered_ref(int64_t m, int64_t n, int64_t k, T alpha, const GatheredA<T>& a, const T* b, int64_t ldb,
                       T beta, T* c, int64_t ldc) {
  gemm_ref_loop(
      m, n, k, alpha, [&](int64_t i, int64_t p) { return a.at(i, p); },
      [&](int64_t p, int64_t j) { return b[p * ldb + j]; }, beta, c, ldc);
}

// Results do not depend on the pool's thread count. `pool` may be null (one thread).
void f32_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
              ThreadPool* pool);

// The gathered product on the kernel table's gathered tiles: nothing of A's size is ever packed;
// B is read in place (its last, partial column panel copied) or, a B beyond L2 under many rows,
// from panels each thread packs a depth block at a time (gemm_gathered.cpp says when).
void f32_gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a, const float* b,
                       int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool);

// A product split over its depth, for weight gradients (patches^T x dy: depth = the chunk's
// pixels, C = taps x filters, often too few rows to give every thread a share): depth blocks whose
// count and bounds depend on m, n and k only, never on the thread count, so the results do not
// either (gemm_gathered.cpp gives the rule and its reasons).
int64_t gemm_depth_blocks(int64_t m, int64_t n, int64_t k);
// The floats of partial products such a product needs: (blocks - 1) * m * n, 0 when unsplit.
// Never more than it needs for a deeper product of the same C (the blocks grow with k).
int64_t gemm_depth_partials(int64_t m, int64_t n, int64_t k);

// f32_gemm_gathered cut into gemm_depth_blocks(m, n, k) blocks of depth: block 0 goes into C
// (alpha, beta), each later one into its own m x n buffer of `partials`
// (gemm_depth_partials(m, n, k) floats), every block's rows over the pool; then C's elements
// add the partials in block order. Unsplit, f32_gemm_gathered's bits. A's rows lying side by side
// (a tap's channels) and B of more than one panel, each thread packs A an MC x KC block at a time
// (KC x MC floats of its own scratch).
void f32_gemm_gathered_depth_split(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a,
                                   const float* b, int64_t ldb, float beta, float* c, int64_t ldc, float* partials,
                                   ThreadPool* pool);

// Overloads the templated layer math calls: float takes the fast path, double the reference.
inline void gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
                 ThreadPool* pool) {
  f32_gemm(s, alpha, a, b, beta, c, pool);
}
inline void gemm(const GemmShape& s, double alpha, const double* a, const double* b, double beta, double* c,
                 ThreadPool*) {
  gemm_ref(s, alpha, a, b, beta, c);
}

inline void gemm_gathered(int64_t m, int64_t n, int64_t k, float alpha, const GatheredA<float>& a, const float* b,
                          int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool* pool) {
  f32_gemm_gathered(m, n, k, alpha, a, b, ldb, beta, c, ldc, pool);
}
inline void gemm_gathered(int64_t m, int64_t n, int64_t k, double alpha, const GatheredA<double>& a, const double* b,
                          int64_t ldb, double beta, double* c, int64_t ldc, ThreadPool*) {
  gemm_gathered_ref(m, n, k, alpha, a, b, ldb, beta, c, ldc);
}

}  // namespace rg
