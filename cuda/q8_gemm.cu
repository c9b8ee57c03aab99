/* amd_cuda_q8_gemm (q8_gemm.h): the 8-bit table GEMM on the GPU.
 *
 * Table kernel: a persistent grid (one block per SM: the 128 KiB table fills
 * most of its shared memory), each block copying the table into shared memory
 * once and then computing 64 x 128 tiles of C. Per K step of 32 codes the
 * block stages A's tile [32][64] and B's tile [32][128] as bytes (k-major;
 * the next step's codes are loaded into registers meanwhile). Warp w owns rows
 * 8w..8w+7 of the tile, lane l columns 4l..4l+3: in every lookup all lanes of
 * a warp read the same table row (A's code) at their own columns (B's codes),
 * so two lanes only conflict on a bank when their B codes differ in the top
 * two bits and agree in bits 1..5 (a same-row, any-column layout; lanes on one
 * column and different rows would all hit one bank). Accumulators are uint32
 * (wrapping); the zero-point corrections are added when a tile is written.
 *
 * IMMA path: cuBLAS (int8 x int8 -> int32, CUBLAS_COMPUTE_32I) writes
 * P = sum a*b of the int8 values into C, then k_q8_fix adds the zero-point
 * terms (skipped where none is left; left to the caller with defer). Which
 * kernel runs is chosen per GEMM shape by timing the candidates cuBLASLt's
 * heuristic offers and cublasGemmEx, once, at the shape's
 * first call outside stream capture (q8_lt_plan, q8_lt_tune): cublasGemmEx
 * ran ResNet-18's 64 x 131072 x 576 at 94 T MAC/s on an H100 where one of
 * cuBLASLt's candidates ran 109. Integer sums are exact (int32 wrapping,
 * K < 2^17), so every kernel gives the same bits. */
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "cuda_check.h"
#include "q8_gemm.h"

extern "C" {
#include "../src/mult/q8.h"
}

enum { Q8_BM = 64, Q8_BN = 128, Q8_BK = 32, Q8_NT = 256 };
enum { TAB_S16, TAB_U16, TAB_I32 };
static const size_t q8_tile_bytes = (size_t)Q8_BK * (Q8_BM + Q8_BN);
static const size_t q8_tab16_bytes = (size_t)AMD_Q8_ENTRIES * 2;
/* K from which a partial sum of int8 products may leave int32 (128 * 128 * K >= 2^31) */
static const int64_t q8_imma_max_k = (int64_t)1 << 17;

struct Q8Params {
  const uint8_t *A, *B;
  int64_t lda, ldb, ldc;
  int M, N, K;
  int a_vec, b_vec; /* 8-byte (A) and 16-byte (B) loads allowed */
  uint32_t xa, xb;  /* XORed into each code as it is staged (U8X back to the raw code) */
  const void *tab;
  int32_t *C;
  const uint32_t *rs, *cs;
  const int32_t *za, *zb;
  int za_inc, zb_inc;
  int tiles_m, tiles;
};

/* ================================================================ kernels */

/* The codes of A's rows m0.. (8 per thread) and B's columns n0.. (16 per thread) at k0 */
__device__ __forceinline__ void q8_load(const Q8Params &p, int64_t m0, int64_t n0, int k0, uint2 &ra, uint4 &rb) {
  const int t = threadIdx.x;
  {
    const int64_t row = m0 + (t >> 2);
    const int k = k0 + (t & 3) * 8;
    ra = make_uint2(0, 0);
    if (row < p.M) {
      const uint8_t *src = p.A + row * p.lda + k;
      if (p.a_vec && k + 8 <= p.K) {
        ra = *(const uint2 *)src;
      } else {
        uint32_t w[2] = {0, 0};
        for (int i = 0; i < 8 && k + i < p.K; i++) w[i >> 2] |= (uint32_t)src[i] << (8 * (i & 3));
        ra = make_uint2(w[0], w[1]);
      }
    }
  }
  {
    const int64_t col = n0 + (t >> 1);
    const int k = k0 + (t & 1) * 16;
    rb = make_uint4(0, 0, 0, 0);
    if (col < p.N) {
      const uint8_t *src = p.B + col * p.ldb + k;
      if (p.b_vec && k + 16 <= p.K) {
        rb = *(const uint4 *)src;
      } else {
        uint32_t w[4] = {0, 0, 0, 0};
        for (int i = 0; i < 16 && k + i < p.K; i++) w[i >> 2] |= (uint32_t)src[i] << (8 * (i & 3));
        rb = make_uint4(w[0], w[1], w[2], w[3]);
      }
    }
  }
}

/* Stages the loaded codes k-major: As[k][row], Bs[k][col], each XORed back to its raw code. */
__device__ __forceinline__ void q8_stage(const Q8Params &p, uint2 ra, uint4 rb, uint8_t *As, uint8_t *Bs) {
  const int t = threadIdx.x;
  const int ar = t >> 2, ak = (t & 3) * 8, bc = t >> 1, bk = (t & 1) * 16;
  const uint32_t a[2] = {ra.x, ra.y}, b[4] = {rb.x, rb.y, rb.z, rb.w};
#pragma unroll
  for (int i = 0; i < 8; i++) As[(ak + i) * Q8_BM + ar] = (uint8_t)((a[i >> 2] >> (8 * (i & 3))) ^ p.xa);
#pragma unroll
  for (int i = 0; i < 16; i++) Bs[(bk + i) * Q8_BN + bc] = (uint8_t)((b[i >> 2] >> (8 * (i & 3))) ^ p.xb);
}

