/* amd_cuda_q8_grad_gemm (cuda/q8_grad.h, the table-derived backward sums of
 * the q8 modes on the GPU) against the CPU's amd_q8_grad_gemm
 * (src/ops/q8_grad.h), bit for bit (GPU suite).
 *
 * Slope tables: amd_q8_grad_tables of random approximate 8-bit tables (q8s
 * and q8u, the exact products plus noise: integers and half-integers that fit
 * the kernels' int16 copy in shared memory), and random half-integer slopes
 * up to 40000 (which do not fit: read from global memory); each case also
 * with the shared-memory copy refused. Shapes: 1 x 1 x 1, edges of the 32 x 64
 * tiles and of the 32-step loops, primes, a ResNet-like convolution chunk,
 * more tiles of rows than the data kernel has blocks.
 * Random codes (some bunched), G with zeros, -0 and subnormals, cb and ca
 * positive or negative, dA / dB holding random values (added to), each
 * computed alone and both together; dB also in chunks of rows summed in
 * parallel (m_chunk, as Conv's chunks of images) against the CPU's chunk
 * after chunk. Exits 1 on any mismatch, 77 without a GPU.
 *
 * --bench: time of the two sums (data and weight gradient) as Conv[q8f]
 * runs them for the 3x3 convolutions of ResNet-18 on 32 x 32 inputs at batch
 * 128 (rows = images x output positions in one pass, the weight gradient in
 * the CPU's chunks of images), the slope table in shared memory and read from
 * global memory; G lookups per second (one lookup = one multiply-add). */
#include <stdio.h>
#include <string.h>
#include <vector>

#include "gpu_common.h"

extern "C" {
#include "../../src/mult/q8.h"
#include "../../src/ops/q8_grad.h"
}
#include "../../cuda/q8_grad.h"

static long cases, failures;

/* Bit comparison of n floats; prints the first difference. */
static int same(const char *what, const char *label, const float *want, const float *got, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!gpu_same(gpu_ubits(want[i]), gpu_ubits(got[i]))) {
      printf("FAIL %s %s: [%lld] of %lld: cpu %.9g (0x%08x) gpu %.9g (0x%08x)\n", label, what, (long long)i,
             (long long)n, want[i], gpu_ubits(want[i]), got[i], gpu_ubits(got[i]));
      return 0;
    }
  return 1;
}

static void *dev_copy(const void *h, size_t bytes) {
  void *d = NULL;
  GPU_CHECK(cudaMalloc(&d, bytes ? bytes : 4));
  if (bytes) GPU_CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
  return d;
}

