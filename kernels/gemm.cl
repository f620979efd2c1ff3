// f32 GEMM, row-major: C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C, op(X) = X
// or X^T, the contract of ops/gemm.h's gemm_ref (beta 0 ignores what C held, NaN included).
// Tiled through local memory; every output's sum is added in the reference's order
// p = 0, 1, ..., K-1 (padding adds exact zeros), and FP_CONTRACT is off, so an IEEE device
// matches gemm_ref bit for bit. Launcher: src/opencl/gemm.cpp.
//
// Build-time defines (the launcher passes them; each set is one program in the cache):
//   TRANS_A, TRANS_B      0 or 1: op(A), op(B)
//   TILE_M, TILE_N        the C tile of one work-group
//   TILE_K                the depth of one step (panels of op(A) TILE_M x TILE_K, op(B) TILE_K x TILE_N)
//   THREADS_M, THREADS_N  the work-group: THREADS_N x THREADS_M items (dimension 0 along N);
//                         item (tx, ty) computes rows ty + i*THREADS_M and columns tx + j*THREADS_N
//                         of the tile, so neighbouring items read neighbouring local words.
// Global size: (ceil(N / TILE_N) * THREADS_N, ceil(M / TILE_M) * THREADS_M).
#pragma OPENCL FP_CONTRACT OFF

#define WPT_M (TILE_M / THREADS_M)
#define WPT_N (TILE_N / THREADS_N)
#define THREADS (THREADS_M * THREADS_N)

__kernel __attribute__((reqd_work_group_size(THREADS_N, THREADS_M, 1)))
void f32_gemm(uint M, uint N, uint K, float alpha,
              __global const float* A, uint a_offset, uint lda,
              __global const float* B, uint b_offset, uint ldb, float beta,
              __global float* C, uint c_offset, uint ldc) {
  // +1: the loads below write a column of each panel at a time; the pad spreads it over banks.
  __local float a_panel[TILE_K][TILE_M + 1];  // [p][i] = op(A)[row0 + i][p0 + p]
  __local float b_panel[TILE_K][TILE_N + 1];  // [p][j] = op(B)[p0 + p][col0 + j]
  const uint tx = get_local_id(0);
  const uint ty = get_local_id(1);
  const uint item = ty * THREADS_N + tx;
  const uint row0 = get_group_id(1) * TILE_M;
  const uint col0 = get_group_id(0) * TILE_N;
  A += a_offset;
  B += b_offset;
  C += c_offset;

  float acc[WPT_M][WPT_N];
  for (uint i = 0; i < WPT_M; ++i)
    for (uint j = 0; j < WPT_N; ++j) acc[i][j] = 0.0f;

  for (uint p0 = 0; p0 < K; p0 += TILE_K) {
    // Neighbouring items load neighbouring addresses of global memory in either layout.
    for (uint l = item; l < TILE_M * TILE_K; l += THREADS) {
#if TRANS_A
      const uint i = l % TILE_M, p = l / TILE_M;  // A stored K x M: op(A)[r][q] = A[q][r]
      const uint r = row0 + i, q = p0 + p;
      a_panel[p][i] = (r < M && q < K) ? A[q * lda + r] : 0.0f;
#else
      const uint p = l % TILE_K, i = l / TILE_K;  // A stored M x K
      const uint r = row0 + i, q = p0 + p;
      a_panel[p][i] = (r < M && q < K) ? A[r * lda + q] : 0.0f;
#endif
    }
    for (uint l = item; l < TILE_K * TILE_N; l += THREADS) {
#if TRANS_B
      const uint p = l % TILE_K, j = l / TILE_K;  // B stored N x K: op(B)[q][c] = B[c][q]
      const uint q = p0 + p, c = col0 + j;
      b_panel[p][j] = (q < K && c < N) ? B[c * ldb + q] : 0.0f;
#else
      const uint j = l % TILE_N, p = l / TILE_N;  // B stored K x N
      const uint q = p0 + p, c = col0 + j;
      b_panel[p][j] = (q < K && c < N) ? B[q * ldb + c] : 0.0f;
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint p = 0; p < TILE_K; ++p) {
      float a_column[WPT_M];
      for (uint i = 0; i < WPT_M; ++i) a_column[i] = a_panel[p][ty + i * THREADS_M];
      for (uint j = 0; j < WPT_N; ++j) {
        const float b = b_panel[p][tx + j * THREADS_N];
        for (uint i = 0; i < WPT_M; ++i) acc[i][j] += a_column[i] * b;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // the panels are overwritten next step
  }

  for (uint i = 0; i < WPT_M; ++i) {
    const uint r = row0 + ty + i * THREADS_M;
    if (r >= M) continue;
    for (uint j = 0; j < WPT_N; ++j) {
      const uint c = col0 + tx + j * THREADS_N;
      if (c >= N) continue;
      __global float* out = C + r * ldc + c;
      *out = alpha * acc[i][j] + (beta == 0.0f ? 0.0f : beta * *out);
    }
  }
}
