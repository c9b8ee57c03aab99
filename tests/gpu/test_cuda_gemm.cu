/* amd_cuda_gemm against the CPU amd_gemm, every mode (acc32 through cuBLAS,
 * acc16, am16, am32, fp16, mit16, mit32, mbm14, mbm12, lut: with the MBM_7
 * table and with a random 6-bit table).
 *
 * Shapes: 1, primes, non-multiples of the tiles, the 64- and 128-row tiles,
 * long K (split-K), LeNet-5's small convolutions, all four transpose combinations, leading dimensions
 * padded by 3, and compact matrices of multiples of 4 (the large tile's wide copies), several alpha / beta
 * (beta == 0: C starts as NaN and must not be read), strided batches with stride 0 (broadcast A or B).
 * - K = 1, every mode but acc32: every output is alpha * (0 + one product)
 *   (+ beta * C) and must equal the CPU bit for bit (any NaN equals any
 *   NaN), on every operand set
 *   of gpu_common.h (inside the fast range, at and past its edges, random
 *   bit patterns with Inf / NaN: the exact path).
 * - K > 1, and acc32 (cuBLAS may fuse alpha and beta into FMAs): sums may differ in order, so |gpu - cpu| <=
 * (K + 4) 2^-23 S per output, S = |alpha| sum |products| + |beta C| (products from amd_mult_product); NaN
 * must match NaN and Inf the same Inf. Every case runs three times: kernel picked per shape, the large
 * tile forced, the small tile forced (am16 and mbm14: also the exact tier).
 * - The fast tier of am16 and mbm14 (check_tiers): against an fp64 sum of the spec's products on random
 *   and adversarial data. Exits 1 on any mismatch, 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu_common.h"

extern "C" {
#include "../../src/gemm/gemm.h"
}
#include "../../cuda/mode_gemm.h"

static long cases, failures;
/* added to every leading dimension of check's matrices: 3 (rows that start
 * anywhere), or 0 with the shapes whose dimensions are multiples of 4 (the
 * large tile's wide copies) */
static int64_t ld_pad = 3;