/* which: 1 dA, 2 dB, 3 both; chunk > 0: in chunks of that many rows (the CPU: one call per chunk) */
static void check(amd_cuda_q8g_ctx *ctx, const float *ea, const float *eb, const char *tname, int64_t M,
                  int64_t N, int64_t K, int which, int64_t chunk = 0) {
  char label[200];
  snprintf(label, sizeof label, "%s %lldx%lldx%lld %s%s", tname, (long long)M, (long long)N, (long long)K,
           which == 1   ? "dA"
           : which == 2 ? "dB"
                        : "dA+dB",
           chunk ? " in chunks" : "");
  uint8_t *A = (uint8_t *)malloc((size_t)(M * K + 1)), *B = (uint8_t *)malloc((size_t)(K * N + 1));
  float *G = (float *)malloc(sizeof(float) * (size_t)(M * N + 1)),
        *cb = (float *)malloc(sizeof(float) * (size_t)N);
  float *dA = (float *)malloc(sizeof(float) * (size_t)(M * K + 1)),
        *dB = (float *)malloc(sizeof(float) * (size_t)(K * N + 1));
  float *got = (float *)malloc(sizeof(float) * (size_t)((M > N ? M : N) * K + 1));
  const int skew = gpu_urand() % 2;
  for (int64_t i = 0; i < M * K; i++)
    A[i] = skew && gpu_urand() % 4 ? (uint8_t)(120 + gpu_urand() % 16) : (uint8_t)gpu_urand();
  for (int64_t i = 0; i < K * N; i++) B[i] = (uint8_t)gpu_urand();
  for (int64_t i = 0; i < M * N; i++) G[i] = gpu_value(SET_NORMAL);
  for (int64_t j = 0; j < N; j++)
    cb[j] = (0.001f + 0.01f * (float)(gpu_urand() % 100)) * (gpu_urand() % 5 ? 1.0f : -1.0f);
  const float ca = 0.0078125f * (float)(1 + gpu_urand() % 50) * (gpu_urand() % 4 ? 1.0f : -0.5f);
  for (int64_t i = 0; i < M * K; i++) dA[i] = gpu_value(SET_NORMAL);
  for (int64_t i = 0; i < K * N; i++) dB[i] = gpu_value(SET_NORMAL);
  uint8_t *dAc = (uint8_t *)dev_copy(A, (size_t)(M * K)), *dBc = (uint8_t *)dev_copy(B, (size_t)(K * N));
  float *dG = (float *)dev_copy(G, sizeof(float) * (size_t)(M * N)),
        *dcb = (float *)dev_copy(cb, sizeof(float) * (size_t)N);
  float *dca = (float *)dev_copy(&ca, sizeof ca);
  float *ddA = (float *)dev_copy(dA, sizeof(float) * (size_t)(M * K)),
        *ddB = (float *)dev_copy(dB, sizeof(float) * (size_t)(K * N));
  amd_status st = {{0}};
  int ok = 1;
  const int64_t step = chunk > 0 ? chunk : M;
  for (int64_t i0 = 0; i0 < M && ok; i0 += step) {
    const int64_t rows = M - i0 < step ? M - i0 : step;
    if (amd_q8_grad_gemm(rows, N, K, A + i0 * K, B, G + i0 * N, cb, ca, ea, eb,
                         which & 1 ? dA + i0 * K : NULL, which & 2 ? dB : NULL)) {
      printf("FAIL %s: cpu: out of memory\n", label);
      ok = 0;
    }
  }
  float *part = NULL;
  if (chunk > 0) {
    const int64_t chunks = (M + chunk - 1) / chunk;
    GPU_CHECK(cudaMalloc(&part, sizeof(float) * (size_t)(chunks * K * N)));
    amd_q8g_args a;
    memset(&a, 0, sizeof a);
    a.M = M, a.N = N, a.K = K;
    a.A = dAc, a.a_rs = K, a.a_cs = 1;
    a.B = dBc, a.b_rs = N, a.b_cs = 1;
    a.G = dG, a.g_rows = M, a.g_rs = N, a.g_cs = 1;
    a.cs = dcb, a.ca_src = dca, a.alpha = 1.0f;
    a.dA = which & 1 ? ddA : NULL, a.da_rs = K;
    a.dB = which & 2 ? ddB : NULL, a.db_rs = N, a.db_cs = 1;
    a.m_chunk = chunk, a.dB_part = part;
    if (ok && amd_cuda_q8g_run(ctx, &a, ea, eb, &st)) {
      printf("FAIL %s: gpu: %s\n", label, st.msg);
      ok = 0;
    }
  } else if (ok && amd_cuda_q8_grad_gemm(ctx, M, N, K, dAc, dBc, dG, dcb, dca, ea, eb, which & 1 ? ddA : NULL,
                                         which & 2 ? ddB : NULL, &st)) {
    printf("FAIL %s: gpu: %s\n", label, st.msg);
    ok = 0;
  }
  GPU_CHECK(cudaDeviceSynchronize());
  if (ok) {
    GPU_CHECK(cudaMemcpy(got, ddA, sizeof(float) * (size_t)(M * K), cudaMemcpyDeviceToHost));
    ok &= same("dA", label, dA, got, M * K);
    GPU_CHECK(cudaMemcpy(got, ddB, sizeof(float) * (size_t)(K * N), cudaMemcpyDeviceToHost));
    ok &= same("dB", label, dB, got, K * N);
  }
  cases++;
  if (!ok) failures++;
  cudaFree(part), cudaFree(dAc), cudaFree(dBc), cudaFree(dG), cudaFree(dcb), cudaFree(dca), cudaFree(ddA),
      cudaFree(ddB);
  free(A), free(B), free(G), free(cb), free(dA), free(dB), free(got);
}