/* One K step of a thread's 8 x 4 products: acc[i][j] += T[a_i][b_j]. */
template <int TAB>
__device__ __forceinline__ void q8_step(const Q8Params &p, const uint8_t *As, const uint8_t *Bs,
                                        const uint16_t *tab_s, int kk, uint32_t (&acc)[8][4]) {
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  const uint2 a8 = *(const uint2 *)(As + kk * Q8_BM + w * 8);
  const uint32_t b4 = *(const uint32_t *)(Bs + kk * Q8_BN + l * 4);
  uint32_t bo[4];
#pragma unroll
  for (int j = 0; j < 4; j++) bo[j] = (b4 >> (8 * j)) & 0xFFu;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    const uint32_t a = ((i < 4 ? a8.x : a8.y) >> (8 * (i & 3))) & 0xFFu;
    if (TAB == TAB_I32) {
      const int32_t *row = (const int32_t *)p.tab + (a << 8);
#pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] += (uint32_t)__ldg(row + bo[j]);
    } else { /* byte offsets: row a at a * 512, entry b at 2 b */
      const char *row = (const char *)tab_s + (a << 9);
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const char *e = row + 2 * bo[j];
        acc[i][j] += TAB == TAB_S16 ? (uint32_t)(int32_t) * (const int16_t *)e : (uint32_t) * (const uint16_t *)e;
      }
    }
  }
}

template <int TAB> __global__ void __launch_bounds__(Q8_NT, 1) q8_table_kernel(const Q8Params p) {
  extern __shared__ __align__(16) uint8_t q8_smem[];
  uint8_t *As = q8_smem, *Bs = q8_smem + Q8_BK * Q8_BM;
  uint16_t *tab_s = (uint16_t *)(q8_smem + q8_tile_bytes);
  const int t = threadIdx.x, w = t >> 5, l = t & 31;
  if (TAB != TAB_I32)
    for (int i = t; i < (int)(q8_tab16_bytes / 16); i += Q8_NT) ((uint4 *)tab_s)[i] = ((const uint4 *)p.tab)[i];
  for (int tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
    const int64_t m0 = (int64_t)(tile % p.tiles_m) * Q8_BM, n0 = (int64_t)(tile / p.tiles_m) * Q8_BN;
    uint32_t acc[8][4];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
      for (int j = 0; j < 4; j++) acc[i][j] = 0;
    uint2 ra;
    uint4 rb;
    q8_load(p, m0, n0, 0, ra, rb);
    for (int k0 = 0; k0 < p.K; k0 += Q8_BK) {
      __syncthreads(); /* the last step's tiles are read (and, first, the table is in) */
      q8_stage(p, ra, rb, As, Bs);
      __syncthreads();
      if (k0 + Q8_BK < p.K) q8_load(p, m0, n0, k0 + Q8_BK, ra, rb);
      const int kn = p.K - k0 < Q8_BK ? p.K - k0 : Q8_BK;
      if (kn == Q8_BK) {
#pragma unroll(TAB == TAB_I32 ? 2 : 8)
        for (int kk = 0; kk < Q8_BK; kk++) q8_step<TAB>(p, As, Bs, tab_s, kk, acc);
      } else {
        for (int kk = 0; kk < kn; kk++) q8_step<TAB>(p, As, Bs, tab_s, kk, acc);
      }
    }
    /* the zero-point corrections of qgemm.h, in uint32 */
    const uint32_t k32 = (uint32_t)p.K;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const int64_t row = m0 + w * 8 + i;
      if (row >= p.M) continue;
      const uint32_t rsi = p.rs ? p.rs[row] : 0u, zai = p.za ? (uint32_t)p.za[row * p.za_inc] : 0u;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int64_t col = n0 + l * 4 + j;
        if (col >= p.N) continue;
        const uint32_t zbj = p.zb ? (uint32_t)p.zb[col * p.zb_inc] : 0u, csj = p.cs ? p.cs[col] : 0u;
        const uint32_t v = acc[i][j] - zbj * rsi - zai * csj + k32 * zai * zbj;
        p.C[row * p.ldc + col] = (int32_t)v;
      }
    }
  }
}

/* out[r] = the sum of row r's K code values (stored byte ^ x, read as int8 when sgn), one warp a row */
__global__ void k_q8_rowsum(int64_t R, int64_t K, const uint8_t *X, int64_t ld, uint32_t x, int sgn,
                            uint32_t *out) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = (int64_t)gridDim.x * (blockDim.x >> 5);
  for (int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < R; r += warps) {
    uint32_t s = 0;
    const uint8_t *row = X + r * ld;
    for (int64_t k = lane; k < K; k += 32) {
      const uint32_t c = (row[k] ^ x) & 0xFFu;
      s += sgn ? (uint32_t)(int32_t)(int8_t)c : c;
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xFFFFFFFFu, s, o);
    if (lane == 0) out[r] = s;
  }
}

/* dst[r][k] = src's code (row r of R rows of K codes; trans: src is K rows of R) ^ x */
/* dst rows of Kp >= K codes: src's K codes XORed with x, then int8 zeros (nothing added to P) */
__global__ void k_q8_copy(int64_t R, int64_t K, int64_t Kp, const uint8_t *src, int64_t ld, int trans, uint32_t x,
                          uint8_t *dst, int64_t ldd) {
  const int64_t total = R * Kp;
  for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = e / Kp, k = e % Kp;
    const uint8_t c = k >= K ? 0u : (uint8_t)((trans ? src[k * ld + r] : src[r * ld + k]) ^ x);
    dst[r * ldd + k] = c;
  }
}

