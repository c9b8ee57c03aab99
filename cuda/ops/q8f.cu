/* CUDA kernels of the float nodes quantized on the fly in the 8-bit table
 * modes: Conv[q8f], Gemm[q8f], MatMul[q8f] (src/ops/q8f.c; internal ops, idx -1: dispatch.cu finds them by
 * their descriptors).
 *
 * Forward, the CPU's arithmetic step by step, so that codes and outputs are
 * the same bits:
 *   - data range: while calibrating (the first amd_q8f_calib_calls() calls),
 *     a min / max reduction of the data (NaN ignored) widens [lo, hi] (double)
 *     on the device; with a percentile (--q8-calib percentile:P) the call's
 *     min and max bound a histogram (k_q8f_hist: integer counts, atomics in
 *     any order give the same counts) and k_q8f_state takes the percentile's
 *     edges from it with amd_q8f_percentile_range's double operations, each
 *     rounded once (__dmul_rn ..., no FMA); k_q8f_state then makes the data
 *     scale and zero point from the range (q8f_params's float / double steps);
 *   - weights: per output channel, the range, the scale and zero point
 *     (k_q8f_wparams), then the codes (k_q8f_wquant_rows, _cols) in the GEMM's
 *     TN layout (a row of K codes per output channel; a [rows][K] weight also
 *     gets its rows' sums of codes, which the GEMM's zero-point terms read);
 *   - data codes (k_q8f_xquant): saturate(rint((double)x / scale) + zp); for
 *     Conv an im2col of the codes (k_q8f_im2col: one row of K codes per output
 *     position, the padding = the zero point's code, as the CPU);
 *   - amd_cuda_q8_gemm (cuda/q8_gemm.h) with the mode's table (transposed for
 *     Conv, whose first operand is the weight); uint8 codes are stored as
 *     AMD_Q8_U8X when the table is exact (the tensor cores read them as int8);
 *   - y = (x_scale * w_scale[c]) * (float)acc (+ bias; Gemm: alpha, beta, C).
 *
 * The calibration state lives on the device while these kernels run it (a
 * replayed CUDA graph calibrates as the CPU would: the update is conditional
 * on the device's call count). Uncaptured calls read it back into the node's
 * attributes after each calibrating call (amd_q8f_set_state), so the host
 * copy matches the CPU's; a call captured into a graph leaves the read-back to
 * the next uncaptured call. The device copy is keyed by the node's attribute
 * block and made again from the host copy when that differs from what was last
 * seen (a new node at a reused address, a CPU call in between).
 *
 * Backward: the clipped straight-through estimator of the CPU (q8f_backward):
 * the float op's own CUDA backward (conv_backward, gemm_backward,
 * matmul_backward: n->attrs starts with the float op's attributes, bwd_mult
 * is NULL) into a zeroed buffer for dX; with --q8-grad table the table's
 * terms added to that buffer and to dW (q8f_table_backward: the codes made
 * again without a calibration call, then the lookup sums of cuda/q8_grad.h
 * in the CPU's order); then dX (+)= that buffer where lo <= x <= hi, 0
 * elsewhere (k_q8f_clip). */
#include "q8f_internal.h"

#include "../train_cuda.h"

/* ================================================================ state */

static q8f_entry *q8f_entries;
static int q8f_n, q8f_cap;
static amd_cuda_q8_ctx *q8_ctx;
static amd_cuda_q8g_ctx *q8g_ctx; /* the table-derived backward's (cuda/q8_grad.h) */

static amd_cuda_q8_ctx *q8_gemm_ctx(amd_status *st) {
  if (!q8_ctx && amd_cuda_q8_create(&q8_ctx, amd_cu.stream, st)) return NULL;
  return q8_ctx;
}

amd_cuda_q8g_ctx *q8_grad_ctx(amd_status *st) {
  if (!q8g_ctx && amd_cuda_q8g_create(&q8g_ctx, amd_cu.stream, st)) return NULL;
  return q8g_ctx;
}

void q8f_close(void) {
  for (int i = 0; i < q8f_n; i++) amd_cu_free(q8f_entries[i].dev);
  free(q8f_entries);
  q8f_entries = NULL;
  q8f_n = q8f_cap = 0;
  amd_cuda_q8_destroy(q8_ctx);
  q8_ctx = NULL;
  amd_cuda_q8g_destroy(q8g_ctx);
  q8g_ctx = NULL;
}

static bool same_state(const amd_q8f_state &a, const amd_q8f_state &b) {
  return a.calls == b.calls && memcmp(&a.lo, &b.lo, sizeof a.lo) == 0 && memcmp(&a.hi, &b.hi, sizeof a.hi) == 0;
}

static int upload_state(q8f_entry *e, const amd_q8f_state &s, amd_status *st) {
  if (amd_cu.capturing)
    return amd_fail(st, "the calibration state of a q8 node changed on the host during a captured step");
  q8f_dev d;
  memset(&d, 0, sizeof d);
  d.lo = s.lo, d.hi = s.hi, d.calls = s.calls;
  if (amd_cu_from_host(e->dev, &d, sizeof d, st)) return -1;
  e->seen = s;
  e->pending = 0;
  return 0;
}

/* Device state back into the node's attributes (synchronises). */
static int read_back(const amd_node *n, q8f_entry *e, amd_status *st) {
  q8f_dev d;
  if (amd_cu_to_host(&d, e->dev, sizeof d, st)) return -1;
  amd_q8f_state s;
  s.calls = d.calls, s.lo = d.lo, s.hi = d.hi;
  amd_q8f_set_state(n, &s);
  e->seen = s;
  e->pending = 0;
  return 0;
}

