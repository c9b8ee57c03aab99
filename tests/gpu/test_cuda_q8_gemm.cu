/* amd_cuda_q8_gemm (cuda/q8_gemm.h) against the CPU's amd_q8_gemm
 * (src/gemm/qgemm.h), bit for bit (GPU suite).
 *
 * Shapes: 1 x 1 x 1, K = 0, primes, edges of the 64 x 128 tiles, K not a
 * multiple of the 32-code step, odd leading dimensions, ResNet-like shapes
 * cut down; B in both layouts (TN and qgemm.h's K x N). Codes uint8, int8 and
 * uint8 stored XORed (AMD_Q8_U8X), random per-row / per-column zero points
 * or one for all (the extremes 0, 255, -128, 127 among them). Tables: none
 * (the exact products), the exact tables (which take the int8 tensor cores),
 * random approximate tables with int16 entries (q8s-like), uint16 entries
 * (q8u .bin-like) and int32 entries up to 2^17 (the table read from global
 * memory), one with entries near 2^31 (sums wrap). Every case runs on the
 * path AUTO picks and with the table kernel forced; the exact ones with the
 * tensor cores forced too; some cases pass the operands' sums of code values
 * (as the q8 Conv does). Exits 1 on any mismatch, 77 without a GPU.
 *
 * --bench: T MAC/s (multiply-adds per second) of the table kernel (a random
 * int16 table), of the tensor cores (the exact table) and of cuBLAS SGEMM on
 * the GEMMs of ResNet-18's 3x3 convolutions at batch 128 on 32 x 32 inputs
 * (M = output channels, N = batch x output positions, K = input channels x 9;
 * the table kernel on B codes bunched as activations, then uniform),
 * as the q8 Conv calls them (A = weights, B = im2col codes in the TN layout, both with their sums given; the
 * zero-point corrections included: zero points given, all 0), the tensor cores also with those corrections
 * left to the caller (as the q8 Conv of one group leaves them to its output kernel) and on symmetric codes
 * (no zero points: no correction pass). */
#include <stdio.h>
#include <string.h>

#include <cublas_v2.h>

#include "gpu_common.h"

extern "C" {
#include "../../src/gemm/qgemm.h"
#include "../../src/mult/q8.h"
}
#include "../../cuda/q8_gemm.h"

static long cases, failures;

static uint8_t rand_code(int skew) {
  /* skew: codes bunched near a few values (as activations near their zero point), else uniform */
  if (skew && gpu_urand() % 4) return (uint8_t)(100 + gpu_urand() % 12);
  return (uint8_t)gpu_urand();
}

static int32_t rand_zp(amd_q8_fmt f) {
  const uint32_t r = gpu_urand() % 8;
  if (f == AMD_Q8_S8) return r == 0 ? -128 : r == 1 ? 127 : (int32_t)(gpu_urand() % 256) - 128;
  return r == 0 ? 0 : r == 1 ? 255 : (int32_t)(gpu_urand() % 256);
}

static const char *fmt_name(amd_q8_fmt f) { return f == AMD_Q8_U8 ? "u8" : f == AMD_Q8_S8 ? "s8" : "u8x"; }

/* What a caller that took the tensor cores' zero-point terms (amd_cuda_q8_gemm's defer) does: adds them. */
__global__ void k_apply_fix(int64_t M, int64_t N, int32_t *C, int64_t ldc, const amd_q8_fix f) {
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < M * N; e += (int64_t)gridDim.x * blockDim.x)
    C[(e / N) * ldc + e % N] = amd_q8_fixed(f, e / N, e % N, C[(e / N) * ldc + e % N]);
}

/* One case; table may be NULL. za_row / zb_col: 1 one zero point per row / column, 0 one for all, 2 none
 * (the operand's zp NULL: all 0). Runs the path AUTO picks (also with the zero-point terms deferred to the
 * caller), the table kernel forced, and for exact tables the tensor cores forced. */
