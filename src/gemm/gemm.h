/* The one GEMM family that carries all multiplier emulation on the CPU.
 *
 * Row-major: C[M,N] = alpha * op(A) * op(B) + beta * C, op(A) is M x K
 * (A stored K x M with leading dimension lda when trans_a), op(B) is K x N.
 * Products are computed by `mult` (NULL or acc32: IEEE fp32 products, the fast
 * path); accumulation is fp32. beta == 0 means C is not read (NaNs in C do not
 * propagate). Multi-threaded with OpenMP. Conv, Gemm and MatMul (forward and,
 * later, both backward GEMMs) all go through here. */
#ifndef AMD_GEMM_H
#define AMD_GEMM_H

#include <stdint.h>

struct amd_mult;

void amd_gemm(const struct amd_mult *mult, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
              float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
              float *C, int64_t ldc);

#endif
/* Makes every later GEMM use the kernels of isa ("sse", "avx2", "avx512",
 * "avx512-novbmi"; NULL: the best the CPU has), for benchmarks and tests
 * (AMD_GEMM_ISA, read by the programs: core/env.h). Call before the first GEMM. */
void amd_gemm_force_isa(const char *isa);

