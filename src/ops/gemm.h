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

template <class T>
void gemm_ref(const GemmShape& s, T alpha, const T* a, const T* b, T beta, T* c) {
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < s.k; ++p) {
        const T a_ip = s.trans_a == Trans::yes ? a[p * s.lda + i] : a[i * s.lda + p];
        const T b_pj = s.trans_b == Trans::yes ? b[j * s.ldb + p] : b[p * s.ldb + j];
        sum += a_ip * b_pj;
      }
      T& out = c[i * s.ldc + j];
      out = alpha * sum + (beta == T(0) ? T(0) : beta * out);  // beta 0 ignores NaN in C
    }
  }
}

// Results do not depend on the pool's thread count. `pool` may be null (one thread).
void f32_gemm(const GemmShape& s, float alpha, const float* a, const float* b, float beta, float* c,
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

}  // namespace rg
