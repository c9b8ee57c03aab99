/* A fingerprint of the mode GEMM's outputs, for checking that a change to
 * the kernels (cuda/mode_gemm.cu) leaves every bit of them as it was: runs
 * amd_cuda_gemm for every emulated mode (am16 and mbm14 in both tiers), with
 * the tile picked per shape and with the large tile forced, over shapes of
 * all four operand layouts (the ResNet-18 convolution GEMMs at batch 16,
 * edges, split-K, LeNet's small shapes) and four operand sets generated on
 * the device (uniform; a quarter zeros; plus values 2^-40 .. 2^23 apart,
 * which send tiles to the exact path; plus a few Inf), and prints one
 * FNV-1a hash of each output. Two builds agree when their outputs are the
 * same file:
 *
 *   ninja -C build tests/gpu/gemm-hashes          (in each of the two trees)
 *   build-old/tests/gpu/gemm-hashes > old.txt; build/tests/gpu/gemm-hashes > new.txt; cmp old.txt new.txt
 *
 * (About 1250 GEMMs, 8 seconds on an H200.) */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/mode_gemm.h"
#include "gemm_operands.cuh"

int main(void) {
  /* trans_a, trans_b, M, N, K */
  static const long long shapes[][5] = {
      {0, 0, 64, 8192, 576},   {0, 1, 64, 576, 8192},   {1, 0, 576, 8192, 64},   {1, 1, 128, 1024, 1152},
      {0, 0, 128, 4096, 1152}, {0, 1, 256, 2304, 2048}, {1, 0, 2304, 2048, 256}, {0, 0, 100, 3000, 300},
      {1, 1, 130, 260, 67},    {0, 0, 70, 129, 1000},   {0, 1, 6, 25, 20000},    {0, 0, 6, 10000, 25},
      {1, 0, 192, 500, 44}};
  const int nshapes = sizeof shapes / sizeof shapes[0];
  static const char *const modes[] = {"acc16", "am16",  "am32",  "fp16",  "mit16",
                                      "mit32", "mbm14", "mbm12", "mit14", "lut"};
  amd_status st = {{0}};
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  amd_cuda_gemm_ctx *ctx;
  if (amd_cuda_gemm_create(&ctx, stream, &st)) return fprintf(stderr, "%s\n", st.msg), 1;
  const size_t cap = (size_t)1 << 26; /* floats per matrix, above the largest shape's */
  float *A, *B, *C;
  CK(cudaMalloc(&A, cap * 4));
  CK(cudaMalloc(&B, cap * 4));
  CK(cudaMalloc(&C, cap * 4));
  float *host = (float *)malloc(cap * 4);
  static uint8_t tab[AMD_MULT_TABLE7_SIZE];
  if (!host || amd_mult_make_table(AMD_MODE_AM16, tab, &st)) return fprintf(stderr, "%s\n", st.msg), 1;
  for (int mi = 0; mi < (int)(sizeof modes / sizeof modes[0]); mi++) {
    amd_mult m;
    memset(&m, 0, sizeof m);
    if (!strcmp(modes[mi], "lut")) { /* lut: with the MBM_7 table */
      m.mode = AMD_MODE_LUT;
      m.lut_bits = 7;
      m.lut = tab;
    } else if (amd_mult_parse(modes[mi], &m, &st)) {
      return fprintf(stderr, "%s\n", st.msg), 1;
    }
    const int tiered = m.mode == AMD_MODE_AM16 || m.mode == AMD_MODE_MBM14;
    for (int tier = 0; tier < (tiered ? 2 : 1); tier++) {
      amd_cuda_gemm_set_tier(ctx, tier ? AMD_GEMM_TIER_EXACT : AMD_GEMM_TIER_FAST);
      for (int tile = 0; tile < 2; tile++) {
        amd_cuda_gemm_set_tile(ctx, tile ? AMD_GEMM_TILE_LARGE : AMD_GEMM_TILE_AUTO);
        for (int si = 0; si < nshapes; si++)
          for (int kind = 0; kind < 4; kind++) {
            const long long ta = shapes[si][0], tb = shapes[si][1], M = shapes[si][2], N = shapes[si][3],
                            K = shapes[si][4];
            /* A: dense, or with far exponents (kind 2) or zeros and Inf (kind 3) */
            fill_operands<<<512, 256, 0, stream>>>(A, (size_t)(M * K), 17 + si,
                                                   kind == 2   ? 2
                                                   : kind == 3 ? 3
                                                               : 0);
            fill_operands<<<512, 256, 0, stream>>>(B, (size_t)(K * N), 91 + si, kind);
            if (amd_cuda_gemm(ctx, &m, (int)ta, (int)tb, M, N, K, 1.0f, A, ta ? M : K, 0, B, tb ? K : N, 0,
                              0.0f, C, N, 0, 1, &st))
              return fprintf(stderr, "%s: %s\n", modes[mi], st.msg), 1;
            CK(cudaMemcpy(host, C, (size_t)(M * N) * 4, cudaMemcpyDeviceToHost));
            uint64_t f = 1469598103934665603ull;
            const uint8_t *b = (const uint8_t *)host;
            for (long long i = 0; i < M * N * 4; i++) f = (f ^ b[i]) * 1099511628211ull;
            printf("%s tier%d tile%d ta%lld tb%lld %lldx%lldx%lld data%d %016llx\n", modes[mi], tier, tile,
                   ta, tb, M, N, K, kind, (unsigned long long)f);
          }
      }
    }
    if (m.lut != tab) amd_mult_free(&m); /* the lut: mult points at the static table */
  }
  amd_cuda_gemm_destroy(ctx);
  printf("done\n");
  return 0;
}