/* The device state of node n, in step with its host copy. */
static int node_state(const amd_node *n, q8f_entry **out, amd_status *st) {
  amd_q8f_state s;
  amd_q8f_get_state(n, &s);
  q8f_entry *e = NULL;
  for (int i = 0; i < q8f_n && !e; i++)
    if (q8f_entries[i].attrs == n->attrs) e = &q8f_entries[i];
  if (!e) {
    if (q8f_n == q8f_cap) {
      const int cap = q8f_cap ? 2 * q8f_cap : 16;
      q8f_entry *p = (q8f_entry *)realloc(q8f_entries, (size_t)cap * sizeof *p);
      if (!p) return amd_fail(st, "out of memory");
      q8f_entries = p, q8f_cap = cap;
    }
    e = &q8f_entries[q8f_n];
    memset(e, 0, sizeof *e);
    if (amd_cu_malloc((void **)&e->dev, sizeof(q8f_dev), st)) return -1;
    e->attrs = n->attrs;
    q8f_n++;
    if (upload_state(e, s, st)) return -1;
  } else if (!same_state(e->seen, s)) {
    if (upload_state(e, s, st)) return -1;
  } else if (e->pending && !amd_cu.capturing) {
    if (read_back(n, e, st)) return -1;
  }
  *out = e;
  return 0;
}

/* ================================================================ device arithmetic (q8f.c's, in the same steps) */

/* amd_q_round_sat */
__device__ __forceinline__ int32_t q8f_round_sat(double q, int32_t zp, int32_t lo, int32_t hi) {
  if (isnan(q)) q = 0;
  const double r = rint(q) + (double)zp;
  return r < lo ? lo : r > hi ? hi : (int32_t)r;
}

/* q8f_params: scale and zero point of [lo, hi] */
__device__ __forceinline__ void q8f_params(double lo, double hi, int32_t qmin, int32_t qmax, float *scale,
                                           int32_t *zp) {
  float s = (float)((hi - lo) / (double)(qmax - qmin));
  if (!(s > 0) || !isfinite(s)) s = 1.0f;
  *scale = s;
  *zp = q8f_round_sat((double)qmin - lo / (double)s, 0, qmin, qmax);
}

enum { Q8F_THREADS = 256, Q8F_PARTS = 1024 };

/* min and max (NaN ignored) of a block's threads' values, into mn / mx of thread 0 */
__device__ __forceinline__ void block_minmax(float &mn, float &mx) {
  __shared__ float smn[Q8F_THREADS / 32], smx[Q8F_THREADS / 32];
  for (int o = 16; o > 0; o >>= 1) {
    mn = fminf(mn, __shfl_down_sync(0xFFFFFFFFu, mn, o));
    mx = fmaxf(mx, __shfl_down_sync(0xFFFFFFFFu, mx, o));
  }
  const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
  if (l == 0) smn[w] = mn, smx[w] = mx;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int i = 1; i < (int)(blockDim.x >> 5); i++) mn = fminf(mn, smn[i]), mx = fmaxf(mx, smx[i]);
}

/* part[2b], part[2b+1] = min, max of block b's share of x; nothing once the state is calibrated */
__global__ void __launch_bounds__(Q8F_THREADS) k_q8f_minmax(int64_t n, const float *x, const q8f_dev *s, int calib,
                                                            float *part) {
  if (s->calls >= calib) return;
  float mn = INFINITY, mx = -INFINITY;
  AMD_CU_LOOP(i, n) {
    mn = fminf(mn, x[i]);
    mx = fmaxf(mx, x[i]);
  }
  block_minmax(mn, mx);
  if (threadIdx.x == 0) part[2 * blockIdx.x] = mn, part[2 * blockIdx.x + 1] = mx;
}

/* The percentile calibration (amd_q8f_percentile_range, src/ops/q8f.h). */
enum { Q8F_BINS = AMD_Q8F_BINS };

/* One thread: the call's min and max from the blocks' parts into mm[0], mm[1]. */
__global__ void k_q8f_callrange(const q8f_dev *s, int calib, const float *part, int nparts, float *mm) {
  if (s->calls >= calib) return;
  float mn = INFINITY, mx = -INFINITY;
  for (int i = 0; i < nparts; i++) mn = fminf(mn, part[2 * i]), mx = fmaxf(mx, part[2 * i + 1]);
  mm[0] = mn, mm[1] = mx;
}

/* Whether the call's range [mn, mx] takes a histogram (finite, not one value). */
__device__ __forceinline__ bool q8f_binned(float mn, float mx) { return mn < mx && !isinf(mn) && !isinf(mx); }

/* bins[b] += the count of the values (NaN ignored) in bin b of [mm[0], mm[1]] (bins zeroed before) */
__global__ void __launch_bounds__(Q8F_THREADS) k_q8f_hist(int64_t n, const float *x, const q8f_dev *s, int calib,
                                                          const float *mm, unsigned long long *bins) {
  if (s->calls >= calib || !q8f_binned(mm[0], mm[1])) return; /* the same for the whole block */
  __shared__ unsigned int sb[Q8F_BINS];
  for (int i = threadIdx.x; i < Q8F_BINS; i += blockDim.x) sb[i] = 0;
  __syncthreads();
  const double mn = mm[0], inv = __ddiv_rn((double)Q8F_BINS, __dsub_rn((double)mm[1], mn));
  AMD_CU_LOOP(i, n) {
    const float v = x[i];
    if (isnan(v)) continue;
    const int b = (int)__dmul_rn(__dsub_rn((double)v, mn), inv);
    atomicAdd(&sb[b < Q8F_BINS ? b : Q8F_BINS - 1], 1u);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < Q8F_BINS; i += blockDim.x)
    if (sb[i]) atomicAdd(&bins[i], (unsigned long long)sb[i]);
}

/* edge j of the bins of [mn, mx] (q8f_edge of src/ops/q8f.c) */
__device__ __forceinline__ double q8f_edge(double mn, double mx, double range, int j) {
  return j == Q8F_BINS ? mx : __dadd_rn(mn, __ddiv_rn(__dmul_rn(range, (double)j), (double)Q8F_BINS));
}