static void shapes(amd_cuda_q8g_ctx *ctx, const float *ea, const float *eb, const char *tname) {
  static const int64_t s[][3] = {{1, 1, 1},
                                 {2, 3, 5},
                                 {31, 63, 33},
                                 {32, 64, 32},
                                 {33, 65, 64},
                                 {64, 64, 64},
                                 {97, 130, 71},
                                 {5, 300, 257},
                                 {300, 7, 3},
                                 {1, 500, 2},
                                 {700, 1, 40},
                                 {1024, 64, 72},
                                 {3072, 64, 576},
                                 /* more tiles of rows than the data kernel's blocks (8 per multiprocessor):
                                  * its blocks run several, the last one short */
                                 {40001, 9, 70}};
  for (size_t c = 0; c < sizeof s / sizeof s[0]; c++)
    for (int which = 1; which <= 3; which++) {
      if (s[c][0] * s[c][1] * s[c][2] > 200000 && which != 3) continue; /* the big one once */
      check(ctx, ea, eb, tname, s[c][0], s[c][1], s[c][2], which);
    }
  /* chunks of rows: 3 and 2 chunks, the last short; 33 chunks of one tile's rows */
  check(ctx, ea, eb, tname, 100, 70, 45, 2, 40);
  check(ctx, ea, eb, tname, 3072, 64, 576, 3, 2048);
  check(ctx, ea, eb, tname, 33 * 32, 5, 9, 3, 32);
}

/* --bench: one convolution's sums (os output positions per image, kdim = cg x 9, mg output channels). */
static void bench_conv(amd_cuda_q8g_ctx *ctx, const float *ea, const float *eb, int64_t os, int64_t kdim,
                       int64_t mg) {
  const int64_t n = 128, M = n * os, nbc0 = AMD_Q8G_CHUNK / (os * kdim),
                nbc = nbc0 < 1   ? 1
                      : nbc0 > n ? n
                                 : nbc0;
  const int64_t chunks = (n + nbc - 1) / nbc;
  std::vector<uint8_t> A((size_t)(M * kdim)), B((size_t)(kdim * mg));
  for (auto &c : A) c = (uint8_t)(100 + gpu_urand() % 40);
  for (auto &c : B) c = (uint8_t)gpu_urand();
  std::vector<float> G((size_t)(M * mg)), cb((size_t)mg, 0.01f);
  for (auto &g : G) g = gpu_value(SET_NORMAL);
  const float ca = 0.02f;
  uint8_t *dA8 = (uint8_t *)dev_copy(A.data(), A.size()), *dB8 = (uint8_t *)dev_copy(B.data(), B.size());
  float *dG = (float *)dev_copy(G.data(), sizeof(float) * G.size()),
        *dcb = (float *)dev_copy(cb.data(), sizeof(float) * cb.size());
  float *dca = (float *)dev_copy(&ca, sizeof ca), *dX = NULL, *dW = NULL, *part = NULL;
  GPU_CHECK(cudaMalloc(&dX, sizeof(float) * (size_t)(M * kdim)));
  GPU_CHECK(cudaMalloc(&dW, sizeof(float) * (size_t)(kdim * mg)));
  GPU_CHECK(cudaMalloc(&part, sizeof(float) * (size_t)(chunks * kdim * mg)));
  GPU_CHECK(cudaMemset(dW, 0, sizeof(float) * (size_t)(kdim * mg)));
  amd_q8g_args a;
  memset(&a, 0, sizeof a);
  a.M = M, a.N = mg, a.K = kdim;
  a.A = dA8, a.a_rs = kdim, a.a_cs = 1;
  a.B = dB8, a.b_rs = 1, a.b_cs = kdim; /* the weight's codes as the q8 GEMM's TN rows */
  a.G = dG, a.g_rows = os, a.g_img = mg * os, a.g_rs = 1, a.g_cs = os; /* dY in NCHW */
  a.cs = dcb, a.ca_src = dca, a.alpha = 1.0f;
  a.da_rs = kdim, a.da_store = 1, a.db_rs = 1, a.db_cs = kdim, a.m_chunk = nbc * os, a.dB_part = part;
  amd_status st = {{0}};
  cudaEvent_t e0, e1;
  GPU_CHECK(cudaEventCreate(&e0));
  GPU_CHECK(cudaEventCreate(&e1));
  for (int smem = 1; smem >= 0; smem--) {
    amd_cuda_q8g_allow_smem(ctx, smem);
    for (int which = 0; which < 2; which++) {
      amd_q8g_args r = a;
      r.dA = which == 0 ? dX : NULL;
      r.dB = which == 1 ? dW : NULL;
      float best = 1e30f;
      for (int rep = 0; rep < 4; rep++) { /* the first warms up (the table's upload) */
        GPU_CHECK(cudaEventRecord(e0, 0));
        if (amd_cuda_q8g_run(ctx, &r, ea, eb, &st)) {
          printf("FAIL bench: %s\n", st.msg);
          failures++;
          return;
        }
        GPU_CHECK(cudaEventRecord(e1, 0));
        GPU_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        GPU_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0 && ms < best) best = ms;
      }
      printf("os %4lld kdim %4lld mg %3lld (M %6lld, %2lld chunks): %s, table in %s memory: %8.3f ms, %6.1f "
             "G lookups/s\n",
             (long long)os, (long long)kdim, (long long)mg, (long long)M, (long long)chunks,
             which == 0 ? "data gradient  " : "weight gradient", smem ? "shared" : "global", best,
             (double)M * (double)kdim * (double)mg / (best * 1e6));
    }
  }
  amd_cuda_q8g_allow_smem(ctx, 1);
  cudaEventDestroy(e0), cudaEventDestroy(e1);
  cudaFree(dA8), cudaFree(dB8), cudaFree(dG), cudaFree(dcb), cudaFree(dca), cudaFree(dX), cudaFree(dW),
      cudaFree(part);
}

