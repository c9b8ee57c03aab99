/* amd_gemm against a naive triple loop.
 *
 * Every M, N, K in a spread of odd and even sizes up to 70 (plus a few shapes
 * past the K block and the tile sizes), all four transpose combinations,
 * several alpha / beta values, leading dimensions larger than the matrices.
 * The acc32 path is compared with a double-precision reference, with a
 * tolerance scaled by sum |a*b| (fp32 accumulation in any order). The generic
 * (per-product) path is compared with a naive loop that calls the same
 * amd_mult_product in the same order (tight tolerance while K fits one block). beta == 0 must not read C: C
 * starts as NaN there. Exits non-zero on any mismatch and prints the largest error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm.h"
#include "mult/mult.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffff) / 32768.0f - 1.0f;
}

static double worst_acc32, worst_generic;
static long checks, failures;

/* One case: ld* are padded by 3 to catch leading-dimension bugs. */
static void check(const amd_mult *mult, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                  float beta) {
  int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 3, ldc = N + 3;
  int64_t rows_a = ta ? K : M, rows_b = tb ? N : K;
  float *A = malloc(sizeof(float) * (size_t)(rows_a * lda + 1));
  float *B = malloc(sizeof(float) * (size_t)(rows_b * ldb + 1));
  float *C = malloc(sizeof(float) * (size_t)(M * ldc + 1));
  float *C0 = malloc(sizeof(float) * (size_t)(M * ldc + 1));
  for (int64_t i = 0; i < rows_a * lda; i++) A[i] = frand();
  for (int64_t i = 0; i < rows_b * ldb; i++) B[i] = frand();
  for (int64_t i = 0; i < M * ldc; i++) C0[i] = beta == 0 ? NAN : frand();
  memcpy(C, C0, sizeof(float) * (size_t)(M * ldc));
  amd_gemm(mult, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  int generic = mult && mult->mode != AMD_MODE_ACC32;
  for (int64_t i = 0; i < M; i++) {
    for (int64_t j = 0; j < ldc; j++) {
      float got = C[i * ldc + j];
      if (j >= N) { /* padding columns must be untouched */
        if (memcmp(&got, &C0[i * ldc + j], sizeof got) != 0) {
          if (failures++ < 10)
            printf("FAIL padding written: ta=%d tb=%d M=%lld N=%lld K=%lld at (%lld,%lld)\n", ta, tb,
                   (long long)M, (long long)N, (long long)K, (long long)i, (long long)j);
        }
        continue;
      }
      double ref = 0, mag = 0, magp = 0;
      float fref = 0;
      for (int64_t k = 0; k < K; k++) {
        float a = ta ? A[k * lda + i] : A[i * lda + k];
        float b = tb ? B[j * ldb + k] : B[k * ldb + j];
        ref += (double)a * b;
        mag += fabs((double)a * b);
        float prod = amd_mult_product(mult, a, b);
        fref += prod;
        magp += fabs(prod);
      }
      double want, scale;
      if (generic) {
        want = (double)alpha * fref;
        scale = fabs((double)alpha) * magp;
      } else {
        want = (double)alpha * ref;
        scale = fabs((double)alpha) * mag;
      }
      if (beta != 0) {
        want += (double)beta * C0[i * ldc + j];
        scale += fabs((double)beta * C0[i * ldc + j]);
      }
      double err = fabs(got - want);
      double rel = err / (scale + 1e-30);
      /* fp32 sums of up to K terms in any order: K ulps of sum |a*b|. The
       * generic path sums in k order within each K block of 256 as the
       * reference does, so for K <= 256 it is exact up to the alpha/beta step. */
      double tol = generic && K <= 256 ? 2.5e-7 : (K + 4) * 1.2e-7;
      if (generic) {
        if (rel > worst_generic) worst_generic = rel;
      } else if (rel > worst_acc32) {
        worst_acc32 = rel;
      }
      checks++;
      if (!(rel <= tol)) {
        if (failures++ < 10)
          printf("FAIL %s ta=%d tb=%d M=%lld N=%lld K=%lld alpha=%g beta=%g at (%lld,%lld): got %.9g "
                 "want %.9g\n",
                 generic ? "generic" : "acc32", ta, tb, (long long)M, (long long)N, (long long)K, alpha, beta,
                 (long long)i, (long long)j, got, want);
      }
    }
  }
  free(A);
  free(B);
  free(C);
  free(C0);
}

int main(void) {
  static const int64_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 31, 33, 47, 64, 70};
  static const float ab[][2] = {{1, 0}, {1, 1}, {0.5f, -2}, {-1.5f, 0}};
  const int ns = (int)(sizeof sizes / sizeof sizes[0]);
  amd_mult acc32 = {.mode = AMD_MODE_ACC32};
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int im = 0; im < ns; im++)
        for (int in = 0; in < ns; in++)
          for (int ik = 0; ik < ns; ik++) {
            int c = (im + in + ik) % 4; /* alpha/beta rotate across shapes */
            check(((im + ik) & 1) ? &acc32 : NULL, ta, tb, sizes[im], sizes[in], sizes[ik], ab[c][0],
                  ab[c][1]);
          }
  /* Past the K block, the chunk boundaries of tiles, and K = 0. */
  static const int64_t big[][3] = {{70, 70, 600}, {131, 517, 300}, {200, 3, 513}, {1, 1000, 257},
                                   {1000, 1, 70}, {9, 9, 0},       {65, 1100, 40}};
  for (size_t s = 0; s < sizeof big / sizeof big[0]; s++)
    for (int t = 0; t < 4; t++)
      for (int c = 0; c < 4; c++)
        check(NULL, t & 1, t >> 1, big[s][0], big[s][1], big[s][2], ab[c][0], ab[c][1]);

  /* The generic path (another mode; the same product in the reference). */
  amd_mult other = {.mode = AMD_MODE_ACC16};
  strcpy(other.name, "acc16");
  static const int64_t gs[] = {1, 3, 8, 17, 33, 70};
  for (int t = 0; t < 4; t++)
    for (int im = 0; im < 6; im++)
      for (int in = 0; in < 6; in++)
        for (int ik = 0; ik < 6; ik++) {
          int c = (im + in + ik) % 4;
          check(&other, t & 1, t >> 1, gs[im], gs[in], gs[ik], ab[c][0], ab[c][1]);
        }
  check(&other, 0, 1, 20, 30, 600, 1, 0);

  printf("test_gemm: %ld outputs checked, max rel error acc32 %.3g, generic %.3g, %ld failures\n", checks,
         worst_acc32, worst_generic, failures);
  return failures ? 1 : 0;
}