/* The call's percentile range [*lo, *hi] from its min, max and bins (amd_q8f_percentile_range's steps);
 * false when it had no value. */
__device__ bool q8f_percentile(float fmn, float fmx, const unsigned long long *bins, double q, double *lo,
                               double *hi) {
  if (!(fmn <= fmx)) return false; /* every value NaN (or none) */
  if (!q8f_binned(fmn, fmx)) {
    *lo = fmn, *hi = fmx;
    return true;
  }
  unsigned long long count = 0;
  for (int b = 0; b < Q8F_BINS; b++) count += bins[b];
  const double mn = fmn, mx = fmx, range = __dsub_rn(mx, mn);
  long long k = (long long)ceil(__dmul_rn(q, (double)count));
  if (k < 1) k = 1;
  if (k > (long long)count) k = (long long)count;
  long long c = 0;
  int b = 0;
  while (b < Q8F_BINS - 1 && (c += (long long)bins[b]) < k) b++;
  *hi = q8f_edge(mn, mx, range, b + 1);
  c = 0;
  b = Q8F_BINS - 1;
  while (b > 0 && (c += (long long)bins[b]) < k) b--;
  *lo = q8f_edge(mn, mx, range, b);
  return true;
}

/* One thread: while calibrating, [lo, hi] widened by the blocks' min and max
 * (the CPU's `if (x < lo) lo = x`, in double) or, with percentile q > 0, by
 * the call's percentile range (mm: its min and max, bins: its histogram),
 * and the call counted; then the data scale and zero point. */
__global__ void k_q8f_state(q8f_dev *s, const float *part, int nparts, int calib, double q, const float *mm,
                            const unsigned long long *bins, int32_t qmin, int32_t qmax) {
  if (part && s->calls < calib) {
    if (q > 0) {
      double lo, hi;
      if (q8f_percentile(mm[0], mm[1], bins, q, &lo, &hi)) {
        if (lo < s->lo) s->lo = lo;
        if (hi > s->hi) s->hi = hi;
      }
    } else {
      float mn = INFINITY, mx = -INFINITY;
      for (int i = 0; i < nparts; i++) mn = fminf(mn, part[2 * i]), mx = fmaxf(mx, part[2 * i + 1]);
      if ((double)mn < s->lo) s->lo = mn;
      if ((double)mx > s->hi) s->hi = mx;
    }
    s->calls++;
  }
  q8f_params(s->lo, s->hi, qmin, qmax, &s->scale, &s->zp);
}

/* Per output channel c of the weight (element e is in channel (e / inner) % nch): its range with 0, then
 * q8u: q8f_params; q8s: scale max |w| / 127, zero point 0 (scale 1 for an all-zero channel). */
__global__ void __launch_bounds__(Q8F_THREADS) k_q8f_wparams(int64_t nw, int64_t nch, int64_t inner, const float *w,
                                                             int sgn, float *ws, int32_t *wz) {
  const int64_t c = blockIdx.x, outer = nw / (nch * inner), cnt = outer * inner;
  float mn = INFINITY, mx = -INFINITY;
  for (int64_t q = threadIdx.x; q < cnt; q += blockDim.x) {
    const float v = w[((q / inner) * nch + c) * inner + q % inner];
    mn = fminf(mn, v);
    mx = fmaxf(mx, v);
  }
  block_minmax(mn, mx);
  if (threadIdx.x != 0) return;
  const double lo = (double)mn < 0 ? (double)mn : 0.0, hi = (double)mx > 0 ? (double)mx : 0.0;
  float scale;
  int32_t zp = 0;
  if (sgn) {
    const double m = -lo > hi ? -lo : hi;
    scale = (float)(m / 127.0);
    if (!(scale > 0) || !isfinite(scale)) scale = 1.0f;
  } else {
    q8f_params(lo, hi, 0, 255, &scale, &zp);
  }
  ws[c] = scale;
  wz[c] = zp;
}

/* The weight's code of element e (channel (e / inner) % nch), as the GEMM stores it: (code & 0xFF) ^ x; the
 * code itself (int8 or uint8 value) in *code. */
__device__ __forceinline__ uint8_t q8f_wcode(int64_t e, int64_t nch, int64_t inner, const float *w,
                                             const float *ws, const int32_t *wz, int32_t qmin, int32_t qmax,
                                             uint32_t x, int32_t *code) {
  const int64_t c = (e / inner) % nch;
  *code = q8f_round_sat((double)w[e] / (double)ws[c], wz[c], qmin, qmax);
  return (uint8_t)(((uint32_t)*code & 0xFFu) ^ x);
}

/* The codes of a [rows][K] weight (Conv, Gemm with transB), already the GEMM's TN layout, one block of
 * Q8F_THREADS a row, and each row's sum of code values (mod 2^32), which the GEMM's zero-point terms read:
 * given here, the GEMM makes no pass over the weight's codes for them. */
__global__ void k_q8f_wquant_rows(int64_t nrows, int64_t nch, int64_t inner, int64_t K, int64_t ld,
                                  const float *w, const float *ws, const int32_t *wz, int32_t qmin,
                                  int32_t qmax, uint32_t x, uint8_t *dst, uint32_t *sums) {
  __shared__ uint32_t part[Q8F_THREADS / 32];
  for (int64_t row = blockIdx.x; row < nrows; row += gridDim.x) {
    uint32_t sum = 0;
    for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
      int32_t code;
      dst[row * ld + k] = q8f_wcode(row * K + k, nch, inner, w, ws, wz, qmin, qmax, x, &code);
      sum += (uint32_t)code;
    }
    sum = __reduce_add_sync(0xFFFFFFFFu, sum);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int i = 1; i < Q8F_THREADS / 32; i++) sum += part[i];
      sums[row] = sum;
    }
    __syncthreads(); /* part is read before the next row writes it */
  }
}

/* The codes of a [batch][K][N] weight (Gemm without transB, MatMul), written transposed as row (batch * N +
 * n) of K codes. */
