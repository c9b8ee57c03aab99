/* Reproducibility of amd_cuda_gemm: every mode, on shapes that take the
 * split-K path (small M x N, long K: partial sums reduced in a fixed order)
 * and on a large grid, runs three times (the third in a second context, with
 * its own workspace and tables) and must give bit-identical results.
 * Exits 1 on any difference, 77 without a GPU. */
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

#include "../../cuda/mode_gemm.h"

int main(void) {
  gpu_require_device();
  amd_status st = {{0}};
  amd_cuda_gemm_ctx *ctx[2];
  for (int i = 0; i < 2; i++)
    if (amd_cuda_gemm_create(&ctx[i], 0, &st)) {
      printf("FAIL: amd_cuda_gemm_create: %s\n", st.msg);
      return 1;
    }
  static uint8_t tab7[AMD_MULT_TABLE7_SIZE];
  if (amd_mult_make_table(AMD_MODE_MIT16, tab7, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  amd_mult mults[AMD_MODE_COUNT];
  for (int i = 0; i < AMD_MODE_COUNT; i++) {
    if (i == AMD_MODE_LUT) {
      memset(&mults[i], 0, sizeof mults[i]);
      mults[i].mode = AMD_MODE_LUT;
      mults[i].lut_bits = 7;
      mults[i].lut = tab7;
      snprintf(mults[i].name, sizeof mults[i].name, "lut:mit16-table");
    } else if (amd_mult_parse(amd_mode_name((amd_mode)i), &mults[i], &st)) {
      printf("FAIL: %s\n", st.msg);
      return 1;
    }
  }
  /* M, N, K, trans_a, trans_b, operand set */
  static const int shapes[][6] = {{64, 64, 30000, 0, 1, SET_NORMAL},
                                  {37, 5, 20001, 1, 0, SET_RANGE},
                                  {300, 200, 5000, 0, 0, SET_NORMAL},
                                  {512, 2048, 4608, 0, 0, SET_NORMAL}};
  int failed = 0;
  for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2], ta = shapes[s][3], tb = shapes[s][4];
    const size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *hA = (float *)malloc(4 * na), *hB = (float *)malloc(4 * nb);
    float *out[3];
    for (int r = 0; r < 3; r++) out[r] = (float *)malloc(4 * nc);
    for (size_t i = 0; i < na; i++) hA[i] = gpu_value(shapes[s][5]);
    for (size_t i = 0; i < nb; i++) hB[i] = gpu_value(shapes[s][5]);
    float *dA, *dB, *dC;
    GPU_CHECK(cudaMalloc(&dA, 4 * na));
    GPU_CHECK(cudaMalloc(&dB, 4 * nb));
    GPU_CHECK(cudaMalloc(&dC, 4 * nc));
    GPU_CHECK(cudaMemcpy(dA, hA, 4 * na, cudaMemcpyHostToDevice));
    GPU_CHECK(cudaMemcpy(dB, hB, 4 * nb, cudaMemcpyHostToDevice));
    for (int i = 0; i < AMD_MODE_COUNT; i++) {
      for (int r = 0; r < 3; r++) {
        GPU_CHECK(cudaMemset(dC, 0, 4 * nc));
        if (amd_cuda_gemm(ctx[r == 2], &mults[i], ta, tb, M, N, K, 1.0f, dA, ta ? M : K, 0, dB, tb ? K : N, 0,
                          0.0f, dC, N, 0, 1, &st)) {
          printf("FAIL: %s: %s\n", mults[i].name, st.msg);
          return 1;
        }
        GPU_CHECK(cudaDeviceSynchronize());
        GPU_CHECK(cudaMemcpy(out[r], dC, 4 * nc, cudaMemcpyDeviceToHost));
      }
      const int same = !memcmp(out[0], out[1], 4 * nc) && !memcmp(out[0], out[2], 4 * nc);
      int nonzero = 0;
      for (size_t e = 0; e < nc; e++) nonzero += out[0][e] != 0.0f;
      printf("%-16s M %4d N %4d K %5d: %s (%d of %zu outputs nonzero)\n", mults[i].name, M, N, K,
             same ? "bit-identical" : "DIFFERENT  FAIL", nonzero, nc);
      if (!same || nonzero == 0) failed = 1;
    }
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(hA);
    free(hB);
    for (int r = 0; r < 3; r++) free(out[r]);
  }
  for (int i = 0; i < 2; i++) amd_cuda_gemm_destroy(ctx[i]);
  for (int i = 0; i < AMD_MODE_COUNT; i++)
    if (i != AMD_MODE_LUT) amd_mult_free(&mults[i]);
  printf(failed ? "FAILED\n" : "PASSED\n");
  return failed;
}
