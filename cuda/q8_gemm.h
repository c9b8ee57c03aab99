/* The 8-bit table GEMM on the GPU: the CUDA twin of amd_q8_gemm
 * (src/gemm/qgemm.h), in the mode GEMM family (cuda/mode_gemm.h).
 *
 *   C[i][j] = sum_k T[a_ik][b_kj] - zb[j] * rowsumA[i] - za[i] * colsumB[j] + K * za[i] * zb[j]
 *
 * in uint32 (mod 2^32), exactly the expansion and the wrapping of qgemm.h, so
 * that the result equals amd_q8_gemm's bit for bit. T is a 256 x 256 int32
 * table indexed by the raw code bytes (row: A's code, column: B's), or NULL
 * for the exact products value(a) * value(b); rowsumA and colsumB sum the
 * codes' values (int8 or uint8 by each operand's format), as amd_q8_gemm.
 *
 * Operands are device codes, K-contiguous: A is M rows of K codes (leading
 * dimension lda); B is N rows of K codes (b_trans = 1, the "TN" layout both
 * kernels read) or K rows of N codes (b_trans = 0, qgemm.h's layout: copied
 * into the TN layout first). Formats: AMD_Q8_U8 and AMD_Q8_S8 are uint8 and
 * int8 codes; AMD_Q8_U8X is uint8 code u stored as the byte u ^ 0x80 (= the
 * int8 u - 128), the form the int8 tensor cores read directly (the ops store
 * their uint8 codes so; the table kernel XORs them back when it loads a tile).
 * Zero points are device int32 arrays of the codes' values (per row of A, per
 * column of B; zp_inc = 0: zp[0] for every one). A caller that has the
 * operands' sums of code values at hand (the q8 Conv adds them up while it
 * unfolds the codes) passes them, which saves a pass over the operand.
 *
 * Two paths:
 *   - the table kernel: the table in shared memory as int16 or uint16 when
 *     every entry fits (128 KiB), else int32 read through the L1 cache;
 *     64 x 128 tiles of C per block, 8 x 4 per thread, uint8 code tiles;
 *   - the exact products (T NULL, or a table equal to the exact one of its
 *     signedness, detected once when a table is first seen, with codes of
 *     that signedness): the int8 tensor cores through cublasGemmEx
 *     (CUDA_R_8I in, CUDA_R_32I out, TN), uint8 codes shifted by -128 with
 *     the shift folded into the zero points ((u - z) = (u - 128) - (z - 128),
 *     exact), the zero-point terms added after cuBLAS's product (none for
 *     int8 codes without zero points; by the caller where it asks to, see
 *     amd_q8_fix); codes are copied first where cuBLAS's int8 rules (4-byte
 *     aligned pointers, leading dimensions multiples of 4) are not met, and
 *     where cuBLAS refuses the call the table kernel runs instead; K >=
 *     2^17 takes the table kernel (a partial sum of int8 products could then
 *     leave int32, where the tensor cores need not wrap as qgemm.h does).
 *
 * Tables are keyed by their host address and compared in full at each call
 * (a changed table is uploaded again). Everything is queued on the context's
 * stream; nothing synchronises. Workspaces grow on first use (never while the
 * stream is being captured into a graph: the first call of a shape must run
 * uncaptured). */
#ifndef AMD_CUDA_Q8_GEMM_H
#define AMD_CUDA_Q8_GEMM_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../src/core/status.h"

typedef struct amd_cuda_q8_ctx amd_cuda_q8_ctx;

typedef enum { AMD_Q8_U8, AMD_Q8_S8, AMD_Q8_U8X } amd_q8_fmt;