static void check(amd_cuda_q8_ctx *ctx, const int32_t *table, const char *tname, int64_t M, int64_t N, int64_t K,
                  amd_q8_fmt fa, amd_q8_fmt fb, int b_trans, int za_row, int zb_col, int pad, int skew) {
  const int64_t lda = K + pad, ldb = (b_trans ? K : N) + pad, rows_b = b_trans ? N : K, ldc = N + pad % 3;
  const size_t na = (size_t)(M * lda + 1), nb = (size_t)(rows_b * ldb + 1), nc = (size_t)(M * ldc + 1);
  uint8_t *A = (uint8_t *)malloc(na), *B = (uint8_t *)malloc(nb);
  uint8_t *Ar = (uint8_t *)malloc((size_t)(M * K + 1)), *Br = (uint8_t *)malloc((size_t)(K * N + 1));
  int32_t *za = (int32_t *)malloc(sizeof(int32_t) * (size_t)(M + 1)), *zb = (int32_t *)malloc(sizeof(int32_t) * (size_t)(N + 1));
  int32_t *zae = (int32_t *)malloc(sizeof(int32_t) * (size_t)(M + 1)), *zbe = (int32_t *)malloc(sizeof(int32_t) * (size_t)(N + 1));
  int32_t *Cc = (int32_t *)malloc(sizeof(int32_t) * (size_t)(M * N + 1)), *Cg = (int32_t *)malloc(sizeof(int32_t) * nc);
  for (size_t i = 0; i < na; i++) A[i] = rand_code(0);
  for (size_t i = 0; i < nb; i++) B[i] = rand_code(skew);
  const int64_t nza = za_row == 1 ? M : 1, nzb = zb_col == 1 ? N : 1;
  for (int64_t i = 0; i < nza; i++) za[i] = za_row == 2 ? 0 : rand_zp(fa);
  for (int64_t j = 0; j < nzb; j++) zb[j] = zb_col == 2 ? 0 : rand_zp(fb);
  for (int64_t i = 0; i < M; i++) zae[i] = za[za_row == 1 ? i : 0];
  for (int64_t j = 0; j < N; j++) zbe[j] = zb[zb_col == 1 ? j : 0];
  /* the raw codes (U8X stored XORed) in qgemm.h's layouts */
  const uint8_t xa = fa == AMD_Q8_U8X ? 0x80 : 0, xb = fb == AMD_Q8_U8X ? 0x80 : 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t k = 0; k < K; k++) Ar[i * K + k] = A[i * lda + k] ^ xa;
  for (int64_t k = 0; k < K; k++)
    for (int64_t j = 0; j < N; j++) Br[k * N + j] = (b_trans ? B[j * ldb + k] : B[k * ldb + j]) ^ xb;
  if (amd_q8_gemm(M, N, K, Ar, fa == AMD_Q8_S8, zae, Br, fb == AMD_Q8_S8, zbe, table, Cc)) {
    printf("FAIL: amd_q8_gemm out of memory\n");
    exit(1);
  }
  uint8_t *dA, *dB;
  int32_t *dza, *dzb, *dC;
  GPU_CHECK(cudaMalloc(&dA, na));
  GPU_CHECK(cudaMalloc(&dB, nb));
  GPU_CHECK(cudaMalloc(&dza, sizeof(int32_t) * (size_t)nza));
  GPU_CHECK(cudaMalloc(&dzb, sizeof(int32_t) * (size_t)nzb));
  GPU_CHECK(cudaMalloc(&dC, sizeof(int32_t) * nc));
  GPU_CHECK(cudaMemcpy(dA, A, na, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dB, B, nb, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dza, za, sizeof(int32_t) * (size_t)nza, cudaMemcpyHostToDevice));
  GPU_CHECK(cudaMemcpy(dzb, zb, sizeof(int32_t) * (size_t)nzb, cudaMemcpyHostToDevice));
  /* some cases pass the sums of code values (as the q8 Conv does), computed here from the raw codes */
  uint32_t *dsa = NULL, *dsb = NULL;
  if (pad == 3 || pad == 16) {
    uint32_t *h = (uint32_t *)calloc((size_t)(M + N + 1), sizeof(uint32_t));
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) h[i] += (uint32_t)amd_q8_value(Ar[i * K + k], fa == AMD_Q8_S8);
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) h[M + j] += (uint32_t)amd_q8_value(Br[k * N + j], fb == AMD_Q8_S8);
    GPU_CHECK(cudaMalloc(&dsa, sizeof(uint32_t) * (size_t)(M + N + 1)));
    GPU_CHECK(cudaMemcpy(dsa, h, sizeof(uint32_t) * (size_t)(M + N), cudaMemcpyHostToDevice));
    dsb = dsa + M;
    free(h);
  }
  amd_q8_operand oa = {dA, lda, fa, za_row == 2 ? NULL : dza, za_row == 1, NULL},
                 ob = {dB, ldb, fb, zb_col == 2 ? NULL : dzb, zb_col == 1, NULL};
  if (pad == 3) oa.sums = dsa;
  if (pad == 16) ob.sums = dsb;
  const int exact_ok = !table || strncmp(tname, "exact", 5) == 0;
  for (int run = 0; run < 4; run++) {
    const int path = run == 3 ? AMD_Q8_PATH_AUTO : run, deferred = run == 3;
    if (path == AMD_Q8_PATH_IMMA && !exact_ok) continue;
    amd_cuda_q8_set_path(ctx, (amd_q8_path)path);
    GPU_CHECK(cudaMemset(dC, 0xA5, sizeof(int32_t) * nc));
    amd_status st = {{0}};
    amd_q8_fix fix;
    fix.active = 1; /* must be cleared or set by the call */
    cases++;
    if (amd_cuda_q8_gemm(ctx, table, M, N, K, &oa, &ob, b_trans, dC, ldc, deferred ? &fix : NULL, &st)) {
      printf("FAIL %s %lldx%lldx%lld %s x %s: %s\n", tname, (long long)M, (long long)N, (long long)K, fmt_name(fa),
             fmt_name(fb), st.msg);
      failures++;
      continue;
    }
    if (deferred && fix.active) k_apply_fix<<<64, 256>>>(M, N, dC, ldc, fix);
    GPU_CHECK(cudaDeviceSynchronize());
    GPU_CHECK(cudaMemcpy(Cg, dC, sizeof(int32_t) * nc, cudaMemcpyDeviceToHost));
    long bad = 0;
    int shown = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        if (Cg[i * ldc + j] != Cc[i * N + j]) {
          if (shown++ < 3)
            printf("  [%lld][%lld]: gpu %d cpu %d\n", (long long)i, (long long)j, Cg[i * ldc + j], Cc[i * N + j]);
          bad++;
        }
    const amd_q8_path took = amd_cuda_q8_last_path(ctx);
    printf("%s %s %lldx%lldx%lld %s x %s %s zp %s/%s ld+%d path %s (%s): %ld wrong\n", bad ? "FAIL" : "ok  ", tname,
           (long long)M, (long long)N, (long long)K, fmt_name(fa), fmt_name(fb), b_trans ? "TN" : "NN",
           za_row == 2 ? "none" : za_row ? "row" : "one", zb_col == 2 ? "none" : zb_col ? "col" : "one", pad,
           deferred ? "auto, terms deferred" : path == AMD_Q8_PATH_AUTO ? "auto" : path == AMD_Q8_PATH_TABLE ? "table" : "imma",
           took == AMD_Q8_PATH_IMMA ? "tensor cores" : "table kernel", bad);
    if (bad) failures++;
  }
  amd_cuda_q8_set_path(ctx, AMD_Q8_PATH_AUTO);
  cudaFree(dA), cudaFree(dB), cudaFree(dza), cudaFree(dzb), cudaFree(dC), cudaFree(dsa);
  free(A), free(B), free(Ar), free(Br), free(za), free(zb), free(zae), free(zbe), free(Cc), free(Cg);
}

