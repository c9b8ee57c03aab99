/* The CPU GEMM that every Conv / Gemm / MatMul goes through (see gemm.h).
 *
 * Structure (GotoBLAS-style blocking): the output is cut into tiles of at
 * most MC x NC that the threads share (OpenMP, dynamic schedule, so that a thread
 * the OS descheduled does not hold back the others; NC shrinks
 * when there are too few tiles for the threads). For each tile, K is walked
 * in blocks of KC: the tile's rows of op(A) are packed into MR-row panels and
 * its columns of op(B) into NR-column panels (zero padded to whole panels) in
 * the thread's own buffers, then a register-tiled MR x NR micro-kernel runs
 * over every panel pair. Tiles are independent: no barrier but the final one,
 * and results do not depend on the thread count.
 *
 * Two kinds of micro-kernel share that blocking:
 * - acc32 (mult NULL or AMD_MODE_ACC32): plain C loops over a float
 *   accumulator tile that GCC -O3 vectorises. The x86-64 baseline build only
 *   has SSE2, so the kernel is compiled three times (default, AVX2, AVX-512F,
 *   with tile shapes that fit each register file) and picked once at run time.
 *   Products and sums are separate IEEE fp32 operations (the build uses
 *   -ffp-contract=off, and the AVX2 / AVX-512 clones do not enable FMA).
 * - every other mode: the same packed panels, but each product is
 *   amd_mult_product(mult, a, b), accumulated in fp32 (simple and exact to the
 *   mode's contract; vectorising it is a later step).
 *
 * On the acc32 path, products with at most SMALL_M rows skip the packing
 * (see small_m).
 *
 * Accumulation: each K block's products are summed in fp32 in k order, then
 * C = alpha * sum + beta * C for the first K block (C is not read when
 * beta == 0) and C += alpha * sum for the following ones. */
#include "gemm.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../core/status.h"
#include "../mult/mult.h"

/* OpenMP pragmas that vanish (without unknown-pragma warnings) when the build
 * has no OpenMP. */
#ifdef _OPENMP
#define AMD_PRAGMA(x) _Pragma(#x)
#else
#define AMD_PRAGMA(x)
#endif

enum {
  KC = 256,       /* K block: one packed A panel row-set and B panel stay in L1/L2 */
  MC_PANELS = 16, /* MC = MC_PANELS * MR rows per tile */
  NC_PANELS = 16, /* NC = NC_PANELS * NR columns per tile (at most) */
  MAX_MR = 12,    /* largest tile of the kernels below */
  MAX_NR = 16,
};

/* The arguments one tile of the macro-kernel needs. */
typedef struct tile_args {
  int64_t mc, nc, kc; /* tile size (rows, columns, depth) */
  const float *pa;    /* packed A: ceil(mc/MR) panels of kc x MR */
  const float *pb;    /* packed B: ceil(nc/NR) panels of kc x NR */
  float *c;           /* C at the tile's top-left */
  int64_t ldc;
  float alpha, beta;    /* beta < 0 sentinel not used: see first */
  int first;            /* first K block: apply beta (or ignore C when beta == 0) */
  const amd_mult *mult; /* generic kernel only */
} tile_args;

/* Writes an mr x nr accumulator tile (row stride nr_full) into C. */
static inline __attribute__((always_inline)) void
store_tile(const tile_args *t, float *c, int64_t ldc, const float *acc, int nr_full, int64_t mr, int64_t nr) {
  float alpha = t->alpha, beta = t->beta;
  if (!t->first) {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] += alpha * acc[i * nr_full + j];
  } else if (beta == 0) {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] = alpha * acc[i * nr_full + j];
  } else {
    for (int64_t i = 0; i < mr; i++)
      for (int64_t j = 0; j < nr; j++) c[i * ldc + j] = alpha * acc[i * nr_full + j] + beta * c[i * ldc + j];
  }
}

/* The acc32 macro-kernel for one tile, with the tile shape as compile-time
 * constants after inlining. The accumulator tile is a local array indexed by
 * constants once the loops are unrolled, so it lives in vector registers. */