__global__ void k_q8f_wquant_cols(int64_t nw, int64_t nch, int64_t inner, int64_t K, int64_t N, int64_t ld,
                                  const float *w, const float *ws, const int32_t *wz, int32_t qmin,
                                  int32_t qmax, uint32_t x, uint8_t *dst) {
  AMD_CU_LOOP(e, nw) {
    const int64_t t = e / (K * N), r = e % (K * N);
    int32_t code;
    dst[(t * N + r % N) * ld + r / N] = q8f_wcode(e, nch, inner, w, ws, wz, qmin, qmax, x, &code);
  }
}

/* The data's codes (scale and zero point from the device state), element e at row e / K, column e % K
 * (dense: K == ld). I: the index type (int where every index fits). */
template <typename I>
__global__ void k_q8f_xquant(int64_t nx, int64_t K_, int64_t ld_, const float *xv, const q8f_dev *s, int32_t qmin,
                             int32_t qmax, uint32_t x, uint8_t *dst) {
  const double scale = (double)s->scale;
  const int32_t zp = s->zp;
  const I K = (I)K_, ld = (I)ld_;
  const bool dense = K == ld;
  AMD_CU_LOOP_I(I, e, nx) {
    const int32_t code = q8f_round_sat((double)xv[e] / scale, zp, qmin, qmax);
    dst[dense ? e : (e / K) * ld + e % K] = (uint8_t)(((uint32_t)code & 0xFFu) ^ x);
  }
}

enum { Q8F_COLV = 16 }; /* codes a thread of k_q8f_im2col writes: one 16-byte store */

/* colT[j][r] = the code x reads at output position j (image * osz + oy * ow + ox) and kernel row r (channel
 * of group g0 * kh * kw + tap), or the zero point's code in the padding; each thread the 16 codes r0..r0+15 of
 * one j (the row's ld is a multiple of 16; codes past kdim are the padding's, never read by the GEMM). sums[j]
 * (zeroed before) gets the row's code values (int8 when sgn; the stored byte ^ x), for the GEMM's corrections. */
template <typename I>
__global__ void k_q8f_im2col(q8f_conv p, const uint8_t *xq, const q8f_dev *s, uint32_t x, int sgn, uint8_t *col,
                             uint32_t *sums) {
  const uint32_t pad = ((uint32_t)s->zp & 0xFFu) ^ x;
  const I groups = (I)(p.ld / Q8F_COLV), kdim = (I)p.kdim, osz = (I)p.osz, ow = (I)p.ow, khw = (I)(p.kh * p.kw);
  const I kw = (I)p.kw, h = (I)p.h, w = (I)p.w;
  AMD_CU_LOOP_I(I, t, (I)p.L * groups) {
    const I j = t / groups, r0 = (t % groups) * Q8F_COLV;
    const I img = j / osz, pos = j % osz, oy = pos / ow, ox = pos % ow;
    const I iy0 = oy * (I)p.sh - (I)p.ph, ix0 = ox * (I)p.sw - (I)p.pw;
    I ch = r0 / khw, kk = r0 % khw, ki = kk / kw, kj = kk % kw;
    const uint8_t *xc = xq + ((int64_t)img * p.c + p.g0 * p.cg + ch) * p.h * p.w;
    uint32_t v[Q8F_COLV / 4] = {0, 0, 0, 0}, sum = 0;
#pragma unroll
    for (int q = 0; q < Q8F_COLV; q++) {
      uint32_t c = pad;
      if (r0 + q < kdim) {
        const I iy = iy0 + ki * (I)p.dh, ix = ix0 + kj * (I)p.dw;
        if (iy >= 0 && iy < h && ix >= 0 && ix < w) c = xc[(int64_t)iy * w + ix];
        const uint32_t raw = (c ^ x) & 0xFFu;
        sum += sgn ? (uint32_t)(int32_t)(int8_t)raw : raw;
        if (++kj == kw) { /* the next tap */
          kj = 0;
          if (++ki == (I)p.kh) {
            ki = 0;
            xc += p.h * p.w;
          }
        }
      }
      v[q >> 2] |= c << (8 * (q & 3));
    }
    *(uint4 *)(col + (int64_t)j * p.ld + r0) = make_uint4(v[0], v[1], v[2], v[3]);
    atomicAdd(sums + j, sum); /* mod 2^32: the order does not matter */
  }
}

/* Conv: y[img][m][pos] = (x_scale * w_scale[m]) * (float)acc[m][img * osz + pos] + (bias[m] or 0), acc
 * first given the zero-point terms the tensor-core GEMM left to this kernel (fix.active) */
template <typename I>
__global__ void k_q8f_conv_out(int64_t nb_, int64_t m_, int64_t osz_, const int32_t *acc, const amd_q8_fix fix,
                               const q8f_dev *s, const float *ws, const float *bias, float *y) {
  const float xs = s->scale;
  const I nb = (I)nb_, m = (I)m_, osz = (I)osz_;
  AMD_CU_LOOP_I(I, e, nb * m * osz) {
    const I pos = e % osz, c = (e / osz) % m, img = e / (osz * m);
    const float sc = xs * ws[c];
    int32_t a = acc[c * nb * osz + img * osz + pos];
    if (fix.active) a = amd_q8_fixed(fix, c, img * osz + pos, a);
    y[e] = sc * (float)a + (bias ? bias[c] : 0.0f);
  }
}

/* Gemm / MatMul: y[e] = (x_scale * w_scale[j]) * (float)acc[e], j = e % N; Gemm (gemm set): then
 * alpha * y (+ beta * C[i * rs + j * cs] where beta != 0) */