/* A random table: the exact one (signedness sgn) plus noise of amplitude amp (or, amp < 0, any int32). */
static void approx_table(int sgn, int64_t amp, int32_t *t) {
  amd_q8_exact(sgn, t);
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) {
    if (amp < 0) {
      t[i] = (int32_t)gpu_urand();
      continue;
    }
    int64_t v = t[i] + (int64_t)(gpu_urand() % (uint32_t)(2 * amp + 1)) - amp;
    if (!sgn && amp <= 32768 && v < 0) v = -v; /* a uint16 .bin table: non-negative */
    t[i] = (int32_t)v;
  }
}

static void tests(amd_cuda_q8_ctx *ctx) {
  static int32_t exu[AMD_Q8_ENTRIES], exs[AMD_Q8_ENTRIES], ap16s[AMD_Q8_ENTRIES], ap16u[AMD_Q8_ENTRIES],
      ap32[AMD_Q8_ENTRIES], wild[AMD_Q8_ENTRIES];
  amd_q8_exact(0, exu);
  amd_q8_exact(1, exs);
  approx_table(1, 300, ap16s);  /* fits int16 */
  approx_table(0, 400, ap16u);  /* the exact uint8 products reach 65025: uint16 */
  approx_table(1, 1 << 17, ap32); /* int32, read from global memory */
  approx_table(0, -1, wild);    /* any int32: the sums wrap */
  struct {
    const int32_t *t;
    const char *name;
    amd_q8_fmt fa, fb;
  } tabs[] = {
      {NULL, "none", AMD_Q8_U8, AMD_Q8_U8},      {NULL, "none", AMD_Q8_S8, AMD_Q8_U8X},
      {NULL, "none", AMD_Q8_U8X, AMD_Q8_S8},     {exu, "exact-u", AMD_Q8_U8, AMD_Q8_U8},
      {exu, "exact-u", AMD_Q8_U8X, AMD_Q8_U8X},  {exs, "exact-s", AMD_Q8_S8, AMD_Q8_S8},
      {ap16s, "approx-int16", AMD_Q8_S8, AMD_Q8_S8}, {ap16u, "approx-uint16", AMD_Q8_U8X, AMD_Q8_U8},
      {ap32, "approx-int32", AMD_Q8_S8, AMD_Q8_S8},  {wild, "wild-int32", AMD_Q8_U8, AMD_Q8_U8X},
  };
  const int64_t shapes[][3] = {{1, 1, 1},    {1, 1, 0},    {3, 5, 7},     {64, 128, 32}, {65, 129, 33},
                               {63, 127, 31}, {7, 300, 100}, {130, 67, 257}, {128, 512, 64}, {64, 1000, 576},
                               {256, 96, 1152}, {17, 1, 4097}};
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]), ntabs = (int)(sizeof tabs / sizeof tabs[0]);
  for (int t = 0; t < ntabs; t++)
    for (int s = 0; s < nshapes; s++) {
      const int v = (t + s) % 4;
      check(ctx, tabs[t].t, tabs[t].name, shapes[s][0], shapes[s][1], shapes[s][2], tabs[t].fa, tabs[t].fb,
            v != 1, v & 1, (v >> 1) & 1, v == 2 ? 3 : v == 3 ? 16 : 0, s & 1);
    }
  /* the tensor cores' operands copied for alignment: A at an odd leading dimension, B in the K x N layout */
  check(ctx, exs, "exact-s", 40, 72, 50, AMD_Q8_S8, AMD_Q8_S8, 0, 1, 1, 1, 0);
  check(ctx, exu, "exact-u", 40, 72, 50, AMD_Q8_U8, AMD_Q8_U8X, 1, 1, 0, 5, 1);
  /* symmetric codes: no zero points (NULL) on one or both operands; on the tensor cores with int8 codes of
   * both no zero-point term is left, with uint8 codes the shift by 128 still is */
  for (int z = 0; z < 3; z++) {
    const int zr = z == 1 ? 1 : 2, zc = z == 2 ? 1 : 2;
    check(ctx, exs, "exact-s", 64, 1000, 576, AMD_Q8_S8, AMD_Q8_S8, 1, zr, zc, 0, 1);
    check(ctx, NULL, "none", 65, 129, 33, AMD_Q8_S8, AMD_Q8_S8, 0, zr, zc, 3, 0);
    check(ctx, exu, "exact-u", 63, 127, 31, AMD_Q8_U8X, AMD_Q8_U8, 1, zr, zc, 16, 1);
    check(ctx, ap16s, "approx-int16", 130, 67, 257, AMD_Q8_S8, AMD_Q8_S8, 1, zr, zc, 0, 0);
    check(ctx, exs, "exact-s", 1, 1, 0, AMD_Q8_S8, AMD_Q8_S8, 1, zr, zc, 0, 0);
  }
  /* a table changed in place after use is uploaded again */
  static int32_t chg[AMD_Q8_ENTRIES];
  approx_table(1, 50, chg);
  check(ctx, chg, "changed", 33, 70, 90, AMD_Q8_S8, AMD_Q8_S8, 1, 1, 1, 0, 0);
  approx_table(1, 5000, chg);
  check(ctx, chg, "changed", 33, 70, 90, AMD_Q8_S8, AMD_Q8_S8, 1, 1, 1, 0, 0);
}

