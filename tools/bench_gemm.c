/* Benchmark of the mode GEMM (src/gemm): amd_gemm in acc32 and in every
 * emulated mode at ResNet-like shapes, with one thread and with all threads.
 * Prints GMAC/s (multiply-accumulates per second) and the time ratio
 * mode / acc32 of the same shape and thread count, measured in the same run.
 *
 * Each measurement is the best of REPS repetitions (the machine may be shared:
 * the best is the least disturbed), one repetition being as many calls as fill
 * about MIN_SECONDS. Operands: uniform in [-1, 1) with a quarter of B zero
 * (ReLU-like activations), inside every mode's fast exponent range.
 *
 * Usage: bench-gemm [REPS [MIN_SECONDS]]     (defaults 5 and 0.2) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "core/env.h"
#include "gemm/gemm.h"
#include "mult/mult.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

/* Seconds per call of C = A * B (M x K times K x N), best of reps. */
static double time_gemm(const amd_mult *m, int64_t M, int64_t N, int64_t K, const float *A, const float *B,
                        float *C, int reps, double min_s) {
  amd_gemm(m, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N); /* warm up */
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    int calls = 0;
    double t0 = now(), t;
    do {
      amd_gemm(m, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
      calls++;
      t = now() - t0;
    } while (t < min_s);
    if (t / calls < best) best = t / calls;
  }
  return best;
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 5;
  double min_s = argc > 2 ? atof(argv[2]) : 0.2;
  if (reps < 1) reps = 1;
  static const int64_t shapes[][3] = {{64, 1024, 576}, {128, 256, 1152}, {512, 512, 512}};
  const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);

  /* acc32 first (the reference of each ratio), then every other mode; lut:
   * with the MBM_7 table (section 5 of the spec). */
  amd_mult modes[AMD_MODE_COUNT];
  int n = 0;
  for (int md = 0; md < AMD_MODE_COUNT; md++) {
    memset(&modes[n], 0, sizeof modes[n]);
    modes[n].mode = (amd_mode)md;
    snprintf(modes[n].name, sizeof modes[n].name, "%s", amd_mode_name((amd_mode)md));
    if (md == AMD_MODE_LUT) {
      amd_status st = {0};
      modes[n].lut = malloc(AMD_MULT_TABLE7_SIZE);
      modes[n].lut_bits = 7;
      if (!modes[n].lut || amd_mult_make_table(AMD_MODE_AM16, modes[n].lut, &st)) {
        fprintf(stderr, "bench-gemm: cannot make the MBM_7 table\n");
        return 1;
      }
      snprintf(modes[n].name, sizeof modes[n].name, "lut:mbm7");
    }
    n++;
  }

  int maxthreads = 1;
#ifdef _OPENMP
  maxthreads = omp_get_max_threads();
#endif
  const char *isa = amd_env_read().gemm_isa; /* AMD_GEMM_ISA */
  amd_gemm_force_isa(isa);
  printf("bench-gemm: best of %d x >= %.2f s, threads 1 and %d, ISA %s\n", reps, min_s, maxthreads,
         isa ? isa : "auto");
  printf("%-16s %-8s %7s %10s %9s %8s\n", "shape MxNxK", "mode", "threads", "ms/call", "GMAC/s", "x acc32");
  for (int s = 0; s < nshapes; s++) {
    const int64_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    float *A = malloc(sizeof(float) * (size_t)(M * K)), *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C = malloc(sizeof(float) * (size_t)(M * N));
    if (!A || !B || !C) return 1;
    for (int64_t i = 0; i < M * K; i++) A[i] = frand();
    for (int64_t i = 0; i < K * N; i++) {
      float v = frand();
      B[i] = (i * 7919) % 4 == 0 ? 0.0f : v;
    }
    for (int th = 0; th < 2; th++) {
      int threads = th ? maxthreads : 1;
      if (th && maxthreads == 1) break;
#ifdef _OPENMP
      omp_set_num_threads(threads);
#endif
      double ref = 0;
      for (int md = 0; md < n; md++) {
        double t = time_gemm(&modes[md], M, N, K, A, B, C, reps, min_s);
        if (md == 0) ref = t;
        char shape[32];
        snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
        printf("%-16s %-8s %7d %10.3f %9.2f %8.2f\n", shape, modes[md].name, threads, t * 1e3,
               (double)M * N * K / t * 1e-9, t / ref);
        fflush(stdout);
      }
    }
#ifdef _OPENMP
    omp_set_num_threads(maxthreads);
#endif
    free(A);
    free(B);
    free(C);
  }
  for (int md = 0; md < n; md++) amd_mult_free(&modes[md]);
  return 0;
}