template <typename I>
__global__ void k_q8f_mm_out(int64_t total, int64_t N_, const int32_t *acc, const amd_q8_fix fix, const q8f_dev *s,
                             const float *ws, int gemm, float alpha, float beta, const float *C, int64_t rs,
                             int64_t cs, float *y) {
  const float xs = s->scale;
  const I N = (I)N_;
  AMD_CU_LOOP_I(I, e, total) {
    const I j = e % N;
    const float sc = xs * ws[j];
    float v = sc * (float)(fix.active ? amd_q8_fixed(fix, e / N, j, acc[e]) : acc[e]);
    if (gemm) {
      v = alpha * v;
      if (C && beta != 0) v += beta * C[(int64_t)(e / N) * rs + (int64_t)j * cs];
    }
    y[e] = v;
  }
}

/* dx[i] = (acc ? dx[i] : 0) + (lo <= x[i] <= hi ? g[i] : 0) */
__global__ void k_q8f_clip(int64_t n, const float *x, const float *g, const q8f_dev *s, int acc, float *dx) {
  const double lo = s->lo, hi = s->hi;
  AMD_CU_LOOP(i, n) {
    const float v = (double)x[i] >= lo && (double)x[i] <= hi ? g[i] : 0.0f;
    dx[i] = (acc ? dx[i] : 0.0f) + v;
  }
}

/* ================================================================ forward */

int q8f_begin(const amd_node *n, const amd_tensor *x, const amd_tensor *w, int64_t nch, int64_t inner,
                     int rows, int64_t K, int64_t N, int transposed_table, int frozen, q8f_run &r, amd_status *st) {
  const amd_mult *m = n->mult;
  if (!m || !m->q8) return amd_fail(st, "node '%s' (%s) has no 8-bit table mode", n->name, n->op->name);
  amd_cuda_q8_ctx *qc = q8_gemm_ctx(st);
  if (!qc || node_state(n, &r.e, st)) return -1;
  r.sgn = m->q8 == 's';
  r.qmin = r.sgn ? -128 : 0, r.qmax = r.sgn ? 127 : 255;
  r.table = transposed_table ? m->q8_table_t : m->q8_table;
  int exact = 0;
  if (amd_cuda_q8_table_exact(qc, r.table, r.sgn, &exact, st)) return -1;
  r.fmt = r.sgn ? AMD_Q8_S8 : exact ? AMD_Q8_U8X : AMD_Q8_U8;
  r.x = r.fmt == AMD_Q8_U8X ? 0x80u : 0u;
  amd_q8f_state hs;
  amd_q8f_get_state(n, &hs);
  const int calib = amd_q8f_calib_calls();
  r.calibrating = !frozen && hs.calls < calib;
  const int64_t nx = amd_tensor_numel(x), nw = amd_tensor_numel(w);
  int parts = 0;
  const double q = amd_q8f_calib_q(n);
  float *mm = NULL; /* the call's min and max, after the parts (percentile) */
  unsigned long long *bins = NULL;
  if (r.calibrating) {
    int64_t b = (nx + Q8F_THREADS - 1) / Q8F_THREADS;
    parts = (int)(b < 1 ? 1 : b > (int64_t)Q8F_PARTS ? (int64_t)Q8F_PARTS : b);
    if (r.part.get(sizeof(float) * (2 * (size_t)parts + 2), st)) return -1;
    k_q8f_minmax<<<parts, Q8F_THREADS, 0, amd_cu.stream>>>(nx, F(x), r.e->dev, calib, r.part.f());
    AMD_CUDA_CHECK_LAUNCH("k_q8f_minmax", st);
    if (q > 0) {
      mm = r.part.f() + 2 * parts;
      if (r.bins.get(sizeof(unsigned long long) * Q8F_BINS, st)) return -1;
      bins = (unsigned long long *)r.bins.p;
      k_q8f_callrange<<<1, 1, 0, amd_cu.stream>>>(r.e->dev, calib, r.part.f(), parts, mm);
      AMD_CUDA_CHECK_LAUNCH("k_q8f_callrange", st);
      AMD_CUDA_CHECK(cudaMemsetAsync(bins, 0, sizeof(unsigned long long) * Q8F_BINS, amd_cu.stream), st);
      k_q8f_hist<<<parts, Q8F_THREADS, 0, amd_cu.stream>>>(nx, F(x), r.e->dev, calib, mm, bins);
      AMD_CUDA_CHECK_LAUNCH("k_q8f_hist", st);
    }
  }
  k_q8f_state<<<1, 1, 0, amd_cu.stream>>>(r.e->dev, r.calibrating ? r.part.f() : NULL, parts, calib, q, mm, bins,
                                          r.qmin, r.qmax);
  AMD_CUDA_CHECK_LAUNCH("k_q8f_state", st);
  /* the weight */
  r.ldw = round16(K > 0 ? K : 1);
  const int64_t wrows = rows ? (K > 0 ? nw / K : 0) : nw / (K * N > 0 ? K * N : 1) * N;
  if (r.ws.get(sizeof(float) * (size_t)(nch + 1), st) || r.wz.get(sizeof(int32_t) * (size_t)(nch + 1), st) ||
      r.wq.get((size_t)(wrows * r.ldw), st))
    return -1;
  if (nch > 0) {
    k_q8f_wparams<<<(unsigned)nch, Q8F_THREADS, 0, amd_cu.stream>>>(nw, nch, inner, F(w), r.sgn, r.ws.f(),
                                                                     (int32_t *)r.wz.p);
    AMD_CUDA_CHECK_LAUNCH("k_q8f_wparams", st);
  }
  r.wsums = NULL;
  if (nw > 0 && rows) {
    if (r.wsum.get(sizeof(uint32_t) * (size_t)wrows, st)) return -1;
    k_q8f_wquant_rows<<<(unsigned)(wrows < 65536 ? wrows : 65536), Q8F_THREADS, 0, amd_cu.stream>>>(
        wrows, nch, inner, K, r.ldw, F(w), r.ws.f(), (const int32_t *)r.wz.p, r.qmin, r.qmax, r.x,
        (uint8_t *)r.wq.p, (uint32_t *)r.wsum.p);
    AMD_CUDA_CHECK_LAUNCH("k_q8f_wquant_rows", st);
    r.wsums = (const uint32_t *)r.wsum.p;
  } else if (nw > 0) {
    k_q8f_wquant_cols<<<amd_cu_blocks(nw), 256, 0, amd_cu.stream>>>(nw, nch, inner, K, N, r.ldw, F(w),
                                                                    r.ws.f(), (const int32_t *)r.wz.p, r.qmin,
                                                                    r.qmax, r.x, (uint8_t *)r.wq.p);
    AMD_CUDA_CHECK_LAUNCH("k_q8f_wquant_cols", st);
  }
  return 0;
}

