/* Benchmark of amd_cuda_gemm on ResNet-18 CIFAR layer shapes (batch 128,
 * im2col GEMMs): forward (M = Cout, N = 128 H W, K = 9 Cin), backward-weight
 * (M = Cout, N = 9 Cin, K = 128 H W, B transposed: long K, split-K) and
 * backward-data (M = 9 Cin, N = 128 H W, K = Cout, A transposed), for every
 * mode; acc32 is cuBLAS SGEMM with TF32 off, the baseline of each shape.
 * Times with CUDA events: 2 warm-up runs, then the median of 7 (BENCH_GEMM_RUNS=N: of N). Prints
 * T multiply-accumulates/s per mode and shape and the ratio to cuBLAS.
 * Then the shapes that the large tile mostly pads (LeNet-5's convolutions,
 * ResNet-18's first weight gradient): ms with each tile forced and as picked.
 * am16 and mbm14 run in both GEMM tiers: the fast one (the default, column
 * am16) and the exact one (column am16/ex).
 *
 * usage: bench_cuda_gemm [MODE,MODE,...]   (default: all; lut = lut: with
 * the MBM_7 table of amd_mult_make_table) */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cuda/mode_gemm.h"
#include "gemm_operands.cuh"

typedef struct shape {
  const char *name;
  int ta, tb;
  long long M, N, K;
} shape;

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* Timed runs per GEMM: 7, or BENCH_GEMM_RUNS (1 to 7; with 1, no warm-up either: one launch per GEMM, for
 * profilers that replay each launch, tools/gemm_stalls.sh). */
static int timed_runs(void) {
  const char *e = getenv("BENCH_GEMM_RUNS");
  const int n = e ? atoi(e) : 7;
  return n >= 1 && n <= 7 ? n : 7;
}

/* Median time in ms of the timed runs (after 2 warm-up runs) of one GEMM. */
static float time_gemm(amd_cuda_gemm_ctx *ctx, cudaStream_t stream, cudaEvent_t e0, cudaEvent_t e1,
                       const amd_mult *mult, const shape *sh, const float *A, const float *B, float *C) {
  amd_status st = {{0}};
  const long long lda = sh->ta ? sh->M : sh->K, ldb = sh->tb ? sh->K : sh->N;
  const int runs = timed_runs(), warm = runs == 1 ? 0 : 2;
  float ms[7];
  for (int r = 0; r < warm + runs; r++) {
    CK(cudaEventRecord(e0, stream));
    if (amd_cuda_gemm(ctx, mult, sh->ta, sh->tb, sh->M, sh->N, sh->K, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, C,
                      sh->N, 0, 1, &st)) {
      fprintf(stderr, "%s: %s\n", sh->name, st.msg);
      exit(1);
    }
    CK(cudaEventRecord(e1, stream));
    CK(cudaEventSynchronize(e1));
    if (r >= warm) CK(cudaEventElapsedTime(&ms[r - warm], e0, e1));
  }
  qsort(ms, runs, sizeof ms[0], cmpf);
  return ms[runs / 2];
}