/* C (ld ldc) = the M x N block of W (ld ldw) */
__global__ void k_q8_copy_out(int64_t M, int64_t N, const int32_t *W, int64_t ldw, int32_t *C, int64_t ldc) {
  for (int64_t i = blockIdx.y; i < M; i += gridDim.y)
    for (int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; j < N; j += (int64_t)gridDim.x * blockDim.x)
      C[i * ldc + j] = W[i * ldw + j];
}

/* C[i][j] = amd_q8_fixed(P[i][j]) after the tensor cores: rows along y,
 * columns along x (no division per element), four at a time where C's rows
 * allow 16-byte accesses */
template <int V> __global__ void k_q8_fix(int64_t M, int64_t N, int32_t *C, int64_t ldc, const amd_q8_fix f) {
  for (int64_t i = blockIdx.y; i < M; i += gridDim.y) {
    int32_t *c = C + i * ldc;
    for (int64_t j = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) * V; j < N;
         j += (int64_t)gridDim.x * blockDim.x * V) {
      if (V == 4) {
        int4 v = *(int4 *)(c + j);
        v.x = amd_q8_fixed(f, i, j, v.x), v.y = amd_q8_fixed(f, i, j + 1, v.y);
        v.z = amd_q8_fixed(f, i, j + 2, v.z), v.w = amd_q8_fixed(f, i, j + 3, v.w);
        *(int4 *)(c + j) = v;
      } else {
        c[j] = amd_q8_fixed(f, i, j, c[j]);
      }
    }
  }
}

/* ================================================================ host side */

/* A table on the device: 16-bit where every entry fits, else int32. */
struct q8_table {
  const int32_t *key; /* the host table (NULL: a built-in exact table) */
  int32_t *host;      /* its copy, to notice a change */
  void *dev;
  int kind;  /* TAB_S16, TAB_U16, TAB_I32 */
  int exact; /* 'u' or 's': equal to that signedness's exact table; 0 */
};

/* One int8 GEMM shape on the tensor cores: C (m x n, ld ldc, int32) = B^T (B: k x m, ld ldb) A (k x n, ld
 * lda), column major; align: the smallest alignment of the three pointers (bytes, at most 256), which bounds
 * the kernels cuBLASLt may pick. tuned: the kernel was chosen (q8_lt_tune) outside stream capture: algo, or
 * cublasGemmEx where use_ex. */
struct q8_lt_plan {
  int64_t m, n, k, lda, ldb, ldc;
  int align;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  bool tuned, use_ex;
};

struct amd_cuda_q8_ctx {
  cudaStream_t stream;
  cublasHandle_t cublas;
  cublasLtHandle_t lt;
  void *cublas_ws;
  q8_lt_plan *plans;
  int nplans, capplans;
  cudaEvent_t ev[2]; /* timing cuBLASLt's candidates */
  int sms, per_sm[3];
  amd_q8_path path, last;
  q8_table *tabs;
  int ntabs, captabs;
  q8_table exact_tab[2][2]; /* built-in exact tables by (A signed, B signed) */
  void *ws[5];              /* the sums, A's int8 copy, B in the TN layout, B's int8 copy, C with ld % 4 == 0 */
  size_t ws_bytes[5];
};

static const size_t q8_cublas_ws_bytes = (size_t)32 << 20;

static size_t smem_of(int kind) { return q8_tile_bytes + (kind == TAB_I32 ? 0 : q8_tab16_bytes); }

template <int TAB> static int q8_setup_kernel(amd_cuda_q8_ctx *ctx, amd_status *st) {
  const int smem = (int)smem_of(TAB);
  AMD_CUDA_CHECK(cudaFuncSetAttribute(q8_table_kernel<TAB>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), st);
  AMD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctx->per_sm[TAB], q8_table_kernel<TAB>, Q8_NT, smem),
                 st);
  if (ctx->per_sm[TAB] < 1) ctx->per_sm[TAB] = 1;
  return 0;
}

extern "C" int amd_cuda_q8_create(amd_cuda_q8_ctx **out, cudaStream_t stream, amd_status *st) {
  *out = NULL;
  amd_cuda_q8_ctx *ctx = (amd_cuda_q8_ctx *)calloc(1, sizeof *ctx);
  if (!ctx) return amd_fail(st, "out of memory creating the CUDA q8 GEMM context");
  ctx->stream = stream;
  int dev = 0, rc = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&ctx->sms, cudaDevAttrMultiProcessorCount, dev);
  if (e == cudaSuccess) e = cudaMalloc(&ctx->cublas_ws, q8_cublas_ws_bytes);
  if (e != cudaSuccess) rc = amd_fail(st, "CUDA q8 GEMM context: %s", cudaGetErrorString(e));
  if (rc == 0) {
    cublasStatus_t cs = cublasCreate(&ctx->cublas);
    if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasSetStream(ctx->cublas, stream);
    if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasSetWorkspace(ctx->cublas, ctx->cublas_ws, q8_cublas_ws_bytes);
    if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasLtCreate(&ctx->lt);
    if (cs != CUBLAS_STATUS_SUCCESS) rc = amd_fail(st, "CUDA q8 GEMM context: cuBLAS: %s", cublasGetStatusName(cs));
  }
  if (rc == 0) {
    e = cudaEventCreate(&ctx->ev[0]);
    if (e == cudaSuccess) e = cudaEventCreate(&ctx->ev[1]);
    if (e != cudaSuccess) rc = amd_fail(st, "CUDA q8 GEMM context: %s", cudaGetErrorString(e));
  }
  if (rc == 0) rc = q8_setup_kernel<TAB_S16>(ctx, st);
  if (rc == 0) rc = q8_setup_kernel<TAB_U16>(ctx, st);
  if (rc == 0) rc = q8_setup_kernel<TAB_I32>(ctx, st);
  if (rc) {
    amd_cuda_q8_destroy(ctx);
    return -1;
  }
  *out = ctx;
  return 0;
}