/* The data's codes into dst (rows of K codes at leading dimension ld). */
int xquant(int64_t nx, int64_t K, int64_t ld, const float *x, const q8f_run &r, uint8_t *dst, amd_status *st) {
  if (nx == 0) return 0;
  if (fits32(nx) && fits32((nx / K + 1) * ld))
    k_q8f_xquant<int><<<amd_cu_blocks(nx), 256, 0, amd_cu.stream>>>(nx, K, ld, x, r.e->dev, r.qmin, r.qmax, r.x, dst);
  else
    k_q8f_xquant<int64_t>
        <<<amd_cu_blocks(nx), 256, 0, amd_cu.stream>>>(nx, K, ld, x, r.e->dev, r.qmin, r.qmax, r.x, dst);
  AMD_CUDA_CHECK_LAUNCH("k_q8f_xquant", st);
  return 0;
}

/* After the call's kernels: the call counted on the host too, and (uncaptured) the state read back. */
static int q8f_end(const amd_node *n, q8f_run &r, amd_status *st) {
  if (!r.calibrating) return 0;
  if (!amd_cu.capturing) return read_back(n, r.e, st);
  amd_q8f_state s;
  amd_q8f_get_state(n, &s);
  s.calls++;
  amd_q8f_set_state(n, &s);
  r.e->seen = s;
  r.e->pending = 1;
  return 0;
}

/* The weight's zero points for the GEMM: none (NULL) for int8 codes, which are symmetric (zero point 0) */
static const int32_t *weight_zp(const q8f_run &r) {
  return r.fmt == AMD_Q8_S8 ? NULL : (const int32_t *)r.wz.p;
}

static amd_q8_operand operand(const uint8_t *p, int64_t ld, amd_q8_fmt fmt, const int32_t *zp, int inc,
                              const uint32_t *sums = NULL) {
  amd_q8_operand o;
  o.p = p, o.ld = ld, o.fmt = fmt, o.zp = zp, o.zp_inc = inc, o.sums = sums;
  return o;
}

/* Queues the im2col of p's images of the codes xs (nx codes in all) into col,
 * with the row sums (zeroed first) that the GEMM's zero-point terms read. */
int q8f_im2col(const q8f_conv &p, const uint8_t *xs, int64_t nx, const q8f_run &r, uint8_t *col,
                      uint32_t *sums, amd_status *st) {
  const int64_t threads = p.L * (p.ld / Q8F_COLV);
  AMD_CUDA_CHECK(cudaMemsetAsync(sums, 0, sizeof(uint32_t) * (size_t)p.L, amd_cu.stream), st);
  if (fits32(p.L * p.ld) && fits32(nx))
    k_q8f_im2col<int><<<amd_cu_blocks(threads), 256, 0, amd_cu.stream>>>(p, xs, r.e->dev, r.x, r.sgn, col, sums);
  else
    k_q8f_im2col<int64_t><<<amd_cu_blocks(threads), 256, 0, amd_cu.stream>>>(p, xs, r.e->dev, r.x, r.sgn, col,
                                                                             sums);
  AMD_CUDA_CHECK_LAUNCH("k_q8f_im2col", st);
  return 0;
}

/* Images per chunk so that the im2col codes stay under 512 MB. */
static int64_t q8f_conv_chunk(const amd_conv_geom *g, int64_t ld) {
  const double per = (double)g->osize * (double)ld;
  int64_t nb = per > 0 ? (int64_t)((double)(1 << 29) / per) : g->n;
  if (nb < 1) nb = 1;
  return nb < g->n ? nb : g->n;
}