int main(int argc, char **argv) {
  gpu_require_device();
  amd_status st = {{0}};
  amd_cuda_q8g_ctx *ctx;
  if (amd_cuda_q8g_create(&ctx, 0, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    int32_t *t = (int32_t *)malloc(sizeof(int32_t) * 65536);
    float *ea = (float *)malloc(sizeof(float) * 65536), *eb = (float *)malloc(sizeof(float) * 65536);
    for (int a = 0; a < 256; a++)
      for (int b = 0; b < 256; b++) t[a * 256 + b] = a * b + (int32_t)(gpu_urand() % 201) - 100;
    amd_q8_grad_tables(0, t, ea, eb);
    /* ResNet-18 on 32 x 32: the stem (3 -> 64), then 3x3 convolutions of the four stages */
    static const int64_t shapes[][3] = {
        {1024, 27, 64}, {1024, 576, 64}, {256, 1152, 128}, {64, 2304, 256}, {16, 4608, 512}};
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
      bench_conv(ctx, ea, eb, shapes[c][0], shapes[c][1], shapes[c][2]);
    amd_cuda_q8g_destroy(ctx);
    free(t), free(ea), free(eb);
    return failures ? 1 : 0;
  }
  int32_t *t = (int32_t *)malloc(sizeof(int32_t) * 65536);
  float *ea = (float *)malloc(sizeof(float) * 65536), *eb = (float *)malloc(sizeof(float) * 65536);
  for (int sgn = 0; sgn < 2; sgn++) { /* approximate tables: their slopes fit int16 */
    for (int a = 0; a < 256; a++)
      for (int b = 0; b < 256; b++) {
        int32_t v = amd_q8_value(a, sgn) * amd_q8_value(b, sgn) + (int32_t)(gpu_urand() % 601) - 300;
        t[a * 256 + b] = sgn || v >= 0 ? v : -v;
      }
    amd_q8_grad_tables(sgn, t, ea, eb);
    for (int smem = 1; smem >= 0; smem--) {
      char name[64];
      snprintf(name, sizeof name, "%s table%s", sgn ? "q8s" : "q8u", smem ? "" : " (global memory)");
      amd_cuda_q8g_allow_smem(ctx, smem);
      shapes(ctx, ea, eb, name);
    }
  }
  /* slopes that do not fit int16: the global-memory path even where shared memory is allowed */
  for (int i = 0; i < 65536; i++) {
    ea[i] = (float)((int32_t)(gpu_urand() % 160001) - 80000) * 0.5f;
    eb[i] = (float)((int32_t)(gpu_urand() % 160001) - 80000) * 0.5f;
  }
  amd_cuda_q8g_allow_smem(ctx, 1);
  shapes(ctx, ea, eb, "wide slopes");
  /* the same host arrays changed in place: uploaded again */
  for (int i = 0; i < 65536; i++) ea[i] = (float)(i % 7) - 3.0f, eb[i] = (float)(i % 5) * 0.5f - 1.0f;
  check(ctx, ea, eb, "changed in place", 45, 70, 33, 3);
  amd_cuda_q8g_destroy(ctx);
  free(t), free(ea), free(eb);
  printf("%ld cases, %ld failed\n", cases, failures);
  return failures ? 1 : 0;
}
