/* amd_q8_gemm (qgemm.h): the blocked 8-bit integer GEMM of the quantized ops.
 *
 * Blocking: C is computed in column blocks of Q8_NB columns; for each row i
 * of A and each block, a row of Q8_NB uint32 accumulators (on the stack)
 * takes a[i][k] * B[k][j0..j0+nb) for k = 0..K-1, streaming one contiguous
 * row slice of B per k (the loop the compiler vectorises). Rows run in
 * parallel with OpenMP where the build has it. The zero-point corrections
 * (qgemm.h) are applied when a block's row is written out. */
#include "qgemm.h"

#include "../core/omp.h"

#include <stdlib.h>
#include <string.h>

#define Q8_NB 512 /* columns of C per block */

/* acc[j] = sum_k product(arow[k], B[k][j0 + j]) for j < nb (mod 2^32).
 * THE product of the quantized ops: `a * b` of the codes' values, or, with a
 * table, table[A code * 256 + B code] (the same with the exact table). */
static void q8_row_block(int64_t K, int64_t N, const uint8_t *arow, int a_signed, const uint8_t *B, int b_signed,
                         const int32_t *table, int64_t j0, int64_t nb, uint32_t *acc) {
  memset(acc, 0, sizeof(uint32_t) * (size_t)nb);
  for (int64_t k = 0; k < K; k++) {
    const int32_t a = a_signed ? (int32_t)(int8_t)arow[k] : (int32_t)arow[k];
    const uint8_t *bk = B + k * N + j0;
    if (table) {
      const int32_t *trow = table + 256 * (int)arow[k];
      for (int64_t j = 0; j < nb; j++) acc[j] += (uint32_t)trow[bk[j]];
    } else if (b_signed) {
      const int8_t *bs = (const int8_t *)bk;
      for (int64_t j = 0; j < nb; j++) acc[j] += (uint32_t)(a * (int32_t)bs[j]);
    } else {
      for (int64_t j = 0; j < nb; j++) acc[j] += (uint32_t)(a * (int32_t)bk[j]);
    }
  }
}

int amd_q8_gemm(int64_t M, int64_t N, int64_t K, const uint8_t *A, int a_signed, const int32_t *za,
                 const uint8_t *B, int b_signed, const int32_t *zb, const int32_t *table, int32_t *C) {
  if (M <= 0 || N <= 0) return 0;
  /* column sums of B (one pass over B) */
  uint32_t *colsum = calloc((size_t)N, sizeof *colsum);
  if (!colsum) return -1;
  for (int64_t k = 0; k < K; k++) {
    const uint8_t *bk = B + k * N;
    if (b_signed)
      for (int64_t j = 0; j < N; j++) colsum[j] += (uint32_t)(int32_t)(int8_t)bk[j];
    else
      for (int64_t j = 0; j < N; j++) colsum[j] += bk[j];
  }
  const uint32_t k32 = (uint32_t)K;
  AMD_PRAGMA(omp parallel for schedule(static) if (M * N * K > 65536))
  for (int64_t i = 0; i < M; i++) {
    const uint8_t *arow = A + i * K;
    uint32_t rowsum = 0;
    for (int64_t k = 0; k < K; k++) rowsum += a_signed ? (uint32_t)(int32_t)(int8_t)arow[k] : arow[k];
    const uint32_t zai = (uint32_t)za[i];
    uint32_t acc[Q8_NB];
    for (int64_t j0 = 0; j0 < N; j0 += Q8_NB) {
      const int64_t nb = N - j0 < Q8_NB ? N - j0 : Q8_NB;
      q8_row_block(K, N, arow, a_signed, B, b_signed, table, j0, nb, acc);
      int32_t *c = C + i * N + j0;
      for (int64_t j = 0; j < nb; j++) {
        const uint32_t zbj = (uint32_t)zb[j0 + j];
        const uint32_t v = acc[j] - zbj * rowsum - zai * colsum[j0 + j] + k32 * zai * zbj;
        c[j] = (int32_t)v; /* two's complement wrap (GCC and Clang define the conversion) */
      }
    }
  }
  free(colsum);
  return 0;
}
