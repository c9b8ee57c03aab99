/* amd_gemm against a naive triple loop.
 *
 * Every M, N, K in a spread of odd and even sizes up to 70 (plus a few shapes
 * past the K block and the tile sizes), all four transpose combinations,
 * several alpha / beta values, leading dimensions larger than the matrices.
 * The acc32 path is compared with a double-precision reference, with a
 * tolerance scaled by sum |a*b| (fp32 accumulation in any order). The generic
 * (per-product) path is compared with a naive loop that calls the same
 * amd_mult_product in the same order (tight tolerance while K fits one block). beta == 0 must not read C: C
 * starts as NaN there.
 *
 * Every mode (acc16, am16, am32, fp16, mit16, mit32, mbm14, mbm12, lut: with
 * the MBM_7 table, a random 7-bit table and a random 5-bit table) runs
 * through the fast mode kernels of amd_gemm:
 * - K = 1 (C = A * B, an outer product): every output is one product and must
 *   equal amd_mult_product bit for bit (any NaN equals any NaN, -0 equals +0:
 *   the sum starts at +0). Operand sets: exponents inside the fast range with
 *   zeros, negative zeros and subnormals mixed in; exponent bands at the edge
 *   of the fast range (E(a)+E(b)-127 reaching 1 or 254) and just past it
 *   (underflow / overflow to signed zero / Inf); one operand's exponent up
 *   to 254 with the other's small (the B limit of the kernels that scale by
 *   a); and fully random bit
 *   patterns with Inf, NaN, huge and tiny values (the exact fallback); and
 *   fraction sums on and next to the breakpoints of the MBM kernels.
 * - K > 1 against the naive k-order sum of amd_mult_product (the kernels sum
 *   in k order too), tolerance 2.5e-7 of sum |p| for K <= 256.
 * Exits non-zero on any mismatch and prints the largest error. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
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
          printf("FAIL %s %s ta=%d tb=%d M=%lld N=%lld K=%lld alpha=%g beta=%g at (%lld,%lld): got %.9g "
                 "want %.9g\n",
                 generic ? "generic" : "acc32", mult ? mult->name : "null", ta, tb, (long long)M,
                 (long long)N, (long long)K, alpha, beta, (long long)i, (long long)j, got, want);
      }
    }
  }
  free(A);
  free(B);
  free(C);
  free(C0);
}

/* ---- single products (K = 1) ---------------------------------------------- */

static uint32_t urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}
static float bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t ubits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* A value with a biased exponent in [elo, ehi] (random sign and fraction);
 * with `holes`, 15% zeros or negative zeros and 5% subnormals mixed in. */
static float value(int elo, int ehi, int holes) {
  uint32_t r = urand(), s = urand() & 0x80000000u, f = urand() & 0x7FFFFFu;
  if (holes && r % 100 < 15) return bits(s);
  if (holes && r % 100 < 20) return bits(s | (f ? f : 1u));
  uint32_t e = (uint32_t)elo + (urand() % (uint32_t)(ehi - elo + 1));
  return bits(s | e << 23 | f);
}

/* Any bit pattern, biased towards the awkward ones. */
static float wild(void) {
  uint32_t r = urand() % 16, s = urand() & 0x80000000u, f = urand() & 0x7FFFFFu;
  switch (r) {
  case 0:
    return bits(s | 0x7F800000u); /* Inf */
  case 1:
    return bits(s | 0x7F800000u | (f ? f : 1u)); /* NaN (any payload) */
  case 2:
    return bits(s); /* zero */
  case 3:
    return bits(s | f); /* subnormal (or zero) */
  case 4:
    return bits(s | (1u + urand() % 8) << 23 | f); /* tiny */
  case 5:
    return bits(s | (246u + urand() % 9) << 23 | f); /* huge */
  default:
    return bits(urand());
  }
}

enum { NSETS = 10 };

/* Set 7: fraction sums S = F(a) + F(b) on and next to the breakpoints of the
 * MBM kernels (ONE - K, ONE, 2 ONE - K/2 for every m and K), exponents in the
 * fast range. A's fractions come from 8 values; each B fraction is a
 * breakpoint (+-2) minus one of them, so every column meets its row. */
static const uint32_t frac_set[8] = {0, 1, 0x10000, 0x2A0000, 0x400000, 0x555555, 0x7B0000, 0x7FFFFF};
static float edge_a(void) {
  uint32_t s = urand() & 0x80000000u, e = 100u + urand() % 50u;
  return bits(s | e << 23 | frac_set[urand() % 8]);
}
static float edge_b(void) {
  static const uint32_t brk[] = {0x760000, 0x780000, 0x800000, 0xFB0000, 0xFC0000, 0xF80000, 0x7F0000};
  uint32_t s = urand() & 0x80000000u, e = 100u + urand() % 50u;
  int32_t S = (int32_t)brk[urand() % 7] + (int32_t)(urand() % 5) - 2;
  int32_t f = S - (int32_t)frac_set[urand() % 8];
  if (f < 0) f = 0;
  if (f > 0x7FFFFF) f = 0x7FFFFF;
  return bits(s | e << 23 | (uint32_t)f);
}
static long prod_checks, prod_failures;

