/* amd_cuda_gemm against the CPU amd_gemm, every mode (acc32 through cuBLAS,
 * acc16, am16, am32, fp16, mit16, mit32, mbm14, mbm12, lut: with the MBM_7
 * table and with a random 6-bit table).
 *
 * Shapes: 1, primes, non-multiples of the tiles, the 64- and 128-row tiles,
 * long K (split-K), LeNet-5's small convolutions, all four transpose combinations, leading dimensions
 * padded by 3, several alpha / beta (beta == 0: C starts as NaN and must not
 * be read), strided batches with stride 0 (broadcast A or B).
 * - K = 1, every mode but acc32: every output is alpha * (0 + one product)
 *   (+ beta * C) and must equal the CPU bit for bit (any NaN equals any
 *   NaN), on every operand set
 *   of gpu_common.h (inside the fast range, at and past its edges, random
 *   bit patterns with Inf / NaN: the exact path).
 * - K > 1, and acc32 (cuBLAS may fuse alpha and beta into FMAs): sums may differ in order, so |gpu - cpu| <=
 * (K + 4) 2^-23 S per output, S = |alpha| sum |products| + |beta C| (products from amd_mult_product); NaN
 * must match NaN and Inf the same Inf. Every case runs three times: kernel picked per shape, the large
 * tile forced, the small tile forced. Exits 1 on any mismatch, 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

extern "C" {
#include "../../src/gemm/gemm.h"
}
#include "../../cuda/mode_gemm.h"

static long cases, failures;

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* One case: batch entries, stride 0 for A (bcast == 1) or B (bcast == 2). */
static void check(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, const char *mname, int ta, int tb, int64_t M,
                  int64_t N, int64_t K, float alpha, float beta, int64_t batch, int bcast, int set) {
  const int64_t lda = imax(ta ? M : K, 1) + 3, ldb = imax(tb ? K : N, 1) + 3, ldc = N + 3;
  const int64_t sa = bcast == 1 ? 0 : (ta ? K : M) * lda, sb = bcast == 2 ? 0 : (tb ? N : K) * ldb,
                sc = M * ldc;
  const int64_t na = (bcast == 1 ? 1 : batch) * (ta ? K : M) * lda;
  const int64_t nb = (bcast == 2 ? 1 : batch) * (tb ? N : K) * ldb, nc = batch * sc;
  float *A = (float *)malloc(sizeof(float) * (na + 1)), *B = (float *)malloc(sizeof(float) * (nb + 1));
  float *C0 = (float *)malloc(sizeof(float) * (nc + 1)), *Cc = (float *)malloc(sizeof(float) * (nc + 1));
  float *Cg = (float *)malloc(sizeof(float) * (nc + 1));
  for (int64_t i = 0; i < na; i++) A[i] = gpu_value(set);
  for (int64_t i = 0; i < nb; i++) B[i] = gpu_value(set);
  for (int64_t i = 0; i < nc; i++) C0[i] = beta == 0 ? NAN : gpu_value(SET_NORMAL);
  memcpy(Cc, C0, sizeof(float) * nc);

  float *dA, *dB, *dC;
  GPU_CHECK(cudaMalloc(&dA, sizeof(float) * (na + 1)));
  GPU_CHECK(cudaMalloc(&dB, sizeof(float) * (nb + 1)));
  GPU_CHECK(cudaMalloc(&dC, sizeof(float) * (nc + 1)));
  GPU_CHECK(cudaMemcpy(dA, A, sizeof(float) * na, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dB, B, sizeof(float) * nb, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dC, C0, sizeof(float) * nc, cudaMemcpyHostToDevice));
  amd_status st = {{0}};
  cases++;
  if (amd_cuda_gemm(ctx, mult, ta, tb, M, N, K, alpha, dA, lda, sa, dB, ldb, sb, beta, dC, ldc, sc, batch,
                    &st)) {
    printf("FAIL %s: amd_cuda_gemm: %s\n", mname, st.msg);
    failures++;
    goto out;
  }
  GPU_CHECK(cudaDeviceSynchronize());
  GPU_CHECK(cudaMemcpy(Cg, dC, sizeof(float) * nc, cudaMemcpyDeviceToHost));
  for (int64_t b = 0; b < batch; b++)
    amd_gemm(mult, ta, tb, M, N, K, alpha, A + (bcast == 1 ? 0 : b * sa), lda, B + (bcast == 2 ? 0 : b * sb),
             ldb, beta, Cc + b * sc, ldc);
  {
    int shown = 0;
    long bad = 0;
    for (int64_t b = 0; b < batch; b++) {
      const float *Ab = A + (bcast == 1 ? 0 : b * sa), *Bb = B + (bcast == 2 ? 0 : b * sb);
      for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
          const int64_t o = b * sc + i * ldc + j;
          const uint32_t want = gpu_ubits(Cc[o]), got = gpu_ubits(Cg[o]);
          int ok;
          double tol = 0, err = 0;
          if (K == 1 && mult->mode != AMD_MODE_ACC32) {
            ok = gpu_same(want, got); /* one product: bit for bit */
          } else if (isnan(Cc[o]) || isinf(Cc[o]) || isnan(Cg[o]) || isinf(Cg[o])) {
            ok = gpu_same(want, got);
          } else {
            double s = 0;
            for (int64_t k = 0; k < K; k++) {
              const float a = ta ? Ab[k * lda + i] : Ab[i * lda + k];
              const float bb = tb ? Bb[j * ldb + k] : Bb[k * ldb + j];
              s += fabs((double)amd_mult_product(mult, a, bb));
            }
            s = fabs((double)alpha) * s + (beta == 0 ? 0.0 : fabs((double)beta * C0[o]));
            tol = (double)(K + 4) * ldexp(1.0, -23) * s + 1e-37;
            err = fabs((double)Cg[o] - (double)Cc[o]);
            ok = err <= tol;
          }
          if (!ok) {
            bad++;
            if (shown++ < 3)
              printf("  %s ta%d tb%d M%lld N%lld K%lld batch%lld bcast%d %s alpha %g beta %g: "
                     "C[%lld][%lld][%lld] "
                     "cpu %.9g (%08X) gpu %.9g (%08X) err %.3g tol %.3g\n",
                     mname, ta, tb, (long long)M, (long long)N, (long long)K, (long long)batch, bcast,
                     gpu_set_names[set], alpha, beta, (long long)b, (long long)i, (long long)j, Cc[o], want,
                     Cg[o], got, err, tol);
          }
        }
    }
    if (bad) {
      printf("FAIL %s: %ld of %lld outputs differ\n", mname, bad, (long long)(batch * M * N));
      failures++;
    }
  }
