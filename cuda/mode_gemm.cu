/* A minimal, correct implementation of the mode GEMM API (mode_gemm.h), for
 * building and testing the CUDA backend until the tuned one (branch
 * cuda-gemm) replaces this file.
 *
 * acc32 (mult NULL or AMD_MODE_ACC32): cuBLAS SGEMM, strided batched, TF32
 * off (CUBLAS_DEFAULT_MATH), row-major handled as C^T = op(B)^T op(A)^T.
 * Every other mode: one thread per output element over 16 x 16 tiles staged
 * in shared memory; each product is the mode's function from
 * src/mult/products.h; sums follow the CPU GEMM (src/gemm/gemm.c): fp32 in k
 * order within blocks of 256, C = alpha * sum + beta * C after the first
 * block and C += alpha * sum after each later one. LUT tables are copied to
 * the device once per table and kept in the context. */
#include <stdlib.h>

#include "cuda_check.h"
#include "mode_gemm.h"

extern "C" {
#include "../src/mult/products.h"
}

int amd_cuda_debug_sync = 0;

enum { LUT_SLOTS = 16, TILE = 16, KBLOCK = 256 };

struct amd_cuda_gemm_ctx {
  cublasHandle_t blas;
  cudaStream_t stream;
  const uint8_t *lut_host[LUT_SLOTS];
  uint8_t *lut_dev[LUT_SLOTS];
  int n_lut;
};

int amd_cuda_gemm_create(amd_cuda_gemm_ctx **out, cudaStream_t stream, amd_status *st) {
  amd_cuda_gemm_ctx *c = (amd_cuda_gemm_ctx *)calloc(1, sizeof *c);
  if (!c) return amd_fail(st, "out of memory");
  cublasStatus_t e = cublasCreate(&c->blas);
  if (e != CUBLAS_STATUS_SUCCESS) {
    free(c);
    return amd_fail(st, "cuBLAS error %s in cublasCreate", cublasGetStatusName(e));
  }
  c->stream = stream;
  *out = c;
  AMD_CUBLAS_CHECK(cublasSetStream(c->blas, stream), st);
  AMD_CUBLAS_CHECK(cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH), st);
  return 0;
}

void amd_cuda_gemm_destroy(amd_cuda_gemm_ctx *c) {
  if (!c) return;
  for (int i = 0; i < c->n_lut; i++) cudaFree(c->lut_dev[i]);
  cublasDestroy(c->blas);
  free(c);
}

template <int MODE> __device__ __forceinline__ float mode_prod(float a, float b, const uint8_t *lut, int m) {
  switch (MODE) {
  case AMD_MODE_ACC16:
    return amd_prod_acc16(a, b);
  case AMD_MODE_AM16:
    return amd_prod_am16(a, b);
  case AMD_MODE_AM32:
    return amd_prod_am32(a, b);
  case AMD_MODE_FP16:
    return amd_prod_fp16(a, b);
  case AMD_MODE_MIT16:
    return amd_prod_mit16(a, b);
  case AMD_MODE_MIT32:
    return amd_prod_mit32(a, b);
  case AMD_MODE_MBM14:
    return amd_prod_mbm14(a, b);
  case AMD_MODE_MBM12:
    return amd_prod_mbm12(a, b);
  case AMD_MODE_LUT:
    return amd_prod_lut(a, b, lut, m);
  default:
    return amd_prod_acc32(a, b);
  }
}