static void q8_table_free(q8_table *t) {
  cudaFree(t->dev);
  free(t->host);
  memset(t, 0, sizeof *t);
}

extern "C" void amd_cuda_q8_destroy(amd_cuda_q8_ctx *ctx) {
  if (!ctx) return;
  cudaStreamSynchronize(ctx->stream);
  for (int i = 0; i < ctx->ntabs; i++) q8_table_free(&ctx->tabs[i]);
  free(ctx->tabs);
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++) q8_table_free(&ctx->exact_tab[a][b]);
  for (int i = 0; i < 5; i++) cudaFree(ctx->ws[i]);
  if (ctx->cublas) cublasDestroy(ctx->cublas);
  for (int i = 0; i < ctx->nplans; i++) {
    q8_lt_plan *p = &ctx->plans[i];
    cublasLtMatmulDescDestroy(p->op);
    cublasLtMatrixLayoutDestroy(p->la), cublasLtMatrixLayoutDestroy(p->lb),
        cublasLtMatrixLayoutDestroy(p->lc);
  }
  free(ctx->plans);
  if (ctx->lt) cublasLtDestroy(ctx->lt);
  for (int i = 0; i < 2; i++)
    if (ctx->ev[i]) cudaEventDestroy(ctx->ev[i]);
  cudaFree(ctx->cublas_ws);
  free(ctx);
}

extern "C" void amd_cuda_q8_set_path(amd_cuda_q8_ctx *ctx, amd_q8_path path) { ctx->path = path; }
extern "C" amd_q8_path amd_cuda_q8_last_path(const amd_cuda_q8_ctx *ctx) { return ctx->last; }

static int capturing(cudaStream_t s) {
  cudaStreamCaptureStatus c = cudaStreamCaptureStatusNone;
  return cudaStreamIsCapturing(s, &c) == cudaSuccess && c != cudaStreamCaptureStatusNone;
}

/* Uploads host table h (65536 entries) into t: 16-bit where it fits; notes whether it is exact. */
static int q8_table_make(amd_cuda_q8_ctx *ctx, const int32_t *h, q8_table *t, amd_status *st) {
  if (capturing(ctx->stream)) return amd_fail(st, "an 8-bit table would be uploaded in a captured step");
  int32_t lo = h[0], hi = h[0];
  for (int i = 1; i < AMD_Q8_ENTRIES; i++) {
    lo = h[i] < lo ? h[i] : lo;
    hi = h[i] > hi ? h[i] : hi;
  }
  t->kind = lo >= -32768 && hi <= 32767 ? TAB_S16 : lo >= 0 && hi <= 65535 ? TAB_U16 : TAB_I32;
  int32_t *ex = (int32_t *)malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
  t->host = (int32_t *)malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
  uint16_t *h16 = (uint16_t *)malloc(sizeof(uint16_t) * AMD_Q8_ENTRIES);
  if (!ex || !t->host || !h16) {
    free(ex);
    free(h16);
    q8_table_free(t);
    return amd_fail(st, "out of memory caching an 8-bit table");
  }
  memcpy(t->host, h, sizeof(int32_t) * AMD_Q8_ENTRIES);
  t->exact = 0;
  for (int s = 0; s < 2 && !t->exact; s++) {
    amd_q8_exact(s, ex);
    if (memcmp(ex, h, sizeof(int32_t) * AMD_Q8_ENTRIES) == 0) t->exact = s ? 's' : 'u';
  }
  free(ex);
  for (int i = 0; i < AMD_Q8_ENTRIES; i++) h16[i] = (uint16_t)h[i];
  const size_t bytes = t->kind == TAB_I32 ? sizeof(int32_t) * AMD_Q8_ENTRIES : q8_tab16_bytes;
  cudaError_t e = cudaMalloc(&t->dev, bytes);
  if (e == cudaSuccess)
    e = cudaMemcpyAsync(t->dev, t->kind == TAB_I32 ? (const void *)h : (const void *)h16, bytes,
                        cudaMemcpyHostToDevice, ctx->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(ctx->stream); /* h16 is freed next */
  free(h16);
  if (e != cudaSuccess) {
    q8_table_free(t);
    return amd_fail(st, "uploading an 8-bit table: %s", cudaGetErrorString(e));
  }
  return 0;
}

/* The device table of host table h (NULL: the exact products of codes read with these signednesses). */
static int q8_get_table(amd_cuda_q8_ctx *ctx, const int32_t *h, int a_signed, int b_signed, const q8_table **out,
                        amd_status *st) {
  if (!h) {
    q8_table *t = &ctx->exact_tab[a_signed][b_signed];
    if (!t->dev) {
      int32_t *tab = (int32_t *)malloc(sizeof(int32_t) * AMD_Q8_ENTRIES);
      if (!tab) return amd_fail(st, "out of memory");
      for (int a = 0; a < 256; a++)
        for (int b = 0; b < 256; b++) tab[a * 256 + b] = amd_q8_value(a, a_signed) * amd_q8_value(b, b_signed);
      int rc = q8_table_make(ctx, tab, t, st);
      free(tab);
      if (rc) return -1;
      t->exact = a_signed == b_signed ? (a_signed ? 's' : 'u') : 'x';
    }
    *out = t;
    return 0;
  }
  for (int i = 0; i < ctx->ntabs; i++) {
    q8_table *t = &ctx->tabs[i];
    if (t->key != h) continue;
    if (memcmp(t->host, h, sizeof(int32_t) * AMD_Q8_ENTRIES) == 0) {
      *out = t;
      return 0;
    }
    q8_table_free(t); /* changed: made again below, in this slot */
    t->key = h;
    if (q8_table_make(ctx, h, t, st)) {
      ctx->tabs[i] = ctx->tabs[--ctx->ntabs];
      return -1;
    }
    *out = t;
    return 0;
  }
  if (ctx->ntabs == ctx->captabs) {
    const int cap = ctx->captabs ? 2 * ctx->captabs : 4;
    q8_table *p = (q8_table *)realloc(ctx->tabs, (size_t)cap * sizeof *p);
    if (!p) return amd_fail(st, "out of memory caching an 8-bit table");
    ctx->tabs = p;
    ctx->captabs = cap;
  }
  q8_table *t = &ctx->tabs[ctx->ntabs];
  memset(t, 0, sizeof *t);
  t->key = h;
  if (q8_table_make(ctx, h, t, st)) return -1;
  ctx->ntabs++;
  *out = t;
  return 0;
}

extern "C" int amd_cuda_q8_table_exact(amd_cuda_q8_ctx *ctx, const int32_t *table, int is_signed, int *exact,
                                       amd_status *st) {
  *exact = 1;
  if (!table) return 0;
  const q8_table *t;
  if (q8_get_table(ctx, table, is_signed, is_signed, &t, st)) return -1;
  *exact = t->exact == (is_signed ? 's' : 'u');
  return 0;
}

/* Workspace slot i of at least bytes (grown outside captures only). */
static int q8_ws(amd_cuda_q8_ctx *ctx, int i, size_t bytes, void **p, amd_status *st) {
  if (bytes > ctx->ws_bytes[i]) {
    if (capturing(ctx->stream)) return amd_fail(st, "the q8 GEMM workspace would grow in a captured step");
    AMD_CUDA_CHECK(cudaStreamSynchronize(ctx->stream), st); /* the old one may be in use */
    cudaFree(ctx->ws[i]);
    ctx->ws[i] = NULL;
    ctx->ws_bytes[i] = 0;
    const size_t sz = bytes + bytes / 4 + 256;
    AMD_CUDA_CHECK(cudaMalloc(&ctx->ws[i], sz), st);
    ctx->ws_bytes[i] = sz;
  }
  *p = ctx->ws[i];
  return 0;
}

static unsigned q8_blocks(int64_t n) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < 1 ? 1 : b > 65536 ? 65536 : b);
}