static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* One case: batch entries, stride 0 for A (bcast == 1) or B (bcast == 2). */
static void check(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, const char *mname, int ta, int tb, int64_t M,
                  int64_t N, int64_t K, float alpha, float beta, int64_t batch, int bcast, int set) {
  const int64_t lda = imax(ta ? M : K, 1) + ld_pad, ldb = imax(tb ? K : N, 1) + ld_pad, ldc = N + ld_pad;
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

/* ---- the fast tier of am16 and mbm14 (docs/multipliers.md, "GEMM tiers") ---- */

/* Operand sets of the tier check (A side: is_a). */
enum { TS_UNIFORM, TS_ZEROS, TS_RELU, TS_EDGE_IN, TS_EDGE_OUT, TS_CORNER, TS_MIXED, TS_COUNT };
static const char *const ts_names[TS_COUNT] = {"uniform",       "zeros and -0", "relu-sparse",
                                               "edge of range", "past range",   "corner fractions",
                                               "mixed corners"};

/* A value with biased exponent e and the am16 kept fraction f7 (odd,
 * units of 2^-7) in its top bits, random below them. */
static float tier_value(uint32_t e, uint32_t f7) {
  const uint32_t s = gpu_urand() & 0x80000000u;
  return gpu_bits(s | e << 23 | (f7 >> 1) << 17 | (gpu_urand() & 0x1FFFFu));
}

static float tier_operand(int set, int is_a) {
  const uint32_t r = gpu_urand() % 100, e = 120u + gpu_urand() % 12u;
  switch (set) {
  case TS_ZEROS:
    if (r < 15) return gpu_bits(gpu_urand() & 0x80000000u);                               /* +0 or -0 */
    if (r < 20) return gpu_bits((gpu_urand() & 0x80000000u) | (gpu_urand() & 0x7FFFFFu)); /* subnormal */
    return gpu_value(SET_NORMAL);
  case TS_RELU: /* B as activations after a ReLU: 60% zero, the rest positive */
    if (!is_a) return r < 60 ? 0.0f : fabsf(gpu_value(SET_NORMAL));
    return gpu_value(SET_NORMAL);
  case TS_EDGE_IN: /* E(a) in {1, 190}, E(b) 127 (one per column 190: see check_tier): pair sums 128 .. 380 */
    return tier_value(is_a ? (r < 50 ? 1u : 190u) : 127u, 1u + 2u * (gpu_urand() % 64u));
  case TS_EDGE_OUT: /* E(b) 126: pairs summing to 127 (products that underflow), so the whole GEMM takes the
                       exact path */
    return tier_value(is_a ? (r < 50 ? 1u : 190u) : 126u, 1u + 2u * (gpu_urand() % 64u));
  case TS_CORNER: /* every kept fraction 125 or 127: many products in the spec's corner */
    return tier_value(e, (gpu_urand() & 1) ? 125u : 127u);
  case TS_MIXED:
    if (r < 10) return 0.0f;
    if (r < 50) return tier_value(e, (gpu_urand() & 1) ? 125u : 127u);
    return tier_value(e, 1u + 2u * (gpu_urand() % 64u));
  default:
    return gpu_value(SET_NORMAL) == 0.0f ? 0.5f : tier_value(e, 1u + 2u * (gpu_urand() % 64u));
  }
}

/* The fast tier against an fp64 sum of the spec's products: |gpu - ref| <=
 * (2K + 8) 2^-24 S, S = |alpha| sum |products| + |beta C| (fp32 sums of up
 * to 4K terms in two GEMMs, the tensor cores' fp32 accumulation included;
 * a mishandled corner pair alone costs 0.078125 |product|, far above it on
 * TS_CORNER; past the range, Mitchell encodings of underflowing pairs would
 * be wrong by far more). The exact tier must meet the same bound. Returns
 * 1 when fast and exact differ somewhere (so the fast tier did run). */
static int check_tier(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, const char *mname, int ta, int tb,
                      int64_t M, int64_t N, int64_t K, float alpha, float beta, int64_t batch, int bcast,
                      int set) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  const int64_t sa = bcast == 1 ? 0 : M * K, sb = bcast == 2 ? 0 : K * N, sc = M * N;
  const int64_t na = (bcast == 1 ? 1 : batch) * M * K, nb = (bcast == 2 ? 1 : batch) * K * N, nc = batch * sc;
  float *A = (float *)malloc(sizeof(float) * na), *B = (float *)malloc(sizeof(float) * nb);
  float *C0 = (float *)malloc(sizeof(float) * nc), *Cf = (float *)malloc(sizeof(float) * nc),
        *Ce = (float *)malloc(sizeof(float) * nc);
  for (int64_t i = 0; i < na; i++) A[i] = tier_operand(set, 1);
  for (int64_t i = 0; i < nb; i++) B[i] = tier_operand(set, 0);
  if (set == TS_EDGE_IN || set == TS_EDGE_OUT) /* one B element per column with E = 190: at most one product
                                                   near 2^127 per output, so that the sums stay finite */
    for (int64_t b = 0; b < (bcast == 2 ? 1 : batch); b++)
      for (int64_t j = 0; j < N; j++) {
        const int64_t k = (j * 7) % K;
        float *x = B + b * sb + (tb ? j * ldb + k : k * ldb + j);
        *x = gpu_bits((gpu_ubits(*x) & 0x807FFFFFu) | 190u << 23);
      }
  for (int64_t i = 0; i < nc; i++) C0[i] = beta == 0 ? NAN : gpu_value(SET_NORMAL);
  float *dA, *dB, *dC;
  GPU_CHECK(cudaMalloc(&dA, sizeof(float) * na));
  GPU_CHECK(cudaMalloc(&dB, sizeof(float) * nb));
  GPU_CHECK(cudaMalloc(&dC, sizeof(float) * nc));
  GPU_CHECK(cudaMemcpy(dA, A, sizeof(float) * na, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dB, B, sizeof(float) * nb, cudaMemcpyHostToDevice));
  amd_status st = {{0}};
  float *outs[2] = {Cf, Ce};
  for (int tier = 0; tier < 2; tier++) {
    amd_cuda_gemm_set_tier(ctx, tier ? AMD_GEMM_TIER_EXACT : AMD_GEMM_TIER_FAST);
    GPU_CHECK(cudaMemcpy(dC, C0, sizeof(float) * nc, cudaMemcpyHostToDevice));
    if (amd_cuda_gemm(ctx, mult, ta, tb, M, N, K, alpha, dA, lda, sa, dB, ldb, sb, beta, dC, ldc, sc, batch,
                      &st)) {
      printf("FAIL %s tier: amd_cuda_gemm: %s\n", mname, st.msg);
      failures++;
      exit(1);
    }
    GPU_CHECK(cudaDeviceSynchronize());
    GPU_CHECK(cudaMemcpy(outs[tier], dC, sizeof(float) * nc, cudaMemcpyDeviceToHost));
  }
  amd_cuda_gemm_set_tier(ctx, AMD_GEMM_TIER_FAST);
  cases++;
  long bad = 0, differ = 0;
  int shown = 0;
  for (int64_t b = 0; b < batch; b++) {
    const float *Ab = A + (bcast == 1 ? 0 : b * sa), *Bb = B + (bcast == 2 ? 0 : b * sb);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double ref = 0, s = 0;
        for (int64_t k = 0; k < K; k++) {
          const float a = ta ? Ab[k * lda + i] : Ab[i * lda + k], bb = tb ? Bb[j * ldb + k] : Bb[k * ldb + j];
          const double p = (double)amd_mult_product(mult, a, bb);
          ref += p;
          s += fabs(p);
        }
        const int64_t o = b * sc + i * ldc + j;
        ref = (double)alpha * ref + (beta == 0 ? 0.0 : (double)beta * C0[o]);
        s = fabs((double)alpha) * s + (beta == 0 ? 0.0 : fabs((double)beta * C0[o]));
        const double tol = (double)(2 * K + 8) * ldexp(1.0, -24) * s + 1e-37;
        const double ef = fabs((double)Cf[o] - ref), ee = fabs((double)Ce[o] - ref);
        differ += gpu_ubits(Cf[o]) != gpu_ubits(Ce[o]);
        if (!(ef <= tol) || !(ee <= tol)) {
          bad++;
          if (shown++ < 3)
            printf("  %s tier ta%d tb%d M%lld N%lld K%lld batch%lld bcast%d %s: C[%lld][%lld][%lld] ref %.9g "
                   "fast %.9g (err %.3g) exact %.9g (err %.3g) tol %.3g\n",
                   mname, ta, tb, (long long)M, (long long)N, (long long)K, (long long)batch, bcast,
                   ts_names[set], (long long)b, (long long)i, (long long)j, ref, Cf[o], ef, Ce[o], ee, tol);
        }
      }
  }
  if (bad) {
    printf("FAIL %s tier %s: %ld of %lld outputs outside the bound\n", mname, ts_names[set], bad,
           (long long)(batch * M * N));
    failures++;
  }
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  free(A);
  free(B);
  free(C0);
  free(Cf);
  free(Ce);
  return differ > 0;
}

