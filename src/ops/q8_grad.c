/* The table-derived backward sums of the q8 modes (q8_grad.h). Each term
 * needs both operand codes, so this is a GEMM whose "product" is a lookup in
 * a 256 x 256 float table: for a fixed data code the 256 slopes of its row
 * (1 KiB) stay in L1 while the inner loop runs along a contiguous row of B
 * (and of G). No blocking beyond that: the tables are the working set. */
#include "q8_grad.h"

#include "../core/omp.h"

#include <stdlib.h>

/* dA[i][k] += sum_j (G[i][j] * cb[j]) * ea[A[i][k]][B[k][j]], rows i in parallel. */
static int grad_data(int64_t M, int64_t N, int64_t K, const uint8_t *A, const uint8_t *B, const float *G,
                     const float *cb, const float *ea, float *dA) {
  int failed = 0;
  AMD_PRAGMA(omp parallel if (M > 1 && M * N * K > 32768))
  {
    float *gs = malloc(sizeof(float) * (size_t)(N > 0 ? N : 1));
    if (!gs) {
      AMD_PRAGMA(omp atomic write)
      failed = 1;
    }
    AMD_PRAGMA(omp for schedule(static))
    for (int64_t i = 0; i < M; i++) {
      if (!gs) continue;
      const float *g = G + i * N;
      for (int64_t j = 0; j < N; j++) gs[j] = g[j] * cb[j];
      const uint8_t *a = A + i * K;
      float *d = dA + i * K;
      for (int64_t k = 0; k < K; k++) {
        const float *row = ea + (size_t)a[k] * 256;
        const uint8_t *b = B + k * N;
        float s = 0.0f;
        for (int64_t j = 0; j < N; j++) s += gs[j] * row[b[j]];
        d[k] += s;
      }
    }
    free(gs);
  }
  return failed ? -1 : 0;
}

/* dB[k][j] += ca * sum_i G[i][j] * eb[A[i][k]][B[k][j]], rows k in parallel. */
static int grad_weight(int64_t M, int64_t N, int64_t K, const uint8_t *A, const uint8_t *B, const float *G,
                       float ca, const float *eb, float *dB) {
  int failed = 0;
  AMD_PRAGMA(omp parallel if (K > 1 && M * N * K > 32768))
  {
    float *acc = malloc(sizeof(float) * (size_t)(N > 0 ? N : 1));
    if (!acc) {
      AMD_PRAGMA(omp atomic write)
      failed = 1;
    }
    AMD_PRAGMA(omp for schedule(static))
    for (int64_t k = 0; k < K; k++) {
      if (!acc) continue;
      const uint8_t *b = B + k * N;
      for (int64_t j = 0; j < N; j++) acc[j] = 0.0f;
      for (int64_t i = 0; i < M; i++) {
        const float *row = eb + (size_t)A[i * K + k] * 256;
        const float *g = G + i * N;
        for (int64_t j = 0; j < N; j++) acc[j] += g[j] * row[b[j]];
      }
      float *d = dB + k * N;
      for (int64_t j = 0; j < N; j++) d[j] += ca * acc[j];
    }
    free(acc);
  }
  return failed ? -1 : 0;
}

int amd_q8_grad_gemm(int64_t M, int64_t N, int64_t K, const uint8_t *A, const uint8_t *B, const float *G,
                     const float *cb, float ca, const float *ea, const float *eb, float *dA, float *dB) {
  if (M <= 0 || N <= 0 || K <= 0) return 0;
  if (dA && grad_data(M, N, K, A, B, G, cb, ea, dA)) return -1;
  if (dB && grad_weight(M, N, K, A, B, G, ca, eb, dB)) return -1;
  return 0;
}