/* ---------------------------------------------------------------- --bench */

static double time_ms(cudaStream_t s, int reps, void (*fn)(void *), void *arg) {
  cudaEvent_t a, b;
  GPU_CHECK(cudaEventCreate(&a));
  GPU_CHECK(cudaEventCreate(&b));
  fn(arg); /* warm-up (uploads, workspaces) */
  GPU_CHECK(cudaStreamSynchronize(s));
  GPU_CHECK(cudaEventRecord(a, s));
  for (int r = 0; r < reps; r++) fn(arg);
  GPU_CHECK(cudaEventRecord(b, s));
  GPU_CHECK(cudaEventSynchronize(b));
  float ms = 0;
  GPU_CHECK(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / reps;
}

struct bench_args {
  amd_cuda_q8_ctx *ctx;
  const int32_t *table;
  int64_t M, N, K;
  amd_q8_operand a, b;
  int32_t *C;
  int defer; /* the zero-point terms left to the caller, as the q8 Conv of one group does */
  cublasHandle_t cublas;
  const float *fA, *fB;
  float *fC;
};

static void run_q8(void *p) {
  bench_args *b = (bench_args *)p;
  amd_status st = {{0}};
  amd_q8_fix fix;
  if (amd_cuda_q8_gemm(b->ctx, b->table, b->M, b->N, b->K, &b->a, &b->b, 1, b->C, b->N,
                       b->defer ? &fix : NULL, &st)) {
    printf("FAIL: %s\n", st.msg);
    exit(1);
  }
}

static void run_sgemm(void *p) {
  bench_args *b = (bench_args *)p;
  const float one = 1, zero = 0;
  /* row-major C[M][N] = A[M][K] * Bt[N][K]^T, the TN layout of the q8 path */
  if (cublasSgemm(b->cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)b->N, (int)b->M, (int)b->K, &one, b->fB, (int)b->K, b->fA,
                  (int)b->K, &zero, b->fC, (int)b->N) != CUBLAS_STATUS_SUCCESS) {
    printf("FAIL: cublasSgemm\n");
    exit(1);
  }
}