static int64_t round16(int64_t k) { return (k + 15) / 16 * 16; }
static bool q8_signed(amd_q8_fmt f) { return f == AMD_Q8_S8; }

/* Rows (R x K, K-contiguous) of an operand into workspace slot ws as stored codes ^ x, ld a multiple of 16. */
static int q8_copy(amd_cuda_q8_ctx *ctx, int ws, int64_t R, int64_t K, const uint8_t *src, int64_t ld, int trans,
                   uint32_t x, const uint8_t **dst, int64_t *ldd, amd_status *st) {
  const int64_t Kp = (K + 3) / 4 * 4; /* cuBLAS's int8 GEMM wants K a multiple of 4 */
  *ldd = round16(Kp > 0 ? Kp : 1);
  void *p = NULL;
  if (q8_ws(ctx, ws, (size_t)(R * *ldd), &p, st)) return -1;
  k_q8_copy<<<q8_blocks(R * Kp), 256, 0, ctx->stream>>>(R, K, Kp, src, ld, trans, x, (uint8_t *)p, *ldd);
  AMD_CUDA_CHECK_LAUNCH("k_q8_copy", st);
  *dst = (const uint8_t *)p;
  return 0;
}

static int q8_sums(amd_cuda_q8_ctx *ctx, int64_t R, int64_t K, const uint8_t *X, int64_t ld, uint32_t x, int sgn,
                   uint32_t *out, amd_status *st) {
  int64_t blocks = (R + 7) / 8; /* 8 warps a block */
  k_q8_rowsum<<<(unsigned)(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks), 256, 0, ctx->stream>>>(R, K, X, ld, x,
                                                                                                       sgn, out);
  AMD_CUDA_CHECK_LAUNCH("k_q8_rowsum", st);
  return 0;
}

template <int TAB> static int q8_launch(amd_cuda_q8_ctx *ctx, const Q8Params &p, amd_status *st) {
  const int64_t want = (int64_t)ctx->sms * ctx->per_sm[TAB];
  const int grid = (int)(p.tiles < want ? p.tiles : want);
  q8_table_kernel<TAB><<<grid, Q8_NT, smem_of(TAB), ctx->stream>>>(p);
  AMD_CUDA_CHECK_LAUNCH("q8_table_kernel", st);
  return 0;
}

static bool aligned(const void *p, int n) { return ((uintptr_t)p % (uintptr_t)n) == 0; }

/* The largest power of two up to 256 that divides every address. */
static int alignment_of(const void *a, const void *b, const void *c) {
  const uintptr_t x = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | 256u;
  return (int)(x & (~x + 1));
}

