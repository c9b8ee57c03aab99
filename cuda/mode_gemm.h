/* The mode GEMM family on the GPU: the CUDA twin of src/gemm/gemm.h.
 *
 * Row-major, device pointers, strided batched: for b in [0, batch),
 *   C_b[M,N] = alpha * op(A_b) * op(B_b) + beta * C_b
 * with X_b = X + b * stride_x (a stride of 0 broadcasts one matrix to every
 * batch entry, e.g. Conv weights). op(A) is M x K (A stored K x M, leading
 * dimension lda, when trans_a); op(B) is K x N. beta == 0: C is not read.
 * Each product is the mode's function from src/mult/products.h (the same code
 * as the CPU's, bit for bit); sums are fp32 in a fixed order, so a run is
 * reproducible (split-K partial sums are reduced in a fixed order, never with
 * atomics). mult NULL or acc32: cuBLAS SGEMM with TF32 off.
 *
 * All work is queued on the context's stream; nothing synchronises. */
#ifndef AMD_CUDA_MODE_GEMM_H
#define AMD_CUDA_MODE_GEMM_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../src/core/status.h"
#include "../src/mult/mult.h"

typedef struct amd_cuda_gemm_ctx amd_cuda_gemm_ctx;

/* A cuBLAS handle bound to stream, device copies of the mode tables (made on
 * first use of each amd_mult) and the split-K workspace. */
int amd_cuda_gemm_create(amd_cuda_gemm_ctx **ctx, cudaStream_t stream, amd_status *st);
void amd_cuda_gemm_destroy(amd_cuda_gemm_ctx *ctx);

/* Which kernel the emulated modes use: AUTO picks per shape (the small tile
 * where the large one would be mostly padding); tests and benchmarks force
 * one to check or time both on the same shapes. */
typedef enum { AMD_GEMM_TILE_AUTO, AMD_GEMM_TILE_LARGE, AMD_GEMM_TILE_SMALL } amd_gemm_tile;
void amd_cuda_gemm_set_tile(amd_cuda_gemm_ctx *ctx, amd_gemm_tile tile);

/* The GEMM tier of am16 and mbm14 on the large tile (docs/multipliers.md,
 * "GEMM tiers"). FAST (the default): the Mitchell products on the SIMT kernel
 * plus their correction terms on bf16 tensor cores: the same sum of the
 * spec's products, rounded differently (not bit for bit the CPU's); a GEMM
 * with an operand pair outside the fast range, or an Inf/NaN, computes every
 * product exactly. EXACT: every product materialised, fp32 sums in k order,
 * the CPU's bits. Every other mode has one tier. */
typedef enum { AMD_GEMM_TIER_FAST, AMD_GEMM_TIER_EXACT } amd_gemm_tier;
void amd_cuda_gemm_set_tier(amd_cuda_gemm_ctx *ctx, amd_gemm_tier tier);

int amd_cuda_gemm(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, int trans_a, int trans_b, int64_t M,
                  int64_t N, int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                  const float *B, int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc,
                  int64_t stride_c, int64_t batch, amd_status *st);

/* acc32 only: for b in [0, batch)
 *   C_b[M,N] = alpha * op(A_b) * op(B_b) + D_b, then max(x, 0) where relu
 * with D_b = D + b * stride_d ([M,N], leading dimension ldd; stride 0 adds one
 * matrix to every batch entry, as a bias broadcast over images; D NULL: nothing
 * added), in one cuBLASLt GEMM whose epilogue adds D and applies the Relu as it
 * writes C, so no pass over C follows. IEEE fp32 products and sums, TF32
 * off; D is added to the finished sum and the Relu keeps NaNs: at ResNet-50's
 * shapes, NaN and Inf inputs included, the bits of cublasSgemm followed by
 * that pass (an H200, results/step_time/gemm_epilogue_h200x2_2026-11-30/);
 * cuBLASLt may pick other algorithms, so other sums, at other shapes. C must
 * not overlap A, B or D. Returns 1, having done nothing, where it does not
 * apply (mult neither NULL nor acc32, or no cuBLASLt algorithm for the
 * shape): the caller runs amd_cuda_gemm and its own pass instead. */
int amd_cuda_gemm_add_relu(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, int trans_a, int trans_b, int64_t M,
                           int64_t N, int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a,
                           const float *B, int64_t ldb, int64_t stride_b, const float *D, int64_t ldd,
                           int64_t stride_d, int relu, float *C, int64_t ldc, int64_t stride_c, int64_t batch,
                           amd_status *st);

#ifdef __cplusplus
}
#endif

#endif