template <int MODE>
__global__ void mode_gemm_kernel(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                 int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb, float beta,
                                 float *C, int64_t ldc, int64_t sc, int64_t batch, const uint8_t *lut,
                                 int lut_m) {
  __shared__ float As[TILE][TILE + 1], Bs[TILE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t i = (int64_t)blockIdx.y * TILE + ty, j = (int64_t)blockIdx.x * TILE + tx;
  for (int64_t bz = blockIdx.z; bz < batch; bz += gridDim.z) {
    const float *Ab = A + bz * sa, *Bb = B + bz * sb;
    float *Cb = C + bz * sc;
    float c = 0.0f, sum = 0.0f;
    int first = 1;
    for (int64_t k0 = 0; k0 < K; k0 += TILE) {
      /* As[ty][kk] = op(A)[i][k0 + kk], Bs[kk][tx] = op(B)[k0 + kk][j] */
      int64_t ai = (int64_t)blockIdx.y * TILE + ty, ak = k0 + tx;
      As[ty][tx] = ai < M && ak < K ? (ta ? Ab[ak * lda + ai] : Ab[ai * lda + ak]) : 0.0f;
      int64_t bk = k0 + ty, bj = (int64_t)blockIdx.x * TILE + tx;
      Bs[ty][tx] = bk < K && bj < N ? (tb ? Bb[bj * ldb + bk] : Bb[bk * ldb + bj]) : 0.0f;
      __syncthreads();
      const int kn = K - k0 < TILE ? (int)(K - k0) : TILE;
      for (int kk = 0; kk < kn; kk++) {
        sum = __fadd_rn(sum, mode_prod<MODE>(As[ty][kk], Bs[kk][tx], lut, lut_m));
        const int64_t k = k0 + kk + 1;
        if (k % KBLOCK == 0 || k == K) { /* end of a K block: fold into C as the CPU does */
          if (i < M && j < N) {
            if (first)
              c = beta == 0.0f ? __fmul_rn(alpha, sum)
                               : __fadd_rn(__fmul_rn(alpha, sum), __fmul_rn(beta, Cb[i * ldc + j]));
            else
              c = __fadd_rn(c, __fmul_rn(alpha, sum));
          }
          first = 0;
          sum = 0.0f;
        }
      }
      __syncthreads();
    }
    if (i < M && j < N) {
      if (K == 0) c = beta == 0.0f ? 0.0f : __fmul_rn(beta, Cb[i * ldc + j]);
      Cb[i * ldc + j] = c;
    }
  }
}

/* The device copy of a LUT table (made on first use). */
static int lut_device(amd_cuda_gemm_ctx *c, const amd_mult *m, const uint8_t **out, amd_status *st) {
  for (int i = 0; i < c->n_lut; i++)
    if (c->lut_host[i] == m->lut) {
      *out = c->lut_dev[i];
      return 0;
    }
  if (c->n_lut == LUT_SLOTS) return amd_fail(st, "more than %d LUT tables in one process", LUT_SLOTS);
  size_t bytes = (size_t)1 << (2 * m->lut_bits);
  uint8_t *d = NULL;
  AMD_CUDA_CHECK(cudaMalloc(&d, bytes), st);
  c->lut_host[c->n_lut] = m->lut;
  c->lut_dev[c->n_lut++] = d;
  AMD_CUDA_CHECK(cudaMemcpy(d, m->lut, bytes, cudaMemcpyHostToDevice), st);
  *out = d;
  return 0;
}

#define LAUNCH(MODE)                                                                                         \
  mode_gemm_kernel<MODE><<<grid, block, 0, c->stream>>>(trans_a, trans_b, M, N, K, alpha, A, lda, stride_a,  \
                                                        B, ldb, stride_b, beta, C, ldc, stride_c, batch,     \
                                                        lut, lut_m)

int amd_cuda_gemm(amd_cuda_gemm_ctx *c, const amd_mult *mult, int trans_a, int trans_b, int64_t M, int64_t N,
                  int64_t K, float alpha, const float *A, int64_t lda, int64_t stride_a, const float *B,
                  int64_t ldb, int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c,
                  int64_t batch, amd_status *st) {
  if (M <= 0 || N <= 0 || batch <= 0) return 0;
  if (!mult || mult->mode == AMD_MODE_ACC32) {
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || batch > INT32_MAX)
      return amd_fail(st, "GEMM too large for cuBLAS (%lld x %lld x %lld)", (long long)M, (long long)N,
                      (long long)K);
    AMD_CUBLAS_CHECK(cublasSgemmStridedBatched(c->blas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                               trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)N, (int)M, (int)K,
                                               &alpha, B, (int)ldb, stride_b, A, (int)lda, stride_a, &beta, C,
                                               (int)ldc, stride_c, (int)batch),
                     st);
    AMD_CUDA_CHECK_LAUNCH("cublasSgemmStridedBatched", st);
    return 0;
  }
  const uint8_t *lut = NULL;
  int lut_m = 0;
  if (mult->mode == AMD_MODE_LUT) {
    if (!mult->lut) return amd_fail(st, "LUT mode without a table");
    if (lut_device(c, mult, &lut, st)) return -1;
    lut_m = mult->lut_bits;
  }
  if ((M + TILE - 1) / TILE > 65535)
    return amd_fail(st, "GEMM with %lld rows: more than this kernel's grid allows", (long long)M);
  dim3 block(TILE, TILE);
  dim3 grid((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE),
            (unsigned)(batch < 65535 ? batch : 65535));
  switch (mult->mode) {
  case AMD_MODE_ACC16:
    LAUNCH(AMD_MODE_ACC16);
    break;
  case AMD_MODE_AM16:
    LAUNCH(AMD_MODE_AM16);
    break;
  case AMD_MODE_AM32:
    LAUNCH(AMD_MODE_AM32);
    break;
  case AMD_MODE_FP16:
    LAUNCH(AMD_MODE_FP16);
    break;
  case AMD_MODE_MIT16:
    LAUNCH(AMD_MODE_MIT16);
    break;
  case AMD_MODE_MIT32:
    LAUNCH(AMD_MODE_MIT32);
    break;
  case AMD_MODE_MBM14:
    LAUNCH(AMD_MODE_MBM14);
    break;
  case AMD_MODE_MBM12:
    LAUNCH(AMD_MODE_MBM12);
    break;
  case AMD_MODE_LUT:
    LAUNCH(AMD_MODE_LUT);
    break;
  default:
    return amd_fail(st, "invalid multiplier mode %d", (int)mult->mode);
  }
  AMD_CUDA_CHECK_LAUNCH("mode_gemm_kernel", st);
  return 0;
}