/* The plan of this shape (descriptors made, not tuned) or NULL (st set). */
static q8_lt_plan *q8_lt_find(amd_cuda_q8_ctx *ctx, int64_t m, int64_t n, int64_t k, int64_t ldb, int64_t lda,
                              int64_t ldc, int align, amd_status *st) {
  for (int i = 0; i < ctx->nplans; i++) {
    q8_lt_plan *p = &ctx->plans[i];
    if (p->m == m && p->n == n && p->k == k && p->lda == lda && p->ldb == ldb && p->ldc == ldc &&
        p->align == align)
      return p;
  }
  if (ctx->nplans == ctx->capplans) {
    const int cap = ctx->capplans ? 2 * ctx->capplans : 16;
    q8_lt_plan *grown = (q8_lt_plan *)realloc(ctx->plans, sizeof *grown * (size_t)cap);
    if (!grown) {
      amd_fail(st, "out of memory");
      return NULL;
    }
    ctx->plans = grown, ctx->capplans = cap;
  }
  q8_lt_plan *p = &ctx->plans[ctx->nplans];
  memset(p, 0, sizeof *p);
  p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc, p->align = align;
  const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
  cublasStatus_t cs = cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32I, CUDA_R_32I);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasLtMatrixLayoutCreate(&p->la, CUDA_R_8I, k, m, ldb);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasLtMatrixLayoutCreate(&p->lb, CUDA_R_8I, k, n, lda);
  if (cs == CUBLAS_STATUS_SUCCESS) cs = cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_32I, m, n, ldc);
  if (cs != CUBLAS_STATUS_SUCCESS) {
    cublasLtMatmulDescDestroy(p->op);
    cublasLtMatrixLayoutDestroy(p->la), cublasLtMatrixLayoutDestroy(p->lb),
        cublasLtMatrixLayoutDestroy(p->lc);
    amd_fail(st, "cuBLASLt: %s describing the int8 GEMM", cublasGetStatusName(cs));
    return NULL;
  }
  ctx->nplans++;
  return p;
}

static cublasStatus_t q8_lt_run(amd_cuda_q8_ctx *ctx, const q8_lt_plan *p, const cublasLtMatmulAlgo_t *algo,
                                const int8_t *B8, const int8_t *A8, int32_t *C) {
  const int32_t one = 1, zero = 0;
  return cublasLtMatmul(ctx->lt, p->op, &one, B8, p->la, A8, p->lb, &zero, C, p->lc, C, p->lc, algo,
                        ctx->cublas_ws, q8_cublas_ws_bytes, ctx->stream);
}

/* The same product through cublasGemmEx (cuBLAS's own choice of kernel). */
static cublasStatus_t q8_ex_run(amd_cuda_q8_ctx *ctx, const q8_lt_plan *p, const int8_t *B8, const int8_t *A8,
                                int32_t *C) {
  const int32_t one = 1, zero = 0;
  return cublasGemmEx_64(ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, p->m, p->n, p->k, &one, B8, CUDA_R_8I, p->ldb,
                         A8, CUDA_R_8I, p->lda, &zero, C, CUDA_R_32I, p->ldc, CUBLAS_COMPUTE_32I,
                         CUBLAS_GEMM_DEFAULT);
}

/* Candidate i of a tuning (i == n: cublasGemmEx). */
static cublasStatus_t q8_candidate_run(amd_cuda_q8_ctx *ctx, const q8_lt_plan *p,
                                       const cublasLtMatmulHeuristicResult_t *cand, int n, int i,
                                       const int8_t *B8, const int8_t *A8, int32_t *C) {
  return i < n ? q8_lt_run(ctx, p, &cand[i].algo, B8, A8, C) : q8_ex_run(ctx, p, B8, A8, C);
}

/* Picks the plan's kernel: each candidate of cuBLASLt's heuristic and cublasGemmEx run once (those that fail
 * are dropped), then three rounds, each timing every candidate over five runs; a candidate's time is its best
 * round's. p->use_ex when cublasGemmEx is kept. */
static int q8_lt_tune(amd_cuda_q8_ctx *ctx, q8_lt_plan *p, const int8_t *B8, const int8_t *A8, int32_t *C,
                      amd_status *st) {
  enum { MAX_CAND = 8 };
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulHeuristicResult_t cand[MAX_CAND];
  int n = 0;
  const uint32_t al = (uint32_t)p->align;
  const size_t wsb = q8_cublas_ws_bytes;
  if (cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS) {
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof al);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al);
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof al);
    if (cublasLtMatmulAlgoGetHeuristic(ctx->lt, p->op, p->la, p->lb, p->lc, p->lc, pref, MAX_CAND, cand,
                                       &n) != CUBLAS_STATUS_SUCCESS)
      n = 0;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  bool ok[MAX_CAND + 1];
  float best[MAX_CAND + 1];
  for (int i = 0; i <= n; i++)
    ok[i] = q8_candidate_run(ctx, p, cand, n, i, B8, A8, C) == CUBLAS_STATUS_SUCCESS;
  for (int round = 0; round < 3; round++)
    for (int i = 0; i <= n; i++) {
      if (!ok[i]) continue;
      AMD_CUDA_CHECK(cudaEventRecord(ctx->ev[0], ctx->stream), st);
      for (int r = 0; r < 5; r++) q8_candidate_run(ctx, p, cand, n, i, B8, A8, C);
      AMD_CUDA_CHECK(cudaEventRecord(ctx->ev[1], ctx->stream), st);
      AMD_CUDA_CHECK(cudaEventSynchronize(ctx->ev[1]), st);
      float ms = 0;
      AMD_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx->ev[0], ctx->ev[1]), st);
      if (round == 0 || ms < best[i]) best[i] = ms;
    }
  /* cublasGemmEx unless a candidate beats it by 3% (timings of 25 us GEMMs are noisy; a wrong pick costs more
   * than a missed 3%) */
  int pick = ok[n] ? n : -1;
  for (int i = 0; i < n; i++)
    if (ok[i] && (pick < 0 || best[i] < (pick == n ? 0.97f : 1.0f) * best[pick])) pick = i;
  p->use_ex = pick < 0 || pick == n; /* none ran: cublasGemmEx's status tells the caller why */
  if (!p->use_ex) p->algo = cand[pick].algo;
  p->tuned = true;
  return 0;
}

