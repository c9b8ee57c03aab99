/* What the mode GEMM's tools share (bench_cuda_gemm.cu, gemm_hashes.cu):
 * a CUDA error check that exits, and operands made on the device from a hash
 * of the index. */
#ifndef AMD_TOOLS_GEMM_OPERANDS_CUH
#define AMD_TOOLS_GEMM_OPERANDS_CUH

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(expr)                                                                                             \
  do {                                                                                                       \
    cudaError_t e_ = (expr);                                                                                 \
    if (e_ != cudaSuccess) {                                                                                 \
      fprintf(stderr, "%s: %s\n", #expr, cudaGetErrorString(e_));                                            \
      exit(1);                                                                                               \
    }                                                                                                        \
  } while (0)

/* x[0..n) from a hash of the index and seed. kind 0: uniform in [-1, 1);
 * 1: a quarter of them zero (ReLU outputs); 2: also some scaled by 2^-40 ..
 * 2^23 (tiles outside the fast range); 3: a quarter zero, and a few Inf. */
__global__ void fill_operands(float *x, size_t n, uint32_t seed, int kind) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 0x9E3779B1u ^ seed;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    float v = (float)(h >> 8) / 8388608.0f - 1.0f;
    if (kind >= 1 && (h & 3u) == 0) v = 0.0f;
    if (kind == 2 && (h & 0x3F0u) == 0x3F0u) v = ldexpf(v, (int)(h >> 26) - 40);
    if (kind == 3 && (h & 0xFFF0u) == 0x1230u) v = __int_as_float(0x7F800000);
    x[i] = v;
  }
}

#endif