typedef struct amd_q8_operand {
  const uint8_t *p; /* device codes */
  int64_t ld;       /* leading dimension (codes) */
  amd_q8_fmt fmt;
  const int32_t *zp; /* device zero points (values); NULL: all 0 (symmetric codes: no zero-point terms) */
  int zp_inc;        /* 1: one per row of A / column of B; 0: zp[0] for all */
  /* device: the sum of each row's (A) / column's (B) code values, uint32 (wrapping), of the codes as
   * uint8 or int8 by fmt (U8X: of u); NULL: computed here (one pass over the operand) */
  const uint32_t *sums;
} amd_q8_operand;

/* Which path: AUTO as above; TABLE forces the table kernel (with the exact
 * table where T is NULL); IMMA forces the tensor cores (an error where T is
 * not exact). Tests and benchmarks force one to check or time both. */
typedef enum { AMD_Q8_PATH_AUTO, AMD_Q8_PATH_TABLE, AMD_Q8_PATH_IMMA } amd_q8_path;

int amd_cuda_q8_create(amd_cuda_q8_ctx **ctx, cudaStream_t stream, amd_status *st);
void amd_cuda_q8_destroy(amd_cuda_q8_ctx *ctx);
void amd_cuda_q8_set_path(amd_cuda_q8_ctx *ctx, amd_q8_path path);
/* The path the last amd_cuda_q8_gemm took (TABLE or IMMA). */
amd_q8_path amd_cuda_q8_last_path(const amd_cuda_q8_ctx *ctx);

/* *exact = 1 when the int8 tensor cores compute table (host, 65536 entries)
 * for codes of this signedness (table NULL: always), i.e. when the AUTO path
 * is IMMA for large enough K; the ops then store uint8 codes as AMD_Q8_U8X. */
int amd_cuda_q8_table_exact(amd_cuda_q8_ctx *ctx, const int32_t *table, int is_signed, int *exact,
                            amd_status *st);

/* The zero-point terms the tensor-core path adds after the int8 GEMM (all
 * uint32): C[i][j] = P[i][j] - zb'[j] * rs'[i] - za'[i] * cs'[j] + K za'[i] zb'[j]
 * with za' = za[i * za_inc] - a_shift, zb' likewise, rs' = rs[i] - rs_adj,
 * cs' = cs[j] - cs_adj; a NULL pointer reads as 0. */
typedef struct amd_q8_fix {
  int active; /* 0: C is final (the table kernel, or no term survives) */
  uint32_t k, rs_adj, cs_adj, a_shift, b_shift;
  const uint32_t *rs, *cs;
  const int32_t *za, *zb;
  int za_inc, zb_inc;
} amd_q8_fix;

#ifdef __CUDACC__
__device__ __forceinline__ int32_t amd_q8_fixed(const amd_q8_fix &f, int64_t i, int64_t j, int32_t p) {
  const uint32_t za = (f.za ? (uint32_t)f.za[i * f.za_inc] : 0u) - f.a_shift,
                 zb = (f.zb ? (uint32_t)f.zb[j * f.zb_inc] : 0u) - f.b_shift;
  const uint32_t rs = (f.rs ? f.rs[i] : 0u) - f.rs_adj, cs = (f.cs ? f.cs[j] : 0u) - f.cs_adj;
  return (int32_t)((uint32_t)p - zb * rs - za * cs + f.k * za * zb);
}
#endif

/* C (M x N int32, row-major, leading dimension ldc, device) as above. With
 * defer non-NULL the tensor-core path leaves its zero-point terms to the
 * caller: C holds P and *defer says what to add (amd_q8_fixed, in the
 * caller's next kernel on the stream, before another amd_cuda_q8_gemm call
 * reuses the sums' workspace); defer->active = 0 when C is final. */
int amd_cuda_q8_gemm(amd_cuda_q8_ctx *ctx, const int32_t *table, int64_t M, int64_t N, int64_t K,
                     const amd_q8_operand *a, const amd_q8_operand *b, int b_trans, int32_t *C, int64_t ldc,
                     amd_q8_fix *defer, amd_status *st);

#ifdef __cplusplus
}
#endif

#endif