static void bench(void) {
  cudaStream_t s;
  GPU_CHECK(cudaStreamCreate(&s));
  amd_status st = {{0}};
  amd_cuda_q8_ctx *ctx;
  if (amd_cuda_q8_create(&ctx, s, &st)) {
    printf("FAIL: %s\n", st.msg);
    exit(1);
  }
  cublasHandle_t cublas;
  if (cublasCreate(&cublas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(cublas, s) != CUBLAS_STATUS_SUCCESS) {
    printf("FAIL: cublasCreate\n");
    exit(1);
  }
  cublasSetMathMode(cublas, CUBLAS_DEFAULT_MATH); /* fp32, no TF32 */
  static int32_t ap[AMD_Q8_ENTRIES], ex[AMD_Q8_ENTRIES];
  approx_table(1, 300, ap);
  amd_q8_exact(1, ex);
  const int64_t shapes[][3] = {{64, 131072, 576}, {128, 32768, 1152}, {256, 8192, 2304}, {512, 2048, 4608}};
  printf("ResNet-18 3x3 convolutions at batch 128, 32x32 inputs (M x N x K; T MAC/s = 1e12 multiply-adds/s)\n");
  printf("%-20s %14s %14s %14s %14s %14s %14s\n", "M x N x K", "q8 table", "(uniform B)", "int8 TC, zp",
         "(zp deferred)", "(zp none)", "SGEMM fp32");
  for (int i = 0; i < 4; i++) {
    const int64_t M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
    uint8_t *dA, *dB;
    int32_t *dC, *dz;
    float *fA, *fB, *fC;
    GPU_CHECK(cudaMalloc(&dA, (size_t)(M * K)));
    GPU_CHECK(cudaMalloc(&dB, (size_t)(N * K)));
    GPU_CHECK(cudaMalloc(&dC, sizeof(int32_t) * (size_t)(M * N)));
    GPU_CHECK(cudaMalloc(&dz, sizeof(int32_t) * (size_t)M));
    GPU_CHECK(cudaMalloc(&fA, sizeof(float) * (size_t)(M * K)));
    GPU_CHECK(cudaMalloc(&fB, sizeof(float) * (size_t)(N * K)));
    GPU_CHECK(cudaMalloc(&fC, sizeof(float) * (size_t)(M * N)));
    uint8_t *h = (uint8_t *)malloc((size_t)(N * K));
    for (int64_t e = 0; e < N * K; e++) h[e] = rand_code(1);
    GPU_CHECK(cudaMemcpy(dB, h, (size_t)(N * K), cudaMemcpyHostToDevice));
    for (int64_t e = 0; e < M * K; e++) h[e] = rand_code(0);
    GPU_CHECK(cudaMemcpy(dA, h, (size_t)(M * K), cudaMemcpyHostToDevice));
    free(h);
    GPU_CHECK(cudaMemset(dz, 0, sizeof(int32_t) * (size_t)M));
    GPU_CHECK(cudaMemset(fA, 0, sizeof(float) * (size_t)(M * K)));
    GPU_CHECK(cudaMemset(fB, 0, sizeof(float) * (size_t)(N * K)));
    bench_args b;
    b.ctx = ctx, b.M = M, b.N = N, b.K = K, b.C = dC, b.cublas = cublas, b.fA = fA, b.fB = fB, b.fC = fC;
    b.defer = 0;
    /* both operands' sums given, as the q8 Conv passes them (the weight's from its quantization, the codes'
     * from the im2col; values not checked here) */
    uint32_t *dsum;
    GPU_CHECK(cudaMalloc(&dsum, sizeof(uint32_t) * (size_t)(M + N)));
    GPU_CHECK(cudaMemset(dsum, 0, sizeof(uint32_t) * (size_t)(M + N)));
    b.a = {dA, K, AMD_Q8_S8, dz, 1, dsum + N};
    b.b = {dB, K, AMD_Q8_S8, dz, 0, dsum};
    const double macs = (double)M * (double)N * (double)K;
    b.table = ap;
    const double t_tab = time_ms(s, 5, run_q8, &b);
    const int tab_path = amd_cuda_q8_last_path(ctx);
    /* again with uniform codes in B (more bank conflicts than activations bunched near their zero point) */
    h = (uint8_t *)malloc((size_t)(N * K));
    for (int64_t e = 0; e < N * K; e++) h[e] = rand_code(0);
    GPU_CHECK(cudaMemcpy(dB, h, (size_t)(N * K), cudaMemcpyHostToDevice));
    free(h);
    const double t_unif = time_ms(s, 5, run_q8, &b);
    b.table = ex;
    const double t_tc = time_ms(s, 20, run_q8, &b);
    const int tc_path = amd_cuda_q8_last_path(ctx);
    b.defer = 1; /* the q8 Conv's output kernel adds the zero-point terms as it scales to float */
    const double t_def = time_ms(s, 20, run_q8, &b);
    b.defer = 0;
    /* symmetric codes (no zero points): the tensor cores' product is the result */
    b.a.zp = b.b.zp = NULL;
    const double t_sym = time_ms(s, 20, run_q8, &b);
    const int sym_path = amd_cuda_q8_last_path(ctx);
    const double t_sg = time_ms(s, 10, run_sgemm, &b);
    char name[64];
    snprintf(name, sizeof name, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
    printf("%-20s %11.2f %s %11.2f    %11.2f %s %11.2f    %11.2f %s %11.2f\n", name,
           macs / (t_tab * 1e-3) / 1e12, tab_path == AMD_Q8_PATH_TABLE ? "  " : "?!",
           macs / (t_unif * 1e-3) / 1e12, macs / (t_tc * 1e-3) / 1e12,
           tc_path == AMD_Q8_PATH_IMMA ? "  " : "?!", macs / (t_def * 1e-3) / 1e12,
           macs / (t_sym * 1e-3) / 1e12, sym_path == AMD_Q8_PATH_IMMA ? "  " : "?!",
           macs / (t_sg * 1e-3) / 1e12);
    cudaFree(dA), cudaFree(dB), cudaFree(dC), cudaFree(dz), cudaFree(fA), cudaFree(fB), cudaFree(fC), cudaFree(dsum);
  }
  cublasDestroy(cublas);
  amd_cuda_q8_destroy(ctx);
  cudaStreamDestroy(s);
}

int main(int argc, char **argv) {
  gpu_require_device();
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    bench();
    return 0;
  }
  cudaStream_t s;
  GPU_CHECK(cudaStreamCreate(&s));
  amd_status st = {{0}};
  amd_cuda_q8_ctx *ctx;
  if (amd_cuda_q8_create(&ctx, s, &st)) {
    printf("FAIL: %s\n", st.msg);
    return 1;
  }
  tests(ctx);
  amd_cuda_q8_destroy(ctx);
  cudaStreamDestroy(s);
  printf("%ld cases, %ld failed\n", cases, failures);
  return failures ? 1 : 0;
}
