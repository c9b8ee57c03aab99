/* The table-derived backward of the q8 modes (`--q8-grad table`;
 * docs/quantized.md, "Table-derived gradients"): the GEMM-shaped sums that
 * add the multiplier table's own slopes to the straight-through gradients of
 * Conv[q8f], Gemm[q8f] and MatMul[q8f] (src/ops/q8f.c).
 *
 * One matrix product in the data-first orientation of the table: A (M x K)
 * the data codes, B (K x N) the weight codes, both raw bytes, row-major; G
 * (M x N) the output gradient. With ea, eb the table's error slopes
 * (amd_q8_grad_tables, src/mult/q8.h; [a * 256 + b], a the data code):
 *
 *   dA[i][k] += sum_j G[i][j] * cb[j] * ea[A[i][k]][B[k][j]]
 *   dB[k][j] += ca * sum_i G[i][j] * eb[A[i][k]][B[k][j]]
 *
 * (either may be NULL: not computed). The sums run in float: each dA[i][k]
 * in j order from 0 (terms (G[i][j] * cb[j]) * ea[..]), then added; each
 * dB[k][j] in i order from 0, then scaled by ca and added. Each element's
 * sum is one OpenMP thread's, in that order: the result does not depend on
 * the thread count (q8_grad.c: how the lookups are laid out). */
#ifndef AMD_Q8_GRAD_H
#define AMD_Q8_GRAD_H

#include <stdint.h>

/* Conv[q8f] runs these sums per group on chunks of images of about this
 * many im2col elements (each chunk's weight-gradient sum is scaled and added
 * on its own): the CPU and the CUDA backend chunk alike, so that their sums
 * are the same. */
#define AMD_Q8G_CHUNK ((int64_t)1 << 21)

/* 0, or -1 when out of memory. */
int amd_q8_grad_gemm(int64_t M, int64_t N, int64_t K, const uint8_t *A, const uint8_t *B, const float *G,
                     const float *cb, float ca, const float *ea, const float *eb, float *dA, float *dB);

#endif