/* C (m x n, ld ldc) = B8^T A8 (column major, B8 k x m, A8 k x n) on the tensor cores, with this shape's plan,
 * tuned at its first call outside stream capture; in a capture before that, through cublasGemmEx. The
 * statuses of cuBLAS that mean "no int8 kernel for this call" are returned as they are (the caller falls
 * back), other failures as -1 with st set. */
static int q8_tc_gemm(amd_cuda_q8_ctx *ctx, int64_t m, int64_t n, int64_t k, const int8_t *B8, int64_t ldb,
                      const int8_t *A8, int64_t lda, int32_t *C, int64_t ldc, cublasStatus_t *cs,
                      amd_status *st) {
  q8_lt_plan *p = q8_lt_find(ctx, m, n, k, ldb, lda, ldc, alignment_of(B8, A8, C), st);
  if (!p) return -1;
  if (!p->tuned && !capturing(ctx->stream) && q8_lt_tune(ctx, p, B8, A8, C, st)) return -1;
  *cs = p->tuned && !p->use_ex ? q8_lt_run(ctx, p, &p->algo, B8, A8, C) : q8_ex_run(ctx, p, B8, A8, C);
  return 0;
}

/* The tensor cores: P = A8 B8^T into C, then the zero-point terms (none for int8 codes without zero points;
 * left to the caller where defer is given); B is in the TN layout, rs and cs the raw codes' sums (NULL where
 * no term reads them). Returns 1 (nothing written) where cuBLAS has no int8 kernel for the call and the path is AUTO. */
static int q8_imma(amd_cuda_q8_ctx *ctx, int64_t M, int64_t N, int64_t K, const amd_q8_operand *a,
                   const amd_q8_operand *b, int32_t *C, int64_t ldc, const uint32_t *rs, const uint32_t *cs,
                   amd_q8_fix *defer, amd_status *st) {
  const uint8_t *A8 = a->p, *B8 = b->p;
  int64_t lda = a->ld, ldb = b->ld;
  /* int8 storage: U8 codes are XORed into U8X; cuBLAS wants 4-byte aligned rows, K and the output's
   * leading dimension multiples of 4: K is padded with int8 zeros, C goes through a padded copy */
  const bool kpad = K % 4 != 0;
  if (a->fmt == AMD_Q8_U8 || lda % 4 || !aligned(A8, 16) || kpad)
    if (q8_copy(ctx, 1, M, K, a->p, a->ld, 0, a->fmt == AMD_Q8_U8 ? 0x80u : 0u, &A8, &lda, st)) return -1;
  if (b->fmt == AMD_Q8_U8 || ldb % 4 || !aligned(B8, 16) || kpad)
    if (q8_copy(ctx, 3, N, K, b->p, b->ld, 0, b->fmt == AMD_Q8_U8 ? 0x80u : 0u, &B8, &ldb, st)) return -1;
  int32_t *Cg = C;
  int64_t ldg = ldc;
  if (ldc % 4 || !aligned(C, 16)) {
    void *w = NULL;
    ldg = (N + 3) / 4 * 4;
    if (q8_ws(ctx, 4, sizeof(int32_t) * (size_t)(M * ldg), &w, st)) return -1;
    Cg = (int32_t *)w;
  }
  if (K > 0) {
    const int64_t Kp = (K + 3) / 4 * 4;
    /* column-major: C^T (N x M, ld ldc) = B8 (K x N, ld ldb)^T * A8 (K x M, ld lda) */
    cublasStatus_t cs;
    if (q8_tc_gemm(ctx, N, M, Kp, (const int8_t *)B8, ldb, (const int8_t *)A8, lda, Cg, ldg, &cs, st))
      return -1;
    if ((cs == CUBLAS_STATUS_NOT_SUPPORTED || cs == CUBLAS_STATUS_INVALID_VALUE || cs == CUBLAS_STATUS_ARCH_MISMATCH) &&
        ctx->path == AMD_Q8_PATH_AUTO)
      return 1; /* the table kernel then */
    if (cs != CUBLAS_STATUS_SUCCESS)
      return amd_fail(st, "cuBLAS error %s in the int8 GEMM (%lld x %lld x %lld)", cublasGetStatusName(cs),
                      (long long)M, (long long)N, (long long)K);
  }
  if (K == 0) AMD_CUDA_CHECK(cudaMemset2DAsync(Cg, (size_t)ldg * 4, 0, (size_t)N * 4, (size_t)M, ctx->stream), st);
  /* the zero-point terms: uint8 codes entered the tensor cores as u - 128 */
  amd_q8_fix f;
  memset(&f, 0, sizeof f);
  f.a_shift = a->fmt == AMD_Q8_S8 ? 0u : 128u, f.b_shift = b->fmt == AMD_Q8_S8 ? 0u : 128u;
  f.active = a->zp || b->zp || f.a_shift || f.b_shift;
  f.k = (uint32_t)K, f.rs = rs, f.cs = cs, f.za = a->zp, f.zb = b->zp, f.za_inc = a->zp_inc, f.zb_inc = b->zp_inc;
  f.rs_adj = f.a_shift * (uint32_t)K, f.cs_adj = f.b_shift * (uint32_t)K;
  if (defer && Cg == C) {
    *defer = f;
    return 0;
  }
  const int64_t by = M < 65535 ? M : 65535;
  if (f.active) {
    const bool v4 = N % 4 == 0 && ldg % 4 == 0 && aligned(Cg, 16);
    const int64_t bx = (v4 ? N / 4 + 255 : N + 255) / 256;
    const dim3 grid((unsigned)(bx < 1024 ? bx : 1024), (unsigned)by);
    if (v4)
      k_q8_fix<4><<<grid, 256, 0, ctx->stream>>>(M, N, Cg, ldg, f);
    else
      k_q8_fix<1><<<grid, 256, 0, ctx->stream>>>(M, N, Cg, ldg, f);
    AMD_CUDA_CHECK_LAUNCH("k_q8_fix", st);
  }
  if (Cg != C) {
    const int64_t bx = (N + 255) / 256;
    k_q8_copy_out<<<dim3((unsigned)(bx < 1024 ? bx : 1024), (unsigned)by), 256, 0, ctx->stream>>>(M, N, Cg, ldg, C,
                                                                                                  ldc);
    AMD_CUDA_CHECK_LAUNCH("k_q8_copy_out", st);
  }
  return 0;
}