int main(int argc, char **argv) {
  const int cin[4] = {64, 64, 128, 256}, cout[4] = {64, 128, 256, 512}, hw[4] = {32, 16, 8, 4};
  shape shapes[12];
  static char names[12][32];
  for (int l = 0; l < 4; l++) {
    /* the first conv of each stage (stage 1: 64 -> 64 at 32 x 32; later: Cout inputs, as in the stage's
     * other convs) */
    const long long ci = l == 0 ? cin[0] : cout[l], co = cout[l], p = 128LL * hw[l] * hw[l];
    snprintf(names[l], 32, "fwd  L%d", l + 1);
    shapes[l] = (shape){names[l], 0, 0, co, p, 9 * ci};
    snprintf(names[4 + l], 32, "bwdW L%d", l + 1);
    shapes[4 + l] = (shape){names[4 + l], 0, 1, co, 9 * ci, p};
    snprintf(names[8 + l], 32, "bwdD L%d", l + 1);
    shapes[8 + l] = (shape){names[8 + l], 1, 0, 9 * ci, p, co};
  }
#define MODE_NAME(ID, NAME, PROD, BITS, ARGS, KIND, M, TABLE7, SUMMARY) NAME,
  const char *all[AMD_MODE_COUNT] = {AMD_MODE_LIST(MODE_NAME)}; /* src/mult/mode_list.h */
#undef MODE_NAME
  const int nall = AMD_MODE_COUNT;
  int use[AMD_MODE_COUNT];
  for (int i = 0; i < nall; i++) use[i] = argc < 2 || strstr(argv[1], all[i]) != NULL;
  use[0] = 1; /* the baseline */

  amd_status st = {{0}};
  amd_mult mults[AMD_MODE_COUNT];
  static uint8_t tab[AMD_MULT_TABLE7_SIZE];
  for (int i = 0; i < nall; i++) {
    if (!strcmp(all[i], "lut")) {
      if (amd_mult_make_table(AMD_MODE_AM16, tab, &st)) return fprintf(stderr, "%s\n", st.msg), 1;
      memset(&mults[i], 0, sizeof mults[i]);
      mults[i].mode = AMD_MODE_LUT;
      mults[i].lut_bits = 7;
      mults[i].lut = tab;
    } else if (amd_mult_parse(all[i], &mults[i], &st)) {
      return fprintf(stderr, "%s\n", st.msg), 1;
    }
  }

  size_t maxa = 0, maxb = 0, maxc = 0;
  for (int s = 0; s < 12; s++) {
    size_t a = (size_t)(shapes[s].M * shapes[s].K), b = (size_t)(shapes[s].K * shapes[s].N),
           c = (size_t)(shapes[s].M * shapes[s].N);
    maxa = a > maxa ? a : maxa;
    maxb = b > maxb ? b : maxb;
    maxc = c > maxc ? c : maxc;
  }
  float *A, *B, *C;
  CK(cudaMalloc(&A, maxa * 4));
  CK(cudaMalloc(&B, maxb * 4));
  CK(cudaMalloc(&C, maxc * 4));
  fill_operands<<<1024, 256>>>(A, maxa, 1u, 0);
  fill_operands<<<1024, 256>>>(B, maxb, 2u, 1); /* a quarter zeros (ReLU outputs) */
  CK(cudaDeviceSynchronize());
  cudaStream_t stream;
  CK(cudaStreamCreate(&stream));
  amd_cuda_gemm_ctx *ctx;
  if (amd_cuda_gemm_create(&ctx, stream, &st)) return fprintf(stderr, "%s\n", st.msg), 1;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s, %d SMs; T MAC/s = 1e12 multiply-accumulates per second; ratio = mode / cuBLAS SGEMM "
         "(TF32 off)\n",
         prop.name, prop.multiProcessorCount);

  /* the columns: every mode asked for, am16 and mbm14 also in the exact tier */
  int col_mode[2 * AMD_MODE_COUNT], col_exact[2 * AMD_MODE_COUNT], ncol = 0;
  static char col_name[2 * AMD_MODE_COUNT][24];
  for (int i = 0; i < nall; i++) {
    if (!use[i]) continue;
    for (int ex = 0; ex < 1 + (i == AMD_MODE_AM16 || i == AMD_MODE_MBM14); ex++) {
      col_mode[ncol] = i;
      col_exact[ncol] = ex;
      snprintf(col_name[ncol], sizeof col_name[ncol], "%s%s", all[i], ex ? "/ex" : "");
      ncol++;
    }
  }
  double tmacs[12][2 * AMD_MODE_COUNT];
  for (int s = 0; s < 12; s++) {
    const shape *sh = &shapes[s];
    const double macs = (double)sh->M * sh->N * sh->K;
    for (int c = 0; c < ncol; c++) {
      amd_cuda_gemm_set_tier(ctx, col_exact[c] ? AMD_GEMM_TIER_EXACT : AMD_GEMM_TIER_FAST);
      const float ms = time_gemm(ctx, stream, e0, e1, &mults[col_mode[c]], sh, A, B, C);
      tmacs[s][c] = macs / (ms * 1e-3) / 1e12;
      printf("%s M %5lld N %6lld K %6lld ta %d tb %d  %-8s %8.3f ms  %6.2f T MAC/s  %5.3f x cuBLAS\n",
             sh->name, sh->M, sh->N, sh->K, sh->ta, sh->tb, col_name[c], ms, tmacs[s][c],
             tmacs[s][c] / tmacs[s][0]);
      fflush(stdout);
    }
  }
  amd_cuda_gemm_set_tier(ctx, AMD_GEMM_TIER_FAST);
  printf("\nT MAC/s (ratio to cuBLAS SGEMM)\n%-8s", "shape");
  for (int c = 0; c < ncol; c++) printf(" %13s", col_name[c]);
  printf("\n");
  for (int s = 0; s < 12; s++) {
    printf("%-8s", shapes[s].name);
    for (int c = 0; c < ncol; c++) printf("  %5.2f (%4.2f)", tmacs[s][c], tmacs[s][c] / tmacs[s][0]);
    printf("\n");
  }
  /* shapes the large tile mostly pads: each tile forced, and the pick */
  const shape small[] = {{"LeNet5 conv1 fwd", 0, 0, 6, 128LL * 28 * 28, 25},
                         {"LeNet5 conv1 bwdW", 0, 1, 6, 25, 128LL * 28 * 28},
                         {"LeNet5 conv2 fwd", 0, 0, 16, 128LL * 10 * 10, 150},
                         {"LeNet5 conv2 bwdW", 0, 1, 16, 150, 128LL * 10 * 10},
                         {"LeNet5 conv2 bwdD", 1, 0, 150, 128LL * 10 * 10, 16},
                         {"ResNet18 conv1 bwdW", 0, 1, 64, 27, 128LL * 32 * 32}};
  static const char *tiles[] = {"auto", "large", "small"};
  printf("\nms per GEMM, large and small tile forced, and the tile picked per shape (auto)\n");
  for (unsigned s = 0; s < sizeof small / sizeof small[0]; s++)
    for (int i = 1; i < nall; i++) {
      if (!use[i]) continue;
      const shape *sh = &small[s];
      float ms[3];
      for (int t = 0; t < 3; t++) {
        amd_cuda_gemm_set_tile(ctx, (amd_gemm_tile)t);
        ms[t] = time_gemm(ctx, stream, e0, e1, &mults[i], sh, A, B, C);
      }
      amd_cuda_gemm_set_tile(ctx, AMD_GEMM_TILE_AUTO);
      printf("%-20s M %4lld N %6lld K %6lld  %-6s", sh->name, sh->M, sh->N, sh->K, all[i]);
      for (int t = 0; t < 3; t++) printf("  %s %7.3f", tiles[t], ms[t]);
      printf("\n");
    }
  amd_cuda_gemm_destroy(ctx);
  return 0;
}
