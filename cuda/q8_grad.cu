/* The table-derived backward sums of the q8 modes (q8_grad.h): two lookup
 * GEMM kernels and the slope tables' device copies.
 *
 * k_q8g_data (dA): a block computes tiles of 32 rows i x 64 columns k (about
 * 8 blocks per multiprocessor, each over every gridDim.x-th tile of rows, so
 * that one load of the table serves several tiles), a thread 8 rows of one
 * column k (so its 8 sums share B's code of each step j); j runs
 * in steps of 32 through shared memory: G * cb of the tile's rows (read by
 * every thread of a warp at once) and B's codes, stored [j][k] so that a warp
 * reads 32 consecutive bytes. Each thread keeps its 8 table rows (a * 256).
 * k_q8g_weight (dB): a tile of 32 k x 64 j, a thread 8 k of one j (its 8 table
 * columns b fixed), i in steps of 32 (A's codes and G's rows staged); with
 * chunks of rows (m_chunk), blockIdx.z is the chunk, its sums go to dB_part
 * and k_q8g_weight_add adds them to dB in chunk order.
 * Both are templates on where the table lives: shared memory (int16 of 2 *
 * slope, 128 KiB, one block per SM) or global memory (float, __ldg). */
#include <stdlib.h>
#include <string.h>

#include "cuda_check.h"
#include "q8_grad.h"

enum {
  Q8G_THREADS = 256,
  Q8G_ENTRIES = 65536,
  Q8G_TAB16_BYTES = Q8G_ENTRIES * 2,
  /* k_q8g_data */
  QD_TI = 32,
  QD_TK = 64,
  QD_TJ = 32,
  /* k_q8g_weight */
  QW_TK = 32,
  QW_TJ = 64,
  QW_TI = 32,
  Q8G_PER = 8 /* outputs per thread: 32 x 64 / 256 */
};

/* A slope: from the int16 copy of 2 * slope in shared memory (exact: an integer times 0.5), or the float
 * table */
template <bool SMEM> struct q8g_tab;
template <> struct q8g_tab<true> {
  const int16_t *t;
  __device__ __forceinline__ float operator()(int idx) const { return __fmul_rn((float)t[idx], 0.5f); }
};
template <> struct q8g_tab<false> {
  const float *t;
  __device__ __forceinline__ float operator()(int idx) const { return __ldg(t + idx); }
};

extern __shared__ __align__(16) unsigned char q8g_dyn[];

/* The table into shared memory (SMEM) and its reader. */
template <bool SMEM>
__device__ __forceinline__ q8g_tab<SMEM> q8g_load_table(const float *tabf, const int16_t *tab16);
template <>
__device__ __forceinline__ q8g_tab<true> q8g_load_table<true>(const float *tabf, const int16_t *tab16) {
  (void)tabf;
  uint4 *dst = (uint4 *)q8g_dyn;
  const uint4 *src = (const uint4 *)tab16;
  for (int e = threadIdx.x; e < Q8G_TAB16_BYTES / 16; e += blockDim.x) dst[e] = src[e];
  q8g_tab<true> r;
  r.t = (const int16_t *)q8g_dyn;
  return r; /* the caller's __syncthreads before the first read */
}
template <>
__device__ __forceinline__ q8g_tab<false> q8g_load_table<false>(const float *tabf, const int16_t *tab16) {
  (void)tab16;
  q8g_tab<false> r;
  r.t = tabf;
  return r;
}

/* G's offset of row i */
__device__ __forceinline__ int64_t q8g_grow(const amd_q8g_args &p, int64_t i) {
  return (i / p.g_rows) * p.g_img + (i % p.g_rows) * p.g_rs;
}

/* dA: blockIdx.y tiles k; blockIdx.x the first tile of i, then every gridDim.x-th (so that a block's table
 * load serves several tiles). Thread t: column kl = t % 64, rows il = t / 64 + 4 r. */