static inline __attribute__((always_inline)) void tile_acc32(const tile_args *t, const int MR, const int NR) {
  for (int64_t jr = 0; jr < t->nc; jr += NR) {
    const float *pb = t->pb + (jr / NR) * t->kc * NR;
    int64_t nr = t->nc - jr < NR ? t->nc - jr : NR;
    for (int64_t ir = 0; ir < t->mc; ir += MR) {
      const float *pa = t->pa + (ir / MR) * t->kc * MR;
      int64_t mr = t->mc - ir < MR ? t->mc - ir : MR;
      float acc[MAX_MR * MAX_NR] __attribute__((aligned(64)));
      for (int i = 0; i < MR * NR; i++) acc[i] = 0;
      const float *a = pa, *b = pb;
      for (int64_t p = 0; p < t->kc; p++, a += MR, b += NR) {
        for (int i = 0; i < MR; i++) {
          float av = a[i];
          AMD_PRAGMA(omp simd)
          for (int j = 0; j < NR; j++) acc[i * NR + j] += av * b[j];
        }
      }
      float *c = t->c + ir * t->ldc + jr;
      if (mr == MR && nr == NR)
        store_tile(t, c, t->ldc, acc, NR, MR, NR);
      else
        store_tile(t, c, t->ldc, acc, NR, mr, nr);
    }
  }
}

/* Per-ISA instances. Tile shapes are chosen so that the accumulators plus one
 * packed B row and one broadcast A value fit the register file (SSE2 and AVX2:
 * 12 of 16 registers; AVX-512: 12 of 32, one register per row so that a K
 * block of A and B panels (12 + 16) * KC floats stays in a 32 KiB L1). */
#define SSE_MR 6
#define SSE_NR 8
#define AVX2_MR 6
#define AVX2_NR 16
#define AVX512_MR 12
#define AVX512_NR 16

static void tile_acc32_default(const tile_args *t) { tile_acc32(t, SSE_MR, SSE_NR); }

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define AMD_GEMM_X86 1
__attribute__((target("avx2"))) static void tile_acc32_avx2(const tile_args *t) {
  tile_acc32(t, AVX2_MR, AVX2_NR);
}
__attribute__((target("avx512f"))) static void tile_acc32_avx512(const tile_args *t) {
  tile_acc32(t, AVX512_MR, AVX512_NR);
}
#endif

/* The generic kernel: each product through the mode. */
static void tile_generic(const tile_args *t, int MR, int NR) {
  for (int64_t jr = 0; jr < t->nc; jr += NR) {
    const float *pb = t->pb + (jr / NR) * t->kc * NR;
    int64_t nr = t->nc - jr < NR ? t->nc - jr : NR;
    for (int64_t ir = 0; ir < t->mc; ir += MR) {
      const float *pa = t->pa + (ir / MR) * t->kc * MR;
      int64_t mr = t->mc - ir < MR ? t->mc - ir : MR;
      float acc[MAX_MR * MAX_NR];
      for (int64_t i = 0; i < mr; i++)
        for (int64_t j = 0; j < nr; j++) {
          float s = 0;
          for (int64_t p = 0; p < t->kc; p++) s += amd_mult_product(t->mult, pa[p * MR + i], pb[p * NR + j]);
          acc[i * NR + j] = s;
        }
      store_tile(t, t->c + ir * t->ldc + jr, t->ldc, acc, NR, mr, nr);
    }
  }
}

typedef struct kernel_choice {
  int mr, nr;
  void (*acc32)(const tile_args *t);
} kernel_choice;

static kernel_choice choose_kernel(void) {
  kernel_choice k = {SSE_MR, SSE_NR, tile_acc32_default};
#ifdef AMD_GEMM_X86
  const char *force = getenv("AMD_GEMM_ISA"); /* "sse", "avx2", "avx512": for benchmarks */
  __builtin_cpu_init();
  int has512 = __builtin_cpu_supports("avx512f"), has2 = __builtin_cpu_supports("avx2");
  if (force && strcmp(force, "sse") == 0) has512 = has2 = 0;
  if (force && strcmp(force, "avx2") == 0) has512 = 0;
  if (has512) {
    k = (kernel_choice){AVX512_MR, AVX512_NR, tile_acc32_avx512};
  } else if (has2) {
    k = (kernel_choice){AVX2_MR, AVX2_NR, tile_acc32_avx2};
  }
#endif
  return k;
}

static kernel_choice kernel(void) {
  /* Benign race: every thread computes the same value. */
  static volatile int ready;
  static kernel_choice k;
  if (!ready) {
    k = choose_kernel();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    ready = 1;
  }
  return k;
}