/* C (M x N) = A (M x 1) * B (1 x N) in mode `mult`, compared per product. */
static void outer(const amd_mult *mult, int set) {
  enum { M = 97, N = 700 }; /* M * N >= 65536: lut: takes its fast path too */
  static float A[M], B[N], C[M * N];
  /* exponent bands of A and B per set: {alo, ahi, blo, bhi}; 0 = wild */
  static const int band[NSETS][4] = {
      {100, 150, 90, 160},  /* inside the fast range, with zeros and subnormals */
      {40, 200, 30, 220},   /* wide: some products under / overflow */
      {64, 66, 64, 66},     /* E(a)+E(b)-127 down to 1: fast, smallest results */
      {60, 66, 60, 66},     /* down to -7: underflow to signed zero */
      {188, 190, 188, 190}, /* up to 253 (+ carry 254): fast, largest results */
      {188, 192, 186, 192}, /* past 254: overflow to Inf */
      {0, 0, 0, 0},         /* any bit pattern: Inf, NaN, zeros, subnormals, extremes */
      {1, 1, 1, 1},         /* fraction sums at the MBM breakpoints (edge_a, edge_b) */
      {2, 6, 248, 254},     /* E(b) up to 254 with a small: in range, but past the B limit
                             * of the kernels that scale by a (lut:, am32 on AVX-512) */
      {248, 254, 2, 6},     /* the same with the roles swapped */
  };
  const int *b = band[set];
  for (int i = 0; i < M; i++) A[i] = b[0] == 1 ? edge_a() : b[0] ? value(b[0], b[1], 1) : wild();
  for (int j = 0; j < N; j++) B[j] = b[0] == 1 ? edge_b() : b[0] ? value(b[2], b[3], 1) : wild();
  /* both layouts of A and B (lda / ldb 1 when transposed) */
  for (int t = 0; t < 4; t++) {
    int ta = t & 1, tb = t >> 1;
    for (int i = 0; i < M * N; i++) C[i] = NAN;
    amd_gemm(mult, ta, tb, M, N, 1, 1.0f, A, ta ? M : 1, B, tb ? 1 : N, 0.0f, C, N);
    for (int i = 0; i < M; i++)
      for (int j = 0; j < N; j++) {
        float want = amd_mult_product(mult, A[i], B[j]), got = C[i * N + j];
        uint32_t w = ubits(want), g = ubits(got);
        int same = (isnan(want) && isnan(got)) || w == g || ((w | g) & 0x7FFFFFFFu) == 0;
        prod_checks++;
        if (!same && prod_failures++ < 20)
          printf("FAIL product %s set %d ta=%d tb=%d: %08x * %08x = %08x, gemm gave %08x\n", mult->name, set,
                 ta, tb, ubits(A[i]), ubits(B[j]), w, g);
      }
  }
}

/* Every mode but acc32, plus lut: with the MBM_7 table, a random 7-bit table
 * and a random 5-bit table. */
static int make_modes(amd_mult *out) {
  int n = 0;
  for (int md = 0; md < AMD_MODE_COUNT; md++) {
    if (md == AMD_MODE_ACC32 || md == AMD_MODE_LUT) continue;
    memset(&out[n], 0, sizeof out[n]);
    out[n].mode = (amd_mode)md;
    snprintf(out[n].name, sizeof out[n].name, "%s", amd_mode_name((amd_mode)md));
    n++;
  }
  for (int v = 0; v < 3; v++) {
    int m = v == 2 ? 5 : 7;
    amd_mult *l = &out[n++];
    memset(l, 0, sizeof *l);
    l->mode = AMD_MODE_LUT;
    l->lut_bits = m;
    l->lut = malloc((size_t)1 << (2 * m));
    if (v == 0) {
      amd_status st = {0};
      if (amd_mult_make_table(AMD_MODE_AM16, l->lut, &st)) {
        printf("FAIL cannot make the MBM_7 table\n");
        exit(1);
      }
      snprintf(l->name, sizeof l->name, "lut:mbm7");
    } else {
      for (size_t i = 0; i < ((size_t)1 << (2 * m)); i++) {
        uint32_t r = urand();
        l->lut[i] = (uint8_t)((r & 0x80u) | (r & ((1u << m) - 1u)));
      }
      snprintf(l->name, sizeof l->name, "lut:random%d", m);
    }
  }
  return n;
}

int main(void) {
  amd_gemm_force_isa(amd_env_read().gemm_isa); /* AMD_GEMM_ISA=sse|avx2|avx512-novbmi: those kernels */
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

  /* Every other mode: K > 1 against the k-order reference. */
  amd_mult modes[AMD_MODE_COUNT + 2];
  int nmodes = make_modes(modes);
  static const int64_t gs[] = {1, 3, 8, 17, 33, 70};
  for (int md = 0; md < nmodes; md++) {
    for (int t = 0; t < 4; t++)
      for (int im = 0; im < 6; im++)
        for (int in = 0; in < 6; in++)
          for (int ik = (md + t) % 2; ik < 6; ik += 2) {
            int c = (im + in + ik) % 4;
            check(&modes[md], t & 1, t >> 1, gs[im], gs[in], gs[ik], ab[c][0], ab[c][1]);
          }
    check(&modes[md], 0, 1, 20, 30, 600, 1, 0);
    check(&modes[md], 1, 0, 130, 70, 200, 1, 0);
    /* K = 1: each output one product, bit for bit. */
    for (int set = 0; set < NSETS; set++) outer(&modes[md], set);
  }
  printf("test_gemm: %ld single products compared bit for bit, %ld differ\n", prod_checks, prod_failures);
  for (int md = 0; md < nmodes; md++) amd_mult_free(&modes[md]);

  printf("test_gemm: %ld outputs checked, max rel error acc32 %.3g, generic %.3g, %ld failures\n", checks,
         worst_acc32, worst_generic, failures);
  return failures || prod_failures ? 1 : 0;
}