static int q8fconv_forward(FWD_ARGS) {
  (void)ctx;
  const amd_conv_attrs *a = (const amd_conv_attrs *)n->attrs;
  const amd_tensor *x = in[0], *w = in[1], *b = n->n_in > 2 ? in[2] : NULL;
  amd_conv_geom g;
  if (amd_conv_geometry(a, x, w, &g, st)) return -1;
  const int64_t kdim = g.cg * g.kvol;
  q8f_run r;
  if (q8f_begin(n, x, w, g.m, g.m ? amd_tensor_numel(w) / g.m : 1, 1, kdim, 0, 1, 0, r, st)) return -1;
  if (g.n > 0 && g.m > 0 && g.osize > 0) {
    const int64_t nx = amd_tensor_numel(x), ld = round16(kdim > 0 ? kdim : 1), chunk = q8f_conv_chunk(&g, ld);
    scratch xq, col, acc, sums;
    if (xq.get((size_t)nx, st) || col.get((size_t)(chunk * g.osize * ld), st) ||
        acc.get(sizeof(int32_t) * (size_t)(g.m * chunk * g.osize), st) ||
        sums.get(sizeof(uint32_t) * (size_t)(chunk * g.osize), st))
      return -1;
    if (xquant(nx, nx, nx, F(x), r, (uint8_t *)xq.p, st)) return -1;
    amd_cuda_q8_ctx *qc = q8_gemm_ctx(st);
    const int32_t *xz = &r.e->dev->zp, *wz = weight_zp(r);
    for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
      amd_q8_fix fix; /* with one group the output kernel adds the tensor cores' zero-point terms */
      fix.active = 0;
      const int64_t nb = g.n - n0 < chunk ? g.n - n0 : chunk;
      q8f_conv p = {nb,       g.c,       g.cg,      0,         g.in[0],   g.in[1],   g.k[0],
                    g.k[1],   g.out[0],  g.out[1],  g.stride[0], g.stride[1], g.dil[0], g.dil[1],
                    g.pad0[0], g.pad0[1], kdim,     g.osize,   nb * g.osize, ld};
      for (int64_t gi = 0; gi < g.group; gi++) {
        p.g0 = gi;
        const uint8_t *xs = (const uint8_t *)xq.p + n0 * g.c * g.isize;
        uint32_t *cs = (uint32_t *)sums.p;
        if (q8f_im2col(p, xs, nx, r, (uint8_t *)col.p, cs, st)) return -1;
        const amd_q8_operand A = operand((const uint8_t *)r.wq.p + gi * g.mg * r.ldw, r.ldw, r.fmt,
                                         wz ? wz + gi * g.mg : NULL, 1, r.wsums ? r.wsums + gi * g.mg : NULL);
        const amd_q8_operand B = operand((const uint8_t *)col.p, ld, r.fmt, xz, 0, cs);
        double t0 = amd_cu_prof_t0();
        if (amd_cuda_q8_gemm(qc, r.table, g.mg, p.L, kdim, &A, &B, 1, (int32_t *)acc.p + gi * g.mg * p.L, p.L,
                             g.group == 1 ? &fix : NULL, st))
          return -1;
        amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)g.mg * (double)p.L * (double)kdim);
      }
      const int64_t cnt = nb * g.m * g.osize;
      float *y = F(&out[0]) + n0 * g.m * g.osize;
      const int32_t *ac = (const int32_t *)acc.p;
      if (fits32(cnt))
        k_q8f_conv_out<int><<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(nb, g.m, g.osize, ac, fix, r.e->dev, r.ws.f(),
                                                                            b ? F(b) : NULL, y);
      else
        k_q8f_conv_out<int64_t><<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(nb, g.m, g.osize, ac, fix, r.e->dev,
                                                                                r.ws.f(), b ? F(b) : NULL, y);
      AMD_CUDA_CHECK_LAUNCH("k_q8f_conv_out", st);
    }
  }
  return q8f_end(n, r, st);
}

/* The matrix products of Gemm and MatMul: A (the data, [batch_a][M][K]) against the weight's codes in r
 * ([batch_b][N][ldw]), numpy's batch broadcasting as the CPU's odometer, then the output kernel. */
static int q8f_mm(const amd_node *n, const amd_tensor *x, const amd_mm_shape &s, q8f_run &r, float *y, int gemm,
                  const amd_gemm_attrs *ga, const amd_tensor *C, amd_status *st) {
  const int64_t M = s.M, N = s.N, K = s.K, nb = amd_tensor_numel(&s.batch);
  const int64_t nx = amd_tensor_numel(x), ldx = round16(K > 0 ? K : 1), total = nb * M * N;
  if (total == 0) return 0;
  scratch xq, acc;
  if (xq.get((size_t)((K > 0 ? nx / K : 0) * ldx + 1), st) || acc.get(sizeof(int32_t) * (size_t)total, st))
    return -1;
  if (nx > 0) {
    if (xquant(nx, K, ldx, F(x), r, (uint8_t *)xq.p, st)) return -1;
  }
  amd_cuda_q8_ctx *qc = q8_gemm_ctx(st);
  const int32_t *xz = &r.e->dev->zp, *wz = weight_zp(r);
  const uint8_t *aq = (const uint8_t *)xq.p, *bq = (const uint8_t *)r.wq.p;
  amd_q8_fix fix; /* one GEMM: the output kernel adds the tensor cores' zero-point terms */
  fix.active = 0;
  int32_t *c = (int32_t *)acc.p;
  const int64_t nba = amd_tensor_numel(&s.batch_a), nbb = amd_tensor_numel(&s.batch_b);
  double t0 = amd_cu_prof_t0();
  if (nbb == 1 && nba == nb) { /* one weight: the batch is more rows */
    const amd_q8_operand A = operand(aq, ldx, r.fmt, xz, 0), B = operand(bq, r.ldw, r.fmt, wz, 1, r.wsums);
    if (amd_cuda_q8_gemm(qc, r.table, nb * M, N, K, &A, &B, 1, c, N, &fix, st)) return -1;
  } else {
    int64_t sa[AMD_MAX_RANK], sb[AMD_MAX_RANK], idx[AMD_MAX_RANK] = {0};
    amd_broadcast_strides(&s.batch_a, &s.batch, sa);
    amd_broadcast_strides(&s.batch_b, &s.batch, sb);
    int64_t oa = 0, ob = 0;
    for (int64_t t = 0; t < nb; t++) {
      const amd_q8_operand A = operand(aq + oa * M * ldx, ldx, r.fmt, xz, 0),
                           B = operand(bq + ob * N * r.ldw, r.ldw, r.fmt, wz, 1);
      if (amd_cuda_q8_gemm(qc, r.table, M, N, K, &A, &B, 1, c + t * M * N, N, NULL, st)) return -1;
      amd_mm_batch_next(&s, sa, sb, idx, &oa, &ob);
    }
  }
  amd_cu_prof_stage(t0, AMD_PROF_FWD_GEMM, (double)nb * (double)M * (double)N * (double)K);
  int64_t rs = 0, cs = 0;
  if (C) {
    rs = C->rank == 2 && C->dims[0] != 1 ? C->dims[1] : 0;
    cs = C->rank >= 1 && C->dims[C->rank - 1] != 1 ? 1 : 0;
  }
  const float alpha = ga ? ga->alpha : 1.0f, beta = ga ? ga->beta : 0.0f;
  if (fits32(total))
    k_q8f_mm_out<int><<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, N, c, fix, r.e->dev, r.ws.f(), gemm, alpha,
                                                                        beta, C ? F(C) : NULL, rs, cs, y);
  else
    k_q8f_mm_out<int64_t><<<amd_cu_blocks(total), 256, 0, amd_cu.stream>>>(total, N, c, fix, r.e->dev, r.ws.f(), gemm,
                                                                            alpha, beta, C ? F(C) : NULL, rs, cs, y);
  AMD_CUDA_CHECK_LAUNCH("k_q8f_mm_out", st);
  (void)n;
  return 0;
}