/* Packs rows [i0, i0+mr) x depth [p0, p0+kc) of op(A) into MR-row panels:
 * panel q holds element (i, p) at [q*kc*MR + p*MR + i], zero padded. */
static void pack_a_panel(const float *A, int64_t lda, int trans_a, int64_t i0, int64_t mr, int64_t p0,
                         int64_t kc, int MR, float *dst) {
  if (!trans_a) {
    for (int64_t i = 0; i < mr; i++) {
      const float *src = A + (i0 + i) * lda + p0;
      for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = src[p];
    }
  } else {
    for (int64_t p = 0; p < kc; p++) {
      const float *src = A + (p0 + p) * lda + i0;
      for (int64_t i = 0; i < mr; i++) dst[p * MR + i] = src[i];
    }
  }
  for (int64_t i = mr; i < MR; i++)
    for (int64_t p = 0; p < kc; p++) dst[p * MR + i] = 0;
}

/* Packs columns [j0, j0+nr) x depth [p0, p0+kc) of op(B) into one NR-column
 * panel: element (p, j) at [p*NR + j], zero padded. */
static void pack_b_panel(const float *B, int64_t ldb, int trans_b, int64_t j0, int64_t nr, int64_t p0,
                         int64_t kc, int NR, float *dst) {
  if (!trans_b) {
    for (int64_t p = 0; p < kc; p++) {
      const float *src = B + (p0 + p) * ldb + j0;
      float *d = dst + p * NR;
      int64_t j = 0;
      for (; j < nr; j++) d[j] = src[j];
      for (; j < NR; j++) d[j] = 0;
    }
  } else {
    for (int64_t j = 0; j < nr; j++) {
      const float *src = B + (j0 + j) * ldb + p0;
      for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = src[p];
    }
    for (int64_t j = nr; j < NR; j++)
      for (int64_t p = 0; p < kc; p++) dst[p * NR + j] = 0;
  }
}

/* Few rows (M <= SMALL_M) on the acc32 path: matrix-vector-like products
 * (a classifier at batch 1, depthwise convolution) would waste most of an
 * MR-row tile and pay for packing B, so they run unpacked, one chunk of at
 * most SMALL_NC columns at a time. Compiled per ISA with target_clones. */
enum { SMALL_M = 4, SMALL_NC = 512 };

#ifdef AMD_GEMM_X86
#define AMD_ISA_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define AMD_ISA_CLONES
#endif

AMD_ISA_CLONES static void small_m_chunk(int trans_a, int trans_b, int64_t M, int64_t j0, int64_t nc,
                                         int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                                         int64_t ldb, float beta, float *C, int64_t ldc) {
  float acc[SMALL_M][SMALL_NC];
  const int64_t sa_i = trans_a ? 1 : lda, sa_k = trans_a ? lda : 1; /* op(A)(i,k) strides */
  if (!trans_b) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < nc; j++) acc[i][j] = 0;
    for (int64_t k = 0; k < K; k++) {
      const float *row = B + k * ldb + j0;
      for (int64_t i = 0; i < M; i++) {
        const float a = A[i * sa_i + k * sa_k];
        float *ac = acc[i];
        for (int64_t j = 0; j < nc; j++) ac[j] += a * row[j];
      }
    }
  } else {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < nc; j++) {
        const float *brow = B + (j0 + j) * ldb, *arow = A + i * sa_i;
        float s = 0;
        AMD_PRAGMA(omp simd reduction(+ : s))
        for (int64_t k = 0; k < K; k++) s += arow[k * sa_k] * brow[k];
        acc[i][j] = s;
      }
  }
  for (int64_t i = 0; i < M; i++) {
    float *c = C + i * ldc + j0;
    if (beta == 0)
      for (int64_t j = 0; j < nc; j++) c[j] = alpha * acc[i][j];
    else
      for (int64_t j = 0; j < nc; j++) c[j] = alpha * acc[i][j] + beta * c[j];
  }
}