out:
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  free(A);
  free(B);
  free(C0);
  free(Cc);
  free(Cg);
}

int main(int argc, char **argv) {
  /* --quick: acc32, am16, am32, fp16 and the random lut: only (for compute-sanitizer) */
  const int quick = argc > 1 && !strcmp(argv[1], "--quick");
  gpu_require_device();
  amd_cuda_gemm_ctx *ctx;
  amd_status st = {{0}};
  if (amd_cuda_gemm_create(&ctx, 0, &st)) {
    printf("FAIL: amd_cuda_gemm_create: %s\n", st.msg);
    return 1;
  }
  static uint8_t tab7[AMD_MULT_TABLE7_SIZE], tab6[4096];
  if (amd_mult_make_table(AMD_MODE_AM16, tab7, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  for (int i = 0; i < 4096; i++) tab6[i] = (uint8_t)(gpu_urand() & 0xBF);

  /* every mode of the list before lut, then two tables */
  enum { LUT7 = AMD_MODE_LUT, LUT6 = AMD_MODE_LUT + 1, NMODES = AMD_MODE_LUT + 2 };
  amd_mult mults[NMODES];
  const char *names[NMODES];
  for (int i = 0; i < AMD_MODE_LUT; i++) {
    const amd_mode mode = (amd_mode)i;
    if (amd_mult_parse(amd_mode_name(mode), &mults[i], &st)) {
      printf("FAIL: %s\n", st.msg);
      return 1;
    }
    names[i] = amd_mode_name(mode);
  }
  memset(&mults[LUT7], 0, sizeof mults[LUT7]);
  mults[LUT7].mode = AMD_MODE_LUT;
  mults[LUT7].lut_bits = 7;
  mults[LUT7].lut = tab7;
  names[LUT7] = "lut:am16-table";
  memset(&mults[LUT6], 0, sizeof mults[LUT6]);
  mults[LUT6].mode = AMD_MODE_LUT;
  mults[LUT6].lut_bits = 6;
  mults[LUT6].lut = tab6;
  names[LUT6] = "lut:random-6bit";

  /* M, N, K (K = 1 first: bit-exact) */
  static const int64_t k1_shapes[][2] = {{1, 1},    {7, 1},     {1, 13},   {3, 5},
                                         {64, 128}, {129, 131}, {65, 257}, {31, 300}};
  /* the last four: LeNet-5's convolutions (forward, weight gradient) */
  static const int64_t shapes[][3] = {{1, 1, 2},      {1, 1, 7},      {7, 1, 9},       {1, 13, 5},
                                      {17, 19, 23},   {64, 128, 8},   {128, 128, 64},  {129, 131, 67},
                                      {200, 70, 300}, {65, 257, 129}, {5, 7, 3000},    {70, 40, 2048},
                                      {1, 1, 5000},   {2, 3, 20000},  {192, 130, 17},  {33, 65, 1000},
                                      {6, 3000, 25},  {6, 25, 30000}, {16, 1200, 150}, {16, 150, 1200}};
  const float ab[][2] = {{1.0f, 0.0f}, {0.5f, -1.25f}, {-2.0f, 0.0f}, {1.0f, 1.0f}};

  /* every case with the kernel picked per shape, then with each tile forced */
  static const char *tile_names[] = {"auto", "large tile", "small tile"};
  for (int tile = AMD_GEMM_TILE_AUTO; tile <= AMD_GEMM_TILE_SMALL; tile++)
    for (int mi = 0; mi < NMODES; mi++) {
      amd_cuda_gemm_set_tile(ctx, (amd_gemm_tile)tile);
      if (quick && mi != AMD_MODE_ACC32 && mi != AMD_MODE_AM16 && mi != AMD_MODE_AM32 &&
          mi != AMD_MODE_FP16 && mi != LUT6)
        continue;
      const long f0 = failures;
      const amd_mult *mult = &mults[mi];
      for (unsigned s = 0; s < sizeof k1_shapes / sizeof k1_shapes[0]; s++)
        for (int set = 0; set < SET_COUNT; set++)
          for (int t = 0; t < 4; t++) {
            const float *x = ab[(s + set + t) % 4];
            check(ctx, mult, names[mi], t & 1, t >> 1, k1_shapes[s][0], k1_shapes[s][1], 1, x[0], x[1], 1, 0,
                  set);
          }
      for (unsigned s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
          const int set = (s + t) % 3; /* normal, range, special */
          const float *x = ab[(s + t) % 4];
          check(ctx, mult, names[mi], t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2], x[0], x[1], 1,
                0, set);
        }
      /* batches: separate, A broadcast, B broadcast (K = 1 bit-exact and K > 1) */
      for (int bc = 0; bc < 3; bc++) {
        check(ctx, mult, names[mi], 0, 0, 33, 45, 1, 1.0f, 0.0f, 3, bc, SET_WILD);
        check(ctx, mult, names[mi], bc & 1, 1, 70, 90, 150, 0.75f, 0.5f, 4, bc, SET_NORMAL);
        check(ctx, mult, names[mi], 1, 0, 9, 11, 4000, 1.0f, 0.0f, 5, bc, SET_RANGE);
      }
      /* K = 0: C = beta * C */
      check(ctx, mult, names[mi], 0, 0, 5, 6, 0, 1.0f, 0.5f, 2, 0, SET_NORMAL);
      check(ctx, mult, names[mi], 0, 0, 5, 6, 0, 1.0f, 0.0f, 1, 0, SET_NORMAL);
      printf("%-16s %-10s %s\n", names[mi], tile_names[tile], failures == f0 ? "ok" : "FAIL");
    }
  amd_cuda_gemm_destroy(ctx);
  for (int i = 0; i < AMD_MODE_LUT; i++) amd_mult_free(&mults[i]);
  printf("%ld cases, %ld failed\n%s\n", cases, failures, failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