template <bool SMEM>
__global__ void __launch_bounds__(Q8G_THREADS)
    k_q8g_data(amd_q8g_args p, const float *tabf, const int16_t *tab16) {
  __shared__ float gs[QD_TI][QD_TJ];   /* G[i][j] * cb[j] */
  __shared__ uint8_t bs[QD_TJ][QD_TK]; /* B's codes (table columns) */
  __shared__ int64_t grow[QD_TI];
  const q8g_tab<SMEM> tab = q8g_load_table<SMEM>(tabf, tab16);
  const int t = threadIdx.x, kl = t % QD_TK, ig = t / QD_TK;
  const int64_t tiles = (p.M + QD_TI - 1) / QD_TI, k0 = (int64_t)blockIdx.y * QD_TK, k = k0 + kl;
  for (int64_t ti = blockIdx.x; ti < tiles; ti += gridDim.x) {
    const int64_t i0 = ti * QD_TI;
    /* grow is read only between a step's two barriers: every thread is past the last tile's */
    if (t < QD_TI) grow[t] = i0 + t < p.M ? q8g_grow(p, i0 + t) : 0;
    int arow[Q8G_PER];
    float s[Q8G_PER];
#pragma unroll
    for (int r = 0; r < Q8G_PER; r++) {
      const int64_t i = i0 + ig + 4 * r;
      arow[r] =
          i < p.M && k < p.K ? (int)(((uint32_t)p.A[i * p.a_rs + k * p.a_cs] ^ p.code_xor) & 0xFFu) * 256 : 0;
      s[r] = 0.0f;
    }
    for (int64_t j0 = 0; j0 < p.N; j0 += QD_TJ) {
      __syncthreads(); /* the previous step's (or tile's) tiles read; grow and the table written */
      for (int e = t; e < QD_TI * QD_TJ; e += Q8G_THREADS) {
        const int il = e / QD_TJ, jl = e % QD_TJ;
        const int64_t i = i0 + il, j = j0 + jl;
        gs[il][jl] =
            i < p.M && j < p.N ? __fmul_rn(p.G[grow[il] + j * p.g_cs], __fmul_rn(p.alpha, p.cs[j])) : 0.0f;
      }
      for (int e = t; e < QD_TK * QD_TJ; e += Q8G_THREADS) {
        const int kk = e % QD_TK, jl = e / QD_TK;
        const int64_t kc = k0 + kk, j = j0 + jl;
        bs[jl][kk] = kc < p.K && j < p.N
                         ? (uint8_t)(((uint32_t)p.B[kc * p.b_rs + j * p.b_cs] ^ p.code_xor) & 0xFFu)
                         : 0;
      }
      __syncthreads();
      const int jn = p.N - j0 < QD_TJ ? (int)(p.N - j0) : QD_TJ;
      for (int jl = 0; jl < jn; jl++) {
        const int b = bs[jl][kl];
#pragma unroll
        for (int r = 0; r < Q8G_PER; r++)
          s[r] = __fadd_rn(s[r], __fmul_rn(gs[ig + 4 * r][jl], tab(arow[r] + b)));
      }
    }
    if (k >= p.K) continue; /* (no barrier follows in this tile) */
#pragma unroll
    for (int r = 0; r < Q8G_PER; r++) {
      const int64_t i = i0 + ig + 4 * r;
      if (i >= p.M) continue;
      float *d = p.dA + i * p.da_rs + k;
      *d = p.da_store ? s[r] : __fadd_rn(*d, s[r]);
    }
  }
}

/* dB: blockIdx.x tiles k, blockIdx.y tiles j, blockIdx.z the chunk of rows i. Thread t: column jl = t % 64,
 * rows kl = t / 64 + 4 r. */