static void small_m(int trans_a, int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                    int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  int64_t nc = SMALL_NC;
  const int par = (double)M * (double)N * (double)K >= 1048576.0;
  (void)par; /* unused without OpenMP */
#ifdef _OPENMP
  if (par) { /* enough chunks for every thread */
    int64_t per = (N + 2 * omp_get_max_threads() - 1) / (2 * omp_get_max_threads());
    per = (per + 15) / 16 * 16;
    if (per < nc) nc = per < 64 ? 64 : per;
  }
#endif
  const int64_t nchunks = (N + nc - 1) / nc;
  AMD_PRAGMA(omp parallel for schedule(dynamic, 1) if (par))
  for (int64_t q = 0; q < nchunks; q++) {
    const int64_t j0 = q * nc, w = N - j0 < nc ? N - j0 : nc;
    small_m_chunk(trans_a, trans_b, M, j0, w, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

/* C = beta * C (K == 0: no products). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0 ? 0 : beta * C[i * ldc + j];
}

void amd_gemm(const struct amd_mult *mult, int trans_a, int trans_b, int64_t M, int64_t N, int64_t K,
              float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
              int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    scale_c(M, N, beta, C, ldc);
    return;
  }
  const int fast = !mult || mult->mode == AMD_MODE_ACC32;
  if (fast && M <= SMALL_M) {
    small_m(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  const kernel_choice kern = kernel();
  const int MR = kern.mr, NR = kern.nr;
  const int64_t MC = (int64_t)MC_PANELS * MR;
  int64_t nc_t = (int64_t)NC_PANELS * NR;

  /* Threads only when the work pays for waking them (about 1M products for
   * the fast kernel; the per-product path is much slower per product). */
  const double work = (double)M * (double)N * (double)K;
  const int par = work >= (fast ? 1048576.0 : 32768.0);
  (void)par; /* unused without OpenMP */
  int64_t tiles_m = (M + MC - 1) / MC, tiles_n = (N + nc_t - 1) / nc_t;
#ifdef _OPENMP
  if (par) {
    /* Narrower column tiles until every thread has a few (each tile repacks
     * its A rows, so stay at least 4 panels wide). */
    int64_t want = 4 * (int64_t)omp_get_max_threads();
    while (nc_t > 4 * NR && tiles_m * tiles_n < want) {
      nc_t = (nc_t / 2 + NR - 1) / NR * NR;
      tiles_n = (N + nc_t - 1) / nc_t;
    }
  }
#endif
  const int64_t ntiles = tiles_m * tiles_n;
  const int64_t kcmax = K < KC ? K : KC;
  const size_t abytes = (size_t)(MC * kcmax * 4 + 63) / 64 * 64;
  const size_t bbytes = (size_t)(nc_t * kcmax * 4 + 63) / 64 * 64;

  /* Each tile packs its own A rows and B columns per K block: no barrier
   * inside the loop (robust when the machine is oversubscribed), and the
   * result does not depend on the number of threads. */
  AMD_PRAGMA(omp parallel if (par)) {
    float *pa = aligned_alloc(64, abytes), *pb = aligned_alloc(64, bbytes);
    AMD_ASSERT(pa && pb);
    AMD_PRAGMA(omp for schedule(dynamic, 1))
    for (int64_t t = 0; t < ntiles; t++) {
      const int64_t r0 = (t / tiles_n) * MC, c0 = (t % tiles_n) * nc_t;
      const int64_t mc = M - r0 < MC ? M - r0 : MC, nc = N - c0 < nc_t ? N - c0 : nc_t;
      for (int64_t p0 = 0; p0 < K; p0 += KC) {
        const int64_t kc = K - p0 < KC ? K - p0 : KC;
        for (int64_t q = 0; q * MR < mc; q++) {
          int64_t mr = mc - q * MR < MR ? mc - q * MR : MR;
          pack_a_panel(A, lda, trans_a, r0 + q * MR, mr, p0, kc, MR, pa + q * kc * MR);
        }
        for (int64_t q = 0; q * NR < nc; q++) {
          int64_t nr = nc - q * NR < NR ? nc - q * NR : NR;
          pack_b_panel(B, ldb, trans_b, c0 + q * NR, nr, p0, kc, NR, pb + q * kc * NR);
        }
        tile_args ta = {
            .mc = mc,
            .nc = nc,
            .kc = kc,
            .pa = pa,
            .pb = pb,
            .c = C + r0 * ldc + c0,
            .ldc = ldc,
            .alpha = alpha,
            .beta = beta,
            .first = p0 == 0,
            .mult = mult,
        };
        if (fast)
          kern.acc32(&ta);
        else
          tile_generic(&ta, MR, NR);
      }
    }
    free(pa);
    free(pb);
  }
}