extern "C" int amd_cuda_q8_gemm(amd_cuda_q8_ctx *ctx, const int32_t *table, int64_t M, int64_t N, int64_t K,
                                const amd_q8_operand *a, const amd_q8_operand *b, int b_trans, int32_t *C,
                                int64_t ldc, amd_q8_fix *defer, amd_status *st) {
  if (defer) defer->active = 0;
  if (M < 0 || N < 0 || K < 0) return amd_fail(st, "q8 GEMM: negative size");
  if (M == 0 || N == 0) return 0;
  if (M >= INT32_MAX || N >= INT32_MAX || K >= INT32_MAX)
    return amd_fail(st, "q8 GEMM: %lld x %lld x %lld is too large", (long long)M, (long long)N, (long long)K);
  const int as = q8_signed(a->fmt), bs = q8_signed(b->fmt);
  const q8_table *tab;
  if (q8_get_table(ctx, table, as, bs, &tab, st)) return -1;
  /* the exact products, with codes of the table's signedness ('x': built-in, mixed) */
  const bool exact = !table || (tab->exact == 'u' && !as && !bs) || (tab->exact == 's' && as && bs);
  if (ctx->path == AMD_Q8_PATH_IMMA && !exact)
    return amd_fail(st, "q8 GEMM: the tensor-core path needs the exact table");
  const bool imma = exact && ctx->path != AMD_Q8_PATH_TABLE && K < q8_imma_max_k;
  /* the raw codes' sums (given, or one pass over the operand) where a term reads them: A's row sums multiply
   * B's zero points, B's column sums A's (on the tensor cores: shifted by 128 for uint8 codes), B in the TN
   * layout */
  const bool need_rs = b->zp || (imma && !bs), need_cs = a->zp || (imma && !as);
  void *sums = NULL;
  if (q8_ws(ctx, 0, sizeof(uint32_t) * (size_t)(M + N), &sums, st)) return -1;
  const uint32_t xa = a->fmt == AMD_Q8_U8X ? 0x80u : 0u, xb = b->fmt == AMD_Q8_U8X ? 0x80u : 0u;
  const uint32_t *rs = need_rs ? a->sums : NULL, *cs = need_cs ? b->sums : NULL;
  if (need_rs && !rs) {
    if (q8_sums(ctx, M, K, a->p, a->ld, xa, as, (uint32_t *)sums, st)) return -1;
    rs = (const uint32_t *)sums;
  }
  amd_q8_operand bt = *b;
  if (!b_trans && q8_copy(ctx, 2, N, K, b->p, b->ld, 1, 0, &bt.p, &bt.ld, st)) return -1;
  if (need_cs && !cs) {
    if (q8_sums(ctx, N, K, bt.p, bt.ld, xb, bs, (uint32_t *)sums + M, st)) return -1;
    cs = (const uint32_t *)sums + M;
  }
  if (imma) {
    ctx->last = AMD_Q8_PATH_IMMA;
    const int rc = q8_imma(ctx, M, N, K, a, &bt, C, ldc, rs, cs, defer, st);
    if (rc <= 0) return rc;
  }
  ctx->last = AMD_Q8_PATH_TABLE;
  Q8Params p;
  memset(&p, 0, sizeof p);
  p.A = a->p, p.lda = a->ld, p.B = bt.p, p.ldb = bt.ld, p.xa = xa, p.xb = xb;
  p.M = (int)M, p.N = (int)N, p.K = (int)K, p.ldc = ldc, p.C = C, p.rs = rs, p.cs = cs;
  p.a_vec = p.lda % 8 == 0 && aligned(p.A, 8);
  p.b_vec = p.ldb % 16 == 0 && aligned(p.B, 16);
  p.tab = tab->dev;
  p.za = a->zp, p.za_inc = a->zp_inc, p.zb = b->zp, p.zb_inc = b->zp_inc;
  p.tiles_m = (int)((M + Q8_BM - 1) / Q8_BM);
  const int64_t tiles = (int64_t)p.tiles_m * ((N + Q8_BN - 1) / Q8_BN);
  if (tiles >= INT32_MAX) return amd_fail(st, "q8 GEMM: too many tiles");
  p.tiles = (int)tiles;
  switch (tab->kind) {
  case TAB_S16: return q8_launch<TAB_S16>(ctx, p, st);
  case TAB_U16: return q8_launch<TAB_U16>(ctx, p, st);
  default: return q8_launch<TAB_I32>(ctx, p, st);
  }
}