template <bool SMEM>
__global__ void __launch_bounds__(Q8G_THREADS)
    k_q8g_weight(amd_q8g_args p, const float *tabf, const int16_t *tab16) {
  __shared__ float gs[QW_TI][QW_TJ]; /* G's rows */
  __shared__ int as[QW_TI][QW_TK];   /* A's codes * 256 (table rows) */
  __shared__ int64_t grow[QW_TI];
  const q8g_tab<SMEM> tab = q8g_load_table<SMEM>(tabf, tab16);
  const int t = threadIdx.x, jl = t % QW_TJ, kg = t / QW_TJ;
  const int64_t k0 = (int64_t)blockIdx.x * QW_TK, j0 = (int64_t)blockIdx.y * QW_TJ, j = j0 + jl;
  const int64_t chunk = p.m_chunk > 0 ? p.m_chunk : p.M, ib = (int64_t)blockIdx.z * chunk;
  const int64_t ie = p.M - ib < chunk ? p.M : ib + chunk; /* this block's rows [ib, ie) */
  int bcol[Q8G_PER];
  float s[Q8G_PER];
#pragma unroll
  for (int r = 0; r < Q8G_PER; r++) {
    const int64_t k = k0 + kg + 4 * r;
    bcol[r] = k < p.K && j < p.N ? (int)(((uint32_t)p.B[k * p.b_rs + j * p.b_cs] ^ p.code_xor) & 0xFFu) : 0;
    s[r] = 0.0f;
  }
  for (int64_t i0 = ib; i0 < ie; i0 += QW_TI) {
    __syncthreads(); /* the previous step's tiles read (and the table written) */
    if (t < QW_TI) grow[t] = i0 + t < ie ? q8g_grow(p, i0 + t) : 0;
    for (int e = t; e < QW_TI * QW_TK; e += Q8G_THREADS) {
      const int il = e / QW_TK, kk = e % QW_TK;
      const int64_t i = i0 + il, k = k0 + kk;
      as[il][kk] =
          i < ie && k < p.K ? (int)(((uint32_t)p.A[i * p.a_rs + k * p.a_cs] ^ p.code_xor) & 0xFFu) * 256 : 0;
    }
    __syncthreads();
    for (int e = t; e < QW_TI * QW_TJ; e += Q8G_THREADS) {
      const int il = e / QW_TJ, jj = e % QW_TJ;
      const int64_t i = i0 + il, jc = j0 + jj;
      gs[il][jj] = i < ie && jc < p.N ? p.G[grow[il] + jc * p.g_cs] : 0.0f;
    }
    __syncthreads();
    const int in = ie - i0 < QW_TI ? (int)(ie - i0) : QW_TI;
    for (int il = 0; il < in; il++) {
      const float g = gs[il][jl];
#pragma unroll
      for (int r = 0; r < Q8G_PER; r++)
        s[r] = __fadd_rn(s[r], __fmul_rn(g, tab(as[il][kg + 4 * r] + bcol[r])));
    }
  }
  if (j >= p.N) return;
  if (p.dB_part) { /* the chunk's sums, added in order by k_q8g_weight_add */
#pragma unroll
    for (int r = 0; r < Q8G_PER; r++) {
      const int64_t k = k0 + kg + 4 * r;
      if (k < p.K) p.dB_part[((int64_t)blockIdx.z * p.K + k) * p.N + j] = s[r];
    }
    return;
  }
  const float ca = __fmul_rn(p.alpha, p.ca_src[0]);
#pragma unroll
  for (int r = 0; r < Q8G_PER; r++) {
    const int64_t k = k0 + kg + 4 * r;
    if (k >= p.K) continue;
    float v = __fmul_rn(ca, s[r]);
    if (p.db_via_zero) v = __fadd_rn(0.0f, v);
    float *d = p.dB + k * p.db_rs + j * p.db_cs;
    *d = __fadd_rn(*d, v);
  }
}

/* dB[k][j] += ca * part[c][k][j] for the chunks c = 0, 1, ... in order (each scaled and added on its own). */
__global__ void k_q8g_weight_add(amd_q8g_args p, int64_t chunks) {
  const float ca = __fmul_rn(p.alpha, p.ca_src[0]);
  const int64_t n = p.K * p.N;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t k = e / p.N, j = e % p.N;
    float *d = p.dB + k * p.db_rs + j * p.db_cs;
    float v = *d;
    for (int64_t c = 0; c < chunks; c++) {
      float add = __fmul_rn(ca, p.dB_part[c * n + e]);
      if (p.db_via_zero) add = __fadd_rn(0.0f, add);
      v = __fadd_rn(v, add);
    }
    *d = v;
  }
}

/* ================================================================ host side */

/* A slope table on the device: float always, int16 of 2 * slope where every entry is one exactly. */
struct q8g_table {
  const float *key; /* the host table */
  float *host;      /* its copy, to notice a change */
  float *dev;
  int16_t *dev16; /* NULL: some entry does not fit */
};

struct amd_cuda_q8g_ctx {
  cudaStream_t stream;
  int allow_smem;
  int sms; /* the device's multiprocessors */
  q8g_table *tabs;
  int ntabs, captabs;
};

static int capturing(cudaStream_t s) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(s, &c) == cudaSuccess && c != cudaStreamCaptureStatusNone;
}