/* Every set on layer-like shapes, the transposes, batches, alpha / beta and
 * a split-K shape. */
static void check_tiers(amd_cuda_gemm_ctx *ctx, const amd_mult *mult, const char *mname) {
  const long f0 = failures;
  int ran = 0;
  for (int set = 0; set < TS_COUNT; set++) {
    const int d = check_tier(ctx, mult, mname, 0, 0, 64, 512, 576, 1.0f, 0.0f, 1, 0, set);
    if (set == TS_UNIFORM) ran = d;
    check_tier(ctx, mult, mname, 1, 1, 130, 70, 300, 0.5f, -1.25f, 1, 0, set);
  }
  for (int t = 0; t < 4; t++)
    check_tier(ctx, mult, mname, t & 1, t >> 1, 129, 200, 67, 1.0f, 0.0f, 1, 0, TS_MIXED);
  for (int bc = 0; bc < 3; bc++)
    check_tier(ctx, mult, mname, bc & 1, 1, 70, 140, 150, 0.75f, 0.5f, 3, bc, TS_MIXED);
  check_tier(ctx, mult, mname, 1, 0, 64, 64, 8192, 1.0f, 0.0f, 1, 0, TS_RELU); /* split-K */
  if (!ran) {
    printf("FAIL %s tier: fast and exact gave the same bits on uniform data (the fast tier did not run)\n",
           mname);
    failures++;
  }
  printf("%-16s %-10s %s\n", mname, "fast tier", failures == f0 ? "ok" : "FAIL");
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

  /* every case with the kernel picked per shape, then with each tile forced;
   * am16 and mbm14 in both tiers (the last pass: the exact tier) */
  static const char *tile_names[] = {"auto", "large tile", "small tile", "exact tier"};
  for (int tile = AMD_GEMM_TILE_AUTO; tile <= AMD_GEMM_TILE_SMALL + 1; tile++)
    for (int mi = 0; mi < NMODES; mi++) {
      const int tiered = mi == AMD_MODE_AM16 || mi == AMD_MODE_MBM14;
      if (tile > AMD_GEMM_TILE_SMALL && !tiered) continue;
      amd_cuda_gemm_set_tile(ctx, tile > AMD_GEMM_TILE_SMALL ? AMD_GEMM_TILE_AUTO : (amd_gemm_tile)tile);
      amd_cuda_gemm_set_tier(ctx, tile > AMD_GEMM_TILE_SMALL ? AMD_GEMM_TIER_EXACT : AMD_GEMM_TIER_FAST);
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
      /* compact matrices of dimensions that are multiples of 4: the large
       * tile's wide copies, at tiles inside the matrix and at its edges */
      static const int64_t wide_shapes[][3] = {{128, 256, 72}, {64, 384, 40}, {256, 128, 96},
                                               {192, 260, 44}, {68, 132, 36}, {124, 128, 1200}};
      ld_pad = 0;
      for (unsigned s = 0; s < sizeof wide_shapes / sizeof wide_shapes[0]; s++)
        for (int t = 0; t < 4; t++) {
          const float *x = ab[(s + t) % 4];
          check(ctx, mult, names[mi], t & 1, t >> 1, wide_shapes[s][0], wide_shapes[s][1], wide_shapes[s][2],
                x[0], x[1], 1 + (s & 1), s % 3 == 2 ? 1 : 0, (s + t) % 3);
        }
      ld_pad = 3;
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
  amd_cuda_gemm_set_tile(ctx, AMD_GEMM_TILE_AUTO);
  amd_cuda_gemm_set_tier(ctx, AMD_GEMM_TIER_FAST);
  check_tiers(ctx, &mults[AMD_MODE_AM16], names[AMD_MODE_AM16]);
  check_tiers(ctx, &mults[AMD_MODE_MBM14], names[AMD_MODE_MBM14]);
  amd_cuda_gemm_destroy(ctx);
  for (int i = 0; i < AMD_MODE_LUT; i++) amd_mult_free(&mults[i]);
  printf("%ld cases, %ld failed\n%s\n", cases, failures, failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
