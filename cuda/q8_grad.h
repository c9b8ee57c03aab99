/* The table-derived backward sums of the q8 modes on the GPU (`--q8-grad
 * table`): the CUDA twin of amd_q8_grad_gemm (src/ops/q8_grad.h), the same
 * sums in the same order, so that the results are the same bits:
 *
 *   dA[i][k] += sum_j (G[i][j] * cb[j]) * ea[A[i][k]][B[k][j]]   (j from 0, then added)
 *   dB[k][j] += ca * sum_i G[i][j] * eb[A[i][k]][B[k][j]]        (i from 0, scaled, then added)
 *
 * every product and add rounded on its own (__fmul_rn / __fadd_rn: nothing
 * contracts into an FMA). A "lookup GEMM": one kernel per output, a block a
 * 32 x 64 tile of it; the thread of an element runs its whole sum over j (dA)
 * or i (dB) in order while the operand tiles (codes, G) pass through shared
 * memory. The slope table (ea or eb, [a * 256 + b], a the data code) sits in
 * shared memory as int16 holding 2 * slope where every entry is an integer or
 * half-integer in that range (amd_q8_grad_tables' are; checked when a table
 * is first seen: 128 KiB of dynamic shared memory), else it is read as float
 * through the read-only cache. Tables are keyed by their host address and
 * compared in full at each call (a changed one is uploaded again; never while
 * the stream is captured into a graph).
 *
 * The operands are given by strides, so that the ops read their own layouts
 * (the im2col codes of a convolution, the weight's codes in the q8 GEMM's TN
 * layout, dY in NCHW) without copies. Codes are stored bytes; byte ^ code_xor
 * is the table index (AMD_Q8_U8X codes are stored ^ 0x80). Everything is
 * queued on the context's stream; nothing synchronises. */
#ifndef AMD_CUDA_Q8_GRAD_H
#define AMD_CUDA_Q8_GRAD_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../src/core/status.h"

typedef struct amd_cuda_q8g_ctx amd_cuda_q8g_ctx;

typedef struct amd_q8g_args {
  int64_t M, N, K;
  const uint8_t *A; /* A[i][k] = A[i * a_rs + k * a_cs] */
  int64_t a_rs, a_cs;
  const uint8_t *B; /* B[k][j] = B[k * b_rs + j * b_cs] */
  int64_t b_rs, b_cs;
  uint32_t code_xor;
  /* G[i][j] = G[(i / g_rows) * g_img + (i % g_rows) * g_rs + j * g_cs]: a convolution's rows are (image,
   * output position) pairs of an NCHW dY; a matrix's g_rows = M */
  const float *G;
  int64_t g_rows, g_img, g_rs, g_cs;
  /* cb[j] = alpha * cs[j]; ca = alpha * ca_src[0] (device; float products, as the CPU's Gemm) */
  const float *cs, *ca_src;
  float alpha;
  float *dA; /* dA[i][k] at dA[i * da_rs + k]; NULL: not computed */
  int64_t da_rs;
  int da_store; /* 1: dA = the sum (written, not added) */
  float *dB;    /* dB[k][j] at dB[k * db_rs + j * db_cs]; NULL: not computed */
  int64_t db_rs, db_cs;
  int db_via_zero; /* 1: dB += (0 + ca * sum), the CPU's add through a zeroed buffer (only -0 differs) */
  /* dB in chunks of m_chunk rows i (0: one chunk), as the CPU's Conv sums its chunks of images: each chunk's
   * sum over its rows, scaled by ca, is added to dB on its own, chunk after chunk. The chunks' sums run in
   * parallel into dB_part (device, ceil(M / m_chunk) x K x N floats; at most 65535 chunks), then they are
   * added in order. */
  int64_t m_chunk;
  float *dB_part;
} amd_q8g_args;

int amd_cuda_q8g_create(amd_cuda_q8g_ctx **ctx, cudaStream_t stream, amd_status *st);
void amd_cuda_q8g_destroy(amd_cuda_q8g_ctx *ctx);
/* 0: the tables always through the read-only cache (tests reach both paths); 1: shared memory where they fit.
 */
void amd_cuda_q8g_allow_smem(amd_cuda_q8g_ctx *ctx, int allow);

/* The sums of a (dA and / or dB), ea and eb the host slope tables (65536 floats each). */
int amd_cuda_q8g_run(amd_cuda_q8g_ctx *ctx, const amd_q8g_args *a, const float *ea, const float *eb,
                     amd_status *st);

/* amd_q8_grad_gemm's call: device arrays, row-major A (M x K), B (K x N), G (M x N), dA, dB; cb (N) and ca
 * (one float) on the device; ea, eb on the host. */
int amd_cuda_q8_grad_gemm(amd_cuda_q8g_ctx *ctx, int64_t M, int64_t N, int64_t K, const uint8_t *A,
                          const uint8_t *B, const float *G, const float *cb, const float *ca, const float *ea,
                          const float *eb, float *dA, float *dB, amd_status *st);

#ifdef __cplusplus
}
#endif

#endif