extern "C" int amd_cuda_q8g_create(amd_cuda_q8g_ctx **out, cudaStream_t stream, amd_status *st) {
  *out = NULL;
  amd_cuda_q8g_ctx *ctx = (amd_cuda_q8g_ctx *)calloc(1, sizeof *ctx);
  if (!ctx) return amd_fail(st, "out of memory creating the CUDA q8 gradient context");
  ctx->stream = stream;
  ctx->allow_smem = 1;
  const int smem = Q8G_TAB16_BYTES;
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&ctx->sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(k_q8g_data<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(k_q8g_weight<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) {
    free(ctx);
    return amd_fail(st, "CUDA q8 gradient kernels: %s", cudaGetErrorString(e));
  }
  *out = ctx;
  return 0;
}

static void q8g_table_free(q8g_table *t) {
  cudaFree(t->dev);
  cudaFree(t->dev16);
  free(t->host);
  memset(t, 0, sizeof *t);
}

extern "C" void amd_cuda_q8g_destroy(amd_cuda_q8g_ctx *ctx) {
  if (!ctx) return;
  cudaStreamSynchronize(ctx->stream);
  for (int i = 0; i < ctx->ntabs; i++) q8g_table_free(&ctx->tabs[i]);
  free(ctx->tabs);
  free(ctx);
}

extern "C" void amd_cuda_q8g_allow_smem(amd_cuda_q8g_ctx *ctx, int allow) { ctx->allow_smem = allow; }

/* Uploads host table h into t (key set by the caller). */
static int q8g_table_make(amd_cuda_q8g_ctx *ctx, const float *h, q8g_table *t, amd_status *st) {
  if (capturing(ctx->stream)) return amd_fail(st, "a q8 slope table would be uploaded in a captured step");
  t->host = (float *)malloc(sizeof(float) * Q8G_ENTRIES);
  int16_t *h16 = (int16_t *)malloc(sizeof(int16_t) * Q8G_ENTRIES);
  if (!t->host || !h16) {
    free(h16);
    q8g_table_free(t);
    return amd_fail(st, "out of memory caching a q8 slope table");
  }
  memcpy(t->host, h, sizeof(float) * Q8G_ENTRIES);
  int fits = 1;
  for (int i = 0; i < Q8G_ENTRIES && fits; i++) {
    const float twice = h[i] * 2.0f;
    fits = twice >= -32768.0f && twice <= 32767.0f && twice == (float)(int)twice;
    if (fits) {
      h16[i] = (int16_t)(int)twice;
      const float back = (float)h16[i] * 0.5f; /* the kernel's value: the same bits (-0 is not) */
      fits = memcmp(&back, &h[i], sizeof back) == 0;
    }
  }
  cudaError_t e = cudaMalloc(&t->dev, sizeof(float) * Q8G_ENTRIES);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(t->dev, h, sizeof(float) * Q8G_ENTRIES, cudaMemcpyHostToDevice, ctx->stream);
  if (e == cudaSuccess && fits) e = cudaMalloc(&t->dev16, Q8G_TAB16_BYTES);
  if (e == cudaSuccess && fits)
    e = cudaMemcpyAsync(t->dev16, h16, Q8G_TAB16_BYTES, cudaMemcpyHostToDevice, ctx->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream); /* h16 is freed next */
  free(h16);
  if (e != cudaSuccess) {
    q8g_table_free(t);
    return amd_fail(st, "uploading a q8 slope table: %s", cudaGetErrorString(e));
  }
  return 0;
}

static int q8g_get_table(amd_cuda_q8g_ctx *ctx, const float *h, const q8g_table **out, amd_status *st) {
  for (int i = 0; i < ctx->ntabs; i++) {
    q8g_table *t = &ctx->tabs[i];
    if (t->key != h) continue;
    if (memcmp(t->host, h, sizeof(float) * Q8G_ENTRIES) == 0) {
      *out = t;
      return 0;
    }
    q8g_table_free(t); /* changed: made again in this slot */
    t->key = h;
    if (q8g_table_make(ctx, h, t, st)) {
      ctx->tabs[i] = ctx->tabs[--ctx->ntabs];
      return -1;
    }
    *out = t;
    return 0;
  }
  if (ctx->ntabs == ctx->captabs) {
    const int cap = ctx->captabs ? 2 * ctx->captabs : 4;
    q8g_table *p = (q8g_table *)realloc(ctx->tabs, (size_t)cap * sizeof *p);
    if (!p) return amd_fail(st, "out of memory caching a q8 slope table");
    ctx->tabs = p;
    ctx->captabs = cap;
  }
  q8g_table *t = &ctx->tabs[ctx->ntabs];
  memset(t, 0, sizeof *t);
  t->key = h;
  if (q8g_table_make(ctx, h, t, st)) return -1;
  ctx->ntabs++;
  *out = t;
  return 0;
}

extern "C" int amd_cuda_q8g_run(amd_cuda_q8g_ctx *ctx, const amd_q8g_args *a, const float *ea,
                                const float *eb, amd_status *st) {
  if (a->M <= 0 || a->N <= 0 || a->K <= 0) return 0;
  if (a->dA) {
    const q8g_table *t;
    if (q8g_get_table(ctx, ea, &t, st)) return -1;
    /* about 8 blocks per multiprocessor in all, each over several tiles of i when there are more */
    const int64_t tiles = (a->M + QD_TI - 1) / QD_TI, gy = (a->K + QD_TK - 1) / QD_TK;
    const int64_t most = (8 * (int64_t)(ctx->sms > 0 ? ctx->sms : 1) + gy - 1) / gy;
    const int64_t gx = tiles < most ? tiles : most;
    if (gy > 65535)
      return amd_fail(st, "the q8 data gradient's %lld x %lld product is too large", (long long)a->M,
                      (long long)a->K);
    const dim3 grid((unsigned)gx, (unsigned)gy);
    if (t->dev16 && ctx->allow_smem)
      k_q8g_data<true><<<grid, Q8G_THREADS, Q8G_TAB16_BYTES, ctx->stream>>>(*a, t->dev, t->dev16);
    else
      k_q8g_data<false><<<grid, Q8G_THREADS, 0, ctx->stream>>>(*a, t->dev, t->dev16);
    AMD_CUDA_CHECK_LAUNCH("k_q8g_data", st);
  }
  if (a->dB) {
    const q8g_table *t;
    if (q8g_get_table(ctx, eb, &t, st)) return -1;
    const int64_t gx = (a->K + QW_TK - 1) / QW_TK, gy = (a->N + QW_TJ - 1) / QW_TJ;
    const int64_t chunks = a->m_chunk > 0 ? (a->M + a->m_chunk - 1) / a->m_chunk : 1;
    if (gx > 0x7FFFFFFF || gy > 65535 || chunks > 65535)
      return amd_fail(st, "the q8 weight gradient's %lld x %lld product (%lld chunks) is too large",
                      (long long)a->K, (long long)a->N, (long long)chunks);
    if (chunks > 1 && !a->dB_part) return amd_fail(st, "the q8 weight gradient's chunks need a buffer");
    amd_q8g_args w = *a;
    if (chunks == 1) w.m_chunk = 0, w.dB_part = NULL; /* one chunk: added directly */
    const dim3 grid((unsigned)gx, (unsigned)gy, (unsigned)chunks);
    if (t->dev16 && ctx->allow_smem)
      k_q8g_weight<true><<<grid, Q8G_THREADS, Q8G_TAB16_BYTES, ctx->stream>>>(w, t->dev, t->dev16);
    else
      k_q8g_weight<false><<<grid, Q8G_THREADS, 0, ctx->stream>>>(w, t->dev, t->dev16);
    AMD_CUDA_CHECK_LAUNCH("k_q8g_weight", st);
    if (chunks > 1) {
      const int64_t n = a->K * a->N, b = (n + 255) / 256;
      k_q8g_weight_add<<<(unsigned)(b < 65536 ? b : 65536), 256, 0, ctx->stream>>>(w, chunks);
      AMD_CUDA_CHECK_LAUNCH("k_q8g_weight_add", st);
    }
  }
  return 0;
}

extern "C" int amd_cuda_q8_grad_gemm(amd_cuda_q8g_ctx *ctx, int64_t M, int64_t N, int64_t K, const uint8_t *A,
                                     const uint8_t *B, const float *G, const float *cb, const float *ca,
                                     const float *ea, const float *eb, float *dA, float *dB, amd_status *st) {
  amd_q8g_args a;
  memset(&a, 0, sizeof a);
  a.M = M, a.N = N, a.K = K;
  a.A = A, a.a_rs = K, a.a_cs = 1;
  a.B = B, a.b_rs = N, a.b_cs = 1;
  a.G = G, a.g_rows = M > 0 ? M : 1, a.g_img = 0, a.g_rs = N, a.g_cs = 1;
  a.cs = cb, a.ca_src = ca, a.alpha = 1.0f;
  a.dA = dA, a.da_rs = K;
  a.dB = dB, a.db_rs = N, a.db_cs = 1;
  return amd_cuda_q8g_run(ctx, &a, ea, eb, st);
}