static int q8fgemm_forward(FWD_ARGS) {
  (void)ctx;
  const amd_gemm_attrs *a = (const amd_gemm_attrs *)n->attrs;
  const amd_tensor *A = in[0], *B = in[1], *C = n->n_in > 2 ? in[2] : NULL;
  if (a->trans_a) return amd_fail(st, "transA = 1 is not implemented in the q8 modes");
  amd_mm_shape s;
  memset(&s, 0, sizeof s);
  s.M = A->dims[0], s.K = A->dims[1], s.N = a->trans_b ? B->dims[0] : B->dims[1];
  /* one batch entry */
  const int64_t none[1] = {1};
  amd_tensor_set_shape(&s.batch, AMD_FLOAT, 0, none);
  s.batch_a = s.batch_b = s.batch;
  q8f_run r;
  /* the weight's channels: B's columns ([K, N], inner 1) or rows with transB ([N, K], inner K) */
  if (q8f_begin(n, A, B, s.N, a->trans_b ? s.K : 1, a->trans_b, s.K, s.N, 0, 0, r, st) ||
      q8f_mm(n, A, s, r, F(&out[0]), 1, a, C, st))
    return -1;
  return q8f_end(n, r, st);
}

static int q8fmatmul_forward(FWD_ARGS) {
  (void)ctx;
  amd_mm_shape s;
  if (amd_mm_shapes(in[0], in[1], &s, st)) return -1;
  const int64_t nch = in[1]->rank >= 2 ? in[1]->dims[in[1]->rank - 1] : 1;
  q8f_run r;
  if (q8f_begin(n, in[0], in[1], nch, 1, 0, s.K, s.N, 0, 0, r, st) ||
      q8f_mm(n, in[0], s, r, F(&out[0]), 0, NULL, NULL, st))
    return -1;
  return q8f_end(n, r, st);
}

/* ================================================================ backward */

static int q8f_backward(int kind, amd_cu_bwd_fn fbwd, BWD_ARGS) {
  amd_tensor *dx = din[0];
  if (!dx || !in[0] || dx->dtype != AMD_FLOAT) {
    if (fbwd(n, ctx, in, out, dout, din, st)) return -1;
    return q8f_table_backward(kind, n, in, dout, NULL, din, st);
  }
  q8f_entry *e;
  if (node_state(n, &e, st)) return -1;
  const int64_t cnt = amd_tensor_numel(dx);
  scratch full;
  if (full.get(amd_tensor_nbytes(dx), st)) return -1;
  if (cnt) AMD_CUDA_CHECK(cudaMemsetAsync(full.p, 0, amd_tensor_nbytes(dx), amd_cu.stream), st);
  amd_tensor ft = *dx;
  ft.data = full.p;
  amd_tensor *d2[8] = {0};
  for (int k = 0; k < n->n_in && k < 8; k++) d2[k] = din[k];
  d2[0] = &ft;
  amd_ctx c2;
  if (ctx)
    c2 = *ctx;
  else
    memset(&c2, 0, sizeof c2);
  c2.bwd_overwrite &= ~1u; /* full is zeroed: added to */
  if (fbwd(n, &c2, in, out, dout, d2, st)) return -1;
  if (q8f_table_backward(kind, n, in, dout, full.f(), din, st)) return -1;
  if (node_state(n, &e, st)) return -1; /* e again, in case the entries moved */
  if (cnt) {
    k_q8f_clip<<<amd_cu_blocks(cnt), 256, 0, amd_cu.stream>>>(cnt, F(in[0]), full.f(), e->dev, acc_of(ctx, 0),
                                                               F(dx));
    AMD_CUDA_CHECK_LAUNCH("k_q8f_clip", st);
  }
  return 0;
}

static int q8fconv_backward(BWD_ARGS) {
  return q8f_backward(Q8F_CONV, conv_backward, n, ctx, in, out, dout, din, st);
}
static int q8fgemm_backward(BWD_ARGS) {
  return q8f_backward(Q8F_GEMM, gemm_backward, n, ctx, in, out, dout, din, st);
}
static int q8fmatmul_backward(BWD_ARGS) {
  return q8f_backward(Q8F_MATMUL, matmul_backward, n, ctx, in, out, dout, din, st);
}

/* Both backward modes (--q8-grad ste and table) run here. */
static int q8fconv_supported(const amd_node *n, const amd_tensor *const *in) {
  return n->mult && n->mult->q8 && conv_supported(n, in);
}
static int q8fgemm_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  return n->mult && n->mult->q8 && !((const amd_gemm_attrs *)n->attrs)->trans_a;
}
static int q8fmatmul_supported(const amd_node *n, const amd_tensor *const *in) {
  (void)in;
  return n->mult && n->mult->q8;
}

static const amd_cu_op q8f_ops[3] = {
    {q8fconv_forward, q8fconv_backward, 0, 0x1u, q8fconv_supported, NULL},
    {q8fgemm_forward, q8fgemm_backward, 0, 0x1u, q8fgemm_supported, NULL},
    {q8fmatmul_forward, q8fmatmul_backward, 0, 0x1u, q8fmatmul_supported, NULL},
};

const amd_cu_op *q8f_find_op(const amd_op *op) {
  if (op == &amd_op_Q8fConv) return &q8f_ops[0];
  if (op == &amd_op_Q8fGemm) return &q8f_ops[1];
  if (op == &amd_op_Q8fMatMul) return &q8f_ops[2];
  return NULL;
}
